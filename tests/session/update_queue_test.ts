/**
 * UpdateQueue: order, high-water backpressure and flush.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { SessionUpdate } from "../../src/transport/acp_types.ts";
import { UpdateQueue } from "../../src/session/update_queue.ts";
import { captureLogger, type Gate, gate } from "./_fakes.ts";

const chunk = (text: string): SessionUpdate => ({
  sessionUpdate: "agent_message_chunk",
  content: { type: "text", text },
});

/** A sink whose writes finish only when the test says so. */
function slowSink() {
  const writes: Array<{ update: SessionUpdate; done: Gate }> = [];
  return {
    writes,
    sink: (update: SessionUpdate) => {
      const done = gate();
      writes.push({ update, done });
      return done.wait;
    },
  };
}

const textOf = (update: SessionUpdate | undefined): string =>
  update?.sessionUpdate === "agent_message_chunk" && update.content.type === "text"
    ? update.content.text
    : "";

Deno.test("UpdateQueue.push() hands updates to the sink at once, in order", () => {
  const { writes, sink } = slowSink();
  const queue = new UpdateQueue(sink, captureLogger().logger);
  for (const text of ["a", "b", "c"]) assert.equal(queue.push(chunk(text)), undefined);
  assert.deepEqual(writes.map((write) => textOf(write.update)), ["a", "b", "c"]);
  for (const write of writes) write.done.open();
});

Deno.test("UpdateQueue.push() returns a promise once 256 writes are outstanding", async () => {
  const { writes, sink } = slowSink();
  const queue = new UpdateQueue(sink, captureLogger().logger);
  for (let i = 1; i < 256; i++) assert.equal(queue.push(chunk(String(i))), undefined);
  const wait = queue.push(chunk("256"));
  assert.ok(wait instanceof Promise, "the client is behind");
  let resumed = false;
  const resuming = wait.then(() => resumed = true);
  for (const write of writes.slice(0, -1)) write.done.open();
  await Promise.resolve();
  assert.equal(resumed, false, "the promise waits for the latest write");
  writes.at(-1)?.done.open();
  await resuming;
  assert.equal(queue.push(chunk("next")), undefined, "below the high water again");
  writes.at(-1)?.done.open();
  await queue.flush();
});

Deno.test("UpdateQueue.flush() resolves once every update pushed so far is written", async () => {
  const { writes, sink } = slowSink();
  const queue = new UpdateQueue(sink, captureLogger().logger);
  await queue.flush();
  queue.push(chunk("a"));
  queue.push(chunk("b"));
  let flushed = false;
  const flushing = queue.flush().then(() => flushed = true);
  writes[1]?.done.open();
  writes[0]?.done.open();
  await flushing;
  assert.equal(flushed, true);
});

Deno.test("UpdateQueue: a failed write is logged and does not hold up the rest", async () => {
  const { logger, lines } = captureLogger();
  const seen: string[] = [];
  const queue = new UpdateQueue((update) => {
    seen.push(textOf(update));
    return textOf(update) === "bad" ? Promise.reject(new Error("closed")) : Promise.resolve();
  }, logger);
  queue.push(chunk("bad"));
  queue.push(chunk("good"));
  await queue.flush();
  assert.deepEqual(seen, ["bad", "good"]);
  assert.ok(
    lines.some((line) => line.startsWith("acp-harness debug: session update not delivered")),
  );
});
