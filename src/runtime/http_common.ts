/**
 * What the HTTP listeners of the three runtimes share: the bound URL, telling an upgrade from a
 * refusal, the size check of inbound WebSocket messages, the `on`/`off` events of the WebSocket
 * adapters, and the grace timer of `close()`.
 *
 * @module
 */
import type { ServerWebSocket, WebSocketUpgrade } from "../transport/http/http_handler.ts";

/** The close code for a message over the size limit ("Message Too Big", RFC 6455 §7.4.1). */
export const CLOSE_TOO_BIG = 1009;

/**
 * The URL of a bound listener: `http://HOST:PORT`, an IPv6 host in brackets.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listenerUrl } from "./http_common.ts";
 * assert.equal(listenerUrl("127.0.0.1", 8080), "http://127.0.0.1:8080");
 * assert.equal(listenerUrl("::1", 8080), "http://[::1]:8080");
 * ```
 *
 * @param hostname The bound address or host name
 * @param port The bound port
 * @returns The URL, without a trailing slash
 */
export function listenerUrl(hostname: string, port: number): string {
  const host = hostname.includes(":") && !hostname.startsWith("[") ? `[${hostname}]` : hostname;
  return `http://${host}:${port}`;
}

/**
 * Whether a request asks for a WebSocket (`Upgrade: websocket`).
 *
 * @param request The request
 * @returns True for an upgrade request
 */
export function wantsWebSocket(request: Request): boolean {
  const upgrade = request.headers.get("upgrade");
  if (upgrade === null) return false;
  return upgrade.split(",").some((token) => token.trim().toLowerCase() === "websocket");
}

/**
 * Whether the handler's answer to an upgrade request is the upgrade (not a refusal). Checked by
 * shape, not `instanceof Response`: a listener may run with another `Response` class.
 *
 * @param decision What `HttpHandler.upgrade` returned
 * @returns True for an upgrade to carry out
 */
export function isUpgrade(decision: Response | WebSocketUpgrade): decision is WebSocketUpgrade {
  return typeof (decision as Partial<WebSocketUpgrade>).accept === "function";
}

/**
 * The refusal for an upgrade whose connection id cannot go in a header (visible ASCII only): a
 * handler's bug, answered 500 rather than written into the 101 response.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { badConnectionId } from "./http_common.ts";
 * assert.equal(badConnectionId("0b9c4a1e-5b7e-4c39-9b0c-2f1d3e4a5b6c"), undefined);
 * assert.equal(badConnectionId("a\r\nSet-Cookie: x")?.status, 500);
 * ```
 *
 * @param connectionId The id for `Acp-Connection-Id`
 * @returns A 500 response for a bad id, else undefined
 */
export function badConnectionId(connectionId: string): Response | undefined {
  if (/^[!-~]+$/.test(connectionId)) return undefined;
  return new Response("Cannot upgrade: invalid connection id", { status: 500 });
}

/**
 * A 401 or 403 with `Connection: close`: a client without the right token does not keep the
 * socket. Other answers are returned as they are.
 *
 * @param response The handler's answer
 * @returns The answer, closing its connection when it refuses
 */
export function closingIfRefused(response: Response): Response {
  if (response.status !== 401 && response.status !== 403) return response;
  const headers = new Headers(response.headers);
  headers.set("connection", "close");
  return new Response(response.body, {
    status: response.status,
    statusText: response.statusText,
    headers,
  });
}

/**
 * The answer to a request that reached the inner server (Deno, Bun) without coming through the
 * relay: a local process that found the inner port. Refused, so that nothing gets past the socket
 * guard that way; the connection is closed.
 *
 * @returns A 403 that closes its connection
 */
export function notRelayed(): Response {
  return new Response("Forbidden: connect to the server's listening address\n", {
    status: 403,
    headers: { "content-type": "text/plain; charset=utf-8", connection: "close" },
  });
}

/**
 * Whether a text message takes more than `limit` bytes in UTF-8, without encoding it when its
 * length alone decides (a UTF-16 code unit takes 1 to 3 bytes).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { textExceeds } from "./http_common.ts";
 * assert.equal(textExceeds("abc", 3), false);
 * assert.equal(textExceeds("é", 1), true);
 * ```
 *
 * @param text The message
 * @param limit The largest size allowed, in bytes
 * @returns True when the message is too big
 */
export function textExceeds(text: string, limit: number): boolean {
  if (text.length > limit) return true;
  if (text.length * 3 <= limit) return false;
  return new TextEncoder().encode(text).byteLength > limit;
}

type Listener = (...args: unknown[]) => void;

/**
 * A WebSocket adapter with `on`/`off` events: `open`, `message` (one argument, the text of a text
 * frame; binary frames are not passed on), `close` (code, reason) and `error` (the error).
 */
export abstract class EventedSocket implements ServerWebSocket {
  readonly #listeners = new Map<string, Set<Listener>>();

  /** 0 connecting, 1 open, 2 closing, 3 closed. */
  abstract get readyState(): number;
  /** Bytes passed to `send()` and not yet sent. */
  abstract get bufferedAmount(): number;
  /** Sends one text frame. */
  abstract send(data: string): void;
  /** Closes the socket. */
  abstract close(code?: number, reason?: string): void;

  /**
   * Listens for an event.
   *
   * @param type `open`, `message`, `close` or `error`
   * @param listener Called with the event's arguments
   * @returns This socket
   */
  on(type: string, listener: Listener): this {
    let listeners = this.#listeners.get(type);
    if (!listeners) this.#listeners.set(type, listeners = new Set());
    listeners.add(listener);
    return this;
  }

  /**
   * Stops listening.
   *
   * @param type The event
   * @param listener The listener passed to {@link on}
   * @returns This socket
   */
  off(type: string, listener: Listener): this {
    this.#listeners.get(type)?.delete(listener);
    return this;
  }

  /**
   * Calls the listeners of an event (the runtime's socket callbacks drive this).
   *
   * @param type The event
   * @param args Its arguments
   */
  emit(type: string, ...args: unknown[]): void {
    const listeners = this.#listeners.get(type);
    if (!listeners) return;
    for (const listener of [...listeners]) listener(...args);
  }
}

/** A timer for the grace period of `close()`, to race against the exchanges still open. */
export interface GraceTimer {
  /** Resolves when the grace period is over (never, once cancelled). */
  readonly elapsed: Promise<void>;
  /** Clears the timer. */
  cancel(): void;
}

/**
 * Starts a grace timer.
 *
 * @param ms The grace period
 * @returns The timer; cancel it once the exchanges are done
 */
export function graceTimer(ms: number): GraceTimer {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const elapsed = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, ms));
  });
  return { elapsed, cancel: () => clearTimeout(timer) };
}
