/**
 * The HTTP part of `bench/main.ts`: ours started as `serve --http --port 0` on each runtime (the
 * address read from the `listening on <url>` line on stderr), driven over the RFD profile `/acp`
 * by lean clients in this process (`fetch` for requests and each SSE stream read off a socket of
 * its own, Deno's WebSocket, and the same line reader over stdio):
 *
 * - update throughput: the throughput section's prompt (one script step of many text deltas, with
 *   `--stream`) over SSE on one connection and over WebSocket, against the same prompt over stdio,
 *   prompt by prompt;
 * - many connections at once, each with one session whose turn streams text deltas from the fake
 *   OpenAI-compatible server of `tests/_helpers/fake_llm_server.ts` (in this process): the
 *   latency from the fake server writing a delta to the client receiving it, the server's peak
 *   RSS, the wall time;
 * - the resident memory each idle connection (one session, both SSE streams open) takes;
 * - whether the HTTP code is in the stdio start-up graph (`deno info` of `mod.ts`, the esbuild
 *   metafile of `dist/cli.js`), and on Node.js spawn → `initialize` of `dist/cli.js` against the
 *   same bundle without the HTTP transport.
 *
 * `bench/main.ts` owns the processes (it kills whatever is left) and the report frame; this
 * module takes the measurements and renders its section.
 *
 * @module
 */
import { bundleStartupGraph, sourceStartupGraph } from "./startup_graph.ts";
import type { ChildProcess } from "node:child_process";
import {
  type SseItem,
  type SseResponse,
  startFakeLlmServer,
} from "../tests/_helpers/fake_llm_server.ts";
import { concatBytes } from "../src/util/concat_bytes.ts";

/** A command line: what `bench/main.ts` spawns. */
export interface HttpCommandLine {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/** What this module needs from `bench/main.ts`, for one runtime. */
export interface HttpBenchHost {
  /** The repository root (the sessions' cwd). */
  readonly root: string;
  /** A scratch directory (scripts, configs and data directories go in it, removed after). */
  readonly tmp: string;
  /** Ours on the runtime with these arguments (after the entry point). */
  ours(args: readonly string[], env?: Readonly<Record<string, string>>): HttpCommandLine;
  /** Spawns a child with piped stdio; the caller kills it if it is left running. */
  spawn(line: HttpCommandLine): ChildProcess;
}

/** Targets: the throughput ratio is the issue's; the others were set from measured figures. */
export const HTTP_TARGETS = {
  /** SSE notifications/s over stdio's, on one connection. */
  throughputRatio: 0.5,
  /** p99 of the model's delta → the client's update, with every connection streaming (ms). */
  p99LatencyMs: 400,
  /** Resident memory per idle connection with one session and both streams open (KiB). */
  idleKibPerConnection: 512,
} as const;

/** How much work one runtime's HTTP benchmark does. */
export interface HttpBenchCounts {
  /** Text deltas of the throughput prompt (the throughput section's). */
  readonly chunks: number;
  /** Measured throughput prompts per transport (after one warm-up each). */
  readonly throughputRuns: number;
  /** Connections streaming a turn at once. */
  readonly connections: number;
  /** Text deltas per streamed turn. */
  readonly deltas: number;
  /** The fake server's pause before each SSE item of a streamed turn (ms). */
  readonly chunkDelayMs: number;
  /** Idle connections opened for the memory figure. */
  readonly idleConnections: number;
  /** Start-ups of each Node.js bundle (after a warm-up). */
  readonly startupRuns: number;
}

/**
 * The counts for a full or a `--quick` run.
 *
 * @param quick Whether the run is a smoke test
 * @param chunks The throughput section's text deltas per prompt
 * @returns The counts
 */
export function httpBenchCounts(quick: boolean, chunks: number): HttpBenchCounts {
  return {
    chunks,
    throughputRuns: quick ? 1 : 5,
    connections: quick ? 50 : 200,
    deltas: 20,
    chunkDelayMs: 20,
    idleConnections: quick ? 50 : 200,
    startupRuns: quick ? 3 : 25,
  };
}

/** Median, min and max of some samples. */
export interface HttpStats {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

/** One runtime's HTTP figures. */
export interface HttpResult {
  readonly throughput: {
    /** Notifications per second, median over the measured prompts. */
    readonly stdio: HttpStats;
    readonly sse: HttpStats;
    readonly ws: HttpStats;
    /** The fewest `agent_message_chunk`s one prompt brought, per transport. */
    readonly chunks: { readonly stdio: number; readonly sse: number; readonly ws: number };
    readonly runs: number;
  };
  readonly concurrency: {
    readonly connections: number;
    /** Connections whose turn ended `end_turn` with every delta received. */
    readonly completed: number;
    readonly deltas: number;
    /** Model delta written → client received the update carrying it (ms). */
    readonly p50Ms: number;
    readonly p99Ms: number;
    readonly maxMs: number;
    /** Every prompt sent at once → the last answer (ms). */
    readonly wallMs: number;
    /** How long one turn's stream takes at the fake server alone: its pauses (ms). */
    readonly modelMs: number;
    /** Opening every connection and session, all at once (ms). */
    readonly openMs: number;
    /** The server's VmHWM after the turns (MiB). */
    readonly peakRssMib: number | undefined;
  };
  readonly idle: {
    readonly connections: number;
    /** VmRSS with no connection open, after a warm-up connection came and went (MiB). */
    readonly baseRssMib: number | undefined;
    /** VmRSS with every idle connection open (MiB). */
    readonly openRssMib: number | undefined;
    readonly kibPerConnection: number | undefined;
    /** Opening one connection and its session, one after another (ms). */
    readonly openMs: HttpStats;
    /** The same number of sessions opened on one stdio connection: VmRSS growth per session. */
    readonly stdioKibPerSession: number | undefined;
    /** SIGTERM → exit with every idle connection open (ms). */
    readonly exitMs: number;
  };
  /** Node.js only: spawn → `initialize` of `dist/cli.js` and of the bundle without HTTP. */
  readonly bundleStartup?: {
    readonly withHttp: HttpStats;
    readonly withoutHttp: HttpStats;
    readonly runs: number;
  };
  /** stdin EOF → exit of the stdio process of the throughput comparison (ms). */
  readonly stdioExitMs: number;
}

const REQUEST_TIMEOUT_MS = 60_000;
const LISTEN_TIMEOUT_MS = 30_000;
const EXIT_TIMEOUT_MS = 15_000;

// ---------------------------------------------------------------------------------------------
// Helpers

function stats(values: readonly number[]): HttpStats {
  if (values.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN };
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 === 1
    ? sorted[middle] ?? Number.NaN
    : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2;
  return { median, min: sorted[0] ?? Number.NaN, max: sorted.at(-1) ?? Number.NaN };
}

/** Nearest-rank percentile, `fraction` in (0, 1]. */
function percentile(sorted: readonly number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.max(0, Math.ceil(fraction * sorted.length) - 1)] ?? Number.NaN;
}

/** A field of `/proc/<pid>/status` in MiB (`VmRSS`, `VmHWM`), or undefined without /proc. */
async function procMib(pid: number | undefined, field: string): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  try {
    const status = await Deno.readTextFile(`/proc/${pid}/status`);
    const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, "m").exec(status);
    return match?.[1] === undefined ? undefined : Number(match[1]) / 1024;
  } catch {
    return undefined;
  }
}

