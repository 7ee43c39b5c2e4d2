/**
 * The torture suite's HTTP side: raw requests over TCP (so that a request can lie about its
 * length, carry bytes no `fetch` would send, or stop half-way), SSE readers over `fetch`, a raw
 * WebSocket client (so that frames can be malformed), and an ACP client for each of the three
 * ways `serve --http` is spoken to: `/acp` (POST + SSE streams), `/v1/acp/:id` (one URL, one
 * connection) and WebSocket.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { connect as netConnect } from "node:net";
import { Waiters } from "../tests/_helpers/waiters.ts";
import type { Frame } from "./driver.ts";

/** Where a server listens, and its token. */
export interface Target {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly token: string;
  /** The `fetch` every request goes through. */
  readonly fetch: typeof fetch;
}

/** The target of a `listening on <url>` URL. */
export function target(url: string, token: string, fetcher: typeof fetch = fetch): Target {
  const parsed = new URL(url);
  return {
    url: url.replace(/\/$/, ""),
    host: parsed.hostname,
    port: Number(parsed.port),
    token,
    fetch: fetcher,
  };
}

/** The `Authorization` header of the right token. */
export function bearer(target: Target): Record<string, string> {
  return { authorization: `Bearer ${target.token}` };
}

/** Runs `body` with a signal aborted after `ms`; the timer is cleared either way. */
export async function withTimeout<T>(
  ms: number,
  body: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`timed out after ${ms} ms`)), ms);
  try {
    return await body(controller.signal);
  } finally {
    clearTimeout(timer);
  }
}

/** The outcome of a plain request: its status (0 when it failed) and body text. */
export interface Plain {
  readonly status: number;
  readonly headers: Headers | undefined;
  readonly text: string;
  readonly error?: string;
}

/** A `fetch` bounded by `ms` that reads the whole body; never throws. */
export async function request(
  target: Target,
  url: string,
  init: RequestInit,
  ms = 10_000,
): Promise<Plain> {
  try {
    return await withTimeout(ms, async (signal) => {
      const response = await target.fetch(url, { ...init, signal });
      const text = await response.text();
      return { status: response.status, headers: response.headers, text };
    });
  } catch (error) {
    return { status: 0, headers: undefined, text: "", error: String(error) };
  }
}

/**
 * The status of a request, its body left unread (a stream that should not have been opened would
 * never end); 0 when it failed or no answer came within `ms`.
 */
