/**
 * The HTTP listener on Node.js: `@hono/node-server` for plain requests, `ws` for WebSockets.
 *
 * The Hono adapter runs with `overrideGlobalObjects: false`: this listener loads on demand, late,
 * and swapping the global `Request` and `Response` classes then would give the process two of each.
 *
 * Every socket passes the {@link SocketGuard} as it connects (refused at its caps: destroyed at
 * once) and must send its first request's complete headers within `headerTimeoutMs` (Node's own
 * `headersTimeout`, left at its default, counts only from a request's first byte).
 * A 401 or 403 answer closes its connection. libuv already survives running out of descriptors
 * (it accepts and drops the connection); an accept error is also heard, so it cannot end the
 * process.
 *
 * @module
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { STATUS_CODES } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Duplex } from "node:stream";
import { createAdaptorServer } from "@hono/node-server";
import { WebSocketServer } from "ws";
import type {
  HttpHandler,
  HttpListener,
  ListenOptions,
  WebSocketUpgrade,
} from "../transport/http/http_handler.ts";
import { badConnectionId, graceTimer, isUpgrade, listenerUrl } from "./http_common.ts";
import {
  effectiveSocketLimits,
  SocketGuard,
  type SocketLimits,
  type SocketTicket,
} from "./socket_guard.ts";

/**
 * Binds a listener for a handler on Node.js.
 *
 * @param handler What to serve
 * @param options Where to listen, and the WebSocket message limit
 * @returns The bound listener
 */
export async function serveHttp(
  handler: HttpHandler,
  options: ListenOptions,
): Promise<HttpListener> {
  const limits = effectiveSocketLimits({
    headerTimeoutMs: options.headerTimeoutMs,
    maxSockets: options.maxSockets,
    maxSocketsPerAddress: options.maxSocketsPerAddress,
  }, 1);
  const listener = new NodeListener(handler, options.maxMessageBytes, limits);
  await listener.listen(options.hostname, options.port);
  return listener;
}

/** The most of a refusal's body written to an upgrade socket. */
const MAX_REFUSAL_BODY_BYTES = 64 * 1024;

/** Response headers a raw refusal does not copy: it sets its own framing. */
const FRAMING_HEADERS = new Set([
  "connection",
  "content-length",
  "keep-alive",
  "transfer-encoding",
]);

class NodeListener implements HttpListener {
  readonly #handler: HttpHandler;
  readonly #server: Server;
  readonly #sockets: WebSocketServer;
  /** Upgrade requests not yet handed to `ws` (or refused). */
  readonly #handshakes = new Set<Duplex>();
  /** The `Acp-Connection-Id` of each upgrade being handed to `ws`. */
  readonly #connectionIds = new WeakMap<IncomingMessage, string>();
  readonly #guard: SocketGuard;
  /** The guard's ticket of each socket until its first request's headers are complete. */
  readonly #tickets = new WeakMap<object, SocketTicket>();
  #url = "";
  #closing: Promise<void> | undefined;