/** Resolves with the exit time, killing the child if it takes longer than `timeoutMs`. */
function exitOf(child: ChildProcess, label: string, timeoutMs = EXIT_TIMEOUT_MS): Promise<number> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve(performance.now());
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${label} did not exit within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve(performance.now());
    });
  });
}

const INITIALIZE_PARAMS = {
  protocolVersion: 1,
  clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  clientInfo: { name: "acp-harness-bench", version: "0.0.0" },
};

/** The marker of a streamed text update; such messages are counted, not parsed. */
const CHUNK_MARKER = '"sessionUpdate":"agent_message_chunk"';

// ---------------------------------------------------------------------------------------------
// Lean clients

interface Pending {
  readonly method: string;
  readonly resolve: (reply: LeanReply) => void;
  readonly reject: (error: Error) => void;
  readonly timer: ReturnType<typeof setTimeout>;
}

/** An answer and when it arrived. */
interface LeanReply {
  readonly result: unknown;
  readonly at: number;
}

interface LeanMessage {
  readonly id?: number | string | null;
  readonly method?: string;
  readonly result?: unknown;
  readonly error?: unknown;
}

/**
 * The least an ACP client does: requests by id, answers matched to them, and
 * `agent_message_chunk` updates counted without parsing (messages carrying one are recognised by
 * a substring); everything else is parsed. Agent requests are not expected (the models here call
 * no tools) and fail the client.
 */
abstract class LeanClient {
  readonly label: string;
  /** `agent_message_chunk` updates received. */
  chunks = 0;
  /** Told about each `agent_message_chunk` message (its JSON text), when set. */
  onChunk: ((text: string, at: number) => void) | undefined;
  #pending = new Map<number, Pending>();
  #nextId = 0;
  #failure: Error | undefined;

  constructor(label: string) {
    this.label = label;
  }

  /** Sends a request; resolves with its result and arrival time, rejects on an error answer. */
  request(method: string, params: unknown, sessionId?: string): Promise<LeanReply> {
    if (this.#failure) return Promise.reject(this.#failure);
    const id = this.#nextId++;
    return new Promise<LeanReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error(`${this.label}: ${method} timed out after ${REQUEST_TIMEOUT_MS} ms`));
      }, REQUEST_TIMEOUT_MS);
      this.#pending.set(id, { method, resolve, reject, timer });
      this.send({ jsonrpc: "2.0", id, method, params }, sessionId).catch((error: unknown) =>
        this.fail(error instanceof Error ? error : new Error(String(error)))
      );
    });
  }

  /** `initialize`; the transport's own handshake first where it has one. */
  async initialize(): Promise<void> {
    await this.request("initialize", INITIALIZE_PARAMS);
  }

  /** `session/new` in `cwd`; resolves with the session id. */
  async newSession(cwd: string): Promise<string> {
    const reply = await this.request("session/new", { cwd, mcpServers: [] });
    const sessionId = (reply.result as { sessionId?: unknown } | null)?.sessionId;
    if (typeof sessionId !== "string") throw new Error(`${this.label}: session/new had no id`);
    return sessionId;
  }

  /** `session/prompt` with one text block. */
  prompt(sessionId: string, text: string): Promise<LeanReply> {
    return this.request(
      "session/prompt",
      { sessionId, prompt: [{ type: "text", text }] },
      sessionId,
    );
  }

  /** Ends the connection. */
  abstract close(): Promise<void>;

  /** Sends one message (for a session's messages, `sessionId` says which). */
  protected abstract send(message: unknown, sessionId?: string): Promise<void>;

  /** Handles one received message. */
  protected receive(text: string, at: number): void {
    if (text.includes(CHUNK_MARKER)) {
      this.chunks++;
      this.onChunk?.(text, at);
      return;
    }
    let message: LeanMessage;
    try {
      message = JSON.parse(text) as LeanMessage;
    } catch {
      return;
    }
    if (message.method !== undefined) {
      if (message.id !== undefined) {
        this.fail(new Error(`${this.label}: unexpected agent request ${message.method}`));
      }
      return;
    }
    if (typeof message.id !== "number") return;
    this.answer(message.id, message, at);
  }

  /** Settles the request `id` with an answer. */
  protected answer(id: number, message: LeanMessage, at: number): void {
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#pending.delete(id);
    clearTimeout(pending.timer);
    if (message.error !== undefined) {
      pending.reject(
        new Error(`${this.label}: ${pending.method} failed: ${JSON.stringify(message.error)}`),
      );
    } else {
      pending.resolve({ result: message.result, at });
    }
  }

  /** Fails every request, and every later one. */
  protected fail(error: Error): void {
    this.#failure ??= error;
    for (const pending of this.#pending.values()) {
      clearTimeout(pending.timer);
      pending.reject(error);
    }
    this.#pending.clear();
  }
}

/** NDJSON over a child's stdin and stdout. */
class StdioClient extends LeanClient {
  readonly child: ChildProcess;
  #buffer = "";

  constructor(label: string, child: ChildProcess) {
    super(label);
    this.child = child;
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (data: string) => this.#onData(data, performance.now()));
    child.stdin?.on("error", () => {});
    child.once("exit", (code, signal) => {
      this.fail(new Error(`${label} exited (code ${code}, signal ${signal})`));
    });
  }

  /** Closes stdin and waits for the exit; resolves with the time it took (ms). */
  async closeAndTime(): Promise<number> {
    const eofAt = performance.now();
    this.child.stdin?.end();
    return (await exitOf(this.child, this.label)) - eofAt;
  }

  override async close(): Promise<void> {
    await this.closeAndTime();
  }

  protected override send(message: unknown): Promise<void> {
    this.child.stdin?.write(JSON.stringify(message) + "\n");
    return Promise.resolve();
  }

  #onData(data: string, at: number): void {
    const text = this.#buffer + data;
    let start = 0;
    for (let end = text.indexOf("\n"); end !== -1; end = text.indexOf("\n", start)) {
      if (end > start) this.receive(text.slice(start, end), at);
      start = end + 1;
    }
    this.#buffer = text.slice(start);
  }
}

/**
 * The RFD profile over HTTP: `POST /acp` with `initialize` opens the connection (its answer is
 * the body, the id the `Acp-Connection-Id` header); then one SSE `GET` for the connection and one
 * per session, and every message a `POST` answered `202`.
 */
class SseClient extends LeanClient {
  readonly #url: string;
  readonly #abort = new AbortController();
  readonly #streams: Promise<void>[] = [];
  #connectionId: string | undefined;
  #closing = false;

  constructor(label: string, baseUrl: string) {
    super(label);
    this.#url = `${baseUrl}/acp`;
  }