export async function statusOf(
  target: Target,
  url: string,
  init: RequestInit,
  ms = 10_000,
): Promise<number> {
  try {
    return await withTimeout(ms, async (signal) => {
      const response = await target.fetch(url, { ...init, signal });
      await response.body?.cancel().catch(() => {});
      return response.status;
    });
  } catch {
    return 0;
  }
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP over TCP

/** The first response on a raw connection. */
export interface RawResponse {
  /** The status, or undefined when no status line came. */
  readonly status: number | undefined;
  /** The status line and headers (latin1). */
  readonly head: string;
  /** How the exchange ended: a whole response, the server closed, or the wait ran out. */
  readonly ended: "complete" | "closed" | "timeout" | "hung-up";
}

/** How a raw exchange goes. */
export interface RawOptions {
  /** Pause between the pieces written. */
  readonly pauseMs?: number;
  /** After the last piece: nothing, a half-close (`end`), or an abrupt close (`destroy`). */
  readonly hangUp?: "none" | "end" | "destroy";
  /** For `destroy`: how long after the last piece. */
  readonly hangUpAfterMs?: number;
  /** How long to wait for the response. @default {10000} */
  readonly waitMs?: number;
  /** The request is a HEAD: its response has no body. */
  readonly head?: boolean;
}

/** Whether `data` holds a whole response (for a HEAD request: its head). */
function completeResponse(data: Buffer, head: boolean): boolean {
  const end = data.indexOf("\r\n\r\n");
  if (end === -1) return false;
  const text = data.subarray(0, end).toString("latin1");
  const status = Number(/^HTTP\/\d(?:\.\d)? (\d{3})/.exec(text)?.[1] ?? "0");
  if (
    head || status === 101 || status === 204 || status === 304 || (status >= 100 && status < 200)
  ) {
    return true;
  }
  const body = data.subarray(end + 4);
  const length = /^content-length:\s*(\d+)\s*$/im.exec(text);
  if (length) return body.length >= Number(length[1]);
  if (/^transfer-encoding:.*chunked/im.test(text)) {
    return body.indexOf("0\r\n\r\n") === 0 || body.indexOf("\r\n0\r\n\r\n") !== -1;
  }
  return false;
}

/**
 * Writes `pieces` to a new TCP connection to `target` and reads the first response. Never
 * throws; the socket is closed when it returns.
 */
export function rawHttp(
  target: Target,
  pieces: ReadonlyArray<string | Uint8Array>,
  options: RawOptions = {},
): Promise<RawResponse> {
  return new Promise((resolve) => {
    const socket = netConnect({ host: target.host, port: target.port });
    let data = Buffer.alloc(0);
    let settled = false;
    const timers = new Set<ReturnType<typeof setTimeout>>();
    const later = (ms: number, then: () => void): void => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        then();
      }, ms);
      timers.add(timer);
    };
    const finish = (ended: RawResponse["ended"]): void => {
      if (settled) return;
      settled = true;
      for (const timer of timers) clearTimeout(timer);
      socket.destroy();
      const end = data.indexOf("\r\n\r\n");
      const head = data.subarray(0, end === -1 ? Math.min(data.length, 4096) : end)
        .toString("latin1");
      const status = /^HTTP\/\d(?:\.\d)? (\d{3})/.exec(head)?.[1];
      resolve({ status: status === undefined ? undefined : Number(status), head, ended });
    };
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      if (completeResponse(data, options.head ?? false)) finish("complete");
    });
    socket.on("close", () => finish("closed"));
    socket.on("error", () => {}); // "close" follows
    socket.on("connect", () => {
      let index = 0;
      const writeNext = (): void => {
        if (settled) return;
        if (index < pieces.length) {
          const piece = pieces[index++] as string | Uint8Array;
          socket.write(typeof piece === "string" ? Buffer.from(piece, "latin1") : piece);
          if (options.pauseMs && index < pieces.length) later(options.pauseMs, writeNext);
          else writeNext();
          return;
        }
        if (options.hangUp === "end") socket.end();
        if (options.hangUp === "destroy") {
          later(options.hangUpAfterMs ?? 0, () => finish("hung-up"));
        }
      };
      writeNext();
    });
    later(options.waitMs ?? 10_000, () => finish("timeout"));
  });
}

/** A raw request: request line, `Host`, the headers given, `Content-Length` unless told not. */
export function rawRequest(
  target: Target,
  line: string,
  headers: readonly string[],
  body?: string,
  options: { readonly host?: boolean; readonly length?: boolean; readonly close?: boolean } = {},
): string {
  const head = [line];
  if (options.host ?? true) head.push(`Host: ${target.host}:${target.port}`);
  head.push(...headers);
  if (body !== undefined && (options.length ?? true)) {
    head.push(`Content-Length: ${Buffer.byteLength(body, "latin1")}`);
  }
  if (options.close ?? true) head.push("Connection: close");
  return `${head.join("\r\n")}\r\n\r\n${body ?? ""}`;
}

// ---------------------------------------------------------------------------------------------
// Server-sent events

/** Parses SSE text: the JSON of each `data:` block; returns what is left unparsed. */
function parseEvents(text: string, onMessage: (frame: Frame) => void): string {
  for (;;) {
    const match = /\r?\n\r?\n/.exec(text);
    if (!match) return text;
    const block = text.slice(0, match.index);
    text = text.slice(match.index + match[0].length);
    const data = block.split(/\r?\n/)
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(line.startsWith("data: ") ? 6 : 5))
      .join("\n");
    if (data === "") continue;
    try {
      const frame = JSON.parse(data);
      if (frame !== null && typeof frame === "object" && !Array.isArray(frame)) onMessage(frame);
    } catch {
      onMessage({ unparsed: data.slice(0, 200) });
    }
  }
}

/** One SSE `GET`, read as it comes. */
export class EventReader {
  /** The response status (0 when the request failed). */
  readonly status: Promise<number>;
  /** Settles once the stream ended (by the server, an error or {@link abort}). */
  readonly ended: Promise<void>;
  readonly #controller = new AbortController();

