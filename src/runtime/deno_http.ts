/**
 * The HTTP listener on Deno: `Deno.serve` and `Deno.upgradeWebSocket`, behind a relay.
 *
 * `Deno.serve` gives no hold on a connection before its request: it cannot count sockets, it
 * never times out headers that never finish, and an accept failure (`Too many open files`) ends it
 * for good. So it listens on an inner port of 127.0.0.1, and the public port is a `Deno.listen`
 * with its own accept loop (an accept failure pauses it, then it accepts again) that passes each
 * socket through the {@link SocketGuard} (refused at its caps: closed at once; closed when its
 * first request's headers are not complete within `headerTimeoutMs`) and relays it to the inner
 * port; the peer's address is found again by the inner connection's local port. A relayed socket
 * costs three descriptors, which the descriptor budget counts. A 401 or 403 answer closes its
 * connection.
 *
 * Deno has no size limit option for inbound WebSocket messages, so the socket is handed over in an
 * adapter that closes it with 1009 when a message is over `maxMessageBytes` (Deno has read the
 * message by then). Its graceful `shutdown()` stops accepting at once, lets responses under way
 * finish, and closes upgraded WebSockets right away (1001, "Server shutting down"). Deno offers no
 * way to force a shutdown once one is under way (aborting the `signal` of `Deno.serve` then throws
 * an uncaught `BadResource`), so when the grace period is over this listener ends what it can
 * reach itself: it errors the bodies of the responses still streaming and answers 503 to the
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
  closingIfRefused,
  EventedSocket,
  graceTimer,
  isUpgrade,
  listenerUrl,
  notRelayed,
  textExceeds,
  wantsWebSocket,
} from "./http_common.ts";
import {
  effectiveSocketLimits,
  SocketGuard,
  type SocketLimits,
  type SocketTicket,
} from "./socket_guard.ts";

/**
 * Binds a listener for a handler on Deno.
 *
 * @param handler What to serve
 * @param options Where to listen, and the WebSocket message limit
 * @returns The bound listener
 */
export function serveHttp(handler: HttpHandler, options: ListenOptions): Promise<HttpListener> {
  try {
    return Promise.resolve(new DenoListener(handler, options));
  } catch (error) {
    return Promise.reject(error);
  }
}

/** The address of the inner `Deno.serve`. */
const INNER_HOST = "127.0.0.1";

/** What a pending exchange becomes when the grace period runs out. */
const FORCED: unique symbol = Symbol("forced");

class DenoListener implements HttpListener {
  readonly url: string;
  readonly #handler: HttpHandler;
  readonly #maxMessageBytes: number;
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #relay: SocketRelay;
  /**
   * Ends an exchange still under way (a request the handler has not answered, a response body
   * still streaming, a WebSocket still open), one entry each.
   */
  readonly #open = new Set<() => void>();
  #forced = false;
  #closing: Promise<void> | undefined;

  constructor(handler: HttpHandler, options: ListenOptions) {
    this.#handler = handler;
    this.#maxMessageBytes = options.maxMessageBytes;
    this.#server = Deno.serve(
      { hostname: INNER_HOST, port: 0, onListen() {} },
      (request, info) => {
        const peer = this.#relay.peerOf(info.remoteAddr.port);
        return peer === undefined ? notRelayed() : this.#respond(request, peer);
      },
    );
    const limits = effectiveSocketLimits({
      headerTimeoutMs: options.headerTimeoutMs,
      maxSockets: options.maxSockets,
      maxSocketsPerAddress: options.maxSocketsPerAddress,
    }, 3);
    try {
      this.#relay = new SocketRelay(options.hostname, options.port, this.#server.addr.port, limits);
    } catch (error) {
      void this.#server.shutdown();
      throw error;
    }
    this.url = this.#relay.url;
  }

  close(graceMs: number): Promise<void> {
    return this.#closing ??= this.#shutDown(graceMs);
  }

  async #shutDown(graceMs: number): Promise<void> {
    const relayed = this.#relay.close();
    const done = this.#server.shutdown();
    const grace = graceTimer(graceMs);
    try {
      const inTime = await Promise.race([done.then(() => true), grace.elapsed.then(() => false)]);
      if (inTime) return;
      this.#forced = true;
      for (const end of [...this.#open]) end();
      await done;
    } finally {
      grace.cancel();
      await this.#relay.closeAll();
      await relayed;
    }
  }

  async #respond(request: Request, remoteAddress: string): Promise<Response> {
    const info = { remoteAddress };
    if (!wantsWebSocket(request)) {
      const response = await this.#unlessForced(this.#handler.fetch(request, info));
      return response === FORCED ? unavailable() : this.#tracked(closingIfRefused(response));
    }
    const decision = await this.#unlessForced(this.#handler.upgrade(request, info));
    if (decision === FORCED) return unavailable();
    if (!isUpgrade(decision)) return this.#tracked(closingIfRefused(decision));
    return this.#upgrade(request, decision);
  }

  #upgrade(request: Request, upgrade: WebSocketUpgrade): Response {
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
    const end = (): void => socket.close(1001, "Server closed");
    this.#open.add(end);
    socket.addEventListener("close", () => this.#open.delete(end), { once: true });
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

function unavailable(): Response {
  return new Response("Server closed", { status: 503, headers: { Connection: "close" } });
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

/** The longest pause before accepting again after an accept failure. */
const MAX_ACCEPT_BACKOFF_MS = 1000;
/** How long a relayed socket whose inner connection ended waits for the client to close. */
const LINGER_MS = 2000;
/** The end of a request's headers. */
const HEAD_END = [13, 10, 13, 10];

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // Already closed.
  }
}

