/**
 * Registers the short version of a torture scenario (`torture/`) as one test per runtime: it
 * drives real server processes and fails on any counted failure, listing them.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Scenario } from "../../torture/context.ts";
import { RUNTIME_SPECS } from "../../torture/driver.ts";
import { failures, formatTable } from "../../torture/report.ts";
import { runScenario } from "../../torture/suite.ts";
import "../_helpers/runtimes.ts";

/** One `Deno.test` per runtime running `scenario` at the `test` size. */
export function tortureTest(scenario: Scenario): void {
  for (const runtime of RUNTIME_SPECS) {
    Deno.test(`torture ${scenario.name} (${runtime.name}): ${scenario.description}`, async () => {
      const tally = await runScenario(scenario, runtime, "test", 7);
      assert.ok(tally.runs > 0, "the scenario ran nothing");
      assert.equal(
        failures(tally),
        0,
        formatTable([{ scenario: scenario.name, runtime: runtime.name, tally }]),
      );
    });
  }
}
