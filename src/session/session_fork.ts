/**
 * What `session/fork` copies of a stored session: its records as the store holds them, read
 * through the store contract (so every store can be forked), without the source's lease.
 *
 * @module
 */
import { loadRecordStream } from "../store/record_stream.ts";
import type {
  SessionHeader,
  SessionStore,
  StoreCallOptions,
  StoredEvent,
  StoredRecord,
} from "../store/session_store.ts";

/** A stored session's conversation, ready to start a fork with. */
export interface ForkCopy {
  /** The source's header. */
  readonly source: SessionHeader;
  /** The source's records copied, as read (their `seq` and `time` are the source's). */
  readonly records: readonly StoredRecord[];
  /** The same records as events, for the fork's `create` (the store numbers them anew). */
  readonly events: readonly StoredEvent[];
  /** The seq of the last record copied; 0 when none was. */
  readonly seq: number;
}

/**
 * Reads the stored session a fork copies: every record the store holds, except a turn that has
 * not ended (under way in its owner, or cut short by a crash and not repaired yet). Such a turn
 * is left out whole, so the fork starts after the last finished turn; what came before it
 * (messages, tool calls and results, plans, compactions, selection, usage, budgets, title,
 * grants) is copied. The source is only read: its lease is not taken, so it may be open and
 * running, on this server or another one. A torn last line is ignored, as `load` does.
 *
 * @example Forking a session whose second turn is still running
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemorySessionStore } from "../store/memory_session_store.ts";
 * import { copyForFork } from "./session_fork.ts";
 * const store = new MemorySessionStore();
 * const id = crypto.randomUUID();
 * await store.create({
 *   version: 1, id, cwd: "/work", additionalDirectories: [], createdAt: new Date().toISOString(),
 * }, {
 *   events: [
 *     { type: "config", model: "echo", mode: "ask" },
 *     { type: "turn_start" },
 *     { type: "user", messageId: "u1", content: [{ type: "text", text: "hi" }] },
 *     { type: "assistant", messageId: "a1", text: "Echo: hi" },
 *     { type: "turn_end", stopReason: "end_turn" },
 *     { type: "turn_start" },
 *     { type: "user", messageId: "u2", content: [{ type: "text", text: "more" }] },
 *   ],
 * });
 * const copy = await copyForFork(store, id);
 * assert.equal(copy?.seq, 5);
 * assert.deepEqual(copy?.events.map((event) => event.type), [
 *   "config", "turn_start", "user", "assistant", "turn_end",
 * ]);
 * ```
 *
 * @param store The store holding the source
 * @param sourceId The source session
 * @param options An abort signal
 * @returns The copy, or `undefined` when no session is stored under this id
 * @throws {CorruptSessionLogError} What the store's `load` rejects with
 */
export async function copyForFork(
  store: SessionStore,
  sourceId: string,
  options?: StoreCallOptions,
): Promise<ForkCopy | undefined> {
  const stream = await loadRecordStream(store, sourceId, options);
  if (stream === undefined) return undefined;
  const records: StoredRecord[] = [];
  /** Where the turn under way began (an index into `records`); -1 outside a turn. */
  let openTurn = -1;
  try {
    for await (const batch of stream.batches) {
      for (const record of batch) {
        if (record.type === "turn_start") openTurn = records.length;
        else if (record.type === "turn_end") openTurn = -1;
        records.push(record);
      }
    }
  } finally {
    await stream.close();
  }
  if (openTurn >= 0) records.length = openTurn;
  const events = records.map(eventOf);
  return { source: stream.header, records, events, seq: records.at(-1)?.seq ?? 0 };
}

/** A record without what the store adds to it (its `seq` and `time`). */
function eventOf(record: StoredRecord): StoredEvent {
  const { seq: _seq, time: _time, ...event } = record;
  return event as StoredEvent;
}
