/**
 * The MCP stdio transport over the host's processes: the server runs in its own process group
 * (so its whole tree is stopped with it, and the host's supervisor covers it even when this
 * process is killed), messages are newline-delimited JSON on its stdin and stdout.
 *
 * @module
 */
import type { JSONRPCMessage, Transport } from "@modelcontextprotocol/client";
import { deserializeMessage, serializeMessage } from "@modelcontextprotocol/client";
import { exitsWithin, StreamTail } from "../host/child_output.ts";
import { CHILD_INHERITED_ENV } from "../host/child_env.ts";
import type { HostProcesses, PipedHostProcess } from "../host/host.ts";
import { concatBytes } from "../util/concat_bytes.ts";

/** The most bytes of one message line; a server that writes more without a newline is cut off. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

/** Most milliseconds of message handling before the reader yields to the event loop. */
const SLICE_MS = 4;

/** The most bytes of a server's stderr kept, to explain a failed start. */
const STDERR_TAIL_BYTES = 4096;

/** What {@link HostStdioTransport} starts. */
export interface StdioTransportOptions {
  readonly processes: Pick<HostProcesses, "spawn">;
  /** Absolute path of the executable. */
  readonly command: string;
  readonly args: readonly string[];
  /**
   * Variables on top of the host's that every child program inherits (`CHILD_INHERITED_ENV`:
   * `HOME`, `PATH`, `LANG`, `LC_*`, …, never the server's secrets).
   */
  readonly env: Readonly<Record<string, string>>;
  /** The server's working directory (the session's cwd). */
  readonly cwd: string;
  /**
   * Milliseconds a server has to exit once its stdin is closed: after a quarter of it, its group
   * gets SIGTERM; at its end, SIGKILL. @default {2000}
   */
  readonly graceMs?: number;
}

/** Why a server's process ended: its exit code or signal, and the tail of its stderr. */
export interface ExitInfo {
  readonly code: number | null;
  readonly signal: string | null;
  readonly stderr: string;
}

/**
 * An MCP `Transport` over a child process the host started. Closing it ends the server's input,
 * then, if it is still running, sends its whole process group SIGTERM and at last SIGKILL; it
 * resolves once the host has also ended the server's descendants that left the group (`setsid`,
 * found by the server's marker, see `NodeProcesses.spawn`), and only those.
 */
export class HostStdioTransport implements Transport {
  readonly #options: StdioTransportOptions;
  #child: PipedHostProcess | undefined;
  #writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  readonly #stderr = new StreamTail(STDERR_TAIL_BYTES);
  #exit: ExitInfo | undefined;
  #closed: Promise<void> | undefined;
  /** When the current slice of message handling began (see {@link SLICE_MS}). */
  #sliceStart = performance.now();
  /** Whether a tool list change was passed on in the current slice. */
  #toolsChangedInSlice = false;
  /** The spawn, while and after it runs: closing waits for it, so no process escapes a close. */
  #starting: Promise<void> | undefined;

  /** Told of every message the server sends. */
  onmessage?: (message: JSONRPCMessage) => void;
  /** Told of unreadable output and write failures. */
  onerror?: (error: Error) => void;
  /** Told once, when the process has ended or the transport was closed. */
  onclose?: () => void;

  /** @param options What to start and where */
  constructor(options: StdioTransportOptions) {
    this.#options = options;
  }

  /** The process id, once started. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** How the process ended, once it has. */
  get exit(): ExitInfo | undefined {
    return this.#exit;
  }