  /**
   * @param url The stream's URL
   * @param headers Its headers (`Accept: text/event-stream` is added)
   * @param onMessage Receives each message
   */
  constructor(
    fetcher: typeof fetch,
    url: string,
    headers: Record<string, string>,
    onMessage: (frame: Frame) => void,
  ) {
    const status = Promise.withResolvers<number>();
    this.status = status.promise;
    this.ended = this.#run(fetcher, url, headers, onMessage, status.resolve);
  }

  async #run(
    fetcher: typeof fetch,
    url: string,
    headers: Record<string, string>,
    onMessage: (frame: Frame) => void,
    status: (value: number) => void,
  ): Promise<void> {
    let response: Response;
    try {
      response = await fetcher(url, {
        headers: { accept: "text/event-stream", ...headers },
        signal: this.#controller.signal,
      });
    } catch {
      return status(0);
    }
    status(response.status);
    if (response.status !== 200 || response.body === null) {
      await response.body?.cancel().catch(() => {});
      return;
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text = parseEvents(text + value, onMessage);
      }
    } catch {
      // Aborted, or the server cut the stream.
    } finally {
      await reader.cancel().catch(() => {});
    }
  }

  /** Stops reading at once (the client vanishes). */
  abort(): void {
    this.#controller.abort();
  }
}

// ---------------------------------------------------------------------------------------------
// Raw WebSocket

/** WebSocket opcodes. */
export const OPCODE = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 } as const;

/** A frame to send, correct or not. */
export interface FrameSpec {
  readonly opcode: number;
  readonly payload?: Uint8Array;
  /** @default {true} */
  readonly fin?: boolean;
  /** Client frames must be masked. @default {true} */
  readonly mask?: boolean;
  /** The three RSV bits. @default {0} */
  readonly rsv?: number;
  /** A declared length that differs from the payload's. */
  readonly length?: bigint;
}

/** Encodes a frame as a client would (masked unless told not). */
export function encodeFrame(spec: FrameSpec): Uint8Array {
  const payload = spec.payload ?? new Uint8Array();
  const length = spec.length ?? BigInt(payload.length);
  const mask = spec.mask ?? true;
  const head: number[] = [((spec.fin ?? true) ? 0x80 : 0) | ((spec.rsv ?? 0) << 4) | spec.opcode];
  const maskBit = mask ? 0x80 : 0;
  if (length < 126n) head.push(maskBit | Number(length));
  else if (length < 65536n) {
    head.push(maskBit | 126, Number(length >> 8n) & 0xff, Number(length) & 0xff);
  } else {
    head.push(maskBit | 127);
    for (let shift = 56n; shift >= 0n; shift -= 8n) head.push(Number((length >> shift) & 0xffn));
  }
  const key = mask ? crypto.getRandomValues(new Uint8Array(4)) : new Uint8Array();
  const out = new Uint8Array(head.length + key.length + payload.length);
  out.set(head, 0);
  out.set(key, head.length);
  for (let index = 0; index < payload.length; index++) {
    out[head.length + key.length + index] = (payload[index] as number) ^
      (mask ? key[index % 4] as number : 0);
  }
  return out;
}

/** What a WebSocket handshake came to. */
export interface Handshake {
  readonly status: number | undefined;
  readonly head: string;
  /** The socket, when the server switched protocols. */
  readonly socket?: RawWebSocket;
}

/** Options of {@link RawWebSocket.open}. */
export interface HandshakeOptions {
  /** @default {"/acp"} */
  readonly path?: string;
  /** Extra header lines. */
  readonly headers?: readonly string[];
  /** `null` leaves `Sec-WebSocket-Key` out. */
  readonly key?: string | null;
  /** @default {"13"} */
  readonly version?: string;
  /** @default {"GET"} */
  readonly method?: string;
  /** How long the handshake may take. @default {10000} */
  readonly waitMs?: number;
}

/** A WebSocket client over a raw TCP socket, so that any frame can be sent. */
export class RawWebSocket {
  /** Text messages received (reassembled). */
  readonly messages: string[] = [];
  /** The close code the server sent (1005 without one), once it sent a close frame. */
  closeCode: number | undefined;
  /** Settles once the TCP connection is closed. */
  readonly closed: Promise<void>;
  /** Called with each text message. */
  onMessage: (text: string) => void = () => {};
  readonly #socket: ReturnType<typeof netConnect>;
  #buffer = Buffer.alloc(0);
  #fragments: Buffer[] = [];
  #fragmentOpcode = 0;
  #sentClose = false;
  #isClosed = false;
  readonly #waiters = new Waiters();

