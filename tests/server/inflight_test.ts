import assert from "node:assert/strict";
import { Inflight } from "../../src/server/inflight.ts";

/** A promise and its resolver. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => resolve = done);
  return { promise, resolve };
}

Deno.test("Inflight.current() waits for the requests being handled, not those that start later", async () => {
  const inflight = new Inflight();
  const first = deferred();
  const later = deferred();
  const order: string[] = [];
  inflight.track(first.promise);
  const current = inflight.current().then(() => order.push("current"));
  const settled = inflight.settled().then(() => order.push("settled"));
  inflight.track(later.promise);
  assert.equal(inflight.size, 2);
  first.resolve();
  await current;
  assert.deepEqual(order, ["current"], "current() settled while a later request still runs");
  later.resolve();
  await settled;
  assert.deepEqual(order, ["current", "settled"]);
  assert.equal(inflight.size, 0);
});

Deno.test("Inflight.current() settles at once with nothing in flight, and after a failed request", async () => {
  const inflight = new Inflight();
  await inflight.current();
  const failing = deferred();
  const result = inflight.track(failing.promise.then(() => Promise.reject(new Error("boom"))));
  const current = inflight.current();
  failing.resolve();
  await assert.rejects(result, /boom/);
  await current;
  assert.equal(inflight.size, 0);
});
