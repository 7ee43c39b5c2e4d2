/**
 * The recorder batches a session's events into its store; the outbox hands records to the store
 * before any update reaches the client.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Outbox } from "../../src/session/outbox.ts";
import { Recorder } from "../../src/session/recorder.ts";
import { UpdateQueue } from "../../src/session/update_queue.ts";
import type { StoredEvent } from "../../src/store/session_store.ts";
import { SessionLogFailedError, StoreCommitTimeoutError } from "../../src/store/store_errors.ts";
import { captureLogger, FakeStore, gate } from "./_fakes.ts";

const title = (text: string): StoredEvent => ({ type: "title", title: text });
const turnEnd: StoredEvent = { type: "turn_end", stopReason: "end_turn" };

function recorder(store = new FakeStore()) {
  const { logger, lines } = captureLogger();
  return { store, lines, recorder: new Recorder({ sessionId: "s1", store, logger }) };
}

/** Resolves after the microtasks queued so far (and those they queue, a few levels deep). */
async function microtasks(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

Deno.test("Recorder.record() batches one microtask's records into one append, in call order", async () => {
  const { store, recorder: r } = recorder();
  r.record([title("a")], false);
  r.record([title("b"), title("c")], false);
  assert.equal(store.calls.length, 0);
  await microtasks();
  assert.deepEqual(store.types(), [["title", "title", "title"]]);
  assert.deepEqual(store.calls[0]?.events.map((event) => (event as { title: string }).title), [
    "a",
    "b",
    "c",
  ]);
  assert.equal(store.calls[0]?.sync, false);
});

Deno.test("Recorder.record() makes a batch a commit point when any of its records is one", async () => {
  const { store, recorder: r } = recorder();
  r.record([title("a")], false);
  r.record([turnEnd], true);
  r.record([title("b")], false);
  await microtasks();
  assert.deepEqual(store.calls.map((call) => call.sync), [true]);
  r.record([title("c")], false);
  await microtasks();
  assert.deepEqual(store.calls.map((call) => call.sync), [true, false]);
});

Deno.test("Recorder.record() holds `later` records for the next append", async () => {
  const { store, recorder: r } = recorder();
  r.record([title("later")], true, "later");
  await microtasks();
  assert.equal(store.calls.length, 0);
  r.record([title("soon")], false);
  await microtasks();
  assert.deepEqual(store.types(), [["title", "title"]]);
  assert.equal(store.calls[0]?.sync, true);
});

Deno.test("Recorder.flush() hands held records over at once", () => {
  const { store, recorder: r } = recorder();
  r.record([title("later")], false, "later");
  r.flush();
  assert.equal(store.calls.length, 1);
  r.flush();
  assert.equal(store.calls.length, 1);
});

Deno.test("Recorder.recordStrict() joins what is held; the next flush appends it with its commit flag", async () => {
  const { store, recorder: r } = recorder();
  r.record([title("held")], false, "later");
  r.record([title("soon")], false);
  const strict = r.recordStrict([{ type: "turn_start" }], true);
  r.record([title("after")], false);
  await strict;
  assert.deepEqual(store.types(), [["title", "title", "turn_start", "title"]]);
  assert.equal(store.calls[0]?.sync, true);
  await microtasks();
  assert.equal(store.calls.length, 1, "the scheduled flush finds nothing left");
});

Deno.test("Recorder.recordStrict() rejects when the store throws, and logs it", async () => {
  const { store, lines, recorder: r } = recorder();
  store.behaviour = () => {
    throw new Error("disk full");
  };
  await assert.rejects(r.recordStrict([{ type: "turn_start" }], true), /disk full/);
  assert.ok(
    lines.some((line) => line.startsWith("acp-harness error: cannot write the session log")),
  );
});

Deno.test("Recorder: with a schedule, held records wait for it", () => {
  const store = new FakeStore();
  const scheduled: Array<() => void> = [];
  const r = new Recorder({
    sessionId: "s1",
    store,
    logger: captureLogger().logger,
    schedule: (flush) => scheduled.push(flush),
  });
  r.record([title("one")], false);
  r.record([title("two")], true);
  assert.equal(scheduled.length, 1, "one schedule for what is held");
  assert.equal(store.calls.length, 0);
  scheduled[0]?.();
  assert.deepEqual(store.types(), [["title", "title"]]);
  assert.equal(store.calls[0]?.sync, true);
  r.record([title("three")], false);
  assert.equal(scheduled.length, 2, "scheduled again after the flush");
});

Deno.test("Recorder.recordStrict() returns the store's rejection, and logs it", async () => {
  const { store, lines, recorder: r } = recorder();
  store.behaviour = () => Promise.reject(new Error("disk full"));
  await assert.rejects(r.recordStrict([{ type: "turn_start" }], true), /disk full/);
  await r.durable();
  assert.ok(
    lines.some((line) => line.startsWith("acp-harness error: cannot write the session log")),
  );
});

Deno.test("Recorder: a failed non-strict append is logged, and ends the log's recording", async () => {
  const { store, lines, recorder: r } = recorder();
  store.behaviour = () => {
    throw new Error("disk full");
  };
  r.record([title("a")], false, "later");
  r.flush();
  store.behaviour = () => Promise.resolve();
  r.record([title("b")], true);
  await microtasks();
  await r.durable();
  assert.equal(store.calls.length, 1, "nothing is appended after the hole");
  assert.equal(lines.filter((line) => line.includes("cannot write the session log")).length, 1);
  await assert.rejects(r.acknowledged(), SessionLogFailedError);
  await assert.rejects(r.recordStrict([title("c")], true), SessionLogFailedError);
  assert.equal(store.calls.length, 1);
});

Deno.test("Recorder.acknowledged(): the store's failure, after the append that failed", async () => {
  const { store, recorder: r } = recorder();
  const synced = gate();
  store.behaviour = () => synced.wait.then(() => Promise.reject(new Error("connection lost")));
  r.record([turnEnd], true);
  r.flush();
  let settled = false;
  const acknowledged = r.acknowledged().finally(() => settled = true);
  await microtasks();
  assert.equal(settled, false, "waits for the store");
  synced.open();
  await assert.rejects(acknowledged, /connection lost/);
  r.record([title("after")], false);
  r.flush();
  assert.equal(store.calls.length, 1, "refused after the failure");
});

Deno.test("Recorder.acknowledged(): a store that stalls past the commit timeout fails it, naming the store", async () => {
  const { logger } = captureLogger();
  const stalled = new FakeStore();
  stalled.behaviour = () => new Promise(() => {});
  const named = Object.assign(stalled, { name: "PostgreSQL" });
  const r = new Recorder({ sessionId: "s1", store: named, logger, commitTimeoutMs: 30 });
  r.record([turnEnd], true);
  r.flush();
  await assert.rejects(
    r.acknowledged(),
    (error) =>
      error instanceof StoreCommitTimeoutError && /PostgreSQL session store/.test(error.message),
  );
  r.record([title("after")], false);
  r.flush();
  assert.equal(stalled.calls.length, 1, "nothing appended after the timeout");
  await assert.rejects(r.acknowledged(), StoreCommitTimeoutError);
});

Deno.test("Recorder.acknowledged(): a store's `written` is all it waits for, and an abort stops it", async () => {
  const { logger } = captureLogger();
  const store = new FakeStore();
  const durable = gate();
  store.behaviour = () => durable.wait;
  const withWritten = Object.assign(store, { written: () => Promise.resolve() });
  const r = new Recorder({ sessionId: "s1", store: withWritten, logger });
  r.record([turnEnd], true);
  r.flush();
  await r.acknowledged();
  const controller = new AbortController();
  const plain = new FakeStore();
  plain.behaviour = () => durable.wait;
  const waiting = new Recorder({ sessionId: "s2", store: plain, logger });
  waiting.record([turnEnd], true);
  waiting.flush();
  const stopped = waiting.acknowledged(controller.signal);
  controller.abort(new Error("cancelled"));
  await assert.rejects(stopped, /cancelled/);
  durable.open();
  await waiting.acknowledged();
});

Deno.test("Recorder.durable() waits for every commit point appended so far", async () => {
  const { store, recorder: r } = recorder();
  const synced = gate();
  store.behaviour = (call) => call.sync ? synced.wait : Promise.resolve();
  r.record([turnEnd], true);
  r.flush();
  let durable = false;
  const waiting = r.durable().then(() => durable = true);
  await microtasks();
  assert.equal(durable, false);
  synced.open();
  await waiting;
  assert.equal(durable, true);
});

Deno.test("Outbox.send() hands every record to the store before the update to the client", async () => {
  const store = new FakeStore();
  const { logger } = captureLogger();
  const order: string[] = [];
  store.onAppend = (call) => order.push(`append ${call.events.map((e) => e.type).join(",")}`);
  const updates = new UpdateQueue((update) => {
    order.push(`send ${update.sessionUpdate}`);
    return Promise.resolve();
  }, logger);
  const outbox = new Outbox(new Recorder({ sessionId: "s1", store, logger }), updates);
  outbox.record([{ type: "usage", usage: { input: 1, output: 1 }, used: 2 }], false, "later");
  outbox.record([title("t")], false);
  outbox.send({ sessionUpdate: "session_info_update", title: "t" });
  outbox.send({ sessionUpdate: "session_info_update", title: "u" });
  assert.deepEqual(order, [
    "append usage,title",
    "send session_info_update",
    "send session_info_update",
  ]);
  await outbox.drain();
});

Deno.test("Outbox.drain() waits for the updates, then makes the records durable", async () => {
  const store = new FakeStore();
  const { logger } = captureLogger();
  const written = gate();
  const synced = gate();
  store.behaviour = (call) => call.sync ? synced.wait : Promise.resolve();
  const outbox = new Outbox(
    new Recorder({ sessionId: "s1", store, logger }),
    new UpdateQueue(() => written.wait, logger),
  );
  outbox.send({ sessionUpdate: "session_info_update", title: "t" });
  outbox.record([turnEnd], true, "later");
  let drained = false;
  const draining = outbox.drain().then(() => drained = true);
  await microtasks();
  assert.equal(store.calls.length, 0, "records are handed over once the updates are written");
  written.open();
  await microtasks();
  assert.deepEqual(store.types(), [["turn_end"]]);
  assert.equal(drained, false);
  synced.open();
  await draining;
});

Deno.test("Outbox with a defer schedule: a task's records go in one append, before its updates", async () => {
  const store = new FakeStore();
  const { logger } = captureLogger();
  const order: string[] = [];
  store.onAppend = (call) => order.push(`append ${call.events.map((e) => e.type).join(",")}`);
  const updates = new UpdateQueue((update) => {
    order.push(`send ${update.sessionUpdate}`);
    return Promise.resolve();
  }, logger);
  const tasks: Array<() => void> = [];
  const holder: { outbox?: Outbox } = {};
  const recorder = new Recorder({
    sessionId: "s1",
    store,
    logger,
    schedule: () => holder.outbox?.schedule(),
  });
  const outbox = new Outbox(recorder, updates, (task) => tasks.push(task));
  holder.outbox = outbox;
  const admitted = outbox.recordStrict([{ type: "turn_start" }], true);
  outbox.send({ sessionUpdate: "session_info_update", title: "t" });
  outbox.record([title("t")], false);
  outbox.send({ sessionUpdate: "session_info_update", title: "u" });
  await microtasks();
  assert.deepEqual(order, [], "held until the task is done");
  assert.equal(tasks.length, 1, "one hand-over scheduled");
  tasks[0]?.();
  await admitted;
  assert.deepEqual(order, [
    "append turn_start,title",
    "send session_info_update",
    "send session_info_update",
  ]);
  // flush() hands over at once, whatever the schedule (before a tool, a request, an answer).
  outbox.record([turnEnd], true);
  outbox.send({ sessionUpdate: "session_info_update", title: "v" });
  outbox.flush();
  assert.deepEqual(order.slice(3), ["append turn_end", "send session_info_update"]);
  await outbox.drain();
});
