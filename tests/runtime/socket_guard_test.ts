/**
 * The socket caps and the header deadline of {@link SocketGuard}, and the descriptor budget.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  descriptorLimit,
  descriptorReserve,
  effectiveSocketLimits,
  socketBudget,
  SocketGuard,
} from "../../src/runtime/socket_guard.ts";

Deno.test("SocketGuard caps one address's sockets still sending headers", () => {
  const guard = new SocketGuard({
    headerTimeoutMs: 60_000,
    maxSockets: 100,
    maxSocketsPerAddress: 2,
  });
  try {
    const first = guard.admit("10.0.0.1", () => {});
    const second = guard.admit("10.0.0.1", () => {});
    assert.ok(first && second);
    assert.equal(guard.admit("10.0.0.1", () => {}), undefined);
    assert.ok(guard.admit("10.0.0.2", () => {}), "another address has its own cap");
    first.headersDone();
    assert.ok(guard.admit("10.0.0.1", () => {}), "a socket past its headers no longer counts");
    second.release();
    assert.ok(guard.admit("10.0.0.1", () => {}));
    assert.equal(guard.refused, 1);
    assert.equal(guard.open, 4);
  } finally {
    guard.close();
  }
});

Deno.test("SocketGuard caps all sockets, and keeps half of them for sockets past their headers", () => {
  const guard = new SocketGuard({
    headerTimeoutMs: 60_000,
    maxSockets: 4,
    maxSocketsPerAddress: 10,
  });
  try {
    const a = guard.admit("a", () => {});
    const b = guard.admit("b", () => {});
    assert.ok(a && b);
    assert.equal(guard.admit("c", () => {}), undefined, "two of four still sending headers");
    a.headersDone();
    b.headersDone();
    const c = guard.admit("c", () => {});
    const d = guard.admit("d", () => {});
    assert.ok(c && d);
    assert.equal(guard.admit("e", () => {}), undefined, "four open");
    c.release();
    c.release();
    assert.equal(guard.open, 3, "release is idempotent");
    assert.ok(guard.admit("e", () => {}));
  } finally {
    guard.close();
  }
});

Deno.test("SocketGuard closes a socket whose headers are not complete in time", async () => {
  const guard = new SocketGuard({ headerTimeoutMs: 10, maxSockets: 10, maxSocketsPerAddress: 1 });
  const timedOut = Promise.withResolvers<void>();
  const ticket = guard.admit("a", () => timedOut.resolve());
  assert.ok(ticket);
  await timedOut.promise;
  assert.equal(guard.timedOut, 1);
  assert.ok(guard.admit("a", () => {}), "a timed-out socket no longer counts as sending headers");
  guard.close();
  ticket.release();
});

Deno.test("socketBudget() keeps a reserve of descriptors free of sockets", () => {
  assert.equal(descriptorReserve(256), 64);
  assert.equal(descriptorReserve(20_000), 5000);
  assert.equal(socketBudget(4096, 256, 1), 192);
  assert.equal(socketBudget(4096, 256, 3), 64);
  assert.equal(socketBudget(4096, 20_000, 1), 4096);
  assert.equal(socketBudget(4096, Infinity, 1), 4096);
  assert.equal(socketBudget(4096, 10, 1), 1);
  const limit = descriptorLimit();
  assert.ok(limit > 0);
  const limits = effectiveSocketLimits({ maxSockets: 10, headerTimeoutMs: undefined }, 1);
  assert.deepEqual(limits, {
    headerTimeoutMs: 10_000,
    maxSockets: socketBudget(10, limit, 1),
    maxSocketsPerAddress: 256,
  });
});
