import assert from "node:assert/strict";
import { abortableDelay } from "../../src/util/abortable_delay.ts";

Deno.test("abortableDelay() resolves true once the time has passed", async () => {
  const started = performance.now();
  assert.equal(await abortableDelay(20, new AbortController().signal), true);
  assert.ok(performance.now() - started >= 15);
});

Deno.test("abortableDelay() resolves true at once for zero or negative ms", async () => {
  const signal = new AbortController().signal;
  assert.equal(await abortableDelay(0, signal), true);
  assert.equal(await abortableDelay(-10, signal), true);
});

Deno.test("abortableDelay() resolves false at once when already aborted", async () => {
  const controller = new AbortController();
  controller.abort();
  assert.equal(await abortableDelay(60_000, controller.signal), false);
  assert.equal(await abortableDelay(0, controller.signal), false);
});

Deno.test("abortableDelay() resolves false promptly when aborted while waiting", async () => {
  const controller = new AbortController();
  const started = performance.now();
  const waiting = abortableDelay(60_000, controller.signal);
  // The wait (its timer and abort listener) is set up by the time abortableDelay returns.
  controller.abort(new Error("any reason"));
  assert.equal(await waiting, false);
  assert.ok(performance.now() - started < 5_000);
  // The op sanitizer fails this test if the 60 s timer were still pending.
});

Deno.test("abortableDelay() works with AbortSignal.timeout()", async () => {
  assert.equal(await abortableDelay(60_000, AbortSignal.timeout(5)), false);
});

Deno.test("abortableDelay() removes its abort listener after the time passed", async () => {
  const controller = new AbortController();
  const added: unknown[] = [];
  const removed: unknown[] = [];
  const signal = controller.signal;
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = ((type: string, listener: EventListener, options?: unknown) => {
    added.push(listener);
    add(type, listener, options as AddEventListenerOptions);
  }) as typeof signal.addEventListener;
  signal.removeEventListener = ((type: string, listener: EventListener) => {
    removed.push(listener);
    remove(type, listener);
  }) as typeof signal.removeEventListener;
  assert.equal(await abortableDelay(1, signal), true);
  assert.equal(added.length, 1);
  assert.deepEqual(removed, added);
  // A later abort no longer reaches the finished delay.
  controller.abort();
});
