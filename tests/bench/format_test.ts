import assert from "node:assert/strict";
import { fixed, ratioOf, ratioText, table, Tally, thousands } from "../../bench/format.ts";

Deno.test("Tally.verdict() writes each result cell and counts met and missed targets", () => {
  const tally = new Tally();
  assert.equal(tally.verdict(true), "pass");
  assert.equal(tally.verdict(false), "**FAIL**");
  assert.equal(tally.verdict(undefined), "n/a");
  assert.equal(tally.verdict(true, true), "**FAIL** (see Errors)");
  assert.equal(tally.verdict(undefined, true), "**FAIL** (see Errors)");
  assert.deepEqual({ passed: tally.passed, failed: tally.failed }, { passed: 1, failed: 3 });
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