  private constructor(socket: ReturnType<typeof netConnect>, rest: Buffer) {
    this.#socket = socket;
    this.closed = new Promise((resolve) => {
      socket.on("close", () => {
        this.#isClosed = true;
        this.#wake();
        resolve();
      });
    });
    socket.on("data", (chunk: Buffer) => this.#receive(chunk));
    if (rest.length > 0) this.#receive(rest);
  }

  /** Opens a TCP connection and sends the upgrade request; never throws. */
  static open(target: Target, options: HandshakeOptions = {}): Promise<Handshake> {
    return new Promise((resolve) => {
      const socket = netConnect({ host: target.host, port: target.port });
      let data = Buffer.alloc(0);
      let settled = false;
      const finish = (keep: boolean): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.removeListener("data", onData);
        const end = data.indexOf("\r\n\r\n");
        const head = data.subarray(0, end === -1 ? data.length : end).toString("latin1");
        const status = /^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1];
        if (keep && status === "101") {
          resolve({
            status: 101,
            head,
            socket: new RawWebSocket(socket, data.subarray(end + 4)),
          });
          return;
        }
        socket.destroy();
        resolve({ status: status === undefined ? undefined : Number(status), head });
      };
      const onData = (chunk: Buffer): void => {
        data = Buffer.concat([data, chunk]);
        const end = data.indexOf("\r\n\r\n");
        if (end === -1) return;
        const head = data.subarray(0, end).toString("latin1");
        if (head.startsWith("HTTP/1.1 101")) return finish(true);
        if (completeResponse(data, false)) finish(false);
      };
      const timer = setTimeout(() => finish(false), options.waitMs ?? 10_000);
      socket.on("data", onData);
      socket.on("close", () => finish(false));
      socket.on("error", () => {});
      socket.on("connect", () => {
        const key = options.key === undefined
          ? Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64")
          : options.key;
        const lines = [
          `${options.method ?? "GET"} ${options.path ?? "/acp"} HTTP/1.1`,
          `Host: ${target.host}:${target.port}`,
          "Upgrade: websocket",
          "Connection: Upgrade",
          ...(key === null ? [] : [`Sec-WebSocket-Key: ${key}`]),
          `Sec-WebSocket-Version: ${options.version ?? "13"}`,
          ...(options.headers ?? []),
        ];
        socket.write(Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"));
      });
    });
  }

  /** Whether the TCP connection is closed. */
  get isClosed(): boolean {
    return this.#isClosed;
  }

