/**
 * `DeferredCreationStore`: a new session is written once `defer` fires, and every operation that
 * could see it in this process waits for that.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createLeased, DeferredCreationStore } from "../../src/store/deferred_creation_store.ts";
import { MemorySessionStore } from "../../src/store/memory_session_store.ts";
import type { SessionHeader, SessionStore } from "../../src/store/session_store.ts";

/** The store, and the deferred tasks it queued (run them with `run`). */
function deferredStore(inner: SessionStore = new MemorySessionStore()) {
  const tasks: Array<() => void> = [];
  const store = new DeferredCreationStore(inner, (task) => tasks.push(task));
  return {
    inner,
    store,
    run(): void {
      for (const task of tasks.splice(0)) task();
    },
  };
}

function header(): SessionHeader {
  return {
    version: 1,
    id: crypto.randomUUID(),
    cwd: "/work",
    additionalDirectories: [],
    createdAt: new Date().toISOString(),
  };
}

Deno.test("DeferredCreationStore: nothing is written before defer fires; appends, load and list wait", async () => {
  const { inner, store, run } = deferredStore();
  const created = header();
  const lease = store.createLeased(created);
  assert.equal(store.pending, 1);
  // Queued in order behind the creation.
  const appended = [
    store.append(created.id, [{ type: "turn_start" }], { sync: false }),
    store.append(created.id, [{ type: "turn_end", stopReason: "end_turn" }], { sync: true }),
  ];
  const loaded = store.load(created.id);
  const listed = store.list({ limit: 10 });
  const exists = store.exists(created.id);
  await Promise.resolve();
  assert.equal(await inner.exists(created.id), false, "not written yet");
  run();
  await Promise.all(appended);
  assert.deepEqual((await loaded)?.records.map((record) => record.type), [
    "turn_start",
    "turn_end",
  ]);
  assert.deepEqual((await listed).sessions.map((summary) => summary.id), [created.id]);
  assert.equal(await exists, true);
  assert.equal(store.pending, 0);
  // The lease is held: nobody else gets it until it is released.
  await assert.rejects(store.acquire(created.id), /already open|open in/);
  await (await lease).release();
  await (await store.acquire(created.id)).release();
});

Deno.test("DeferredCreationStore: a failed creation fails the appends queued behind it and gives the lease back", async () => {
  const inner = new MemorySessionStore();
  const existing = header();
  await inner.create(existing);
  const { store, run } = deferredStore(inner);
  // The same id again: the wrapped store refuses to create it.
  const lease = store.createLeased(existing);
  const appended = store.append(existing.id, [{ type: "turn_start" }], { sync: true });
  run();
  await assert.rejects(lease, /exists/);
  await assert.rejects(appended, /exists/);
  assert.deepEqual((await inner.load(existing.id))?.records, [], "nothing appended");
  // The lease taken with the failed create was given back.
  await (await inner.acquire(existing.id)).release();
  // The listing does not wait for (nor fail with) a failed creation.
  assert.deepEqual((await store.list({ limit: 10 })).sessions.map((s) => s.id), [existing.id]);
});

Deno.test("createLeased(): the lease and the log together; a refused lease rejects", async () => {
  const inner = new MemorySessionStore();
  const made = header();
  const held = await inner.acquire(made.id);
  await assert.rejects(createLeased(inner, made), /open/);
  // Both were asked for at once (a new id is never held): the log was written meanwhile.
  assert.equal(await inner.exists(made.id), true);
  await held.release();
  const other = header();
  const lease = await createLeased(inner, other);
  assert.equal(await inner.exists(other.id), true);
  await lease.release();
});