  override async initialize(): Promise<void> {
    const response = await fetch(this.#url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: -1,
        method: "initialize",
        params: INITIALIZE_PARAMS,
      }),
      signal: this.#abort.signal,
    });
    const body = await response.text();
    this.#connectionId = response.headers.get("acp-connection-id") ?? undefined;
    if (!response.ok || this.#connectionId === undefined) {
      throw new Error(
        `${this.label}: initialize answered ${response.status}: ${body.slice(0, 200)}`,
      );
    }
    const answer = JSON.parse(body) as LeanMessage;
    if (answer.error !== undefined) {
      throw new Error(`${this.label}: initialize failed: ${JSON.stringify(answer.error)}`);
    }
    await this.#open(undefined);
  }

  override async newSession(cwd: string): Promise<string> {
    const sessionId = await super.newSession(cwd);
    await this.#open(sessionId);
    return sessionId;
  }

  override async close(): Promise<void> {
    this.#closing = true;
    try {
      if (this.#connectionId !== undefined) {
        const response = await fetch(this.#url, {
          method: "DELETE",
          headers: { "acp-connection-id": this.#connectionId },
        });
        await response.body?.cancel();
      }
    } finally {
      this.#abort.abort();
      await Promise.allSettled(this.#streams);
    }
  }

  /** Drops the streams without ending the connection (its server is gone). */
  async abandon(): Promise<void> {
    this.#closing = true;
    this.#abort.abort();
    await Promise.allSettled(this.#streams);
  }

  protected override async send(message: unknown, sessionId?: string): Promise<void> {
    const response = await fetch(this.#url, {
      method: "POST",
      headers: this.#headers(sessionId, "application/json"),
      body: JSON.stringify(message),
      signal: this.#abort.signal,
    });
    const text = await response.text();
    if (response.status !== 202) {
      throw new Error(`${this.label}: POST answered ${response.status}: ${text.slice(0, 200)}`);
    }
  }

  /** Opens the SSE stream of the connection, or of a session. */
  async #open(sessionId: string | undefined): Promise<void> {
    const headers = this.#headers(sessionId, undefined);
    const response = await rawGet(new URL(this.#url), headers, this.#abort.signal);
    if (response.status !== 200) {
      response.close();
      throw new Error(`${this.label}: GET answered ${response.status}`);
    }
    const which = sessionId === undefined ? "connection" : "session";
    const read = readSse(response.body, (text, at) => this.receive(text, at));
    this.#streams.push(
      read.finally(() => response.close()).then(
        () => {
          if (!this.#closing) this.fail(new Error(`${this.label}: the ${which} stream ended`));
        },
        (error: unknown) => {
          if (!this.#closing) {
            this.fail(new Error(`${this.label}: the ${which} stream failed: ${String(error)}`));
          }
        },
      ),
    );
  }

  #headers(
    sessionId: string | undefined,
    contentType: string | undefined,
  ): Record<string, string> {
    return {
      accept: contentType === undefined ? "text/event-stream" : "application/json",
      ...(contentType === undefined ? {} : { "content-type": contentType }),
      ...(this.#connectionId === undefined ? {} : { "acp-connection-id": this.#connectionId }),
      ...(sessionId === undefined ? {} : { "acp-session-id": sessionId }),
    };
  }
}

/**
 * Reads an SSE body: each `data:` line is one message (ours are one line of JSON each); comments
 * and other fields are skipped. `at` is when the piece carrying the message arrived.
 */
async function readSse(
  body: AsyncIterable<Uint8Array>,
  onMessage: (text: string, at: number) => void,
): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const value of body) {
    const at = performance.now();
    buffer += decoder.decode(value, { stream: true });
    let start = 0;
    for (let end = buffer.indexOf("\n"); end !== -1; end = buffer.indexOf("\n", start)) {
      if (buffer.startsWith("data:", start)) {
        onMessage(buffer.slice(start + (buffer[start + 5] === " " ? 6 : 5), end), at);
      }
      start = end + 1;
    }
    buffer = buffer.slice(start);
  }
}

const CRLF_CRLF = [13, 10, 13, 10];

function indexOfBytes(haystack: Uint8Array, needle: readonly number[], from = 0): number {
  outer: for (let i = from; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) {
      if (haystack[i + j] !== needle[j]) continue outer;
    }
    return i;
  }
  return -1;
}

/** A response read off a raw socket. */
interface RawResponse {
  readonly status: number;
  /** The body, de-chunked: one piece per socket read. */
  readonly body: AsyncGenerator<Uint8Array>;
  /** Closes the connection. */
  close(): void;
}

/**
 * A `GET` on a TCP connection of its own, its body de-chunked as it arrives: whatever one socket
 * read brings (up to 64 KiB) is one piece, however many HTTP chunks it holds. Deno's `fetch` hands
 * its reader one read per HTTP chunk instead, and the server's SSE body is one chunk per event: at
 * tens of thousands of events, those reads and not the server set the pace. The caller closes
 * the connection; so does `signal`.
 */
async function rawGet(
  url: URL,
  headers: Readonly<Record<string, string>>,
  signal: AbortSignal,
): Promise<RawResponse> {
  const conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
  const close = (): void => {
    signal.removeEventListener("abort", close);
    try {
      conn.close();
    } catch {
      // closed already
    }
  };
  signal.addEventListener("abort", close, { once: true });
  try {
    const request = [
      `GET ${url.pathname}${url.search} HTTP/1.1`,
      `host: ${url.host}`,
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
      "",
      "",
    ].join("\r\n");
    const bytes = new TextEncoder().encode(request);
    for (let written = 0; written < bytes.byteLength;) {
      written += await conn.write(bytes.subarray(written));
    }
    const reader = conn.readable.getReader();
    let pending: Uint8Array = new Uint8Array(0);
    let headerEnd = -1;
    while ((headerEnd = indexOfBytes(pending, CRLF_CRLF)) === -1) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`GET ${url.pathname}: the connection closed before the headers`);
      pending = concatBytes([pending, value]);
    }
    const head = new TextDecoder().decode(pending.subarray(0, headerEnd));
    const rest = pending.slice(headerEnd + 4);
    const chunked = /\r\ntransfer-encoding:[^\r]*chunked/i.test(head);
    return {
      status: Number(head.split(" ")[1]),
      body: chunked ? dechunked(reader, rest) : untilClosed(reader, rest),
      close,
    };
  } catch (error) {
    close();
    throw error;
  }
}

/** A body read until the connection closes. */
async function* untilClosed(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  first: Uint8Array,
): AsyncGenerator<Uint8Array> {
  if (first.byteLength > 0) yield first;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    yield value;
  }
}

/**
 * A body in chunked transfer coding (`<hex size>[;ext]\r\n<data>\r\n`, ending with size 0),
 * decoded: each socket read yields the data of the chunks it completes or starts, as one piece.
 */
async function* dechunked(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  first: Uint8Array,
): AsyncGenerator<Uint8Array> {
  let pending = first;
  let state: "size" | "data" | "crlf" = "size";
  let remaining = 0;
  for (;;) {
    const out: Uint8Array[] = [];
    let i = 0;
    while (i < pending.byteLength) {
      if (state === "size") {
        const eol = indexOfBytes(pending, [13, 10], i);
        if (eol === -1) break;
        const line = new TextDecoder().decode(pending.subarray(i, eol));
        const size = parseInt(line.split(";")[0] ?? "", 16);
        i = eol + 2;
        if (!(size > 0)) {
          if (out.length > 0) yield concatBytes(out);
          return;
        }
        remaining = size;
        state = "data";
      } else if (state === "data") {
        const take = Math.min(remaining, pending.byteLength - i);
        out.push(pending.subarray(i, i + take));
        i += take;
        remaining -= take;
        if (remaining === 0) state = "crlf";
      } else {
        if (pending.byteLength - i < 2) break;
        i += 2;
        state = "size";
      }
    }
    pending = pending.slice(i);
    if (out.length > 0) yield concatBytes(out);
    const { done, value } = await reader.read();
    if (done) return;
    pending = concatBytes([pending, value]);
  }
}

/** The RFD profile over WebSocket (`/acp`, one JSON-RPC message per text frame). */
class WsClient extends LeanClient {
  readonly #url: string;
  #socket: WebSocket | undefined;
  #closed: Promise<void> | undefined;

  constructor(label: string, baseUrl: string) {
    super(label);
    this.#url = `${baseUrl.replace(/^http/, "ws")}/acp`;
  }