  #wake(): void {
    this.#waiters.wake();
  }

  /** Resolves true once a received text message matches; false after `ms` or on close. */
  waitForMessage(matches: (text: string) => boolean, ms: number): Promise<boolean> {
    const found = (): boolean => this.messages.some(matches);
    if (found()) return Promise.resolve(true);
    if (this.#isClosed) return Promise.resolve(false);
    return this.#waiters.until(found, ms, () => this.#isClosed);
  }

  /** Sends one text message. */
  send(text: string): void {
    this.sendFrame({ opcode: OPCODE.text, payload: new TextEncoder().encode(text) });
  }

  /** Sends a frame, as given. */
  sendFrame(spec: FrameSpec): void {
    this.sendRaw(encodeFrame(spec));
  }

  /** Writes bytes as they are. */
  sendRaw(bytes: Uint8Array): void {
    if (this.#isClosed || this.#socket.destroyed) return;
    this.#socket.write(bytes);
  }

  /** Sends a close frame and waits (at most `ms`) for the server to close; then closes. */
  async close(code = 1000, ms = 5_000): Promise<void> {
    if (!this.#sentClose) {
      this.#sentClose = true;
      const payload = new Uint8Array([code >> 8, code & 0xff]);
      this.sendFrame({ opcode: OPCODE.close, payload });
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.closed,
      new Promise<void>((resolve) => timer = setTimeout(resolve, ms)),
    ]);
    clearTimeout(timer);
    this.destroy();
  }

  /** Half-closes the TCP connection (FIN, no close frame). */
  end(): void {
    this.#socket.end();
  }

  /** Drops the TCP connection at once (no close frame). */
  destroy(): void {
    this.#socket.destroy();
  }

  #receive(chunk: Buffer): void {
    this.#buffer = Buffer.concat([this.#buffer, chunk]);
    for (;;) {
      const buffer = this.#buffer;
      if (buffer.length < 2) return;
      const first = buffer[0] as number;
      const second = buffer[1] as number;
      let length = second & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (buffer.length < 4) return;
        length = buffer.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (buffer.length < 10) return;
        length = Number(buffer.readBigUInt64BE(2));
        offset = 10;
      }
      const masked = (second & 0x80) !== 0;
      const key = masked ? buffer.subarray(offset, offset + 4) : undefined;
      if (masked) offset += 4;
      if (buffer.length < offset + length) return;
      const payload = Buffer.from(buffer.subarray(offset, offset + length));
      if (key) {
        for (let index = 0; index < payload.length; index++) payload[index]! ^= key[index % 4]!;
      }
      this.#buffer = buffer.subarray(offset + length);
      this.#frame((first & 0x80) !== 0, first & 0x0f, payload);
    }
  }

  #frame(fin: boolean, opcode: number, payload: Buffer): void {
    if (opcode === OPCODE.close) {
      this.closeCode = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
      if (!this.#sentClose) {
        this.#sentClose = true;
        this.sendFrame({ opcode: OPCODE.close, payload: payload.subarray(0, 2) });
      }
      this.#socket.end();
      return;
    }
    if (opcode === OPCODE.ping) {
      this.sendFrame({ opcode: OPCODE.pong, payload });
      return;
    }
    if (opcode === OPCODE.pong) return;
    if (opcode !== OPCODE.continuation) {
      this.#fragments = [];
      this.#fragmentOpcode = opcode;
    }
    this.#fragments.push(payload);
    if (!fin) return;
    const whole = Buffer.concat(this.#fragments);
    this.#fragments = [];
    if (this.#fragmentOpcode !== OPCODE.text) return;
    const text = whole.toString("utf8");
    this.messages.push(text);
    this.onMessage(text);
    this.#wake();
  }
}

// ---------------------------------------------------------------------------------------------
// ACP clients

/** How a client speaks to the server. */
export type Profile = "acp" | "keyed" | "ws";

/** Every profile. */
export const PROFILES: readonly Profile[] = ["acp", "keyed", "ws"];

/** The answer to a request: the HTTP status of its sending (0 for WebSocket), and the response. */
export interface Answer {
  /** The HTTP status (0 on WebSocket, -1 when it could not be sent). */
  readonly status: number;
  /** The JSON-RPC response; undefined when the sending was refused or nothing came in time. */
  readonly frame?: Frame;
}

/** The `initialize` params the clients send. */
export const INITIALIZE = {
  protocolVersion: 1,
  clientCapabilities: {},
  clientInfo: { name: "acp-harness-torture-http", version: "0" },
};

/** What every profile's client shares: ids from its own range, received frames, waiting. */
export abstract class AcpClient {
  readonly target: Target;
  readonly profile: Profile;
  /** Every message received on any of the client's streams (and POST bodies), in order. */
  readonly frames: Frame[] = [];
  /** The first of this client's request ids; its ids are `idBase` up to `idBase + 999,999`. */
  readonly idBase: number;
  #nextId: number;
  readonly #waiters = new Waiters();
  readonly #tasks = new Set<Promise<unknown>>();
  #ended = false;
  /** Whether {@link connect} succeeded. */
  opened = false;

  constructor(target: Target, profile: Profile, idBase: number) {
    this.target = target;
    this.profile = profile;
    this.idBase = idBase;
    this.#nextId = idBase;
  }

  /** Whether `id` is one of this client's request ids. */
  ownsId(id: unknown): boolean {
    return typeof id === "number" && id >= this.idBase && id < this.idBase + 1_000_000;
  }

  /** Whether the client closed or vanished. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Keeps track of work under way, so that {@link settled} can wait for it. */
  protected track<T>(promise: Promise<T>): Promise<T> {
    this.#tasks.add(promise);
    const forget = (): void => {
      this.#tasks.delete(promise);
    };
    promise.then(forget, forget);
    return promise;
  }

  /** Marks the client ended: whoever waits for an answer stops waiting. */
  protected markEnded(): void {
    this.#ended = true;
    this.#waiters.wake();
  }

