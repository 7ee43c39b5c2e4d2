/**
 * Reading a session a batch of records at a time from any {@link SessionStore}.
 *
 * @module
 */
import type { SessionRecordStream, SessionStore, StoreCallOptions } from "./session_store.ts";

/**
 * Reads a session a batch of records at a time: with the store's `loadStream` when it has one,
 * else with `load` (the records then come as one batch).
 *
 * @example A store without `loadStream`
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemorySessionStore } from "./memory_session_store.ts";
 * import { loadRecordStream } from "./record_stream.ts";
 * const store = new MemorySessionStore();
 * const id = crypto.randomUUID();
 * await store.create({
 *   version: 1, id, cwd: "/work", additionalDirectories: [], createdAt: new Date().toISOString(),
 * });
 * await store.append(id, [{ type: "turn_start" }], { sync: true });
 * const stream = await loadRecordStream(store, id);
 * const seqs: number[] = [];
 * for await (const batch of stream!.batches) seqs.push(...batch.map((record) => record.seq));
 * assert.deepEqual(seqs, [1]);
 * ```
 *
 * @param store The store
 * @param id The session
 * @param options An abort signal
 * @returns The stream (read its batches to the end or close it), or `undefined` when no session
 *   is stored under this id
 * @throws {CorruptSessionLogError} What the store's `load` or `loadStream` rejects with
 */
export async function loadRecordStream(
  store: SessionStore,
  id: string,
  options?: StoreCallOptions,
): Promise<SessionRecordStream | undefined> {
  if (store.loadStream) return await store.loadStream(id, options);
  const loaded = await store.load(id, options);
  if (loaded === undefined) return undefined;
  const { records } = loaded;
  return {
    header: loaded.header,
    batches: {
      async *[Symbol.asyncIterator]() {
        if (records.length > 0) yield records;
      },
    },
    close: () => Promise.resolve(),
  };
}