  override async initialize(): Promise<void> {
    const socket = new WebSocket(this.#url);
    this.#socket = socket;
    this.#closed = new Promise((resolve) => {
      socket.addEventListener("close", () => {
        this.fail(new Error(`${this.label}: the socket closed`));
        resolve();
      }, { once: true });
    });
    socket.addEventListener("message", (event) => {
      if (typeof event.data === "string") this.receive(event.data, performance.now());
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`${this.label}: no WebSocket within ${REQUEST_TIMEOUT_MS} ms`));
      }, REQUEST_TIMEOUT_MS);
      socket.addEventListener("open", () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
      socket.addEventListener("error", () => {
        clearTimeout(timer);
        reject(new Error(`${this.label}: the WebSocket failed to open`));
      }, { once: true });
    });
    await super.initialize();
  }

  override async close(): Promise<void> {
    this.#socket?.close();
    await this.#closed;
  }

  protected override send(message: unknown): Promise<void> {
    this.#socket?.send(JSON.stringify(message));
    return Promise.resolve();
  }
}

// ---------------------------------------------------------------------------------------------
// The server

/** `serve --http --port 0` running. */
interface ServeProcess {
  readonly child: ChildProcess;
  readonly url: string;
  /** Lines of stderr matching `pattern` so far. */
  count(pattern: RegExp): number;
  /** Resolves once stderr has `count` lines matching `pattern` (bounded). */
  waitFor(pattern: RegExp, count: number): Promise<void>;
  /** SIGTERM, then the exit (SIGKILL after a bound); resolves with the time it took (ms). */
  stop(): Promise<number>;
}

async function startServe(
  host: HttpBenchHost,
  label: string,
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): Promise<ServeProcess> {
  // Every bench client comes from 127.0.0.1: up to 200 connections at once, past the default cap.
  const perAddress = ["--max-connections-per-address", "1000"];
  const child = host.spawn(
    host.ours(["serve", "--http", "--port", "0", ...perAddress, ...args], env),
  );
  let stderr = "";
  const listeners = new Set<() => void>();
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (data: string) => {
    stderr += data;
    for (const listener of [...listeners]) listener();
  });
  child.stdin?.on("error", () => {});
  const waitUntil = (ready: () => boolean, what: string, timeoutMs: number): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const done = (error?: Error): void => {
        listeners.delete(check);
        child.off("exit", onExit);
        clearTimeout(timer);
        if (error) reject(error);
        else resolve();
      };
      const check = (): void => {
        if (ready()) done();
      };
      const onExit = (): void =>
        done(new Error(`${label} exited before ${what}: ${stderr.slice(-500)}`));
      const timer = setTimeout(
        () => done(new Error(`${label}: no ${what} within ${timeoutMs} ms`)),
        timeoutMs,
      );
      listeners.add(check);
      child.once("exit", onExit);
      check();
    });
  const lines = (pattern: RegExp): number =>
    stderr.split("\n").filter((line) => pattern.test(line)).length;
  await waitUntil(
    () => /listening on http:\/\/\S+\n/.test(stderr),
    "`listening on <url>`",
    LISTEN_TIMEOUT_MS,
  );
  const url = /listening on (http:\/\/\S+)\n/.exec(stderr)?.[1] as string;
  return {
    child,
    url,
    count: lines,
    waitFor: (pattern, count) =>
      waitUntil(() => lines(pattern) >= count, `${count} × ${pattern}`, REQUEST_TIMEOUT_MS),
    async stop(): Promise<number> {
      const at = performance.now();
      const exited = exitOf(child, label);
      child.kill("SIGTERM");
      return (await exited) - at;
    },
  };
}

/** A scratch data directory for one server (removed by the caller). */
async function dataDir(host: HttpBenchHost, name: string): Promise<string> {
  const path = `${host.tmp}/http_${name}`;
  await Deno.remove(path, { recursive: true }).catch(() => {});
  await Deno.mkdir(path, { recursive: true });
  return path;
}

// ---------------------------------------------------------------------------------------------
// Update throughput

type Transport = "stdio" | "sse" | "ws";

function rotation(run: number): readonly Transport[] {
  const all: Transport[] = ["sse", "stdio", "ws"];
  const shift = run % all.length;
  return [...all.slice(shift), ...all.slice(0, shift)];
}

async function measureThroughput(
  host: HttpBenchHost,
  counts: HttpBenchCounts,
  cleanup: Array<() => Promise<unknown>>,
): Promise<{ throughput: HttpResult["throughput"]; stdioExitMs: number }> {
  // One step per prompt: stdio takes runs + 1, the HTTP server twice that (SSE and WebSocket).
  const words = Array.from({ length: counts.chunks }, (_, i) => `w${i} `);
  const script = `${host.tmp}/http_stream_script.json`;
  const steps = Array.from({ length: 2 * (counts.throughputRuns + 1) }, () => ({ text: words }));
  await Deno.writeTextFile(script, JSON.stringify(steps));
  cleanup.push(() => Deno.remove(script));
  const model = ["--stream", "--model", "scripted", "--script", script];
  const stdioData = await dataDir(host, "stdio");
  const httpData = await dataDir(host, "sse");
  cleanup.push(() => Deno.remove(stdioData, { recursive: true }));
  cleanup.push(() => Deno.remove(httpData, { recursive: true }));
  const stdio = new StdioClient(
    "stdio",
    host.spawn(host.ours([...model, "--data-dir", stdioData])),
  );
  const server = await startServe(host, "serve --http", [...model, "--data-dir", httpData]);
  cleanup.push(() => server.stop());
  const clients: Record<Transport, LeanClient> = {
    stdio,
    sse: new SseClient("SSE", server.url),
    ws: new WsClient("WebSocket", server.url),
  };
  cleanup.push(() => (clients.sse as SseClient).abandon());
  const sessions = {} as Record<Transport, string>;
  for (const kind of ["stdio", "sse", "ws"] as const) {
    await clients[kind].initialize();
    sessions[kind] = await clients[kind].newSession(host.root);
  }
  const rates: Record<Transport, number[]> = { stdio: [], sse: [], ws: [] };
  const seen: Record<Transport, number[]> = { stdio: [], sse: [], ws: [] };
  for (let run = 0; run <= counts.throughputRuns; run++) {
    for (const kind of rotation(run)) {
      const client = clients[kind];
      client.chunks = 0;
      const sentAt = performance.now();
      const reply = await client.prompt(sessions[kind], `stream ${run}`);
      if (run === 0) continue; // warm-up
      rates[kind].push(client.chunks / ((reply.at - sentAt) / 1000));
      seen[kind].push(client.chunks);
    }
  }
  await clients.sse.close();
  await clients.ws.close();
  const stdioExitMs = await stdio.closeAndTime();
  await server.stop();
  return {
    throughput: {
      stdio: stats(rates.stdio),
      sse: stats(rates.sse),
      ws: stats(rates.ws),
      chunks: {
        stdio: Math.min(...seen.stdio),
        sse: Math.min(...seen.sse),
        ws: Math.min(...seen.ws),
      },
      runs: counts.throughputRuns,
    },
    stdioExitMs,
  };
}

// ---------------------------------------------------------------------------------------------
// Many connections streaming at once