  /** Settles once nothing the client started is under way (after {@link close} or {@link vanish}). */
  async settled(): Promise<void> {
    while (this.#tasks.size > 0) await Promise.allSettled([...this.#tasks]);
  }

  /** Takes a received message (answers the agent's requests with an error). */
  protected receive(frame: Frame): void {
    // A POST body may repeat what the stream brought (the URL-keyed profile): keep one.
    const isResponse = frame.method === undefined && frame.id !== undefined;
    if (isResponse && this.responseOf(frame.id as number | string) !== undefined) return;
    this.frames.push(frame);
    if (typeof frame.method === "string" && frame.id !== undefined && !this.#ended) {
      const sessionId = (frame.params as { sessionId?: unknown } | undefined)?.sessionId;
      void this.send(
        {
          jsonrpc: "2.0",
          id: frame.id,
          error: { code: -32601, message: `Method not found: ${frame.method}` },
        },
        typeof sessionId === "string" ? sessionId : undefined,
      );
    }
    this.#waiters.wake();
  }

  /** The response to `id` received so far. */
  responseOf(id: number | string): Frame | undefined {
    return this.frames.find((frame) =>
      frame.id === id && frame.method === undefined && ("result" in frame || "error" in frame)
    );
  }

  /** Resolves true once `predicate` holds; false after `ms` or once the client ended. */
  waitFor(predicate: () => boolean, ms: number): Promise<boolean> {
    if (predicate()) return Promise.resolve(true);
    if (this.#ended) return Promise.resolve(false);
    return this.#waiters.until(predicate, ms, () => this.#ended);
  }

  /** A request with a fresh id of this client (not sent). */
  message(method: string, params: unknown): { id: number; message: Frame } {
    const id = this.#nextId++;
    return { id, message: { jsonrpc: "2.0", id, method, params } };
  }

  /**
   * Sends one message (its session, for the `/acp` headers, from `params.sessionId` unless
   * given); resolves with the HTTP status (0 on WebSocket; -1 when it could not be sent).
   */
  send(message: Frame, sessionId?: string): Promise<number> {
    return this.track(this.deliver(message, sessionId));
  }

  /** Sends one message: what {@link send} does for a profile. */
  protected abstract deliver(message: Frame, sessionId?: string): Promise<number>;

  /** Opens the connection (`initialize`); resolves with a problem, or undefined when it worked. */
  abstract connect(): Promise<string | undefined>;

  /** Makes sure the client reads what comes for `sessionId` (`/acp`: its session stream). */
  abstract watch(sessionId: string): Promise<number>;

  /** Ends the connection politely (DELETE, close frame); resolves with the status or close code. */
  abstract close(): Promise<number>;

  /** Vanishes: every request and stream dropped at once, nothing said. */
  abstract vanish(): void;

  /** Sends a request and waits (at most `ms`) for its response. */
  async call(method: string, params: unknown, ms = 15_000, sessionId?: string): Promise<Answer> {
    const { id, message } = this.message(method, params);
    return await this.callWith(id, message, ms, sessionId);
  }

  /** Sends a prepared request and waits (at most `ms`) for its response. */
  callWith(id: number, message: Frame, ms = 15_000, sessionId?: string): Promise<Answer> {
    return this.track((async () => {
      const status = await this.send(message, sessionId);
      if (status !== 0 && (status < 200 || status > 299)) return { status };
      await this.waitFor(() => this.responseOf(id) !== undefined, ms);
      const frame = this.responseOf(id);
      return frame === undefined ? { status } : { status, frame };
    })());
  }

  /** Sends a notification; resolves with the HTTP status. */
  notify(method: string, params: unknown, sessionId?: string): Promise<number> {
    return this.send({ jsonrpc: "2.0", method, params }, sessionId);
  }

  /** Opens a session and watches it; its id, or undefined. */
  async newSession(cwd: string): Promise<string | undefined> {
    const answer = await this.call("session/new", { cwd, mcpServers: [] });
    const sessionId = (answer.frame?.result as { sessionId?: string } | undefined)?.sessionId;
    if (sessionId === undefined) return undefined;
    await this.watch(sessionId);
    return sessionId;
  }

  /** Sends a one-text prompt; resolves with its answer (bounded by `ms`). */
  prompt(sessionId: string, text: string, ms = 30_000): Promise<Answer> {
    return this.call("session/prompt", { sessionId, prompt: [{ type: "text", text }] }, ms);
  }

  /** The updates received for a session, from frame index `from` on. */
  updates(sessionId: string, from = 0): Array<Record<string, unknown>> {
    return this.frames.slice(from)
      .filter((frame) =>
        frame.method === "session/update" &&
        (frame.params as { sessionId?: string } | undefined)?.sessionId === sessionId
      )
      .map((frame) => (frame.params as { update: Record<string, unknown> }).update);
  }
}

/** The params' `sessionId`, when it is a string. */
function sessionOf(message: Frame): string | undefined {
  const sessionId = (message.params as { sessionId?: unknown } | undefined)?.sessionId;
  return typeof sessionId === "string" ? sessionId : undefined;
}

/** `/acp`: `initialize` opens the connection, then POSTs (202) and SSE streams. */
export class RfdClient extends AcpClient {
  /** The `Acp-Connection-Id`, once connected. */
  connectionId: string | undefined;
  readonly #readers = new Map<string, EventReader>();
  readonly #posts = new Set<AbortController>();

  constructor(target: Target, idBase: number) {
    super(target, "acp", idBase);
  }

  /** The headers of this connection (and a session). */
  headers(sessionId?: string): Record<string, string> {
    return {
      ...bearer(this.target),
      ...(this.connectionId === undefined ? {} : { "acp-connection-id": this.connectionId }),
      ...(sessionId === undefined ? {} : { "acp-session-id": sessionId }),
    };
  }

  async #post(message: Frame, headers: Record<string, string>): Promise<Response | undefined> {
    const controller = new AbortController();
    this.#posts.add(controller);
    const timer = setTimeout(() => controller.abort(), 30_000);
    try {
      return await this.target.fetch(`${this.target.url}/acp`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify(message),
        signal: controller.signal,
      });
    } catch {
      return undefined;
    } finally {
      clearTimeout(timer);
      this.#posts.delete(controller);
    }
  }

