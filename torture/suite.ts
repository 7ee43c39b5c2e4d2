/**
 * The scenarios of the torture suite and how one runs on one runtime.
 *
 * @module
 */
import { type Scenario, ScenarioContext, type Size, type Tally } from "./context.ts";
import type { RuntimeSpec } from "./driver.ts";
import { budgets } from "./scenarios/budgets.ts";
import { cassettes } from "./scenarios/cassettes.ts";
import { cancelRaces } from "./scenarios/cancel.ts";
import { compaction } from "./scenarios/compaction.ts";
import { confinement } from "./scenarios/confinement.ts";
import { env } from "./scenarios/env.ts";
import { frames } from "./scenarios/frames.ts";
import { http } from "./scenarios/http.ts";
import { kill } from "./scenarios/kill.ts";
import { mcp } from "./scenarios/mcp.ts";
import { ordering } from "./scenarios/ordering.ts";
import { orphans } from "./scenarios/orphans.ts";
import { pathological } from "./scenarios/pathological.ts";
import { permission } from "./scenarios/permission.ts";
import { postgres } from "./scenarios/postgres.ts";
import { queue } from "./scenarios/queue.ts";
import { rules } from "./scenarios/rules.ts";
import { run } from "./scenarios/run.ts";
import { sandbox } from "./scenarios/sandbox.ts";
import { sharedData } from "./scenarios/shared_data.ts";
import { worktrees } from "./scenarios/worktrees.ts";

/** Every scenario, in the order the suite runs them. */
export const SCENARIOS: readonly Scenario[] = [
  frames,
  ordering,
  queue,
  cancelRaces,
  compaction,
  permission,
  rules,
  budgets,
  run,
  cassettes,
  confinement,
  worktrees,
  env,
  sandbox,
  pathological,
  kill,
  orphans,
  sharedData,
  mcp,
  http,
  postgres,
];

/** Runs one scenario on one runtime; an exception counts as an `other` failure. */
export async function runScenario(
  scenario: Scenario,
  runtime: RuntimeSpec,
  size: Size,
  seed: number,
): Promise<Tally> {
  const started = performance.now();
  const context = await ScenarioContext.create(runtime, size, seed);
  try {
    await scenario.run(context);
  } catch (error) {
    context.fail(
      "other",
      "exception",
      error instanceof Error ? error.stack ?? error.message : String(error),
    );
  }
  const tally = await context.finish();
  tally.seconds = (performance.now() - started) / 1000;
  return tally;
}