/** One OpenAI chat chunk as an SSE item's text. */
function chatChunk(delta: Record<string, unknown>, finish: string | null = null): string {
  const data = {
    id: "chatcmpl-bench",
    object: "chat.completion.chunk",
    created: 1,
    model: "coder",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(data)}\n\n`;
}

/**
 * A streamed answer of `deltas` text deltas, each stamped with the time the fake server writes
 * it: the item's `raw` text is built by a getter, which the fake server reads right before its
 * `res.write` (after the item's pause). The same response serves every request.
 */
function stampedTurn(deltas: number, chunkDelayMs: number): SseResponse {
  const stamped: SseItem = {
    get raw(): string {
      return chatChunk({ content: `t${performance.now().toFixed(3)} ` });
    },
  };
  const usage = {
    id: "chatcmpl-bench",
    object: "chat.completion.chunk",
    choices: [],
    usage: { prompt_tokens: 100, completion_tokens: deltas, total_tokens: 100 + deltas },
  };
  return {
    type: "sse",
    chunkDelayMs,
    items: [
      { raw: chatChunk({ role: "assistant", content: "" }) },
      ...Array.from({ length: deltas }, () => stamped),
      { raw: chatChunk({}, "stop") },
      { raw: `data: ${JSON.stringify(usage)}\n\n` },
      { raw: "data: [DONE]\n\n" },
    ],
  };
}

/** The stamps (`t<ms> `) in an `agent_message_chunk` message. */
function stampsOf(text: string): number[] {
  const message = JSON.parse(text) as {
    params?: { update?: { content?: { text?: string } } };
  };
  const content = message.params?.update?.content?.text ?? "";
  return [...content.matchAll(/t(\d+(?:\.\d+)?) /g)].map((match) => Number(match[1]));
}

async function measureConcurrency(
  host: HttpBenchHost,
  counts: HttpBenchCounts,
  cleanup: Array<() => Promise<unknown>>,
): Promise<HttpResult["concurrency"]> {
  const fake = await startFakeLlmServer();
  cleanup.push(() => fake.close());
  const config = `${host.tmp}/http_llm_config.json`;
  await Deno.writeTextFile(
    config,
    JSON.stringify({
      providers: {
        fake: { api: "openai-chat", baseUrl: `${fake.url}/v1`, apiKeyEnv: "FAKE_API_KEY" },
      },
      models: { "fake/coder": { contextWindow: 128_000 } },
    }),
  );
  cleanup.push(() => Deno.remove(config));
  const data = await dataDir(host, "llm");
  cleanup.push(() => Deno.remove(data, { recursive: true }));
  const server = await startServe(host, "serve --http (fake model)", [
    "--config",
    config,
    "--model",
    "fake/coder",
    "--mode",
    "auto",
    "--stream",
    "--data-dir",
    data,
  ], { FAKE_API_KEY: "sk-bench" });
  cleanup.push(() => server.stop());
  const turn = stampedTurn(counts.deltas, counts.chunkDelayMs);

  // Warm-up: one connection, one turn.
  const warm = new SseClient("warm-up", server.url);
  await warm.initialize();
  const warmSession = await warm.newSession(host.root);
  fake.enqueue(turn);
  await warm.prompt(warmSession, "warm up");
  await warm.close();

  const clients = Array.from(
    { length: counts.connections },
    (_, i) => new SseClient(`SSE connection ${i}`, server.url),
  );
  cleanup.push(() => Promise.all(clients.map((client) => client.abandon())));
  const openedAt = performance.now();
  const sessions = await Promise.all(clients.map(async (client) => {
    await client.initialize();
    return await client.newSession(host.root);
  }));
  const openMs = performance.now() - openedAt;
  const latencies: number[] = [];
  const received = clients.map(() => 0);
  clients.forEach((client, i) => {
    client.onChunk = (text, at) => {
      for (const stamp of stampsOf(text)) {
        latencies.push(at - stamp);
        received[i]!++;
      }
    };
  });
  for (let i = 0; i < counts.connections; i++) fake.enqueue(turn);
  const sentAt = performance.now();
  const replies = await Promise.allSettled(
    clients.map((client, i) => client.prompt(sessions[i] as string, `turn ${i}`)),
  );
  const lastAt = Math.max(
    ...replies.map((reply) => reply.status === "fulfilled" ? reply.value.at : performance.now()),
  );
  const completed = replies.filter((reply, i) =>
    reply.status === "fulfilled" &&
    (reply.value.result as { stopReason?: unknown } | null)?.stopReason === "end_turn" &&
    received[i] === counts.deltas
  ).length;
  const peakRssMib = await procMib(server.child.pid, "VmHWM");
  await Promise.all(clients.map((client) => client.close()));
  await server.stop();
  if (completed !== counts.connections) {
    const failure = replies.find((reply) => reply.status === "rejected");
    throw new Error(
      `${completed} of ${counts.connections} streamed turns completed` +
        (failure?.status === "rejected" ? `; first failure: ${String(failure.reason)}` : ""),
    );
  }
  latencies.sort((a, b) => a - b);
  return {
    connections: counts.connections,
    completed,
    deltas: counts.deltas,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    maxMs: latencies.at(-1) ?? Number.NaN,
    wallMs: lastAt - sentAt,
    modelMs: (counts.deltas + 4) * counts.chunkDelayMs,
    openMs,
    peakRssMib,
  };
}

// ---------------------------------------------------------------------------------------------
// Idle connections

async function measureIdle(
  host: HttpBenchHost,
  counts: HttpBenchCounts,
  cleanup: Array<() => Promise<unknown>>,
): Promise<HttpResult["idle"]> {
  const data = await dataDir(host, "idle");
  cleanup.push(() => Deno.remove(data, { recursive: true }));
  const server = await startServe(host, "serve --http (idle)", [
    "--data-dir",
    data,
    "--log-level",
    "info",
  ]);
  cleanup.push(() => server.stop());
  const clients: SseClient[] = [];
  cleanup.push(() => Promise.all(clients.map((client) => client.abandon())));
  // Warm-up: one connection opens a session, runs a prompt and goes.
  const warm = new SseClient("warm-up", server.url);
  await warm.initialize();
  await warm.prompt(await warm.newSession(host.root), "warm up");
  await warm.close();
  await server.waitFor(/connection closed/, 1);
  const baseRssMib = await procMib(server.child.pid, "VmRSS");
  const openMs: number[] = [];
  for (let i = 0; i < counts.idleConnections; i++) {
    const client = new SseClient(`idle connection ${i}`, server.url);
    clients.push(client);
    const startedAt = performance.now();
    await client.initialize();
    await client.newSession(host.root);
    openMs.push(performance.now() - startedAt);
  }
  const openRssMib = await procMib(server.child.pid, "VmRSS");
  const exitMs = await server.stop();
  await Promise.all(clients.map((client) => client.abandon()));
  return {
    connections: counts.idleConnections,
    baseRssMib,
    openRssMib,
    kibPerConnection: baseRssMib === undefined || openRssMib === undefined
      ? undefined
      : (openRssMib - baseRssMib) * 1024 / counts.idleConnections,
    openMs: stats(openMs),
    stdioKibPerSession: await stdioSessionsKib(host, counts.idleConnections, cleanup),
    exitMs,
  };
}

/**
 * The share of a session in the idle figure: VmRSS growth per session of `sessions` sessions
 * opened on one stdio connection (after the same warm-up: a session and a prompt).
 */
async function stdioSessionsKib(
  host: HttpBenchHost,
  sessions: number,
  cleanup: Array<() => Promise<unknown>>,
): Promise<number | undefined> {
  const data = await dataDir(host, "idle_stdio");
  cleanup.push(() => Deno.remove(data, { recursive: true }));
  const client = new StdioClient("stdio (sessions)", host.spawn(host.ours(["--data-dir", data])));
  try {
    await client.initialize();
    await client.prompt(await client.newSession(host.root), "warm up");
    const base = await procMib(client.child.pid, "VmRSS");
    for (let i = 0; i < sessions; i++) await client.newSession(host.root);
    const open = await procMib(client.child.pid, "VmRSS");
    return base === undefined || open === undefined ? undefined : (open - base) * 1024 / sessions;
  } finally {
    await client.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Start-up of the Node.js bundle with and without the HTTP transport

async function measureBundleStartup(
  host: HttpBenchHost,
  bundle: (file: string | undefined) => HttpCommandLine,
  withoutHttp: string,
  runs: number,
): Promise<NonNullable<HttpResult["bundleStartup"]>> {
  const samples = { withHttp: [] as number[], withoutHttp: [] as number[] };
  for (let i = -1; i < runs; i++) {
    const sides = i % 2 === 0
      ? ["withHttp", "withoutHttp"] as const
      : ["withoutHttp", "withHttp"] as const;
    for (const side of sides) {
      const spawnedAt = performance.now();
      const client = new StdioClient(
        `node ${side}`,
        host.spawn(bundle(side === "withHttp" ? undefined : withoutHttp)),
      );
      const reply = await client.request("initialize", INITIALIZE_PARAMS);
      await client.close();
      if (i >= 0) samples[side].push(reply.at - spawnedAt);
    }
  }
  return { withHttp: stats(samples.withHttp), withoutHttp: stats(samples.withoutHttp), runs };
}

// ---------------------------------------------------------------------------------------------
// The measurement

/**
 * Runs one runtime's HTTP benchmarks: throughput (its own stdio process and one HTTP server),
 * many connections streaming at once (a server on the fake model), idle connections (a server on
 * the echo model), and on Node.js the bundle start-up with and without the HTTP transport.
 *
 * @param host How to start ours on this runtime, and where to put files
 * @param counts How much work
 * @param bundles For Node.js: how to start a bundle (`undefined`: `dist/cli.js`), and the bundle
 *   without the HTTP transport
 * @returns The figures
 */
export async function measureHttp(
  host: HttpBenchHost,
  counts: HttpBenchCounts,
  bundles?: {
    readonly start: (file: string | undefined) => HttpCommandLine;
    readonly withoutHttp: string;
  },
): Promise<HttpResult> {
  const cleanup: Array<() => Promise<unknown>> = [];
  try {
    const bundleStartup = bundles === undefined
      ? undefined
      : await measureBundleStartup(host, bundles.start, bundles.withoutHttp, counts.startupRuns);
    const { throughput, stdioExitMs } = await measureThroughput(host, counts, cleanup);
    const concurrency = await measureConcurrency(host, counts, cleanup);
    const idle = await measureIdle(host, counts, cleanup);
    return {
      throughput,
      concurrency,
      idle,
      ...(bundleStartup === undefined ? {} : { bundleStartup }),
      stdioExitMs,
    };
  } finally {
    for (const step of cleanup.reverse()) await step().catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------
// Start-up graph

/** Whether the HTTP code is loaded at start-up, from the module graphs. */
export interface HttpStartupGraph {
  /** Modules `deno run mod.ts` / `bun mod.ts` load at start-up (static closure, see below). */
  readonly sourceModules: number;
  /**
   * Of those, HTTP modules (ours, hono, `@hono/node-server`, `ws`, the SDK's server), as paths
   * relative to the root or npm specifiers, with their source size where `deno info` gives one.
   */
  readonly sourceHttpModules: ReadonlyArray<{ readonly name: string; readonly bytes?: number }>;
  /** The lazy `import()`s through which the HTTP code is reached (`importer → target`). */
  readonly lazyEdges: readonly string[];
  /** What `node dist/cli.js` reads at start-up: `cli.js` and its static chunks (bytes). */
  readonly bundleBytes: number;
  /** How many files that is. */
  readonly bundleFiles: number;
  /** The HTTP inputs in those files, with their bytes in the output. */
  readonly bundleHttpInputs: ReadonlyArray<{ readonly name: string; readonly bytes: number }>;
  /** Bytes from HTTP inputs in chunks loaded only on demand. */
  readonly lazyHttpBytes: number;
  /** The same bundle with the HTTP transport and listener left out, for the start-up comparison. */
  readonly withoutHttp: { readonly file: string; readonly bytes: number };
}

/** HTTP modules in `deno info`'s graph: ours, and the npm packages only HTTP uses. */
const HTTP_SOURCE =
  /\/src\/transport\/http\/|\/src\/runtime\/(?:\w+_http|http_common)\.ts$|^npm:\/(?:hono@|@hono\/|ws@)|^npm:\/@agentclientprotocol\/sdk@[^/]+\/experimental\/server/;
/** HTTP inputs of the esbuild metafile (the SDK's server-side transport files included). */
const HTTP_INPUT =
  /(?:^|\/)src\/transport\/http\/|(?:^|\/)src\/runtime\/(?:\w+_http|http_common)\.ts$|node_modules\/(?:hono|@hono\/node-server|ws)\/|@agentclientprotocol\/sdk\/dist\/transports\/(?:server|server-sse|ws-server|node-adapter|node-body)\.js$/;
/**
 * The HTTP module stdio start-up may load: the loopback checks the CLI runs on its settings
 * (`isLoopback`, `loopbackHosts`), a leaf module with no imports. Anything else of the HTTP code
 * at start-up misses the target.
 */
const HTTP_HELPER = /(?:^|\/)src\/transport\/http\/http_security\.ts$/;

/**
 * Whether a start-up graph meets the target: no HTTP module but the helper.
 *
 * @param graph The graphs
 * @param bundle Whether to judge the Node.js bundle (else the sources)
 * @returns True when the target is met
 */
export function httpOutOfStartup(graph: HttpStartupGraph, bundle: boolean): boolean {
  const names = bundle ? graph.bundleHttpInputs : graph.sourceHttpModules;
  return names.every(({ name }) => HTTP_HELPER.test(name));
}

/** What the bundle without HTTP leaves out (kept as external `import()`s, never run at start). */
const HTTP_ENTRY_FILES = /(?:http_transport|node_http)\.ts$/;

/**
 * Reads the start-up module graph of `mod.ts` (`deno info --json`) and bundles `dist/cli.js`
 * again with a metafile, plus a variant without the HTTP transport and the Node.js listener.
 *
 * The start-up graph of the sources is the closure of `mod.ts` over static imports plus the
 * `import()`s of `mod.ts` and `src/runtime/main.ts` (the entry and the runtime dispatch, run at
 * every start); every other `import()` is lazy.
 *
 * @param root The repository root
 * @param deno The Deno executable
 * @returns What the graphs say
 */
export async function httpStartupGraph(root: string, deno: string): Promise<HttpStartupGraph> {
  const isHttp = (specifier: string): boolean => HTTP_SOURCE.test(specifier);
  const { startup, modules, lazyEdges } = await sourceStartupGraph(root, deno, isHttp);

  const { outputs, startupFiles, without } = await bundleStartupGraph(
    root,
    "http",
    HTTP_ENTRY_FILES,
  );
  const bundleHttpInputs: Array<{ name: string; bytes: number }> = [];
  let lazyHttpBytes = 0;
  for (const [file, out] of Object.entries(outputs)) {
    for (const [path, input] of Object.entries(out.inputs)) {
      if (!HTTP_INPUT.test(path) || input.bytesInOutput === 0) continue;
      if (startupFiles.has(file)) bundleHttpInputs.push({ name: path, bytes: input.bytesInOutput });
      else lazyHttpBytes += input.bytesInOutput;
    }
  }
  return {
    sourceModules: startup.size,
    sourceHttpModules: [...startup].filter(isHttp).map((specifier) => {
      const size = modules.get(specifier)?.size;
      const name = specifier.replace(`file://${root}/`, "");
      return size === undefined ? { name } : { name, bytes: size };
    }),
    lazyEdges,
    bundleBytes: [...startupFiles].reduce((sum, file) => sum + (outputs[file]?.bytes ?? 0), 0),
    bundleFiles: startupFiles.size,
    bundleHttpInputs,
    lazyHttpBytes,
    withoutHttp: without,
  };
}