  connect(): Promise<string | undefined> {
    return this.track((async () => {
      const { message } = this.message("initialize", INITIALIZE);
      const response = await this.#post(message, bearer(this.target));
      if (response === undefined) return "initialize failed";
      const text = await response.text().catch(() => "");
      const connectionId = response.headers.get("acp-connection-id");
      if (response.status !== 200 || connectionId === null) {
        return `initialize: ${response.status} ${text.slice(0, 200)}`;
      }
      this.connectionId = connectionId;
      try {
        this.receive(JSON.parse(text));
      } catch {
        return `initialize: not JSON: ${text.slice(0, 200)}`;
      }
      const status = await this.#open("");
      if (status !== 200) return `connection stream: ${status}`;
      this.opened = true;
      return undefined;
    })());
  }

  /** Opens (once) the connection stream (`""`) or a session stream. */
  async #open(sessionId: string): Promise<number> {
    const open = this.#readers.get(sessionId);
    if (open) return await open.status;
    if (this.ended) return -1;
    const reader = new EventReader(
      this.target.fetch,
      `${this.target.url}/acp`,
      this.headers(sessionId === "" ? undefined : sessionId),
      (frame) => this.receive(frame),
    );
    this.#readers.set(sessionId, reader);
    this.track(reader.ended);
    return await reader.status;
  }

  watch(sessionId: string): Promise<number> {
    return this.#open(sessionId);
  }

  protected async deliver(message: Frame, sessionId?: string): Promise<number> {
    const response = await this.#post(message, this.headers(sessionId ?? sessionOf(message)));
    if (response === undefined) return -1;
    await response.body?.cancel().catch(() => {});
    return response.status;
  }

  close(): Promise<number> {
    return this.track((async () => {
      const answer = await request(this.target, `${this.target.url}/acp`, {
        method: "DELETE",
        headers: this.headers(),
      });
      this.vanish();
      return answer.status;
    })());
  }

  vanish(): void {
    this.markEnded();
    for (const controller of this.#posts) controller.abort();
    for (const reader of this.#readers.values()) reader.abort();
  }
}

/** `/v1/acp/:key`: one URL is one connection; a POSTed request is answered when its answer came. */
export class KeyedClient extends AcpClient {
  readonly key: string;
  readonly url: string;
  #reader: EventReader | undefined;
  readonly #posts = new Set<AbortController>();

  constructor(target: Target, idBase: number, key: string) {
    super(target, "keyed", idBase);
    this.key = key;
    this.url = `${target.url}/v1/acp/${key}`;
  }

  async connect(): Promise<string | undefined> {
    const status = await this.watch("");
    if (status !== 200) return `event stream: ${status}`;
    const answer = await this.call("initialize", INITIALIZE);
    if ((answer.frame?.result as { protocolVersion?: unknown } | undefined) === undefined) {
      return `initialize: ${answer.status} ${JSON.stringify(answer.frame ?? null).slice(0, 200)}`;
    }
    this.opened = true;
    return undefined;
  }

  async watch(_sessionId: string): Promise<number> {
    if (this.ended) return -1;
    if (this.#reader === undefined) {
      this.#reader = new EventReader(
        this.target.fetch,
        this.url,
        bearer(this.target),
        (frame) => this.receive(frame),
      );
      this.track(this.#reader.ended);
    }
    return await this.#reader.status;
  }

  protected async deliver(message: Frame): Promise<number> {
    const controller = new AbortController();
    this.#posts.add(controller);
    const timer = setTimeout(() => controller.abort(), 60_000);
    try {
      const response = await this.target.fetch(this.url, {
        method: "POST",
        headers: { ...bearer(this.target), "content-type": "application/json" },
        body: JSON.stringify(message),
        signal: controller.signal,
      });
      const text = await response.text();
      if (response.status === 200 && text !== "") {
        try {
          this.receive(JSON.parse(text));
        } catch {
          // Not JSON: the caller sees no answer.
        }
      }
      return response.status;
    } catch {
      return -1;
    } finally {
      clearTimeout(timer);
      this.#posts.delete(controller);
    }
  }

  close(): Promise<number> {
    return this.track((async () => {
      const answer = await request(this.target, this.url, {
        method: "DELETE",
        headers: bearer(this.target),
      });
      this.vanish();
      return answer.status;
    })());
  }

  vanish(): void {
    this.markEnded();
    for (const controller of this.#posts) controller.abort();
    this.#reader?.abort();
  }
}

/** WebSocket on `/acp`: one JSON-RPC message per text frame. */
export class WsClient extends AcpClient {
  socket: RawWebSocket | undefined;
  /** The `Acp-Connection-Id` of the `101`. */
  connectionId: string | undefined;

  constructor(target: Target, idBase: number) {
    super(target, "ws", idBase);
  }

  async connect(): Promise<string | undefined> {
    const handshake = await this.track(RawWebSocket.open(this.target, {
      headers: [`Authorization: Bearer ${this.target.token}`],
    }));
    if (!handshake.socket) return `upgrade: ${handshake.status} ${handshake.head.slice(0, 200)}`;
    const socket = handshake.socket;
    this.socket = socket;
    this.track(socket.closed);
    if (this.ended) socket.destroy();
    this.connectionId = /^acp-connection-id:\s*(\S+)/im.exec(handshake.head)?.[1];
    socket.onMessage = (text) => {
      try {
        this.receive(JSON.parse(text));
      } catch {
        this.receive({ unparsed: text.slice(0, 200) });
      }
    };
    const answer = await this.call("initialize", INITIALIZE);
    if ((answer.frame?.result as { protocolVersion?: unknown } | undefined) === undefined) {
      return `initialize: ${JSON.stringify(answer.frame ?? null).slice(0, 200)}`;
    }
    this.opened = true;
    return undefined;
  }

  watch(_sessionId: string): Promise<number> {
    return Promise.resolve(101);
  }

  protected deliver(message: Frame): Promise<number> {
    if (!this.socket || this.socket.isClosed) return Promise.resolve(-1);
    this.socket.send(JSON.stringify(message));
    return Promise.resolve(0);
  }

  close(): Promise<number> {
    return this.track((async () => {
      this.markEnded();
      await this.socket?.close(1000);
      return this.socket?.closeCode ?? 0;
    })());
  }

  vanish(): void {
    this.markEnded();
    this.socket?.destroy();
  }

  /** Half-closes the TCP connection (no close frame), then vanishes. */
  hangUp(): void {
    this.markEnded();
    this.socket?.end();
  }
}

/** Whether `promise` settles within `ms` (the timer is cleared either way). */
export async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), ms));
  try {
    return await Promise.race([promise.then(() => true, () => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
