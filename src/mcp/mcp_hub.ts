/**
 * The MCP servers of one session: connected together at its start, their tools in its tool set
 * (kept current when a server's list changes), their prompts as its slash commands, all closed
 * when it ends. This module and those it imports are loaded only for sessions with MCP servers.
 *
 * @module
 */
import type { GetPromptResult, Prompt } from "@modelcontextprotocol/client";
import type { LlmContentPart } from "../llm/provider.ts";
import { PromptContentError } from "../util/prompt_content_error.ts";
import type { SessionCommand, SessionCommands } from "../tools/session_commands.ts";
import type { ToolSet } from "../tools/tool_set.ts";
import { McpCallError, McpConnection, type McpConnectionOptions } from "./mcp_connection.ts";
import type { McpServerSpec } from "./mcp_declarations.ts";
import { McpStartError } from "./mcp_errors.ts";
import { type ProgramLookup, programPath } from "./program_path.ts";
import { mcpTool, sessionToolName } from "./mcp_tool.ts";
import type { Telemetry } from "../telemetry/telemetry.ts";

/** What {@link McpHub.connect} needs. */
export interface McpHubOptions extends Omit<McpConnectionOptions, "spec" | "onToolsChanged"> {
  /** The validated declarations, in the client's order. */
  readonly servers: readonly McpServerSpec[];
  /** Aborting stops the start (the servers started are closed). */
  readonly signal: AbortSignal;
  /**
   * Whether one server that does not start fails them all (the others are closed and its error
   * thrown); else the hub is made of those that started and {@link McpHub.failures} names the
   * others. @default {false}
   */
  readonly strict?: boolean;
  /** Where a bare program name is looked up (the server's own `PATH`); absent: none is found. */
  readonly programs?: ProgramLookup;
  /** Counts each server's start and how it came out. @default {nothing counted} */
  readonly telemetry?: Telemetry;
}

/** A prompt offered as a command. */
interface PromptCommand {
  readonly command: SessionCommand;
  readonly server: McpConnection;
  readonly prompt: Prompt;
}

/**
 * A session's connected MCP servers.
 *
 * @example Connecting none is connecting nothing
 * ```ts
 * import assert from "node:assert/strict";
 * import { NodeHost } from "../host/node_host.ts";
 * import { nullLogger } from "../log/logger.ts";
 * import { McpHub } from "./mcp_hub.ts";
 * const hub = await McpHub.connect({
 *   servers: [],
 *   processes: new NodeHost({}),
 *   cwd: "/",
 *   logger: nullLogger,
 *   logFields: {},
 *   startTimeoutMs: 1000,
 *   callTimeoutMs: 1000,
 *   signal: new AbortController().signal,
 * });
 * assert.deepEqual(hub.list(), []);
 * await hub.close();
 * ```
 */
export class McpHub implements SessionCommands {
  readonly #servers: readonly McpConnection[];
  readonly #failures: readonly McpStartError[];
  #toolSet: ToolSet | undefined;

  private constructor(servers: readonly McpConnection[], failures: readonly McpStartError[]) {
    this.#servers = servers;
    this.#failures = failures;
  }

  /**
   * Connects every server at once, each within the start timeout. A stdio server's bare program
   * name is looked up on `options.programs.path` first. When one fails: with `strict`, the others
   * are closed and the failure is thrown; else the hub holds the others and
   * {@link McpHub.failures} lists it.
   *
   * @param options The servers and their limits
   * @returns The hub
   * @throws {McpStartError} With `strict`, for the first server (in the client's order) that did
   *   not start
   */
  static async connect(options: McpHubOptions): Promise<McpHub> {
    // The hub exists once every server is connected; a change announced before then is read in
    // `attach`.
    const made: { hub?: McpHub } = {};
    const { servers, signal, strict, programs, telemetry, ...connection } = options;
    const settled = await Promise.allSettled(servers.map(async (declared) => {
      const start = telemetry?.mcpServerStart();
      try {
        const spec = await locateProgram(declared, programs, connection);
        const opened = await McpConnection.open({
          ...connection,
          spec,
          onToolsChanged: () => {
            if (made.hub) made.hub.#sync();
          },
        }, signal);
        start?.end("started");
        return opened;
      } catch (error) {
        start?.end(signal.aborted ? "cancelled" : "failed");
        throw error;
      }
    }));
    const failures = settled.flatMap((result, index) =>
      result.status === "rejected" ? [startError(result.reason, servers[index]?.name ?? "")] : []
    );
    if (strict && failures.length > 0) {
      await Promise.all(
        settled.map((result) => result.status === "fulfilled" ? result.value.close() : undefined),
      );
      throw failures[0];
    }
    made.hub = new McpHub(
      settled.flatMap((result) => result.status === "fulfilled" ? [result.value] : []),
      failures,
    );
    return made.hub;
  }

