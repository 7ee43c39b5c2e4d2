/**
 * The HTTP listener on Deno: `Deno.listen` with its own accept loop, `Deno.serveHttp` on each
 * accepted connection, and `Deno.upgradeWebSocket`.
 *
 * Not `Deno.serve`: it gives no hold on a connection before its request, so it can neither cap
 * sockets nor time out headers that never finish, and an accept failure (`Too many open files`)
 * ends it for good. Here every socket passes the {@link SocketGuard} first (refused at its caps:
 * closed at once), must send complete request headers within `headerTimeoutMs` (also between the
 * requests of a keep-alive connection), and an accept failure is retried after a short pause.
 *
 * Deno has no size limit option for inbound WebSocket messages, so the socket is handed over in an
 * adapter that closes it with 1009 when a message is over `maxMessageBytes` (Deno has read the
 * message by then). `close()` stops accepting at once, closes idle keep-alive connections, lets
 * responses under way finish, and closes upgraded WebSockets right away (1001). When the grace
 * period is over it errors the bodies of the responses still streaming and answers 503 to the
 * requests the handler has not answered yet.
 *
 * @module
 */
import type {
  HttpHandler,
  HttpListener,
  ListenOptions,
  WebSocketUpgrade,
} from "../transport/http/http_handler.ts";
import {
  badConnectionId,
  CLOSE_TOO_BIG,
  EventedSocket,
  graceTimer,
  isUpgrade,
  listenerUrl,
  textExceeds,
  wantsWebSocket,
} from "./http_common.ts";
import { effectiveSocketLimits, SocketGuard, type SocketLimits } from "./socket_guard.ts";

/** One request of `Deno.serveHttp`. */
interface RequestEvent {
  readonly request: Request;
  respondWith(response: Response | Promise<Response>): Promise<void>;
}

/** A connection served by `Deno.serveHttp`. */
interface HttpConn {
  nextRequest(): Promise<RequestEvent | null>;
  close(): void;
}

type ServeHttpOnConn = (conn: Deno.Conn) => HttpConn;

/** The longest pause before accepting again after an accept failure. */
const MAX_ACCEPT_BACKOFF_MS = 1000;

/**
 * Binds a listener for a handler on Deno.
 *
 * @param handler What to serve
 * @param options Where to listen, the WebSocket message limit and the socket limits
 * @returns The bound listener
 */
export function serveHttp(handler: HttpHandler, options: ListenOptions): Promise<HttpListener> {
  try {
    return Promise.resolve(new DenoListener(handler, options));
  } catch (error) {
    return Promise.reject(error);
  }
}

/** What a pending exchange becomes when the grace period runs out. */
const FORCED: unique symbol = Symbol("forced");

/** A connection being served: how to close it while it waits for a request. */
interface Served {
  idle: boolean;
  readonly close: () => void;
}

class DenoListener implements HttpListener {
  readonly url: string;
  readonly #handler: HttpHandler;
  readonly #maxMessageBytes: number;
  readonly #limits: SocketLimits;
  readonly #guard: SocketGuard;
  readonly #listener: Deno.TcpListener;
  readonly #serveConn: ServeHttpOnConn;
  readonly #accepting: Promise<void>;
  readonly #connections = new Set<Served>();
  /** Settles once the last connection is gone (while closing). */
  #drained = Promise.withResolvers<void>();
  /**
   * Ends an exchange still under way (a request the handler has not answered, a response body
   * still streaming, a WebSocket still open), one entry each.
   */
  readonly #open = new Set<() => void>();
  /** The entries of {@link #open} that close a WebSocket. */
  readonly #sockets = new Set<() => void>();
  #forced = false;
  #closing: Promise<void> | undefined;

