/**
 * The HTTP listener on Bun: `Bun.serve`, with its `websocket` handlers driving an adapter with
 * `on`/`off` events.
 *
 * `idleTimeout` is 0 (off). Bun 1.4 counts a connection as idle while a response streams, however
 * often it writes, and while the handler has not answered yet: with any limit (255 s at most) it
 * would cut every SSE stream, and every POST whose answer waits for a whole prompt turn, at that
 * limit. WebSockets keep Bun's own idle handling (pings, 120 s).
 *
 * `Bun.serve` gives no hold on a socket before its request: it cannot count sockets, and it keeps
 * a socket that never sends complete headers for ever (`idleTimeout` does not apply to it). So the
 * public port is a `node:net` server that passes each socket through the {@link SocketGuard}
 * (refused at its caps: destroyed at once; closed when its first request's headers are not
 * complete within `headerTimeoutMs`) and relays it to the `Bun.serve` on an inner port of
 * 127.0.0.1; the peer's address is found again by the inner connection's local port. A relayed
 * socket costs three descriptors, which the descriptor budget counts. A 401 or 403 answer closes
 * its connection.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { connect, createServer, type Server as NetServer, type Socket } from "node:net";
import type {
  HttpHandler,
  HttpListener,
  ListenOptions,
  WebSocketUpgrade,
} from "../transport/http/http_handler.ts";
import {
  badConnectionId,
  closingIfRefused,
  EventedSocket,
  graceTimer,
  isUpgrade,
  listenerUrl,
  notRelayed,
  wantsWebSocket,
} from "./http_common.ts";
import {
  effectiveSocketLimits,
  SocketGuard,
  type SocketLimits,
  type SocketTicket,
} from "./socket_guard.ts";

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
  requestIP(request: Request): { readonly address: string; readonly port: number } | null;
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
export async function serveHttp(
  handler: HttpHandler,
  options: ListenOptions,
): Promise<HttpListener> {
  const listener = new BunListener(handler, options);
  try {
    await listener.relay.listen(options.hostname, options.port);
  } catch (error) {
    await listener.close(0);
    throw error;
  }
  return listener;
}

/** Where the sockets of the inner server come from: the relay's peers, by inner local port. */
type PeerOf = (innerPort: number) => string | undefined;

class BunListener implements HttpListener {
  readonly relay: SocketRelay;
  readonly #server: BunServer;
  #closing: Promise<void> | undefined;

  constructor(handler: HttpHandler, options: ListenOptions) {
    const bun = (globalThis as unknown as { Bun: BunGlobal }).Bun;
    // Called for requests only, once the relay exists.
    const peerOf: PeerOf = (port) => this.relay.peerOf(port);
    this.#server = bun.serve({
      hostname: INNER_HOST,
      port: 0,
      idleTimeout: 0,
      development: false,
      fetch: (request, server) => respond(handler, request, server, peerOf),
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
    const limits = effectiveSocketLimits({
      headerTimeoutMs: options.headerTimeoutMs,
      maxSockets: options.maxSockets,
      maxSocketsPerAddress: options.maxSocketsPerAddress,
    }, 3);
    this.relay = new SocketRelay(this.#server.port, limits);
  }

  get url(): string {
    return this.relay.url;
  }

  close(graceMs: number): Promise<void> {
    return this.#closing ??= this.#shutDown(graceMs);
  }

  async #shutDown(graceMs: number): Promise<void> {
    const relayed = this.relay.close();
    const done = this.#server.stop(false);
    const grace = graceTimer(graceMs);
    try {
      const inTime = await Promise.race([done.then(() => true), grace.elapsed.then(() => false)]);
      if (inTime) return;
      await this.#server.stop(true);
      await done;
    } finally {
      grace.cancel();
      this.relay.destroyAll();
      await relayed;
    }
  }
}

/** The address of the inner `Bun.serve`. */
const INNER_HOST = "127.0.0.1";
/** How long a relayed socket whose inner connection ended waits for the client to close. */
const LINGER_MS = 2000;
/** The end of a request's headers. */
const HEAD_END = Buffer.from("\r\n\r\n");

