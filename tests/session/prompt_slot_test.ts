/**
 * The prompt slot: taken synchronously, one turn at a time, cancel and close.
 *
 * @module
 */
import assert from "node:assert/strict";
import { PromptSlot } from "../../src/session/prompt_slot.ts";
import { SessionLifecycle, SessionStateError } from "../../src/session/session_state.ts";
import { gate } from "./_fakes.ts";

Deno.test("PromptSlot.take() takes the slot synchronously and frees it once the turn settles", async () => {
  const slot = new PromptSlot("s1");
  const release = gate();
  const turn = slot.take(new AbortController().signal, async () => {
    await release.wait;
    return "done";
  });
  assert.equal(slot.busy, true);
  assert.throws(
    () => slot.take(new AbortController().signal, () => Promise.resolve("second")),
    (error: unknown) =>
      error instanceof SessionStateError &&
      error.message === "a prompt is already in flight for session s1",
  );
  assert.throws(() => slot.assertAdmits(), SessionStateError);
  release.open();
  assert.equal(await turn, "done");
  assert.equal(slot.busy, false);
  assert.equal(
    await slot.take(new AbortController().signal, () => Promise.resolve("next")),
    "next",
  );
});

Deno.test("PromptSlot.take() frees the slot after a turn that settles at once or fails", async () => {
  const slot = new PromptSlot("s1");
  const request = new AbortController();
  request.abort();
  const seen = await slot.take(
    request.signal,
    (controller) => Promise.resolve(controller.signal.aborted),
  );
  assert.equal(seen, true, "an aborted request aborts the turn before it starts");
  assert.equal(slot.busy, false);
  await assert.rejects(
    slot.take(new AbortController().signal, () => Promise.reject(new Error("boom"))),
  );
  assert.equal(slot.busy, false);
});

Deno.test("PromptSlot: the request's signal and cancel() abort the turn's controller", async () => {
  const slot = new PromptSlot("s1");
  for (const how of ["request", "cancel"] as const) {
    const request = new AbortController();
    const turn = slot.take(request.signal, (controller) =>
      new Promise<string>((resolve) => {
        controller.signal.addEventListener("abort", () => resolve("cancelled"), { once: true });
      }));
    if (how === "request") request.abort();
    else slot.cancel();
    assert.equal(await turn, "cancelled");
  }
  slot.cancel(); // harmless when idle
});

Deno.test("PromptSlot: an unaborted controller serves the next turn, an aborted one is replaced", async () => {
  const slot = new PromptSlot("s1");
  const signal = new AbortController().signal;
  const first = await slot.take(signal, (controller) => Promise.resolve(controller));
  const second = await slot.take(signal, (controller) => Promise.resolve(controller));
  assert.equal(first, second);
  second.abort();
  const third = await slot.take(signal, (controller) => Promise.resolve(controller));
  assert.notEqual(third, second);
  assert.equal(third.signal.aborted, false);
});

Deno.test("PromptSlot.close() cancels the turn, waits for it and refuses new ones", async () => {
  const slot = new PromptSlot("s1");
  const finished = gate();
  let ended = false;
  const turn = slot.take(new AbortController().signal, async (controller) => {
    await new Promise((resolve) => controller.signal.addEventListener("abort", resolve));
    await finished.wait;
    ended = true;
    throw new Error("failed on the abort");
  });
  turn.catch(() => {});
  const closing = slot.close();
  assert.throws(() => slot.assertOpen(), /^SessionStateError: session s1 is closing$/);
  finished.open();
  await closing;
  assert.equal(ended, true);
  assert.equal(slot.busy, false);
  assert.throws(() => slot.take(new AbortController().signal, () => Promise.resolve(1)), /closing/);
});

Deno.test("PromptSlot queues turns while one runs and runs them in arrival order", async () => {
  const lifecycle = new SessionLifecycle("s1");
  const slot = new PromptSlot("s1", lifecycle, { queue: 2 });
  const signal = new AbortController().signal;
  const order: string[] = [];
  const release = gate();
  const first = slot.take(signal, async () => {
    order.push("first started");
    await release.wait;
    order.push("first ended");
    return "first";
  }, () => "dropped");
  const second = slot.take(signal, () => {
    order.push("second started");
    return Promise.resolve("second");
  }, () => "dropped");
  const third = slot.take(signal, () => {
    order.push("third started");
    return Promise.resolve("third");
  }, () => "dropped");
  assert.equal(slot.queued, 2);
  assert.throws(
    () => slot.take(signal, () => Promise.resolve("fourth"), () => "dropped"),
    (error: unknown) =>
      error instanceof SessionStateError &&
      error.message ===
        "session s1 already has 2 prompts queued behind the running one (the limit: --prompt-queue 2)",
  );
  assert.throws(
    () => slot.take(signal, () => Promise.resolve("unqueueable")),
    /a prompt is already in flight for session s1/,
    "a turn without a dropped outcome is not queued",
  );
  release.open();
  assert.deepEqual([await first, await second, await third], ["first", "second", "third"]);
  assert.deepEqual(order, [
    "first started",
    "first ended",
    "second started",
    "third started",
  ]);
  assert.equal(lifecycle.state, "open");
  assert.equal(slot.busy, false);
});

