import assert from "node:assert/strict";
import { RequestBound } from "../../src/protocol/request_bound.ts";
import type { AnyMessage } from "../../src/transport/acp.ts";
import type { MessageSource } from "../../src/transport/acp.ts";
import { settle } from "../_helpers/wait.ts";

/** A source of the given messages, then endless silence (never `undefined`). */
function source(messages: unknown[]): MessageSource & { cancelled: boolean } {
  const result = {
    cancelled: false,
    read: (): Promise<AnyMessage | undefined> =>
      messages.length > 0 ? Promise.resolve(messages.shift() as AnyMessage) : new Promise(() => {}),
    cancel: (): Promise<void> => {
      result.cancelled = true;
      return Promise.resolve();
    },
  };
  return result;
}

const request = (id: unknown, method = "session/list"): unknown => ({ jsonrpc: "2.0", id, method });

/** Whether a read resolves within one event-loop turn. */
async function readsNow(input: MessageSource): Promise<boolean> {
  let done = false;
  void input.read().then(() => done = true);
  await settle();
  return done;
}

Deno.test("RequestBound reads while fewer than max requests wait for their answers", async () => {
  const bound = new RequestBound({ max: 2 });
  const input = bound.guard(source([request(1), request("a"), request(3)]));
  await input.read();
  await input.read();
  assert.equal(bound.size, 2);
  let third = false;
  const reading = input.read().then(() => third = true);
  await settle();
  assert.equal(third, false);
  // An answer for an id that is not counted frees nothing.
  bound.answered(7);
  await settle();
  assert.equal(third, false);
  bound.answered("a");
  await reading;
  assert.equal(bound.size, 2);
});

Deno.test("RequestBound does not count notifications and responses", async () => {
  const bound = new RequestBound({ max: 1 });
  const input = bound.guard(source([
    { jsonrpc: "2.0", method: "session/cancel", params: {} },
    { jsonrpc: "2.0", id: 0, result: {} },
    { jsonrpc: "2.0", id: 1 },
    request(2),
  ]));
  for (let read = 0; read < 4; read++) await input.read();
  assert.equal(bound.size, 1);
});

Deno.test("RequestBound stops counting a prompt once its turn starts", async () => {
  const bound = new RequestBound({ max: 1 });
  const input = bound.guard(source([request(1, "session/prompt"), request(2), request(3)]));
  await input.read();
  assert.equal(await readsNow(input), false);
  bound.started(1);
  // The read waiting since reads request 2.
  await settle();
  assert.equal(bound.size, 1);
  // The prompt's answer, later, does not free request 2's place.
  bound.answered(1);
  assert.equal(await readsNow(input), false);
  bound.answered(2);
  await settle();
  assert.equal(bound.size, 1);
});

Deno.test("RequestBound counts what gets an answer with a null id until such an answer", async () => {
  const bound = new RequestBound({ max: 2 });
  const input = bound.guard(source([
    request(null),
    { jsonrpc: "2.0", id: { x: 1 }, method: "session/list" },
    { jsonrpc: "1.0", method: "x" },
  ]));
  await input.read();
  await input.read();
  assert.equal(await readsNow(input), false);
  bound.answered(null);
  await settle();
  assert.equal(bound.size, 2);
});

Deno.test("RequestBound ends a read waiting at the bound when the input is cancelled", async () => {
  const bound = new RequestBound({ max: 1 });
  const from = source([request(1), request(2)]);
  const input = bound.guard(from);
  await input.read();
  const waiting = input.read();
  await input.cancel();
  assert.equal(await waiting, undefined);
  assert.equal(from.cancelled, true);
});

Deno.test("RequestBound refuses a bound that is not a positive integer", () => {
  assert.throws(() => new RequestBound({ max: 0 }), RangeError);
  assert.throws(() => new RequestBound({ max: 1.5 }), RangeError);
});
