/**
 * The HTTP listener on Deno: `Deno.serve` and `Deno.upgradeWebSocket`.
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
  EventedSocket,
  graceTimer,
  isUpgrade,
  listenerUrl,
  textExceeds,
  wantsWebSocket,
} from "./http_common.ts";

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

/** What a pending exchange becomes when the grace period runs out. */
const FORCED: unique symbol = Symbol("forced");

class DenoListener implements HttpListener {
  readonly url: string;
  readonly #handler: HttpHandler;
  readonly #maxMessageBytes: number;
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
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
      { hostname: options.hostname, port: options.port, onListen() {} },
      (request, info) => this.#respond(request, info.remoteAddr.hostname),
    );
    this.url = listenerUrl(this.#server.addr.hostname, this.#server.addr.port);
  }

  close(graceMs: number): Promise<void> {
    return this.#closing ??= this.#shutDown(graceMs);
  }

  async #shutDown(graceMs: number): Promise<void> {
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
    }
  }

  async #respond(request: Request, remoteAddress: string): Promise<Response> {
    const info = { remoteAddress };
    if (!wantsWebSocket(request)) {
      const response = await this.#unlessForced(this.#handler.fetch(request, info));
      return response === FORCED ? unavailable() : this.#tracked(response);
    }
    const decision = await this.#unlessForced(this.#handler.upgrade(request, info));
    if (decision === FORCED) return unavailable();
    if (!isUpgrade(decision)) return this.#tracked(decision);
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