  /** The servers that did not start (without `strict`), in the client's order. */
  get failures(): readonly McpStartError[] {
    return this.#failures;
  }

  /**
   * Adds every server's tools to a session's tool set (as source `mcp:<server>`), and keeps them
   * current when a server's list changes.
   *
   * @param toolSet The session's tools
   */
  attach(toolSet: ToolSet): void {
    this.#toolSet = toolSet;
    this.#sync();
  }

  /**
   * The servers' prompts, as commands `mcp__<server>__<prompt>`.
   *
   * @returns The commands
   */
  list(): readonly SessionCommand[] {
    return this.#prompts().map(({ command }) => command);
  }

  /**
   * The user turn a prompt command makes: its input fills the prompt's arguments (one argument
   * takes all of it; with several, words fill them in order and the last takes the rest), then
   * the prompt's messages become the user message (followed by the input, for a prompt without
   * arguments).
   *
   * @param name The command
   * @param input What followed it
   * @param signal Aborted when the prompt is cancelled
   * @returns The user message
   * @throws {PromptContentError} When a required argument is missing or the server failed
   */
  async expand(
    name: string,
    input: string,
    signal: AbortSignal,
  ): Promise<readonly LlmContentPart[]> {
    const found = this.#prompts().find(({ command }) => command.name === name);
    if (!found) throw new PromptContentError(`prompt: /${name} is not a command`);
    const { prompt, server } = found;
    const args = promptArguments(prompt, input);
    let result: GetPromptResult;
    try {
      result = await server.getPrompt(prompt.name, args, signal);
    } catch (error) {
      if (error instanceof McpCallError && error.cancelled) throw error;
      throw new PromptContentError(
        `prompt: /${name} failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    // A prompt without arguments has no place for the words after the command: they follow it.
    const extra = (prompt.arguments ?? []).length === 0 && input !== "" ? input : undefined;
    const parts = promptParts(result, extra);
    if (parts.length === 0) {
      throw new PromptContentError(`prompt: /${name} gave no messages`);
    }
    return parts;
  }

  /** Closes every server at once (never rejects). */
  async close(): Promise<void> {
    await Promise.all(this.#servers.map((server) => server.close()));
  }

  /** Puts every server's current tools in the tool set. */
  #sync(): void {
    const toolSet = this.#toolSet;
    if (!toolSet) return;
    for (const server of this.#servers) {
      const source = `mcp:${server.name}`;
      toolSet.remove(source);
      toolSet.add({ id: source, tools: server.tools.map((tool) => mcpTool(server, tool)) });
    }
  }

  #prompts(): PromptCommand[] {
    return this.#servers.flatMap((server) =>
      server.prompts.map((prompt) => {
        const names = (prompt.arguments ?? []).map((argument) =>
          argument.required ? `<${argument.name}>` : `[${argument.name}]`
        );
        const command: SessionCommand = {
          name: sessionToolName(server.name, prompt.name),
          description: prompt.description ?? prompt.title ?? `MCP prompt ${prompt.name}`,
          ...(names.length > 0 ? { hint: names.join(" ") } : {}),
        };
        return { command, server, prompt };
      })
    );
  }
}

/** A prompt's arguments from a command's input. */
function promptArguments(prompt: Prompt, input: string): Record<string, string> {
  const declared = prompt.arguments ?? [];
  const args: Record<string, string> = Object.create(null);
  let rest = input;
  declared.forEach((argument, index) => {
    if (rest === "") return;
    if (index === declared.length - 1) {
      args[argument.name] = rest;
      rest = "";
      return;
    }
    const match = /^(\S+)\s*([\s\S]*)$/.exec(rest);
    args[argument.name] = match?.[1] ?? rest;
    rest = match?.[2] ?? "";
  });
  const missing = declared.filter((argument) => argument.required && !(argument.name in args));
  if (missing.length > 0) {
    throw new PromptContentError(
      `prompt: the command needs ${missing.map((argument) => argument.name).join(", ")} (${
        declared.map((argument) => argument.required ? `<${argument.name}>` : `[${argument.name}]`)
          .join(" ")
      })`,
    );
  }
  return { ...args };
}

/**
 * A prompt's messages as one user message: roles named when the prompt has other than user,
 * `extra` text last.
 */
function promptParts(result: GetPromptResult, extra?: string): LlmContentPart[] {
  const parts: LlmContentPart[] = [];
  const labelled = result.messages.some((message) => message.role !== "user");
  for (const message of result.messages) {
    const content = message.content;
    const label = labelled ? `${message.role}: ` : "";
    switch (content.type) {
      case "text":
        parts.push({ type: "text", text: `${label}${content.text}` });
        break;
      case "image":
        if (label) parts.push({ type: "text", text: label.trim() });
        parts.push({ type: "image", mimeType: content.mimeType, data: content.data });
        break;
      case "resource": {
        const resource = content.resource;
        parts.push({
          type: "text",
          text: "text" in resource && typeof resource.text === "string"
            ? `${label}[resource: ${resource.uri}]\n${resource.text}`
            : `${label}[resource: ${resource.uri}]`,
        });
        break;
      }
      case "resource_link":
        parts.push({ type: "text", text: `${label}[resource: ${content.name} ${content.uri}]` });
        break;
      default:
        parts.push({ type: "text", text: `${label}[${content.type}]` });
    }
  }
  if (extra !== undefined) parts.push({ type: "text", text: extra });
  return joinTexts(parts);
}

/**
 * Neighbouring text parts as one, a blank line apart: a wire that concatenates a user message's
 * text parts (OpenAI chat) would otherwise run one message into the next.
 */
function joinTexts(parts: readonly LlmContentPart[]): LlmContentPart[] {
  const joined: LlmContentPart[] = [];
  for (const part of parts) {
    const previous = joined.at(-1);
    if (part.type === "text" && previous?.type === "text") {
      joined[joined.length - 1] = { type: "text", text: `${previous.text}\n\n${part.text}` };
    } else {
      joined.push(part);
    }
  }
  return joined;
}

/**
 * The declaration with its stdio program's absolute path (a bare name looked up on the server's
 * `PATH`, the path found logged).
 */
async function locateProgram(
  spec: McpServerSpec,
  programs: ProgramLookup | undefined,
  connection: Pick<McpConnectionOptions, "logger" | "logFields">,
): Promise<McpServerSpec> {
  if (spec.transport !== "stdio" || spec.command.startsWith("/")) return spec;
  let path: string;
  try {
    path = await programPath(
      spec.command,
      programs ?? { path: undefined, stat: () => Promise.resolve(undefined) },
    );
  } catch (error) {
    throw new McpStartError(spec.name, (error as Error).message);
  }
  connection.logger.info("MCP server program found on PATH", {
    ...connection.logFields,
    server: spec.name,
    command: spec.command,
    path,
  });
  return { ...spec, command: path };
}

/** What a server that did not start is reported as. */
function startError(reason: unknown, server: string): McpStartError {
  return reason instanceof McpStartError
    ? reason
    : new McpStartError(server, reason instanceof Error ? reason.message : String(reason));
}
