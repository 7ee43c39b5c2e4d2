/**
 * The prompt slot: taken synchronously, one turn at a time, cancel and close.
 *
 * @module
 */
import assert from "node:assert/strict";
import { PromptSlot } from "../../src/session/prompt_slot.ts";
import { SessionStateError } from "../../src/session/session_state.ts";
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
  assert.throws(() => slot.assertFree(), SessionStateError);
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
