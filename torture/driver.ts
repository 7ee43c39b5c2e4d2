/**
 * The torture suite's driver: real server processes on a runtime, spoken to in raw NDJSON (so a
 * scenario can send malformed frames and several messages in one write). The hunt for what a
 * server left behind is the kit's (`tests/_helpers/marked_processes.ts`).
 *
 * @module
 */
import type { ChildProcess } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import {
  type AcpTestClient,
  type Frame as KitFrame,
  spawnAgent,
  type StdioAgent,
} from "../tests/_helpers/acp_client.ts";
import { findBun, findDeno } from "../tests/_helpers/runtime_binaries.ts";

/** The repository root. */
export const ROOT: string = fileURLToPath(new URL("../", import.meta.url));

/** A JSON-RPC frame as parsed from one line. */
export type Frame = KitFrame;

/** The name of a runtime the server runs on. */
export type RuntimeName = "deno" | "node" | "bun";

/** A runtime and the command line that starts the server on it. */
export interface RuntimeSpec {
  readonly name: RuntimeName;
  readonly command: string;
  readonly args: readonly string[];
}

/**
 * Deno and Bun run the source; Node.js runs the bundle (`deno task build`). The real platform
 * binaries, in whichever layout npm or Deno installed them.
 */
export const RUNTIME_SPECS: readonly RuntimeSpec[] = [
  { name: "deno", command: findDeno(ROOT), args: ["run", "-A", `${ROOT}mod.ts`] },
  { name: "node", command: "node", args: [`${ROOT}dist/cli.js`] },
  { name: "bun", command: findBun(ROOT), args: [`${ROOT}mod.ts`] },
];

/** The environment variable that marks every process a scenario's servers start. */
export const MARKER_VARIABLE = "ACP_TORTURE_MARKER";

/** Options for {@link Server.start}. */
export interface ServerOptions {
  readonly dataDir: string;
  /** The server's working directory. */
  readonly cwd: string;
  /** Carried in the environment of the server and of everything it starts. */
  readonly marker: string;
  readonly args?: readonly string[];
  readonly env?: Record<string, string>;
  /** Arguments before `--data-dir`: a subcommand such as `serve`. */
  readonly command?: readonly string[];
  /** How much of stderr is kept, in characters. @default {200000} */
  readonly stderrLimit?: number;
}

/** Answers an agent-to-client request: a value becomes `result`, a string is written raw. */
export type RequestAnswerer = (
  frame: Frame,
  server: Server,
) => { readonly result: unknown } | { readonly raw: string } | undefined;

/** The well-formed answer that allows once. */
export const ALLOW_ONCE = { outcome: { outcome: "selected", optionId: "allow_once" } };

/**
 * A real server process with the kit's client on its stdio ({@link spawnAgent}): the torture
 * scenarios' view of it, with raw writes, frames built to be sent raw, and waits that end when
 * the process exits.
 */
export class Server {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  readonly marker: string;
  readonly runtime: RuntimeName;
  /** Set when the scenario killed or signalled it on purpose. */
  expectedSignal: string | undefined;
  /** How agent-to-client requests are answered; by default permission is allowed once. */
  answer: RequestAnswerer = (frame) =>
    frame.method === "session/request_permission" ? { result: ALLOW_ONCE } : undefined;
  readonly #agent: StdioAgent;
  readonly #client: AcpTestClient;

