import type { AnyMessage } from "../transport/acp.ts";

/** Requests that act on one session, named by their `params.sessionId`. */
const SESSION_REQUESTS: ReadonlySet<string> = new Set([
  "session/prompt",
  "session/set_mode",
  "session/set_config_option",
  "session/load",
  "session/resume",
  "session/close",
  "session/delete",
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
 * @param input The connection's inbound messages
 * @param options Where cancels go
 * @returns The sequenced messages and the hook that releases a lane
 */
export function orderSessionMessages(
  input: ReadableStream<AnyMessage>,
  options: SessionOrderOptions,
): SessionOrder {
  const lanes = new Map<string, Lane>();
  /** Forwarded requests that block their lane, by id key. */
  const blockers = new Map<string, string>();
  /** Requests waiting in a lane, by id key (for `$/cancel_request`). */
  const held = new Map<string, string>();
  let controller!: ReadableStreamDefaultController<AnyMessage>;
  let open = true;

  let forwarded = 0;
  const forward = (message: AnyMessage): void => {
    forwarded++;
    if (open) controller.enqueue(message);
  };

  /** Passes on what the lane holds until a request blocks it again. */
  const release = (sessionId: string, lane: Lane): void => {
    while (lane.blocker === undefined && lane.queue.length > 0) {
      const message = lane.queue.shift()!;
      pass(sessionId, lane, message);
    }
    if (lane.blocker === undefined && lane.queue.length === 0) lanes.delete(sessionId);
  };

  const pass = (sessionId: string, lane: Lane, message: AnyMessage): void => {
    const request = message as { method?: unknown; id?: unknown };
    if (request.method === "session/cancel" && request.id === undefined) {
      options.cancel(sessionId);
      return;
    }
    if (isId(request.id) && request.method !== "$/cancel_request") {
      const key = idKey(request.id);
      held.delete(key);
      lane.blocker = key;
      blockers.set(key, sessionId);
    }
    forward(message);
  };

  const arrive = (message: AnyMessage): void => {
    const { method, id, params } = message as { method?: unknown; id?: unknown; params?: unknown };
    if (typeof method !== "string") return forward(message);
    if (method === "$/cancel_request" && id === undefined) {
      const target = (params as { requestId?: unknown } | null | undefined)?.requestId;
      const sessionId = isId(target) ? held.get(idKey(target)) : undefined;
      const lane = sessionId === undefined ? undefined : lanes.get(sessionId);
      if (lane) lane.queue.push(message);
      else forward(message);
      return;
    }
    const sessionId = (params as { sessionId?: unknown } | null | undefined)?.sessionId;
    const isCancel = method === "session/cancel" && id === undefined;
    if (
      typeof sessionId !== "string" ||
      !(isCancel || (isId(id) && SESSION_REQUESTS.has(method)))
    ) {
      return forward(message);
    }
    let lane = lanes.get(sessionId);
    if (lane && (lane.blocker !== undefined || lane.queue.length > 0)) {
      lane.queue.push(message);
      if (isId(id)) held.set(idKey(id), sessionId);
      return;
    }
    if (!lane) {
      lane = { blocker: undefined, queue: [] };
      lanes.set(sessionId, lane);
    }
    pass(sessionId, lane, message);
    if (lane.blocker === undefined) lanes.delete(sessionId);
  };

  const applied = (requestId: unknown): void => {
    if (blockers.size === 0 || !isId(requestId)) return;
    const key = idKey(requestId);
    const sessionId = blockers.get(key);
    if (sessionId === undefined) return;
    blockers.delete(key);
    const lane = lanes.get(sessionId);
    if (!lane || lane.blocker !== key) return;
    lane.blocker = undefined;
    release(sessionId, lane);
  };

  const reader = input.getReader();
  const readable = new ReadableStream<AnyMessage>({
    start(c) {
      controller = c;
    },
    async pull() {
      // A pull that enqueues nothing is not repeated, so read on until something goes through
      // (held messages go through later, from `applied`).
      const before = forwarded;
      while (forwarded === before) {
        const { value, done } = await reader.read();
        if (done) {
          open = false;
          controller.close();
          return;
        }
        arrive(value);
      }
    },
    async cancel(reason) {
      open = false;
      await reader.cancel(reason);
    },
  }, { highWaterMark: 0 });

  return { readable, applied };
}

function isId(value: unknown): value is Id {
  return typeof value === "string" || typeof value === "number";
}

function idKey(id: Id): string {
  return typeof id === "number" ? `n${id}` : `s${id}`;
}