// ---------------------------------------------------------------------------------------------
// Report

/** One runtime's row inputs. */
export interface HttpReportRow {
  readonly runtime: string;
  readonly http: HttpResult | undefined;
  /** The start-up section's spawn → `initialize` medians. */
  readonly startup: { readonly ours: number; readonly bare: number } | undefined;
  /** Whether the HTTP phase failed (its error is in the report's Errors). */
  readonly failed: boolean;
}

function fixed(value: number | undefined, digits: number): string {
  return value === undefined || Number.isNaN(value) ? "n/a" : value.toFixed(digits);
}

function thousands(value: number | undefined): string {
  return value === undefined || Number.isNaN(value)
    ? "n/a"
    : Math.round(value).toLocaleString("en-US");
}

function ratioText(ratio: number | undefined): string {
  return ratio === undefined || Number.isNaN(ratio) ? "n/a" : `${ratio.toFixed(2)}×`;
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(bytes < 10 * 1024 ? 1 : 0)} KiB`;
}

/**
 * Renders the HTTP section of `bench/RESULTS.md`.
 *
 * @param rows One per runtime
 * @param graph The start-up graphs, or an error message
 * @param counts The counts of the run
 * @returns The section's text and its verdicts (true: met, false: missed, undefined: n/a)
 */
export function renderHttpSection(
  rows: readonly HttpReportRow[],
  graph: HttpStartupGraph | string,
  counts: HttpBenchCounts,
): { readonly text: string; readonly verdicts: ReadonlyArray<boolean | undefined> } {
  const verdicts: Array<boolean | undefined> = [];
  const verdict = (pass: boolean | undefined, failed: boolean): string => {
    const value = failed ? false : pass;
    verdicts.push(value);
    return failed
      ? "**FAIL** (see Errors)"
      : value === undefined
      ? "n/a"
      : value
      ? "pass"
      : "**FAIL**";
  };
  const first = rows.find((row) => row.http)?.http;
  const throughputRows = rows.map(({ runtime, http, failed }) => {
    const t = http?.throughput;
    const ratio = t === undefined ? undefined : t.sse.median / t.stdio.median;
    const pass = ratio === undefined ? undefined : ratio >= HTTP_TARGETS.throughputRatio;
    return [
      runtime,
      thousands(t?.sse.median),
      thousands(t?.stdio.median),
      ratioText(ratio),
      `≥ ${HTTP_TARGETS.throughputRatio}×`,
      verdict(pass, failed && t === undefined),
      thousands(t?.ws.median),
      ratioText(t === undefined ? undefined : t.ws.median / t.stdio.median),
      t === undefined
        ? "n/a"
        : `${thousands(t.chunks.sse)} / ${thousands(t.chunks.ws)} / ${thousands(t.chunks.stdio)}`,
    ];
  });
  const concurrencyRows = rows.map(({ runtime, http, failed }) => {
    const c = http?.concurrency;
    const pass = c === undefined ? undefined : c.p99Ms <= HTTP_TARGETS.p99LatencyMs;
    return [
      runtime,
      c === undefined ? "n/a" : `${c.completed} / ${c.connections}`,
      fixed(c?.p50Ms, 1),
      fixed(c?.p99Ms, 1),
      fixed(c?.maxMs, 1),
      `≤ ${HTTP_TARGETS.p99LatencyMs} ms`,
      verdict(pass, failed && c === undefined),
      fixed(c?.wallMs, 0),
      fixed(c?.modelMs, 0),
      fixed(c?.openMs, 0),
      fixed(c?.peakRssMib, 1),
    ];
  });
  const idleRows = rows.map(({ runtime, http, failed }) => {
    const i = http?.idle;
    const pass = i?.kibPerConnection === undefined
      ? undefined
      : i.kibPerConnection <= HTTP_TARGETS.idleKibPerConnection;
    return [
      runtime,
      fixed(i?.baseRssMib, 1),
      fixed(i?.openRssMib, 1),
      fixed(i?.kibPerConnection, 0),
      `≤ ${HTTP_TARGETS.idleKibPerConnection} KiB`,
      verdict(pass, failed && i === undefined),
      fixed(i?.stdioKibPerSession, 0),
      i === undefined ? "n/a" : `${fixed(i.openMs.median, 2)} (${fixed(i.openMs.max, 1)})`,
      fixed(i?.exitMs, 0),
    ];
  });
  const startupRows = rows.map(({ runtime, startup, http }) => {
    const bundle = runtime === "node";
    const found = typeof graph === "string"
      ? []
      : bundle
      ? graph.bundleHttpInputs
      : graph.sourceHttpModules;
    const listed = found.length === 0
      ? "none"
      : found.map(({ name, bytes }) =>
        `\`${name}\`${bytes === undefined ? "" : ` (${kib(bytes)})`}`
      )
        .join(", ");
    return [
      runtime,
      fixed(startup?.ours, 1),
      fixed(startup?.bare, 1),
      ratioText(startup === undefined ? undefined : startup.ours / startup.bare),
      http?.bundleStartup === undefined
        ? "n/a"
        : `${fixed(http.bundleStartup.withHttp.median, 1)} / ${
          fixed(http.bundleStartup.withoutHttp.median, 1)
        } (${
          ratioText(http.bundleStartup.withHttp.median / http.bundleStartup.withoutHttp.median)
        })`,
      typeof graph === "string"
        ? "n/a"
        : bundle
        ? `start-up reads ${graph.bundleFiles} files, ${kib(graph.bundleBytes)}; HTTP code in ` +
          `them: ${listed}; ${kib(graph.lazyHttpBytes)} of HTTP code in on-demand chunks`
        : `${listed}, of ${graph.sourceModules} modules`,
      "no HTTP library or transport module",
      verdict(typeof graph === "string" ? undefined : httpOutOfStartup(graph, bundle), false),
    ];
  });
  const c = first?.concurrency;
  const text = [
    "## HTTP transport (`serve --http`)",
    "",
    "Ours is started as `serve --http --port 0` (its address read from the `listening on <url>` " +
    "line on stderr) and driven on the RFD profile `/acp` by lean clients in this bench process " +
    "(Deno). SSE: `fetch` for the `POST`s and the `DELETE`, and each stream a `GET` on a TCP " +
    "connection of its own, read by a minimal reader (chunked transfer coding undone, " +
    "TextDecoder, line split; each `data:` line is a message). Deno's `fetch` hands its reader " +
    "one read per HTTP chunk and the server sends one chunk per event, so at tens of thousands " +
    "of events a second a `fetch` reader, not the server, would set the pace; a socket read " +
    "takes whatever has arrived. WebSocket: Deno's global `WebSocket`. Stdio: the same line " +
    "reader on the child's stdout. Every client counts `agent_message_chunk` updates by a " +
    "substring, without parsing them, and parses every other message, so it does the same small " +
    "work per message on each transport. Each server gets its own data directory under " +
    "`.bench-tmp/`, removed after.",
    "",
    `### Update throughput: one prompt answered by ${
      counts.chunks.toLocaleString("en-US")
    } \`agent_message_chunk\` notifications over SSE, WebSocket and stdio ` +
    "(notifications/s, higher is better)",
    "",
    table(
      [
        "runtime",
        "SSE",
        "stdio",
        "SSE ÷ stdio",
        "target",
        "result",
        "WebSocket",
        "WebSocket ÷ stdio",
        "chunks seen SSE / WS / stdio",
      ],
      throughputRows,
    ),
    "",
    "The throughput section's workload: `--stream --model scripted` with one script step of " +
    `${counts.chunks.toLocaleString("en-US")} text deltas per prompt; median of ` +
    `${first?.throughput.runs ?? "n/a"} prompt(s) per transport after a warm-up prompt each. ` +
    "Stdio: ours over stdio in its own process. SSE: one connection to a `serve --http` process " +
    "(`POST` of `initialize`, the connection stream, `session/new`, the session stream; the " +
    "prompt is a `POST` answered `202`, and its answer comes last on the session stream). " +
    "WebSocket: a second connection to the same server, one message per frame; no target. The " +
    "three take turns prompt by prompt, the order rotating. Time runs from sending the prompt to " +
    "its answer. The stdio server coalesces a burst of messages into few pipe writes; the SSE " +
    "body of the SDK's `AcpServer` hands its reader one event per read, so each update is an " +
    "HTTP chunk of its own; over WebSocket each message is a frame, which `ws` (the Node.js " +
    "listener) writes with a `socket.write` of its own.",
    "",
    `### ${
      counts.connections.toLocaleString("en-US")
    } connections at once, each streaming one turn from the fake model (ms)`,
    "",
    table(
      [
        "runtime",
        "turns completed",
        "p50 delta → client",
        "p99",
        "max",
        "target (p99)",
        "result",
        "wall time",
        "one turn's stream alone",
        `open ${counts.connections} connections`,
        "server peak RSS (MiB)",
      ],
      concurrencyRows,
    ),
    "",
    "One `serve --http` process started with `--config <file> --model fake/coder --mode auto " +
    "--stream` on the fake OpenAI-compatible server of `tests/_helpers/fake_llm_server.ts`, run " +
    `in this bench process on 127.0.0.1. After a warm-up turn on one connection, ` +
    `${counts.connections} SSE clients open a connection and a session each, all at once (the ` +
    "open column), then all send their prompt at once. Each turn's model answer is one SSE " +
    `response of ${counts.deltas} text deltas, the fake server pausing ${counts.chunkDelayMs} ms ` +
    "before each item, so one turn's stream alone takes " +
    `${c === undefined ? "n/a" : fixed(c.modelMs, 0)} ms. Each delta's text is the time the ` +
    "fake server writes it (`performance.now()` of this process, taken by the item's getter " +
    "right before its `res.write`); a delta's latency is when a client received the " +
    "`agent_message_chunk` carrying it minus that stamp: the agent reading it off its model " +
    "response, relaying it as a `session/update` onto the session's SSE stream, and this " +
    "process reading it, in the same event loop as the fake server and every other client. " +
    `Every turn must end \`end_turn\` with all ${counts.deltas} deltas received, else the ` +
    "section fails. Wall time: every prompt sent → the last answer. Peak RSS: the server's " +
    "VmHWM after the turns (the whole life of the process, warm-up included).",
    "",
    `### Idle memory per open connection (${counts.idleConnections} connections)`,
    "",
    table(
      [
        "runtime",
        "RSS with none (MiB)",
        `RSS with ${counts.idleConnections} (MiB)`,
        "KiB per connection",
        "target",
        "result",
        "KiB per session over stdio",
        "open one connection (ms, max)",
        `exit after SIGTERM with ${counts.idleConnections} open (ms)`,
      ],
      idleRows,
    ),
    "",
    "A `serve --http` process on the echo model. A warm-up connection opens a session, runs one " +
    "prompt and ends (`DELETE`); once the server has logged the connection closed, VmRSS is read " +
    `(with none). Then ${counts.idleConnections} connections are opened one after another, each ` +
    "with one session and both SSE streams (the connection's and the session's) held open, " +
    "nothing running, and VmRSS is read again at once. KiB per connection: the difference ÷ " +
    `${counts.idleConnections}: the agent's connection and session state, the SDK server's ` +
    "connection, two open response streams and their sockets, and whatever garbage the opening " +
    "left that has not been collected yet. Per session over stdio: the same number of sessions " +
    "opened on one stdio connection of an agent process (after the same warm-up), VmRSS growth " +
    "÷ sessions: the part of a connection's figure that is its session. Open one connection: " +
    "`initialize` → `session/new` answered → the session stream's headers, median (and max) of " +
    "the sequential openings. Then SIGTERM: the server ends every stream and exits (the last " +
    "column).",
    "",
    "### Start-up of the stdio server with the HTTP transport in the code base",
    "",
    table(
      [
        "runtime",
        "spawn → initialize ours",
        "bare",
        "ratio",
        "dist/cli.js / without HTTP",
        "HTTP code in the start-up graph",
        "target",
        "result",
      ],
      startupRows,
    ),
    "",
    "The first three columns repeat the start-up section (same processes); its target applies. " +
    "Before the HTTP transport (bench/RESULTS.md at commit fe61faa) the same ratios were 1.39× " +
    "(deno), 1.24× (node) and 1.33× (bun) on this machine. Sources (Deno, Bun run `mod.ts`): " +
    "`deno info --json mod.ts`, closure over static imports plus the entry's and the runtime " +
    "dispatch's `import()`s; the other `import()`s are lazy. HTTP code: `src/transport/http/`, " +
    "the runtime listeners (`src/runtime/*_http.ts`, `http_common.ts`), `hono`, " +
    "`@hono/node-server`, `ws` and the SDK's `experimental/server`. Target: none of it at " +
    "start-up but at most `src/transport/http/http_security.ts`, the loopback checks the CLI " +
    "runs on its settings (`isLoopback`, `loopbackHosts`, now imported by `src/cli.ts` only " +
    "when `--http` or a host is set), a module with no imports. " +
    (typeof graph === "string"
      ? `The graphs could not be read: ${graph}.`
      : (graph.lazyEdges.length === 0
        ? "No lazy import leads to the HTTP code. "
        : `The rest is reached only through ${
          graph.lazyEdges.map((edge) => `\`${edge}\``).join(", ")
        }, run by \`serve --http\` alone. `) +
        "Node.js runs `dist/cli.js`, an esbuild bundle with code splitting (the build script's " +
        "options with a metafile): start-up reads `cli.js` and the chunks it imports " +
        "statically; the HTTP code sits in chunks loaded by `serve --http`. The " +
        "`dist/cli.js / without HTTP` column times spawn → `initialize` of that build against " +
        "the same build with `src/transport/http/http_transport.ts` and " +
        `\`src/runtime/node_http.ts\` left out (${kib(graph.withoutHttp.bytes)}), alternating, ` +
        `median of ${
          rows.find((row) => row.http?.bundleStartup)?.http?.bundleStartup?.runs ?? "n/a"
        } after a warm-up.`),
  ].join("\n");
  return { text, verdicts };
}
