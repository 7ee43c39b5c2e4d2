import assert from "node:assert/strict";
import { orderSessionMessages } from "../../src/server/session_order.ts";
import type { AnyMessage } from "../../src/transport/acp.ts";
import type { MessageSource } from "../../src/transport/acp.ts";

function prompt(id: number, sessionId: string): AnyMessage {
  return { jsonrpc: "2.0", id, method: "session/prompt", params: { sessionId, prompt: [] } };
}

/** Messages read one at a time, as an NDJSON transport's `messages` are. */
function source(messages: AnyMessage[]): MessageSource & { cancelled: unknown[] } {
  const cancelled: unknown[] = [];
  return {
    cancelled,
    read: () => Promise.resolve(messages.shift()),
    cancel: (reason) => {
      cancelled.push(reason);
      return Promise.resolve();
    },
  };
}

function idOf(message: AnyMessage | undefined): unknown {
  return (message as { id?: unknown } | undefined)?.id;
}

Deno.test("orderSessionMessages holds a session's next request until the one before is applied, from a message source", async () => {
  const cancels: string[] = [];
  const input = source([
    prompt(1, "a"),
    prompt(2, "a"),
    { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "a" } },
    prompt(3, "b"),
  ]);
  const order = orderSessionMessages(input, { cancel: (id) => cancels.push(id) });
  const reader = order.readable.getReader();
  assert.equal(idOf((await reader.read()).value), 1);
  // 2 and the cancel wait behind 1; session b's request goes on.
  assert.equal(idOf((await reader.read()).value), 3);
  assert.deepEqual(cancels, []);
  order.applied(1);
  assert.equal(idOf((await reader.read()).value), 2);
  order.applied(2);
  assert.deepEqual(cancels, ["a"]);
  assert.equal((await reader.read()).done, true);
  await reader.cancel("closed");
});

Deno.test("orderSessionMessages cancels its message source when cancelled", async () => {
  const input = source([prompt(1, "a")]);
  const order = orderSessionMessages(input, { cancel: () => {} });
  await order.readable.cancel("gone");
  assert.deepEqual(input.cancelled, ["gone"]);
});