/**
 * The public port: accepts in its own loop, admits each socket through the guard and relays it,
 * both ways with backpressure, to the inner server.
 */
class SocketRelay {
  readonly url: string;
  readonly #listener: Deno.TcpListener;
  readonly #innerPort: number;
  readonly #guard: SocketGuard;
  readonly #peers = new Map<number, string>();
  readonly #clients = new Set<Deno.Conn>();
  readonly #relays = new Set<Promise<void>>();
  readonly #accepting: Promise<void>;
  #closing = false;
  #closed = false;

  constructor(hostname: string, port: number, innerPort: number, limits: SocketLimits) {
    this.#innerPort = innerPort;
    this.#guard = new SocketGuard(limits);
    this.#listener = Deno.listen({ hostname, port, transport: "tcp" });
    this.url = listenerUrl(this.#listener.addr.hostname, this.#listener.addr.port);
    this.#accepting = this.#acceptAll();
  }

  /** The peer address of the relayed socket whose inner connection has this local port. */
  peerOf(innerLocalPort: number): string | undefined {
    return this.#peers.get(innerLocalPort);
  }

  /** Stops accepting. */
  async close(): Promise<void> {
    this.#closing = true;
    this.#guard.close();
    try {
      this.#listener.close();
    } catch {
      // Already closed.
    }
    await this.#accepting;
  }

  /**
   * Once the inner server is closed: the relayed sockets end as soon as what it wrote last is
   * sent (within {@link LINGER_MS}), then any left are closed.
   */
  async closeAll(): Promise<void> {
    this.#closed = true;
    const grace = graceTimer(LINGER_MS);
    try {
      await Promise.race([Promise.all([...this.#relays]), grace.elapsed]);
    } finally {
      grace.cancel();
    }
    for (const client of [...this.#clients]) closeQuietly(client);
  }

  async #acceptAll(): Promise<void> {
    let backoff = 0;
    while (!this.#closing) {
      let conn: Deno.TcpConn;
      try {
        conn = await this.#listener.accept();
        backoff = 0;
      } catch {
        if (this.#closing) return;
        // Out of descriptors, or the like: pause, then accept again.
        backoff = Math.min(MAX_ACCEPT_BACKOFF_MS, backoff === 0 ? 10 : backoff * 2);
        await new Promise((resolve) => setTimeout(resolve, backoff));
        continue;
      }
      const relay = this.#relay(conn);
      this.#relays.add(relay);
      void relay.then(() => this.#relays.delete(relay));
    }
  }

  async #relay(client: Deno.TcpConn): Promise<void> {
    const address = client.remoteAddr.hostname;
    const ticket = this.#guard.admit(address, () => closeQuietly(client));
    if (!ticket) return closeQuietly(client);
    this.#clients.add(client);
    let innerPort: number | undefined;
    try {
      const inner = await Deno.connect({ hostname: INNER_HOST, port: this.#innerPort });
      innerPort = inner.localAddr.port;
      this.#peers.set(innerPort, address);
      await this.#pipe(client, inner, ticket);
    } catch {
      // The inner server is gone (closing), or a side failed.
    } finally {
      closeQuietly(client);
      ticket.release();
      this.#clients.delete(client);
      if (innerPort !== undefined && this.#peers.get(innerPort) === address) {
        this.#peers.delete(innerPort);
      }
    }
  }

  /** Relays until both sides are done. */
  async #pipe(client: Deno.TcpConn, inner: Deno.TcpConn, ticket: SocketTicket): Promise<void> {
    const up = copy(client, inner, headWatch(ticket)).catch(() => {});
    const down = copy(inner, client).catch(() => {});
    // The client went: end the inner connection at once, so that the server notices.
    void up.then(() => closeQuietly(inner));
    await down;
    closeQuietly(inner);
    if (this.#closed) return;
    // What the inner server wrote last (a close frame, a response) still reaches the client: end
    // its side and wait a little for its end (closed at once, the socket would reset the
    // connection, and the client could lose what it had not read yet).
    try {
      await client.closeWrite();
    } catch {
      return;
    }
    const linger = setTimeout(() => closeQuietly(client), LINGER_MS);
    try {
      await up;
    } finally {
      clearTimeout(linger);
    }
  }
}

/** Tells the ticket once the first request's headers are complete; then does nothing. */
function headWatch(ticket: SocketTicket): (chunk: Uint8Array) => void {
  let matched = 0;
  let done = false;
  return (chunk) => {
    if (done) return;
    for (const byte of chunk) {
      matched = byte === HEAD_END[matched] ? matched + 1 : byte === 13 ? 1 : 0;
      if (matched === HEAD_END.length) {
        done = true;
        ticket.headersDone();
        return;
      }
    }
  };
}

/** Bytes one relay direction reads at a time (the buffer is reused). */
const RELAY_BUFFER_BYTES = 64 * 1024;

/**
 * Copies `from` to `to` until `from` ends, through one reused buffer: each read is written in
 * full before the next. A stream of `conn.readable` would allocate a buffer per read, so a body
 * dripped one byte per segment left a large buffer of garbage per byte until the collector ran.
 */
async function copy(
  from: Deno.TcpConn,
  to: Deno.TcpConn,
  watch?: (chunk: Uint8Array) => void,
): Promise<void> {
  const buffer = new Uint8Array(RELAY_BUFFER_BYTES);
  for (;;) {
    const read = await from.read(buffer);
    if (read === null) return;
    const chunk = buffer.subarray(0, read);
    watch?.(chunk);
    for (let written = 0; written < read;) written += await to.write(chunk.subarray(written));
  }
}
