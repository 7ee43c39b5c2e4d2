/**
 * The HTTP listener on Bun: `Bun.serve`, with its `websocket` handlers driving an adapter with
 * `on`/`off` events.
 *
 * `idleTimeout` is 0 (off). Bun 1.4 counts a connection as idle while a response streams, however
 * often it writes, and while the handler has not answered yet: with any limit (255 s at most) it
 * would cut every SSE stream, and every POST whose answer waits for a whole prompt turn, at that
 * limit. WebSockets keep Bun's own idle handling (pings, 120 s).
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
  EventedSocket,
  graceTimer,
  isUpgrade,
  listenerUrl,
  wantsWebSocket,
} from "./http_common.ts";

/** What each Bun WebSocket carries from its upgrade to its callbacks. */
interface SocketData {
  readonly upgrade: WebSocketUpgrade;
  adapter?: BunWebSocket;
}

/** The parts of Bun's `ServerWebSocket` used here. */
interface BunSocket {
  readonly data: SocketData;
  readonly readyState: number;
  /** Returns -1 (queued, backpressure), 0 (dropped) or the bytes sent. */
  send(data: string): number;
  close(code?: number, reason?: string): void;
  getBufferedAmount?(): number;
}

/** The parts of Bun's `Server` used here. */
interface BunServer {
  readonly hostname?: string;
  readonly port: number;
  upgrade(request: Request, options: { headers: HeadersInit; data: SocketData }): boolean;
  requestIP(request: Request): { readonly address: string } | null;
  stop(closeActiveConnections?: boolean): Promise<void>;
}

/** The parts of `Bun.serve` options used here. */
interface BunServeOptions {
  readonly hostname: string;
  readonly port: number;
  readonly idleTimeout: number;
  readonly development: boolean;
  fetch(request: Request, server: BunServer): Promise<Response | undefined>;
  error(error: unknown): Response;
  readonly websocket: {
    readonly maxPayloadLength: number;
    open(socket: BunSocket): void;
    message(socket: BunSocket, message: string | Uint8Array): void;
    close(socket: BunSocket, code: number, reason: string): void;
  };
}

interface BunGlobal {
  serve(options: BunServeOptions): BunServer;
}

/**
 * Binds a listener for a handler on Bun.
 *
 * @param handler What to serve
 * @param options Where to listen, and the WebSocket message limit
 * @returns The bound listener
 */
export function serveHttp(handler: HttpHandler, options: ListenOptions): Promise<HttpListener> {
  try {
    return Promise.resolve(new BunListener(handler, options));
  } catch (error) {
    return Promise.reject(error);
  }
}

class BunListener implements HttpListener {
  readonly url: string;
  readonly #server: BunServer;
  #closing: Promise<void> | undefined;

  constructor(handler: HttpHandler, options: ListenOptions) {
    const bun = (globalThis as unknown as { Bun: BunGlobal }).Bun;
    this.#server = bun.serve({
      hostname: options.hostname,
      port: options.port,
      idleTimeout: 0,
      development: false,
      fetch: (request, server) => respond(handler, request, server),
      error: () => new Response("Internal Server Error", { status: 500 }),
      websocket: {
        maxPayloadLength: options.maxMessageBytes,
        open(socket) {
          const adapter = new BunWebSocket(socket);
          socket.data.adapter = adapter;
          socket.data.upgrade.accept(adapter);
        },
        message(socket, message) {
          if (typeof message === "string") socket.data.adapter?.emit("message", message);
        },
        close(socket, code, reason) {
          socket.data.adapter?.emit("close", code, reason);
        },
      },
    });
    this.url = listenerUrl(this.#server.hostname ?? options.hostname, this.#server.port);
  }

  close(graceMs: number): Promise<void> {
    return this.#closing ??= this.#shutDown(graceMs);
  }

  async #shutDown(graceMs: number): Promise<void> {
    const done = this.#server.stop(false);
    const grace = graceTimer(graceMs);
    try {
      const inTime = await Promise.race([done.then(() => true), grace.elapsed.then(() => false)]);
      if (inTime) return;
      await this.#server.stop(true);
      await done;
    } finally {
      grace.cancel();
    }
  }
}

async function respond(
  handler: HttpHandler,
  request: Request,
  server: BunServer,
): Promise<Response | undefined> {
  const info = { remoteAddress: server.requestIP(request)?.address };
  if (!wantsWebSocket(request)) return openEventStream(await handler.fetch(request, info));
  const decision = await handler.upgrade(request, info);
  if (!isUpgrade(decision)) return decision;
  const bad = badConnectionId(decision.connectionId);
  if (bad) {
    decision.reject();
    return bad;
  }
  const headers = { "Acp-Connection-Id": decision.connectionId };
  if (server.upgrade(request, { headers, data: { upgrade: decision } })) return undefined;
  decision.reject();
  return new Response("Cannot upgrade to a WebSocket", { status: 400 });
}

/** An SSE comment: what an event stream starts with on Bun. */
const STREAM_OPENED = new TextEncoder().encode(": open\n\n");

/**
 * Bun sends a streamed response's status and headers only with the body's first chunk, so a
 * client that waits for an event stream's headers (the ACP SDK's client does, before it posts to
 * that session) would wait for the first event or keep-alive. An event stream therefore starts
 * with an SSE comment, which clients skip. The body is still pulled one chunk at a time, so
 * output the client has not read stays queued (and counted) where it was.
 */
function openEventStream(response: Response): Response {
  const source = response.body;
  if (!source || !response.headers.get("content-type")?.startsWith("text/event-stream")) {
    return response;
  }
  const reader = source.getReader();
  let opened = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!opened) {
        opened = true;
        controller.enqueue(STREAM_OPENED);
        return;
      }
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/** A Bun WebSocket with `on`/`off` events, which the `websocket` callbacks drive. */
class BunWebSocket extends EventedSocket {
  readonly #socket: BunSocket;

  constructor(socket: BunSocket) {
    super();
    this.#socket = socket;
  }

  get readyState(): number {
    return this.#socket.readyState;
  }

  get bufferedAmount(): number {
    return this.#socket.getBufferedAmount?.() ?? 0;
  }

  send(data: string): void {
    // Bun drops a message over its backpressure limit (and says 0, as it does for an empty one
    // it sent): a gap in the stream, so end it instead.
    if (this.#socket.send(data) === 0 && data.length > 0) {
      this.#socket.close(1011, "Send buffer full");
    }
  }

  close(code?: number, reason?: string): void {
    this.#socket.close(code, reason);
  }
}
