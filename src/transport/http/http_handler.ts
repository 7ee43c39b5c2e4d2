/**
 * The seam between the HTTP transport (a runtime-neutral Hono app) and the listener each runtime
 * provides (Deno's and Bun's own servers, `@hono/node-server` on Node.js): the listener turns
 * sockets into web `Request`s and WebSocket upgrades, the handler does everything else.
 *
 * @module
 */
import type { TenantIdentity } from "../../server/tenants.ts";

/** A WebSocket as the transport drives it: the WHATWG shape, or an adapter with `on`/`off`. */
export interface ServerWebSocket {
  /** 0 connecting, 1 open, 2 closing, 3 closed. */
  readonly readyState?: number;
  /** Bytes passed to `send()` and not yet sent, when the runtime reports it. */
  readonly bufferedAmount?: number;
  /** Sends one text frame. */
  send(data: string): void;
  /** Closes the socket. */
  close(code?: number, reason?: string): void;
  /** Listens for `open`, `message`, `close`, `error` (WHATWG sockets). */
  addEventListener?(type: string, listener: (event: unknown) => void): void;
  /** Stops listening (WHATWG sockets). */
  removeEventListener?(type: string, listener: (event: unknown) => void): void;
  /** Listens for `message`, `close`, `error` (Node `ws` style). */
  on?(type: string, listener: (...args: unknown[]) => void): unknown;
  /** Stops listening (Node `ws` style). */
  off?(type: string, listener: (...args: unknown[]) => void): unknown;
}

/** An accepted WebSocket upgrade: what the listener does once the handshake is allowed. */
export interface WebSocketUpgrade {
  /** Goes in the `101 Switching Protocols` response as `Acp-Connection-Id`. */
  readonly connectionId: string;
  /** Hands the open (or opening) socket over; called once. */
  accept(socket: ServerWebSocket): void;
  /** Gives the upgrade up (the handshake failed); called at most once, never after `accept`. */
  reject(): void;
}

/** Facts about a request that are not in the `Request` itself. */
export interface RequestInfo {
  /** The peer's address, when the listener knows it. */
  readonly remoteAddress?: string | undefined;
  /**
   * Whose the request is, on a server with tenants: set by the security checks from its bearer
   * token (never by a listener).
   */
  readonly identity?: TenantIdentity | undefined;
}

/** What a listener serves: plain requests, and WebSocket upgrades. */
export interface HttpHandler {
  /**
   * Answers one HTTP request (never an upgrade).
   *
   * @param request The request
   * @param info Facts from the listener
   * @returns The response
   */
  fetch(request: Request, info: RequestInfo): Promise<Response>;
  /**
   * Decides on a WebSocket upgrade request (`Upgrade: websocket`): a refusal to send as it is,
   * or the upgrade to carry out.
   *
   * @param request The upgrade request
   * @param info Facts from the listener
   * @returns A response (refused), or the upgrade
   */
  upgrade(request: Request, info: RequestInfo): Promise<Response | WebSocketUpgrade>;
}

/** Where and how to listen. */
export interface ListenOptions {
  /** The address to bind: `127.0.0.1`, `::1`, `0.0.0.0`, a host name. */
  readonly hostname: string;
  /** The port; 0 picks a free one. */
  readonly port: number;
  /** Largest WebSocket message accepted, in bytes (bigger ones close the socket with 1009). */
  readonly maxMessageBytes: number;
  /** Milliseconds a new socket has to send complete request headers (then it is closed). */
  readonly headerTimeoutMs?: number;
  /** Most sockets open at once, before any HTTP parsing (further ones are closed at once). */
  readonly maxSockets?: number;
  /** Most sockets of one peer address still sending their request headers. */
  readonly maxSocketsPerAddress?: number;
}

/** A bound listener. */
export interface HttpListener {
  /** The address actually bound, `http://127.0.0.1:40123` (IPv6 in brackets). */
  readonly url: string;
  /**
   * Stops accepting connections at once, lets the exchanges under way finish (the handler ends its
   * streams as it drains), and after `graceMs` closes whatever is still open.
   *
   * @param graceMs How long open exchanges get to finish
   * @returns Settles once every socket is closed
   */
  close(graceMs: number): Promise<void>;
}

/** Binds a listener for a handler: each runtime brings its own (`src/runtime`). */
export type ServeHttp = (handler: HttpHandler, options: ListenOptions) => Promise<HttpListener>;
