import type { AnyMessage } from "../transport/acp.ts";
import type { MessageSource } from "../transport/acp.ts";

/** Requests that act on one session, named by their `params.sessionId`. */
const SESSION_REQUESTS: ReadonlySet<string> = new Set([
  "session/prompt",
  "session/set_mode",
  "session/set_config_option",
  "session/load",
  "session/resume",
  "session/close",
  "session/delete",
  "_session/steering",
  // A fork copies what its source's earlier requests recorded.
  "session/fork",
]);

type Id = string | number;

interface Lane {
  /** The request forwarded last that has not taken effect yet. */
  blocker: string | undefined;
  /** Messages waiting for it, in arrival order. */
  readonly queue: AnyMessage[];
}

/** A connection's inbound messages, with the messages of each session kept in arrival order. */
export interface SessionOrder {
  /** The connection's inbound messages, sequenced. */
  readonly readable: ReadableStream<AnyMessage>;
  /**
   * Says that a session request took effect (a prompt took its slot, a mode changed, a load
   * finished), so the messages of that session sent after it may go. Call it for every answer
   * written too (an answer always means the request took effect); calling it twice, or for a
   * request that waits for nothing, is harmless.
   *
   * @param requestId The request's id
   */
  applied(requestId: unknown): void;
}

/** What {@link orderSessionMessages} needs. */
export interface SessionOrderOptions {
  /** Carries out a `session/cancel` notification at its place in the order. */
  cancel(sessionId: string): void;
}

/**
 * Makes the messages of each session take effect in the order the client sent them.
 *
 * The SDK starts a handler for every message as it arrives, but the handlers do not start in
 * arrival order (each message walks the router's handler list, which costs more microtasks for
 * methods registered later), and some take effect only after an await. So a mode change, a cancel
 * or a close sent just before a prompt could apply after the prompt started. This lays each
 * session's messages in a lane: a session request is passed on only once the one before it took
 * effect ({@link SessionOrder.applied}: called by the handler, or for its answer), a `session/cancel` is carried
 * out in its place, and a `$/cancel_request` for a request still waiting in a lane waits right
 * behind it. Messages of different sessions, and messages of no session, never wait.
 *
 * @example A cancel sent before a prompt applies first
 * ```ts
 * import assert from "node:assert/strict";
 * import { createMemoryPair } from "../transport/memory.ts";
 * import { orderSessionMessages } from "./session_order.ts";
 * const [server, client] = createMemoryPair();
 * const cancelled: string[] = [];
 * const order = orderSessionMessages(server.readable, { cancel: (id) => cancelled.push(id) });
 * const writer = client.writable.getWriter();
 * void writer.write({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "s" } });
 * void writer.write({
 *   jsonrpc: "2.0", id: 1, method: "session/prompt", params: { sessionId: "s", prompt: [] },
 * });
 * const { value } = await order.readable.getReader().read();
 * assert.deepEqual(cancelled, ["s"]);
 * assert(value && "id" in value && value.id === 1);
 * await writer.close();
 * ```
 *
 * @param input The connection's inbound messages: a stream, or read one at a time without one
 *   (an NDJSON transport's `messages`, one hand-off less per message)
 * @param options Where cancels go
 * @returns The sequenced messages and the hook that releases a lane
 */
