/**
 * Request ids a number cannot hold exactly (beyond 2^53, with a fraction), echoed over HTTP as the
 * client wrote them, as `ndJsonStream` does on stdio: such an id travels inside the process as a
 * placeholder string that carries the id's text, and goes back out as that text. A non-finite id
 * (`1e400`, 400 digits) has no number to stand for: it is refused with `-32600`.
 *
 * The placeholder carries a per-process nonce, so no client can forge one.
 *
 * @module
 */
import type { AnyMessage } from "../acp.ts";
import { topLevelNumberSpan } from "../json_number.ts";
import type { ServerWebSocket, WebSocketUpgrade } from "./http_handler.ts";

const PREFIX = `\u0000acp-harness-exact-id:${crypto.randomUUID()}:`;
/** The placeholder's start as JSON text (`JSON.stringify` writes the NUL as `\u0000`). */
const PREFIX_JSON = JSON.stringify(PREFIX).slice(0, -1);
const PLACEHOLDER = new RegExp(
  `${PREFIX_JSON.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&")}([^"]*)"`,
  "g",
);
/** A number that may not survive `JSON.parse`: 16 digits or more, a fraction, an exponent. */
const MAYBE_INEXACT = /:\s*-?\d+(?:[.eE]|\d{15})/;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** Whether a placeholder was ever made: until then output is passed on untouched. */
let issued = false;

/** The answer to a request whose id is a number that is not finite. */
export const NON_FINITE_ID_ANSWER: AnyMessage = {
  jsonrpc: "2.0",
  id: null,
  error: {
    code: -32600,
    message: "Invalid request: id must be a string or a finite number",
  },
};

/**
 * Rewrites a JSON-RPC message's text so that a request id a number cannot hold exactly becomes a
 * placeholder string; other texts come back as they are (including texts that do not parse: the
 * reader reports those).
 *
 * @example An id beyond 2^53 survives the round trip
 * ```ts
 * import assert from "node:assert/strict";
 * import { exactIdText, restoreExactIds } from "./exact_ids.ts";
 * const text = exactIdText('{"jsonrpc":"2.0","id":9007199254740993,"method":"x"}');
 * assert(typeof text === "string");
 * const { id } = JSON.parse(text);
 * const answer = restoreExactIds(JSON.stringify({ jsonrpc: "2.0", id, result: {} }));
 * assert(answer === '{"jsonrpc":"2.0","id":9007199254740993,"result":{}}');
 * ```
 *
 * @param text One JSON-RPC message as JSON text
 * @returns The text to read instead, or the `-32600` answer for a non-finite request id
 */
export function exactIdText(text: string): string | { readonly refusal: AnyMessage } {
  if (!MAYBE_INEXACT.test(text)) return text;
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return text;
  }
  if (typeof message !== "object" || message === null || Array.isArray(message)) return text;
  const { id, method } = message as { id?: unknown; method?: unknown };
  if (typeof id !== "number" || method === undefined) return text;
  if (!Number.isFinite(id)) return { refusal: NON_FINITE_ID_ANSWER };
  const span = topLevelNumberSpan(text, "id");
  if (span === undefined) return text;
  const raw = text.slice(span.start, span.end);
  if (Number.isSafeInteger(id) && String(id) === raw) return text;
  issued = true;
  return text.slice(0, span.start) + JSON.stringify(PREFIX + raw) + text.slice(span.end);
}

/**
 * Puts the ids a client wrote back in a JSON text in place of their placeholders.
 *
 * @param text JSON text (one message, or SSE events)
 * @returns The text with every placeholder string replaced by the number it stands for
 */
export function restoreExactIds(text: string): string {
  if (!issued || !text.includes(PREFIX_JSON)) return text;
  return text.replace(PLACEHOLDER, (_, raw: string) => raw);
}

/**
 * A response whose body has the placeholders of {@link exactIdText} replaced by the ids they stand
 * for. Each chunk must hold whole JSON texts (an SSE event, a JSON body), as the SDK writes them.
 * The body is read as its reader asks, chunk by chunk, as the original would be.
 *
 * @param response A response of the ACP SDK's server
 * @returns The same response with its body rewritten
 */
export function restoreExactIdsIn(response: Response): Response {
  const body = response.body;
  const type = response.headers.get("content-type") ?? "";
  if (body === null || !/json|event-stream/i.test(type)) return response;
  const reader = body.getReader();
  const rewritten = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      if (!issued) return controller.enqueue(value);
      const text = decoder.decode(value);
      controller.enqueue(
        text.includes(PREFIX_JSON) ? encoder.encode(restoreExactIds(text)) : value,
      );
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
  return new Response(rewritten, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/**
 * A WebSocket upgrade whose socket reads inexact ids as placeholders, answers a non-finite id with
 * `-32600` itself, and writes the ids back as they came.
 *
 * @param upgrade The SDK's upgrade
 * @returns The same upgrade, handing the SDK a wrapped socket
 */
export function exactIdUpgrade(upgrade: WebSocketUpgrade): WebSocketUpgrade {
  return {
    connectionId: upgrade.connectionId,
    accept: (socket) => upgrade.accept(exactIdSocket(socket)),
    reject: () => upgrade.reject(),
  };
}

type Listener = (...args: unknown[]) => void;

/** A socket as {@link exactIdUpgrade} hands it over. */
function exactIdSocket(socket: ServerWebSocket): ServerWebSocket {
  const wrapped = new Map<Listener, Listener>();
  /** The text of a text frame, from either listener style; `undefined` for a binary frame. */
  const textOf = (args: unknown[]): string | undefined => {
    const [first, binary] = args;
    const data = typeof first === "object" && first !== null && "data" in first
      ? (first as { data: unknown }).data
      : first;
    if (typeof data === "string") return data;
    if (binary !== false) return undefined;
    if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) {
      return decoder.decode(data as ArrayBuffer | ArrayBufferView);
    }
    return undefined;
  };
  const wrap = (type: string, listener: Listener, style: "event" | "emitter"): Listener => {
    if (type !== "message") return listener;
    const inner: Listener = (...args) => {
      const text = textOf(args);
      if (text === undefined) return listener(...args);
      const read = exactIdText(text);
      if (typeof read !== "string") {
        try {
          socket.send(JSON.stringify(read.refusal));
        } catch {
          // The socket is closing: its close event follows.
        }
        return;
      }
      if (read === text) return listener(...args);
      return style === "event" ? listener({ data: read }) : listener(read, false);
    };
    wrapped.set(listener, inner);
    return inner;
  };
  const proxy = {
    get readyState() {
      return socket.readyState;
    },
    get bufferedAmount() {
      return socket.bufferedAmount;
    },
    send: (data: string) => socket.send(restoreExactIds(data)),
    close: (code?: number, reason?: string) => socket.close(code, reason),
  } as ServerWebSocket;
  const mutable = proxy as {
    -readonly [K in keyof ServerWebSocket]: ServerWebSocket[K];
  };
  if (socket.on) {
    mutable.on = (type, listener) => socket.on!(type, wrap(type, listener, "emitter"));
    mutable.off = (type, listener) => socket.off?.(type, wrapped.get(listener) ?? listener);
  } else {
    mutable.addEventListener = (type, listener) =>
      socket.addEventListener?.(type, wrap(type, listener as Listener, "event"));
    mutable.removeEventListener = (type, listener) =>
      socket.removeEventListener?.(type, wrapped.get(listener as Listener) ?? listener);
  }
  return proxy;
}