/**
 * The public port: admits each socket through the guard and relays it, both ways with
 * backpressure (`pipe`), to the inner server.
 */
class SocketRelay {
  readonly #innerPort: number;
  readonly #guard: SocketGuard;
  readonly #server: NetServer;
  readonly #peers = new Map<number, string>();
  readonly #sockets = new Set<Socket>();
  #closed = false;
  #url = "";

  constructor(innerPort: number, limits: SocketLimits) {
    this.#innerPort = innerPort;
    this.#guard = new SocketGuard(limits);
    this.#server = createServer((client) => this.#relay(client));
    // Accept errors (out of descriptors) are retried; unheard, they would end the process.
    this.#server.on("error", () => {});
  }

  get url(): string {
    return this.#url;
  }

  /** The peer address of the relayed socket whose inner connection has this local port. */
  peerOf(innerLocalPort: number): string | undefined {
    return this.#peers.get(innerLocalPort);
  }

  /** Binds the public port. */
  listen(hostname: string, port: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(port, hostname, () => {
        this.#server.off("error", reject);
        const address = this.#server.address() as { address: string; port: number };
        this.#url = listenerUrl(address.address, address.port);
        resolve();
      });
    });
  }

  /** Stops accepting; settles once every relayed socket is gone. */
  close(): Promise<void> {
    this.#guard.close();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }

  /** Ends every relayed socket (after the grace period); from now on they end at once. */
  destroyAll(): void {
    this.#closed = true;
    for (const socket of [...this.#sockets]) socket.destroy();
  }

  #relay(client: Socket): void {
    client.on("error", () => {});
    const address = client.remoteAddress ?? "";
    const ticket = this.#guard.admit(address, () => client.destroy());
    if (!ticket) return void client.destroy();
    client.pause();
    this.#sockets.add(client);
    const inner = connect(this.#innerPort, INNER_HOST);
    inner.on("error", () => {});
    let innerPort: number | undefined;
    inner.once("connect", () => {
      innerPort = inner.localPort;
      if (innerPort !== undefined) this.#peers.set(innerPort, address);
      watchHead(client, ticket);
      client.pipe(inner);
      inner.pipe(client);
    });
    client.once("close", () => {
      inner.destroy();
      ticket.release();
      this.#sockets.delete(client);
      if (innerPort !== undefined && this.#peers.get(innerPort) === address) {
        this.#peers.delete(innerPort);
      }
    });
    // What the inner server wrote last (a close frame, a response) still reaches the client:
    // the relay ends its side and waits a little for the client's end (destroyed at once, the
    // socket would reset the connection, and the client could lose what it had not read yet).
    inner.once("close", () => {
      if (client.destroyed) return;
      if (this.#closed) return void client.destroy();
      client.end();
      const linger = setTimeout(() => client.destroy(), LINGER_MS);
      client.once("close", () => clearTimeout(linger));
    });
  }
}

/** Tells the ticket once the client has sent the end of its first request's headers. */
function watchHead(client: Socket, ticket: SocketTicket): void {
  let tail = Buffer.alloc(0);
  const watch = (chunk: Buffer): void => {
    const seen = Buffer.concat([tail, chunk]);
    if (seen.includes(HEAD_END)) {
      client.off("data", watch);
      ticket.headersDone();
      return;
    }
    tail = seen.subarray(Math.max(0, seen.length - (HEAD_END.length - 1)));
  };
  client.on("data", watch);
}

async function respond(
  handler: HttpHandler,
  request: Request,
  server: BunServer,
  peerOf: PeerOf,
): Promise<Response | undefined> {
  const ip = server.requestIP(request);
  const peer = ip ? peerOf(ip.port) : undefined;
  if (peer === undefined) return notRelayed();
  const info = { remoteAddress: peer };
  if (!wantsWebSocket(request)) {
    return closingIfRefused(openEventStream(await handler.fetch(request, info)));
  }
  const decision = await handler.upgrade(request, info);
  if (!isUpgrade(decision)) return closingIfRefused(decision);
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