  private constructor(runtime: RuntimeSpec, options: ServerOptions) {
    this.marker = options.marker;
    this.runtime = runtime.name;
    this.#agent = spawnAgent(
      runtime.command,
      [
        ...runtime.args,
        ...(options.command ?? []),
        "--data-dir",
        options.dataDir,
        ...(options.args ?? []),
      ],
      {
        cwd: options.cwd,
        env: {
          ...process.env,
          NO_COLOR: "1",
          [MARKER_VARIABLE]: options.marker,
          ...options.env,
        },
      },
      {
        // Far from the ids malformed frames use, so that their answers are never taken for ours.
        client: { checkSchema: false, firstId: 10_000_000 },
        stderrLimit: options.stderrLimit ?? 200_000,
        // The waits below are for conditions that stay true; floods make per-frame checks dear.
        wakePerRead: true,
      },
    );
    this.child = this.#agent.child;
    this.exited = this.#agent.exited;
    this.#client = this.#agent.client;
    this.#client.onRequest = (frame) => this.#onRequest(frame);
  }

  /** Spawns a server on `runtime`. */
  static start(runtime: RuntimeSpec, options: ServerOptions): Server {
    return new Server(runtime, options);
  }

  /** Every frame received, in order. */
  get frames(): Frame[] {
    return this.#client.frames;
  }

  /** Every stdout line, in order (raw). */
  get lines(): string[] {
    return this.#agent.lines;
  }

  /** Lines on stdout that are not a JSON object (stdout must carry frames only). */
  get impure(): string[] {
    return this.#agent.impure;
  }

  /** The exit code and signal, once it exited. */
  get exit(): { code: number | null; signal: string | null } | undefined {
    return this.#agent.exit;
  }

  /** The process id. */
  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** What the server wrote to stderr (the first 200 KB, or `stderrLimit`). */
  get stderr(): string {
    return this.#agent.stderr();
  }

  /**
   * Waits for the `listening on <url>` line of `serve --http`; resolves with the URL, or
   * undefined when the server exited first or `timeoutMs` passed.
   */
  async listening(timeoutMs = 30_000): Promise<string | undefined> {
    const url = (): string | undefined => /listening on (http:\/\/\S+)/.exec(this.stderr)?.[1];
    await this.waitFor(() => url() !== undefined, timeoutMs);
    return url();
  }

  #onRequest(frame: Frame): boolean {
    const answer = this.answer(frame, this);
    if (answer === undefined) return false;
    if ("raw" in answer) void this.writeRaw(answer.raw);
    else void this.write({ jsonrpc: "2.0", id: frame.id, result: answer.result });
    return true;
  }

  /** Writes text to stdin as is (one write). */
  writeRaw(text: string): Promise<void> {
    return this.#agent.writeRaw(text);
  }

  /** Writes messages as NDJSON, all of them in ONE write. */
  write(...messages: unknown[]): Promise<void> {
    return this.writeRaw(messages.map((message) => JSON.stringify(message) + "\n").join(""));
  }

  /** A request frame with a fresh id (not sent). */
  request(method: string, params?: unknown): { id: number; frame: Frame } {
    return this.#client.nextRequest(method, params);
  }

  /** A notification frame (not sent). */
  notification(method: string, params?: unknown): Frame {
    return this.#client.notification(method, params);
  }

  /** Sends a request alone and resolves with its response frame (undefined on timeout or exit). */
  async call(method: string, params?: unknown, timeoutMs = 30_000): Promise<Frame | undefined> {
    const { id, frame } = this.request(method, params);
    await this.write(frame);
    return this.response(id, timeoutMs);
  }

  /** Sends a request; resolves with its result, throwing on an error, a timeout or an exit. */
  async result<T = Record<string, unknown>>(
    method: string,
    params?: unknown,
    timeoutMs = 30_000,
  ): Promise<T> {
    const frame = await this.call(method, params, timeoutMs);
    if (frame === undefined) {
      throw new Error(`Cannot ${method}: no answer within ${timeoutMs} ms${this.#tail()}`);
    }
    if ("error" in frame) {
      throw new Error(`Cannot ${method}: ${JSON.stringify(frame.error)}`);
    }
    return frame.result as T;
  }

  #tail(): string {
    const exit = this.exit ? ` (exited ${JSON.stringify(this.exit)})` : "";
    return `${exit}\n${this.stderr.slice(-600)}`;
  }

  /** The index in {@link frames} of the response to `id`, or -1. */
  responseIndex(id: number | string): number {
    return this.#client.responseIndex(id);
  }

  /** Waits for the response to `id`; undefined on timeout or exit. */
  response(id: number | string, timeoutMs = 30_000): Promise<Frame | undefined> {
    return this.#client.response(id, timeoutMs, () => this.exit !== undefined);
  }

  /** Resolves true once `predicate` holds, false on timeout or when the process exits first. */
  waitFor(predicate: () => boolean, timeoutMs = 30_000): Promise<boolean> {
    return this.#client.waitUntil(predicate, timeoutMs, () => this.exit !== undefined);
  }

  /** The `session/update` params received for a session, from frame index `from` on. */
  updates(sessionId: string, from = 0): Array<Record<string, unknown>> {
    return this.frames.slice(from)
      .filter((frame) =>
        frame.method === "session/update" &&
        (frame.params as { sessionId?: string }).sessionId === sessionId
      )
      .map((frame) => (frame.params as { update: Record<string, unknown> }).update);
  }

  /** Whether the server still answers a request (an unknown method) within `timeoutMs`. */
  async answers(timeoutMs = 10_000): Promise<boolean> {
    if (this.exit) return false;
    const frame = await this.call("torture/ping", {}, timeoutMs);
    return frame !== undefined;
  }

  /** initialize with protocol version 1. */
  initialize(capabilities: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    return this.result("initialize", {
      protocolVersion: 1,
      clientCapabilities: capabilities,
      clientInfo: { name: "acp-harness-torture", version: "0" },
    });
  }

  /** Opens a session; returns its id. */
  async newSession(cwd: string, extra: Record<string, unknown> = {}): Promise<string> {
    const result = await this.result<{ sessionId: string }>("session/new", {
      cwd,
      mcpServers: [],
      ...extra,
    });
    return result.sessionId;
  }

  /** A `session/prompt` request with one text block (not sent). */
  promptRequest(sessionId: string, text: string): { id: number; frame: Frame } {
    return this.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
  }

  /** Sends a signal (marks it expected). */
  kill(signal: "SIGKILL" | "SIGTERM" | "SIGINT"): void {
    this.expectedSignal = signal;
    try {
      process.kill(this.pid, signal);
    } catch {
      // already gone
    }
  }

  /** Closes stdin. */
  end(): void {
    this.#agent.end();
  }

  /** Waits up to `ms` for the exit; false when still running. */
  async exitWithin(ms: number): Promise<boolean> {
    if (this.exit) return true;
    await this.waitFor(() => this.exit !== undefined, ms);
    return this.exit !== undefined;
  }

  /**
   * Ends the server by closing stdin; SIGKILLs it when it has not exited within `ms`.
   * Returns whether it exited by itself.
   */
  async stop(ms = 10_000): Promise<boolean> {
    this.end();
    if (await this.exitWithin(ms)) return true;
    this.kill("SIGKILL");
    await this.exited;
    return false;
  }

  /** Why this server counts as crashed, or undefined. */
  crash(): string | undefined {
    if (this.impure.length > 0) return `non-JSON line on stdout: ${this.impure[0]!.slice(0, 300)}`;
    if (!this.exit) return undefined;
    if (this.expectedSignal === "SIGKILL") return undefined;
    if (this.exit.code !== 0) {
      return `exited ${JSON.stringify(this.exit)}: ${this.stderr.slice(-400)}`;
    }
    return undefined;
  }
}

/** Writes a script for the `scripted` model and returns its path. */
export async function writeScript(dir: string, name: string, steps: unknown): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = join(dir, name);
  await writeFile(file, JSON.stringify(steps));
  return file;
}

/** A small deterministic random generator (mulberry32). */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