Deno.test("PromptSlot.cancel() cancels the running turn and drops every queued one", async () => {
  const lifecycle = new SessionLifecycle("s1");
  const slot = new PromptSlot("s1", lifecycle, { queue: 8 });
  const signal = new AbortController().signal;
  let ran = 0;
  const running = slot.take(
    signal,
    (controller) =>
      new Promise<string>((resolve) =>
        controller.signal.addEventListener("abort", () => resolve("cancelled"), { once: true })
      ),
    () => "dropped",
  );
  const queued = [1, 2, 3].map(() =>
    slot.take(signal, () => Promise.resolve(String(++ran)), () => "dropped")
  );
  slot.cancel();
  assert.equal(slot.queued, 0);
  assert.deepEqual(await Promise.all([running, ...queued]), [
    "cancelled",
    "dropped",
    "dropped",
    "dropped",
  ]);
  assert.equal(ran, 0, "no dropped turn ran");
  assert.equal(lifecycle.state, "open");
  // The slot serves the next prompt.
  assert.equal(await slot.take(signal, () => Promise.resolve("next"), () => "dropped"), "next");
});

Deno.test("PromptSlot: a queued turn's own cancel drops just it", async () => {
  const slot = new PromptSlot("s1", undefined, { queue: 8 });
  const release = gate();
  const order: string[] = [];
  const run = (name: string) => () => {
    order.push(name);
    return Promise.resolve(name);
  };
  const first = slot.take(new AbortController().signal, async () => {
    await release.wait;
    return "first";
  }, () => "dropped");
  const middle = new AbortController();
  const second = slot.take(middle.signal, run("second"), () => "dropped");
  const third = slot.take(new AbortController().signal, run("third"), () => "dropped");
  middle.abort();
  assert.equal(slot.queued, 1);
  assert.equal(await second, "dropped");
  const aborted = new AbortController();
  aborted.abort();
  assert.equal(
    await slot.take(aborted.signal, run("never"), () => "dropped"),
    "dropped",
    "a request cancelled before it is queued is dropped at once",
  );
  release.open();
  assert.deepEqual([await first, await third], ["first", "third"]);
  assert.deepEqual(order, ["third"]);
});

Deno.test("PromptSlot.close() drops the queued turns and leaves no timer behind", async () => {
  const lifecycle = new SessionLifecycle("s1");
  const slot = new PromptSlot("s1", lifecycle, { queue: 8 });
  const signal = new AbortController().signal;
  // The first turn settles at once: its successor's start is a macrotask away when close comes.
  const first = slot.take(signal, () => Promise.resolve("first"), () => "dropped");
  const second = slot.take(signal, () => Promise.resolve("second"), () => "dropped");
  assert.equal(await first, "first");
  assert.equal(slot.busy, true, "the next turn is about to start");
  await slot.close();
  assert.equal(await second, "dropped");
  assert.equal(lifecycle.state, "closing");
  assert.throws(() => slot.take(signal, () => Promise.resolve("late"), () => "dropped"), /closing/);
});

Deno.test("PromptSlot: a cancel between a turn's end and the next one's start leaves it open", async () => {
  const lifecycle = new SessionLifecycle("s1");
  const slot = new PromptSlot("s1", lifecycle, { queue: 8 });
  const signal = new AbortController().signal;
  const first = slot.take(signal, () => Promise.resolve("first"), () => "dropped");
  const second = slot.take(signal, () => Promise.resolve("second"), () => "dropped");
  await first;
  assert.equal(lifecycle.state, "prompting");
  slot.cancel();
  assert.equal(await second, "dropped");
  assert.equal(lifecycle.state, "open");
  assert.equal(slot.busy, false);
});

Deno.test("PromptSlot: a queued turn dropped between two turns leaves the slot taken until the gap ends", async () => {
  // A regression: the successor's start timer was left set while `busy` said false, so a prompt
  // that came then started at once and the timer started another beside it.
  const lifecycle = new SessionLifecycle("s1");
  const slot = new PromptSlot("s1", lifecycle, { queue: 8 });
  let running = 0;
  let most = 0;
  const turn = (name: string) => async () => {
    running++;
    most = Math.max(most, running);
    await Promise.resolve();
    running--;
    return name;
  };
  const signal = new AbortController().signal;
  const first = slot.take(signal, turn("a"), () => "dropped");
  const queued = new AbortController();
  const second = slot.take(queued.signal, turn("b"), () => "dropped");
  assert.equal(await first, "a");
  // The gap: b's start is a macrotask away; b is cancelled now.
  queued.abort();
  assert.equal(await second, "dropped");
  assert.equal(slot.busy, true, "the slot stays taken until the gap ends");
  const third = slot.take(signal, turn("c"), () => "dropped");
  const fourth = slot.take(signal, turn("d"), () => "dropped");
  assert.equal(slot.queued, 2, "both wait for the gap's end: neither started beside the timer");
  assert.deepEqual([await third, await fourth], ["c", "d"]);
  assert.equal(most, 1, "never two turns at once");
  assert.equal(lifecycle.state, "open");
  assert.equal(slot.busy, false);
});