export function orderSessionMessages(
  input: ReadableStream<AnyMessage> | MessageSource,
  options: SessionOrderOptions,
): SessionOrder {
  const lanes = new Lanes(options);
  const reader = "getReader" in input ? streamSource(input) : input;
  const readable = new ReadableStream<AnyMessage>({
    start(controller) {
      lanes.forward = (message) => controller.enqueue(message);
    },
    async pull(controller) {
      // A pull that enqueues nothing is not repeated, so read on until something goes through
      // (held messages go through later, from `applied`).
      const before = lanes.forwarded;
      while (lanes.forwarded === before) {
        const value = await reader.read();
        if (value === undefined) {
          lanes.forward = () => {};
          controller.close();
          return;
        }
        lanes.arrive(value);
      }
    },
    async cancel(reason) {
      lanes.forward = () => {};
      await reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
  return { readable, applied: (requestId) => lanes.applied(requestId) };
}

/** The lanes of one connection: which message of which session may go next. */
class Lanes {
  /** Passes a message on to the SDK. */
  forward: (message: AnyMessage) => void = () => {};
  /** How many messages were passed on (so a pull knows whether it delivered one). */
  forwarded = 0;
  readonly #options: SessionOrderOptions;
  readonly #lanes = new Map<string, Lane>();
  /** Forwarded requests that block their lane, by id key. */
  readonly #blockers = new Map<string, string>();
  /** Requests waiting in a lane, by id key (for `$/cancel_request`). */
  readonly #held = new Map<string, string>();

  constructor(options: SessionOrderOptions) {
    this.#options = options;
  }

  /** Takes a message as it arrives: passes it on now or holds it in its session's lane. */
  arrive(message: AnyMessage): void {
    const { method, id, params } = message as { method?: unknown; id?: unknown; params?: unknown };
    if (typeof method !== "string") return this.#pass(message);
    if (method === "$/cancel_request" && id === undefined) return this.#cancelRequest(message);
    const sessionId = (params as { sessionId?: unknown } | null | undefined)?.sessionId;
    const isCancel = method === "session/cancel" && id === undefined;
    if (
      typeof sessionId !== "string" ||
      !(isCancel || (isId(id) && SESSION_REQUESTS.has(method)))
    ) {
      return this.#pass(message);
    }
    const lane = this.#lanes.get(sessionId);
    if (lane && (lane.blocker !== undefined || lane.queue.length > 0)) {
      lane.queue.push(message);
      if (isId(id)) this.#held.set(idKey(id), sessionId);
      return;
    }
    const fresh: Lane = lane ?? { blocker: undefined, queue: [] };
    this.#send(sessionId, fresh, message);
    if (fresh.blocker !== undefined) this.#lanes.set(sessionId, fresh);
    else this.#lanes.delete(sessionId);
  }

  /** Releases the lane a request blocked, passing on what waited behind it. */
  applied(requestId: unknown): void {
    if (this.#blockers.size === 0 || !isId(requestId)) return;
    const key = idKey(requestId);
    const sessionId = this.#blockers.get(key);
    if (sessionId === undefined) return;
    this.#blockers.delete(key);
    const lane = this.#lanes.get(sessionId);
    if (!lane || lane.blocker !== key) return;
    lane.blocker = undefined;
    while (lane.blocker === undefined && lane.queue.length > 0) {
      this.#send(sessionId, lane, lane.queue.shift() as AnyMessage);
    }
    if (lane.blocker === undefined) this.#lanes.delete(sessionId);
  }

  /** A `$/cancel_request` waits behind the request it names when that request is held. */
  #cancelRequest(message: AnyMessage): void {
    const target = (message as { params?: { requestId?: unknown } | null }).params?.requestId;
    const sessionId = isId(target) ? this.#held.get(idKey(target)) : undefined;
    const lane = sessionId === undefined ? undefined : this.#lanes.get(sessionId);
    if (lane) lane.queue.push(message);
    else this.#pass(message);
  }

  /** Carries out or passes on a message of a lane; a request then blocks the lane. */
  #send(sessionId: string, lane: Lane, message: AnyMessage): void {
    const request = message as { method?: unknown; id?: unknown };
    if (request.method === "session/cancel" && request.id === undefined) {
      this.#options.cancel(sessionId);
      return;
    }
    if (isId(request.id) && request.method !== "$/cancel_request") {
      const key = idKey(request.id);
      this.#held.delete(key);
      lane.blocker = key;
      this.#blockers.set(key, sessionId);
    }
    this.#pass(message);
  }

  #pass(message: AnyMessage): void {
    this.forwarded++;
    this.forward(message);
  }
}

/**
 * A stream read one message at a time.
 *
 * @param input The stream
 * @returns Its messages, one per `read()`
 */
export function streamSource(input: ReadableStream<AnyMessage>): MessageSource {
  const reader = input.getReader();
  return {
    read: async () => {
      const { value, done } = await reader.read();
      return done ? undefined : value;
    },
    cancel: (reason) => reader.cancel(reason),
  };
}

function isId(value: unknown): value is Id {
  return typeof value === "string" || typeof value === "number";
}

function idKey(id: Id): string {
  return typeof id === "number" ? `n${id}` : `s${id}`;
}
