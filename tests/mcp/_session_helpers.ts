/**
 * Shared pieces of the end-to-end MCP tests (mcp_session_*, mcp_failures, mcp_cleanup): the fake
 * stdio server as an ACP declaration, an in-memory server with the scripted model that answers
 * permission requests, and readers for what it sent and recorded.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { fakeStdio, killProcessesWithMarker } from "../_helpers/mcp_servers.ts";
import { type MemoryServer, type StartOptions, startServer } from "../_helpers/server.ts";

/** A session update's payload. */
export type Update = Record<string, unknown>;

/** A stdio server declaration as a client sends it in `mcpServers`. */
export interface StdioDeclaration {
  readonly name: string;
  readonly command: string;
  readonly args: string[];
  readonly env: Array<{ name: string; value: string }>;
}

/**
 * The fake server (tests/_fixtures/fake_mcp_server.mjs) declared as `name`.
 *
 * @param name The server's name in the session
 * @param flags Its flags
 * @param env Variables declared for it
 */
export function fakeServer(
  name = "fake",
  flags: readonly string[] = [],
  env: Readonly<Record<string, string>> = {},
): StdioDeclaration {
  const { command, args } = fakeStdio(...flags);
  return {
    name,
    command,
    args,
    env: Object.entries(env).map(([key, value]) => ({ name: key, value })),
  };
}

/** The host environment the server sees: the real PATH (a grandchild's `sleep` needs it). */
export function hostPath(): Record<string, string> {
  return { PATH: process.env.PATH ?? "/usr/bin:/bin" };
}

/** A scripted server under test; disposing of it disconnects and kills marked leftovers. */
export interface McpTestServer extends AsyncDisposable {
  readonly server: MemoryServer;
  /** Every `session/request_permission` params received, in order. */
  readonly asked: Array<{ toolCall: Update; options: Array<{ optionId: string; kind: string }> }>;
  /** Disconnects (like stdin EOF) once; later calls and disposal do nothing more. */
  disconnect(): Promise<void>;
}

/** Options for {@link startMcpServer}. */
export interface McpStartOptions extends StartOptions {
  /** How permission requests are answered (an option id). @default "allow_once" */
  readonly answer?: string;
  /** Markers whose processes are killed on disposal, so a failing test leaves nothing behind. */
  readonly markers?: readonly string[];
}

/**
 * Starts an in-memory server with the scripted model and initializes the client.
 *
 * @param options Script, config, env, data directory, permission answer
 */
export async function startMcpServer(options: McpStartOptions = {}): Promise<McpTestServer> {
  const server = startServer({
    ...options,
    config: { model: "scripted", ...options.config },
  });
  const asked: McpTestServer["asked"] = [];
  server.client.handlers.set("session/request_permission", (params) => {
    asked.push(params as McpTestServer["asked"][number]);
    return { outcome: { outcome: "selected", optionId: options.answer ?? "allow_once" } };
  });
  await server.client.initialize();
  let disconnected: Promise<void> | undefined;
  const disconnect = (): Promise<void> => disconnected ??= server.disconnect();
  return {
    server,
    asked,
    disconnect,
    async [Symbol.asyncDispose](): Promise<void> {
      await disconnect();
      for (const marker of options.markers ?? []) await killProcessesWithMarker(marker);
    },
  };
}

/** The updates of one session. */
export function updatesOf(server: MemoryServer, sessionId: string): Update[] {
  return server.client.updates(sessionId).map(({ update }) => update);
}

/** The tool call updates (`tool_call` and `tool_call_update`) of one tool call. */
export function toolUpdates(server: MemoryServer, sessionId: string, id: string): Update[] {
  return updatesOf(server, sessionId).filter((update) => update.toolCallId === id);
}

/** The last update of one tool call. */
export function lastToolUpdate(server: MemoryServer, sessionId: string, id: string): Update {
  const last = toolUpdates(server, sessionId, id).at(-1);
  if (last === undefined) throw new Error(`no update for tool call ${id}`);
  return last;
}

/** The text blocks of a tool call update's content, joined. */
export function contentText(update: Update): string {
  const content = (update.content ?? []) as Array<{ content?: { type: string; text?: string } }>;
  return content.map((item) => item.content?.text ?? "").join("\n");
}

/** The records of a session in a JSONL data directory (its header left out). */
export async function recordsOf(dataDir: string, sessionId: string): Promise<Update[]> {
  const text = await readFile(join(dataDir, "sessions", `${sessionId}.jsonl`), "utf8");
  return text.split("\n").filter((line) => line.trim() !== "").slice(1).map((line) =>
    JSON.parse(line) as Update
  );
}

/** The index of the response frame to request `id`. */
export function responseIndex(server: MemoryServer, id: number): number {
  return server.client.frames.findIndex((frame) =>
    frame.id === id && frame.method === undefined && ("result" in frame || "error" in frame)
  );
}

/** The index of the first `available_commands_update` for `sessionId` after frame `from`. */
export function commandsUpdateIndex(server: MemoryServer, sessionId: string, from = 0): number {
  return server.client.frames.findIndex((frame, index) => {
    if (index < from || frame.method !== "session/update") return false;
    const params = frame.params as { sessionId: string; update: Update };
    return params.sessionId === sessionId &&
      params.update.sessionUpdate === "available_commands_update";
  });
}
