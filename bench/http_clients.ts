/**
 * The HTTP benchmark's clients, each a transport of the bench's one JSON-RPC client
 * ({@link RpcClient}, in its lean mode): NDJSON over a child's stdio, the RFD profile over HTTP
 * (`fetch` for requests, each SSE stream read off a socket of its own) and Deno's WebSocket.
 *
 * @module
 */
import type { ChildProcess } from "node:child_process";
import { concatBytes } from "../src/util/concat_bytes.ts";
import {
  INITIALIZE_PARAMS,
  LineSplitter,
  type Reply,
  REQUEST_TIMEOUT_MS,
  RpcClient,
  type RpcMessage,
} from "./rpc_client.ts";

const EXIT_TIMEOUT_MS = 15_000;

/** Resolves with the exit time, killing the child if it takes longer than `timeoutMs`. */
export function exitOf(
  child: ChildProcess,
  label: string,
  timeoutMs = EXIT_TIMEOUT_MS,
): Promise<number> {
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

/**
 * The least an ACP client does: requests by id, answers matched to them, and
 * `agent_message_chunk` updates counted without parsing (the lean mode of {@link RpcClient});
 * everything else is parsed. Agent requests are not expected (the models here call no tools)
 * and fail the client.
 */
export abstract class LeanClient extends RpcClient {
  constructor(label: string) {
    super(label, { lean: true });
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
  prompt(sessionId: string, text: string): Promise<Reply> {
    return this.request(
      "session/prompt",
      { sessionId, prompt: [{ type: "text", text }] },
      { sessionId },
    );
  }

  /** Ends the connection. */
  abstract close(): Promise<void>;
}

/** NDJSON over a child's stdin and stdout. */
export class StdioClient extends LeanClient {
  readonly child: ChildProcess;
  readonly #lines = new LineSplitter();

  constructor(label: string, child: ChildProcess) {
    super(label);
    this.child = child;
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (data: string) => {
      const at = performance.now();
      this.#lines.push(data, (text) => this.receive(text, at));
    });
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

  protected override write(message: unknown): Promise<void> {
    this.child.stdin?.write(JSON.stringify(message) + "\n");
    return Promise.resolve();
  }
}

/**
 * The RFD profile over HTTP: `POST /acp` with `initialize` opens the connection (its answer is
 * the body, the id the `Acp-Connection-Id` header); then one SSE `GET` for the connection and one
 * per session, and every message a `POST` answered `202`.
 */
export class SseClient extends LeanClient {
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
    const answer = JSON.parse(body) as RpcMessage;
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

  protected override async write(message: unknown, sessionId?: string): Promise<void> {
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
export class WsClient extends LeanClient {
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

  protected override write(message: unknown): Promise<void> {
    this.#socket?.send(JSON.stringify(message));
    return Promise.resolve();
  }
}
