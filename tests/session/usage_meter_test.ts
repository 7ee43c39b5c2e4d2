/**
 * Usage and pricing: the session's cost, its record and its `usage_update`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { UsageMeter } from "../../src/session/usage_meter.ts";
import { modelInfo } from "./_fakes.ts";

const priced = modelInfo({
  contextWindow: 200_000,
  pricing: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
});

Deno.test("UsageMeter.add() prices cached input apart and accumulates the cost", () => {
  const meter = new UsageMeter();
  const first = meter.add({ input: 1_000_000, output: 100_000, cacheRead: 400_000 }, priced);
  // 600k uncached × 3 + 400k cached × 0.3 + 100k × 15, per million.
  assert.equal(meter.cost, 1.8 + 0.12 + 1.5);
  assert.deepEqual(first.event, {
    type: "usage",
    usage: { input: 1_000_000, output: 100_000, cacheRead: 400_000 },
    used: 1_100_000,
    size: 200_000,
    cost: 3.42,
  });
  assert.deepEqual(first.update, {
    sessionUpdate: "usage_update",
    used: 1_100_000,
    size: 200_000,
    cost: { amount: 3.42, currency: "USD" },
  });
  const second = meter.add({ input: 10, output: 0, cacheWrite: 10 }, priced);
  assert.equal(
    second.update?.sessionUpdate === "usage_update" && second.update.cost?.amount,
    3.420038,
  );
});

Deno.test("UsageMeter.add() starts from a restored cost and rounds to a millionth", () => {
  const meter = new UsageMeter(1);
  const report = meter.add({ input: 1, output: 1 }, priced);
  assert.equal(meter.cost, 1 + 18 / 1_000_000);
  assert.equal((report.event as { cost?: number }).cost, 1.000018);
  const tiny = new UsageMeter().add(
    { input: 1, output: 0 },
    modelInfo({ pricing: { input: 0.1, output: 1 } }),
  );
  assert.equal((tiny.event as { cost?: number }).cost, 0);
});

Deno.test("UsageMeter.add() without prices or context window: no cost, no update", () => {
  const meter = new UsageMeter();
  const report = meter.add({ input: 5, output: 7 }, modelInfo());
  assert.deepEqual(report, { event: { type: "usage", usage: { input: 5, output: 7 }, used: 12 } });
  assert.equal(meter.cost, 0);
  const sized = meter.add({ input: 5, output: 7 }, modelInfo({ contextWindow: 100 }));
  assert.deepEqual(sized.update, { sessionUpdate: "usage_update", used: 12, size: 100 });
});

Deno.test("UsageMeter.turnUsage() sums the turn's requests, optional counts only when reported", () => {
  const meter = new UsageMeter();
  assert.equal(meter.turnUsage(), undefined);
  meter.beginTurn();
  meter.add({ input: 100, output: 20 }, priced);
  assert.deepEqual(meter.turnUsage(), { totalTokens: 120, inputTokens: 100, outputTokens: 20 });
  meter.add({ input: 300, output: 50, cacheRead: 80, cacheWrite: 10, reasoning: 30 }, priced);
  assert.deepEqual(meter.turnUsage(), {
    totalTokens: 470,
    inputTokens: 400,
    outputTokens: 70,
    thoughtTokens: 30,
    cachedReadTokens: 80,
    cachedWriteTokens: 10,
  });
  meter.beginTurn();
  // A context-only report (all zeros, as after /clear) is no request's usage.
  meter.add({ input: 0, output: 0 }, priced, 42);
  assert.equal(meter.turnUsage(), undefined);
  meter.add({ input: 5, output: 1 }, priced);
  assert.deepEqual(meter.turnUsage(), { totalTokens: 6, inputTokens: 5, outputTokens: 1 });
});

Deno.test("UsageMeter counts the session's tokens, input plus output, from a restored count", () => {
  const meter = new UsageMeter(0, 100);
  meter.add({ input: 600, output: 40, cacheRead: 500 }, priced);
  meter.add({ input: 10, output: 0 }, modelInfo({}));
  assert.equal(meter.tokens, 750);
});