  constructor(handler: HttpHandler, maxMessageBytes: number, limits: SocketLimits) {
    this.#handler = handler;
    this.#guard = new SocketGuard(limits);
    this.#sockets = new WebSocketServer({ noServer: true, maxPayload: maxMessageBytes });
    this.#sockets.on("headers", (headers: string[], request: IncomingMessage) => {
      const id = this.#connectionIds.get(request);
      if (id !== undefined) headers.push(`Acp-Connection-Id: ${id}`);
    });
    this.#server = createAdaptorServer({
      fetch: (request, env) =>
        handler.fetch(request, { remoteAddress: env.incoming.socket.remoteAddress }),
      overrideGlobalObjects: false,
    }) as Server;
    this.#guardSockets();
    // `server.close()` ends the idle keep-alive connections, not those that turn idle later: while
    // closing, a connection ends with its response.
    this.#server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      const socket = request.socket;
      this.#tickets.get(socket)?.headersDone();
      // A client without the right token does not keep the socket.
      const writeHead = response.writeHead;
      response.writeHead = function (this: ServerResponse, ...args: unknown[]) {
        if (args[0] === 401 || args[0] === 403) response.shouldKeepAlive = false;
        return (writeHead as (...all: unknown[]) => ServerResponse).apply(this, args);
      };
      response.once("finish", () => {
        if (this.#closing) socket.end();
      });
    });
    this.#server.on("upgrade", (message: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.#tickets.get(message.socket)?.headersDone();
      void this.#upgrade(message, socket, head);
    });
  }

  get url(): string {
    return this.#url;
  }

  /**
   * Counts sockets as they connect: over a cap, destroyed at once; admitted, given the header
   * timeout until their first request.
   */
  #guardSockets(): void {
    const server = this.#server;
    server.on("connection", (socket: Socket) => {
      const ticket = this.#guard.admit(socket.remoteAddress ?? "", () => socket.destroy());
      if (!ticket) return void socket.destroy();
      this.#tickets.set(socket, ticket);
      socket.once("close", () => ticket.release());
    });
    // Accept errors (out of descriptors): libuv retries; unheard, the event would end the process.
    server.on("error", () => {});
  }

  /** Binds the server; rejects when the address cannot be bound. */
  async listen(hostname: string, port: number): Promise<void> {
    const server = this.#server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, hostname, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const address = server.address() as AddressInfo;
    this.#url = listenerUrl(address.address, address.port);
  }

  close(graceMs: number): Promise<void> {
    return this.#closing ??= this.#shutDown(graceMs);
  }

  async #shutDown(graceMs: number): Promise<void> {
    // Settles once every connection is gone, upgraded ones included.
    const done = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    const grace = graceTimer(graceMs);
    this.#guard.close();
    try {
      const inTime = await Promise.race([done.then(() => true), grace.elapsed.then(() => false)]);
      if (inTime) return;
      this.#server.closeAllConnections();
      for (const socket of this.#sockets.clients) socket.terminate();
      for (const socket of this.#handshakes) socket.destroy();
      await done;
    } finally {
      grace.cancel();
      this.#sockets.close();
    }
  }

  async #upgrade(message: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    this.#handshakes.add(socket);
    socket.on("error", () => {});
    socket.once("close", () => this.#handshakes.delete(socket));
    let decision: Response | WebSocketUpgrade;
    try {
      const request = upgradeRequest(message);
      if (request === undefined) {
        return await refuse(socket, new Response("Bad Request", { status: 400 }));
      }
      decision = await this.#handler.upgrade(request, {
        remoteAddress: message.socket.remoteAddress,
      });
    } catch {
      return await refuse(socket, new Response("Internal Server Error", { status: 500 }));
    }
    if (!isUpgrade(decision)) return await refuse(socket, decision);
    const bad = badConnectionId(decision.connectionId);
    if (bad) {
      decision.reject();
      return await refuse(socket, bad);
    }
    this.#handOver(message, socket, head, decision);
  }

  /** Completes the handshake with `ws`, `Acp-Connection-Id` in the 101 response. */
  #handOver(
    message: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    upgrade: WebSocketUpgrade,
  ): void {
    let settled = false;
    const failed = (): void => {
      if (settled) return;
      settled = true;
      upgrade.reject();
    };
    if (socket.destroyed) return failed();
    this.#connectionIds.set(message, upgrade.connectionId);
    socket.once("close", failed);
    try {
      this.#sockets.handleUpgrade(message, socket, head, (webSocket) => {
        settled = true;
        socket.off("close", failed);
        this.#handshakes.delete(socket);
        // `ws` reports a protocol error (such as a message over `maxPayload`, which it closes
        // with 1009) as an `error` event: unheard, that would end the process.
        webSocket.on("error", () => {});
        upgrade.accept(webSocket);
      });
    } catch {
      failed();
      socket.destroy();
    }
  }
}

/** The web request of an upgrade, or undefined when its target or `Host` is not usable. */
function upgradeRequest(message: IncomingMessage): Request | undefined {
  const path = message.url ?? "/";
  const host = message.headers.host ?? "";
  if (!path.startsWith("/") || !/^[\w.~%!$&'()*+,;=:[\]-]+$/.test(host)) return undefined;
  const headers = new Headers();
  const raw = message.rawHeaders;
  for (let at = 0; at + 1 < raw.length; at += 2) {
    headers.append(raw[at] as string, raw[at + 1] as string);
  }
  return new Request(`http://${host}${path}`, { method: "GET", headers });
}

/** Writes a refusal to an upgrade socket as a raw HTTP/1.1 response, then closes the socket. */
async function refuse(socket: Duplex, response: Response): Promise<void> {
  if (socket.destroyed) return void await response.body?.cancel().catch(() => {});
  const body = await boundedBody(response, socket);
  if (socket.destroyed) return;
  const lines = [`HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ""}`];
  response.headers.forEach((value, name) => {
    if (!FRAMING_HEADERS.has(name)) lines.push(`${name}: ${value}`);
  });
  lines.push("Connection: close", `Content-Length: ${body.byteLength}`, "", "");
  socket.end(Buffer.concat([Buffer.from(lines.join("\r\n"), "latin1"), body]), () => {
    socket.destroy();
  });
}

/** The start of a response's body (up to {@link MAX_REFUSAL_BODY_BYTES}); stops when `socket` closes. */
async function boundedBody(response: Response, socket: Duplex): Promise<Uint8Array> {
  if (response.body === null) return new Uint8Array();
  const reader = response.body.getReader();
  const stop = (): void => void reader.cancel().catch(() => {});
  socket.once("close", stop);
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < MAX_REFUSAL_BODY_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } catch {
    // A failed body: send what was read.
  } finally {
    socket.off("close", stop);
    reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks).subarray(0, MAX_REFUSAL_BODY_BYTES);
}