  constructor(handler: HttpHandler, options: ListenOptions) {
    const serveConn = (Deno as unknown as { serveHttp?: ServeHttpOnConn }).serveHttp;
    if (typeof serveConn !== "function") {
      throw new Error("Cannot serve HTTP: this Deno has no Deno.serveHttp");
    }
    this.#serveConn = serveConn;
    this.#handler = handler;
    this.#maxMessageBytes = options.maxMessageBytes;
    this.#limits = effectiveSocketLimits({
      headerTimeoutMs: options.headerTimeoutMs,
      maxSockets: options.maxSockets,
      maxSocketsPerAddress: options.maxSocketsPerAddress,
    }, 1);
    this.#guard = new SocketGuard(this.#limits);
    this.#listener = Deno.listen({
      hostname: options.hostname,
      port: options.port,
      transport: "tcp",
    });
    this.url = listenerUrl(this.#listener.addr.hostname, this.#listener.addr.port);
    this.#accepting = this.#acceptAll();
  }

  /** Accepts until closed; an accept failure (out of descriptors) pauses, then goes on. */
  async #acceptAll(): Promise<void> {
    let backoff = 0;
    while (!this.#closing) {
      let conn: Deno.Conn;
      try {
        conn = await this.#listener.accept();
        backoff = 0;
      } catch {
        if (this.#closing) return;
        backoff = Math.min(MAX_ACCEPT_BACKOFF_MS, backoff === 0 ? 10 : backoff * 2);
        await new Promise((resolve) => setTimeout(resolve, backoff));
        continue;
      }
      void this.#serve(conn);
    }
  }

  /** Serves one connection's requests, one after another, until it ends. */
  async #serve(conn: Deno.Conn): Promise<void> {
    let http: HttpConn | undefined;
    const end = (): void => {
      try {
        if (http) http.close();
        else conn.close();
      } catch {
        // Already closed.
      }
    };
    const address = (conn.remoteAddr as Deno.NetAddr).hostname ?? "";
    const ticket = this.#guard.admit(address, end);
    if (!ticket) return end();
    const served: Served = { idle: true, close: end };
    this.#connections.add(served);
    let upgraded: { readonly closed: Promise<void> } | undefined;
    try {
      http = this.#serveConn(conn);
      // Until the client or the server ends it: a response sent while closing says
      // `Connection: close`, so the next `nextRequest()` ends (closing the connection at once
      // would cut the response short).
      for (let first = true;; first = false) {
        served.idle = true;
        const event = await this.#nextRequest(http, first, end);
        if (event === null) break;
        ticket.headersDone();
        served.idle = false;
        upgraded = await this.#answer(event, address, end);
        if (upgraded) break;
      }
      await upgraded?.closed;
    } catch {
      // The connection failed or was closed.
    } finally {
      if (!upgraded) end();
      ticket.release();
      this.#connections.delete(served);
      if (this.#closing && this.#connections.size === 0) this.#drained.resolve();
    }
  }

  /**
   * The next request; null once the connection ends. After the first request (whose deadline the
   * guard keeps), a keep-alive connection gets `headerTimeoutMs` for the next one's headers.
   */
  async #nextRequest(
    http: HttpConn,
    first: boolean,
    end: () => void,
  ): Promise<RequestEvent | null> {
    if (first) return await http.nextRequest();
    const timer = setTimeout(end, this.#limits.headerTimeoutMs);
    try {
      return await http.nextRequest();
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Answers one request; resolves once the response is sent. For a WebSocket, resolves with a
   * promise that settles when the socket closes.
   */
  async #answer(
    event: RequestEvent,
    address: string,
    end: () => void,
  ): Promise<{ readonly closed: Promise<void> } | undefined> {
    let closed: Promise<void> | undefined;
    // A body that cannot be read (cut short, malformed chunks) ends the connection without an
    // answer, as `Deno.serve` does: the client broke the exchange, not the handler.
    let broken = false;
    const request = watchBody(event.request, () => broken = true);
    const response = this.#respond(request, address, (socket) => {
      closed = new Promise((resolve) => {
        socket.addEventListener("close", () => resolve(), { once: true });
      });
    });
    try {
      await event.respondWith(response.then((answer) => {
        if (broken) {
          end();
          void answer.body?.cancel().catch(() => {});
        }
        return this.#lastIfClosing(answer);
      }));
    } catch {
      // The client went away.
    }
    return closed && { closed };
  }

  close(graceMs: number): Promise<void> {
    return this.#closing ??= this.#shutDown(graceMs);
  }

  /**
   * The response with `Connection: close` when the listener is closing, or when it refuses the
   * request (401, 403: a client without the right token does not keep the socket).
   */
  #lastIfClosing(response: Response): Response {
    if (response.status === 101) return response;
    if (!this.#closing && response.status !== 401 && response.status !== 403) return response;
    const headers = new Headers(response.headers);
    headers.set("connection", "close");
    return new Response(response.body, {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  }

  async #shutDown(graceMs: number): Promise<void> {
    this.#listener.close();
    this.#guard.close();
    await this.#accepting;
    // Idle keep-alive connections end now; the others once their response is sent.
    for (const served of [...this.#connections]) if (served.idle) served.close();
    // WebSockets close at once, as `Deno.serve`'s shutdown closes them.
    for (const end of [...this.#open]) if (this.#sockets.has(end)) end();
    if (this.#connections.size === 0) this.#drained.resolve();
    const grace = graceTimer(graceMs);
    try {
      const done = this.#drained.promise;
      const inTime = await Promise.race([done.then(() => true), grace.elapsed.then(() => false)]);
      if (inTime) return;
      this.#forced = true;
      for (const end of [...this.#open]) end();
      for (const served of [...this.#connections]) if (served.idle) served.close();
      await done;
    } finally {
      grace.cancel();
    }
  }

  async #respond(
    request: Request,
    remoteAddress: string,
    onSocket: (socket: WebSocket) => void,
  ): Promise<Response> {
    const info = { remoteAddress };
    if (!wantsWebSocket(request)) {
      const response = await this.#unlessForced(this.#handler.fetch(request, info));
      return response === FORCED ? unavailable() : this.#tracked(response);
    }
    const decision = await this.#unlessForced(this.#handler.upgrade(request, info));
    if (decision === FORCED) return unavailable();
    if (!isUpgrade(decision)) return this.#tracked(decision);
    return this.#upgrade(request, decision, onSocket);
  }

  #upgrade(
    request: Request,
    upgrade: WebSocketUpgrade,
    onSocket: (socket: WebSocket) => void,
  ): Response {
    const bad = badConnectionId(upgrade.connectionId);
    if (bad) {
      upgrade.reject();
      return bad;
    }
    let upgraded: Deno.WebSocketUpgrade;
    try {
      upgraded = Deno.upgradeWebSocket(request);
    } catch (error) {
      upgrade.reject();
      return new Response(`Cannot upgrade to a WebSocket: ${(error as Error).message}`, {
        status: 400,
      });
    }
    // The 101 response's headers are mutable on Deno 2.9.
    upgraded.response.headers.set("Acp-Connection-Id", upgrade.connectionId);
    const socket = upgraded.socket;
    onSocket(socket);
    const end = (): void => socket.close(1001, "Server closed");
    this.#open.add(end);
    this.#sockets.add(end);
    socket.addEventListener("close", () => {
      this.#open.delete(end);
      this.#sockets.delete(end);
    }, { once: true });
    upgrade.accept(new DenoWebSocket(socket, this.#maxMessageBytes));
    return upgraded.response;
  }

  /** Waits for the handler, or for the end of the grace period (then drops its late answer). */
  async #unlessForced<T extends Response | WebSocketUpgrade>(
    answer: Promise<T>,
  ): Promise<T | typeof FORCED> {
    const forced = Promise.withResolvers<typeof FORCED>();
    const force = (): void => forced.resolve(FORCED);
    if (this.#forced) force();
    this.#open.add(force);
    let result: T | typeof FORCED;
    try {
      result = await Promise.race([answer, forced.promise]);
    } finally {
      this.#open.delete(force);
    }
    if (result === FORCED) {
      answer.then((late) => {
        if (isUpgrade(late)) late.reject();
        else void late.body?.cancel().catch(() => {});
      }, () => {});
    }
    return result;
  }

  /** The response with its body passed through a stream that `close()` can end. */
  #tracked(response: Response): Response {
    const body = response.body;
    if (body === null) return response;
    const reader = body.getReader();
    let end = (): void => {};
    const stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        end = () => {
          this.#open.delete(end);
          controller.error(new Error("Server closed"));
          reader.cancel().catch(() => {});
        };
        this.#open.add(end);
      },
      pull: async (controller) => {
        try {
          const { done, value } = await reader.read();
          if (!done) return controller.enqueue(value);
          this.#open.delete(end);
          controller.close();
        } catch (error) {
          this.#open.delete(end);
          throw error;
        }
      },
      cancel: (reason) => {
        this.#open.delete(end);
        return reader.cancel(reason);
      },
    });
    return new Response(stream, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  }
}

/** The request, its body passed through a stream that calls `onError` when a read fails. */
function watchBody(request: Request, onError: () => void): Request {
  const source = request.body;
  if (source === null) return request;
  const reader = source.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        onError();
        controller.error(error);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
  return new Request(request.url, {
    method: request.method,
    headers: request.headers,
    body,
    signal: request.signal,
    duplex: "half",
  } as RequestInit);
}

/** The answer to a request still unanswered at the end of the grace period. */
function unavailable(): Response {
  return new Response("Server closed", { status: 503 });
}

/** A Deno WebSocket with `on`/`off` events and the inbound size limit. */
class DenoWebSocket extends EventedSocket {
  readonly #socket: WebSocket;
  readonly #maxMessageBytes: number;

  constructor(socket: WebSocket, maxMessageBytes: number) {
    super();
    this.#socket = socket;
    this.#maxMessageBytes = maxMessageBytes;
    socket.binaryType = "arraybuffer";
    socket.addEventListener("open", () => this.emit("open"));
    socket.addEventListener("message", (event) => this.#receive(event.data));
    socket.addEventListener("close", (event) => this.emit("close", event.code, event.reason));
    socket.addEventListener("error", (event) => {
      this.emit("error", (event as ErrorEvent).error ?? new Error("WebSocket error"));
    });
  }

  get readyState(): number {
    return this.#socket.readyState;
  }

  get bufferedAmount(): number {
    return this.#socket.bufferedAmount;
  }

  send(data: string): void {
    this.#socket.send(data);
  }

  close(code?: number, reason?: string): void {
    this.#socket.close(code, reason);
  }

  #receive(data: unknown): void {
    if (this.#socket.readyState !== WebSocket.OPEN) return;
    const tooBig = typeof data === "string"
      ? textExceeds(data, this.#maxMessageBytes)
      : (data as ArrayBuffer).byteLength > this.#maxMessageBytes;
    if (tooBig) {
      this.#socket.close(CLOSE_TOO_BIG, "Message too big");
      return;
    }
    if (typeof data === "string") this.emit("message", data);
  }
}