  /**
   * How the process ended, waiting at most `ms` for it to end: a start that failed on a write to
   * a server that was exiting (EPIPE) then names the exit that caused it.
   *
   * @param ms The longest wait
   * @returns The exit, or `undefined` while it runs
   */
  async exitWithin(ms: number): Promise<ExitInfo | undefined> {
    const child = this.#child;
    if (child && !this.#exit) await exitsWithin(child, ms);
    return this.#exit;
  }

  /** The last few KiB the server wrote on stderr. */
  get stderrTail(): string {
    return this.#stderr.text;
  }

  /** Starts the process; rejects when it cannot be started. */
  start(): Promise<void> {
    if (this.#starting) return Promise.reject(new Error("the transport is already started"));
    this.#starting = this.#start();
    return this.#starting;
  }

  async #start(): Promise<void> {
    const { processes, command, args, env, cwd } = this.#options;
    const child = await processes.spawn(command, args, {
      cwd,
      env,
      inheritEnv: CHILD_INHERITED_ENV,
      stdin: "piped",
    });
    this.#child = child;
    this.#writer = child.stdin.getWriter();
    // A write to a server that already exited must not surface as an unhandled rejection.
    this.#writer.closed.catch(() => {});
    void this.#stderr.read(child.stderr);
    void this.#readMessages(child.stdout);
    void child.exited.then(({ code, signal }) => {
      this.#exit = { code, signal, stderr: this.#stderr.text };
      this.onclose?.();
    });
  }

  /**
   * Writes one message.
   *
   * @param message The JSON-RPC message
   */
  async send(message: JSONRPCMessage): Promise<void> {
    const writer = this.#writer;
    if (!writer || this.#exit) throw new Error("the MCP server is not running");
    await writer.write(new TextEncoder().encode(serializeMessage(message)));
  }

  /** Ends the server: closes its input, waits for the grace period, then kills its group. */
  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async #close(): Promise<void> {
    // A close during the spawn ends the process the spawn makes.
    await this.#starting?.catch(() => {});
    const child = this.#child;
    if (!child) return;
    // As MCP's stdio transport says: end its input, then SIGTERM, then SIGKILL. Signals go to
    // the whole group: a server's own children (a `npx` wrapper's node) must not outlive it.
    await this.#writer?.close().catch(() => {});
    const graceMs = this.#options.graceMs ?? 2000;
    if (!(await exitsWithin(child, graceMs / 4))) {
      child.kill("SIGTERM");
      if (!(await exitsWithin(child, graceMs * 3 / 4))) child.kill("SIGKILL");
    }
    await child.exited;
  }

  async #readMessages(stdout: ReadableStream<Uint8Array>): Promise<void> {
    // The bytes of the line being read, in the chunks they came in: each chunk is searched once
    // and the line joined once, so a long line costs time in proportion to its length.
    let pending: Uint8Array[] = [];
    let pendingBytes = 0;
    let overlong = false;
    try {
      for await (const chunk of stdout) {
        let start = 0;
        let newline = chunk.indexOf(NEWLINE, start);
        while (newline >= 0) {
          if (!overlong) {
            pending.push(chunk.subarray(start, newline));
            this.#deliver(decodeLine(pending));
            // A flood of messages must not hold the event loop: other sessions go on.
            if (performance.now() - this.#sliceStart >= SLICE_MS) {
              await new Promise<void>((resolve) => setTimeout(resolve, 0));
              this.#sliceStart = performance.now();
              this.#toolsChangedInSlice = false;
            }
          }
          pending = [];
          pendingBytes = 0;
          overlong = false;
          start = newline + 1;
          newline = chunk.indexOf(NEWLINE, start);
        }
        if (start >= chunk.length || overlong) continue;
        pendingBytes += chunk.length - start;
        if (pendingBytes > MAX_LINE_BYTES) {
          // A broken or hostile server: the message is lost, so its call fails, and the server
          // is stopped (the next call starts it again).
          overlong = true;
          pending = [];
          this.onerror?.(new Error(`the MCP server wrote a line over ${MAX_LINE_BYTES} bytes`));
          this.#child?.kill("SIGKILL");
          continue;
        }
        // Copied: the stream may reuse the chunk's memory.
        pending.push(chunk.slice(start));
      }
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  #deliver(line: string): void {
    const text = line.endsWith("\r") ? line.slice(0, -1) : line;
    if (text.trim() === "") return;
    if (this.#ignorable(text)) return;
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(text);
    } catch {
      // Servers that print banners on stdout are common; the line is not a message.
      this.onerror?.(new Error(`the MCP server wrote a line that is not JSON-RPC: ${cut(text)}`));
      return;
    }
    this.onmessage?.(message);
  }

  /**
   * Whether a line is a notification nothing here uses (logs, progress we never asked for) or a
   * repeat of a tool list change already passed on in this slice: dropped before the client
   * library's (costly) validation, so a flood of them stays cheap.
   */
  #ignorable(text: string): boolean {
    if (!text.includes('"notifications/')) return false;
    let method: unknown;
    try {
      const parsed = JSON.parse(text) as { method?: unknown; id?: unknown };
      if (parsed.id !== undefined) return false;
      method = parsed.method;
    } catch {
      return false;
    }
    if (method === "notifications/message" || method === "notifications/progress") return true;
    if (method !== "notifications/tools/list_changed") return false;
    if (this.#toolsChangedInSlice) return true;
    this.#toolsChangedInSlice = true;
    return false;
  }
}

/** The byte of a line end. */
const NEWLINE = 0x0a;

const decoder = new TextDecoder();

/** One line from its chunks, as text. */
function decodeLine(chunks: readonly Uint8Array[]): string {
  return decoder.decode(concatBytes(chunks));
}

function cut(text: string): string {
  return JSON.stringify(text.length > 120 ? `${text.slice(0, 120)}…` : text);
}
