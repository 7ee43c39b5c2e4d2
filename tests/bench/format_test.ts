import assert from "node:assert/strict";
import { fixed, ratioOf, ratioText, table, Tally, thousands } from "../../bench/format.ts";
import { ratioSpread } from "../../bench/stats.ts";

Deno.test("Tally.verdict() writes each result cell and counts met and missed targets", () => {
  const tally = new Tally();
  assert.equal(tally.verdict(true), "pass");
  assert.equal(tally.verdict(false), "**FAIL**");
  assert.equal(tally.verdict(undefined), "n/a");
  assert.equal(tally.verdict(true, true), "**FAIL** (see Errors)");
  assert.equal(tally.verdict(undefined, true), "**FAIL** (see Errors)");
  assert.deepEqual({ passed: tally.passed, failed: tally.failed }, { passed: 1, failed: 3 });
});

Deno.test("Tally.spreadVerdict() judges a target on the spread: pass, FAIL, or met within noise", () => {
  const tally = new Tally();
  assert.equal(tally.spreadVerdict({ low: 0.9, high: 1.15 }, 1.15), "pass");
  assert.equal(tally.spreadVerdict({ low: 1.16, high: 1.4 }, 1.15), "**FAIL**");
  assert.equal(tally.spreadVerdict({ low: 1.1, high: 1.2 }, 1.15), "met within noise");
  assert.equal(tally.spreadVerdict(undefined, 1.15), "n/a");
  assert.equal(tally.spreadVerdict({ low: Number.NaN, high: Number.NaN }, 1.15), "n/a");
  assert.equal(tally.spreadVerdict({ low: 0.5, high: 0.6 }, 1.15, true), "**FAIL** (see Errors)");
  assert.deepEqual(
    { passed: tally.passed, failed: tally.failed, withinNoise: tally.withinNoise },
    { passed: 2, failed: 2, withinNoise: 1 },
  );
});

Deno.test("ratioSpread() gives the median, the nearest-rank quartiles and the extremes", () => {
  assert.deepEqual(ratioSpread([1.4, 1.0, 1.2, 1.1, 1.3]), {
    median: 1.2,
    low: 1.1,
    high: 1.3,
    min: 1.0,
    max: 1.4,
  });
  assert.ok(Number.isNaN(ratioSpread([]).low));
});

Deno.test("fixed(), thousands() and ratioText() write n/a for a missing figure", () => {
  assert.equal(fixed(1.25, 1), "1.3");
  assert.equal(fixed(Number.NaN, 1), "n/a");
  assert.equal(thousands(12_345.6), "12,346");
  assert.equal(thousands(undefined), "n/a");
  assert.equal(ratioText(ratioOf(3, 2)), "1.50×");
  assert.equal(ratioText(ratioOf(3, 0)), "n/a");
});

Deno.test("table() writes a Markdown table", () => {
  assert.equal(table(["a", "b"], [["1", "2"]]), "| a | b |\n| --- | --- |\n| 1 | 2 |");
});
