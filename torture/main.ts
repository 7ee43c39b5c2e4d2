// deno-lint-ignore-file no-console
/**
 * The torture suite: `deno task torture` (full), `deno task torture --quick`, or
 * `deno run -A torture/main.ts [--quick] [--runtime deno|node|bun]... [--scenario name]...`.
 * Runs each scenario against real server processes on each runtime, prints the table of runs
 * and failures, and exits 1 when any failure was counted. `TORTURE_SIZE=quick` is the same as
 * `--quick`; `TORTURE_SIZE=test` runs the handful the regular tests run.
 *
 * @module
 */
import { existsSync } from "node:fs";
import process from "node:process";
import type { Size } from "./context.ts";
import { ROOT, RUNTIME_SPECS, type RuntimeName } from "./driver.ts";
import { failures, formatTable, type Row } from "./report.ts";
import { runScenario, SCENARIOS } from "./suite.ts";

const args = [...Deno.args];
const sizeVariable = Deno.env.get("TORTURE_SIZE");
let size: Size = sizeVariable === "quick" || sizeVariable === "test" ? sizeVariable : "full";
const runtimes: RuntimeName[] = [];
const names: string[] = [];
let seed = Number(Deno.env.get("TORTURE_SEED") ?? Date.now() % 1_000_000);
while (args.length > 0) {
  const arg = args.shift() as string;
  if (arg === "--quick") size = "quick";
  else if (arg === "--runtime") runtimes.push(args.shift() as RuntimeName);
  else if (arg === "--scenario") names.push(args.shift() as string);
  else if (arg === "--seed") seed = Number(args.shift());
  else {
    console.log(
      "usage: deno run -A torture/main.ts [--quick] [--runtime deno|node|bun]... [--scenario <name>]... [--seed n]\n" +
        `scenarios: ${SCENARIOS.map(({ name }) => name).join(", ")}`,
    );
    Deno.exit(arg === "--help" || arg === "-h" ? 0 : 2);
  }
}
if (!existsSync(`${ROOT}dist/cli.js`)) {
  console.error("dist/cli.js is missing: run `deno task build` first (deno task torture does)");
  Deno.exit(2);
}
const specs = RUNTIME_SPECS.filter(({ name }) => runtimes.length === 0 || runtimes.includes(name));
const scenarios = SCENARIOS.filter(({ name }) => names.length === 0 || names.includes(name));
const started = performance.now();
const rows: Row[] = [];
console.error(
  `[torture] ${size} run, seed ${seed}, ${scenarios.length} scenarios × ${specs.length} runtimes`,
);
for (const scenario of scenarios) {
  const run = async (runtime: typeof specs[number]): Promise<Row> => {
    const tally = await runScenario(scenario, runtime, size, seed);
    console.error(
      `[torture] ${scenario.name} / ${runtime.name}: ${tally.runs} runs, ${
        failures(tally)
      } failures, ${tally.seconds.toFixed(1)} s`,
    );
    return { scenario: scenario.name, runtime: runtime.name, tally };
  };
  // The runtimes of one scenario run side by side, unless it must run alone.
  if (scenario.alone) { for (const runtime of specs) rows.push(await run(runtime)); }
  else rows.push(...await Promise.all(specs.map(run)));
}
const seconds = (performance.now() - started) / 1000;
console.log(formatTable(rows));
const total = rows.reduce((sum, row) => sum + failures(row.tally), 0);
console.log(
  `\n${size} run, seed ${seed}: ${
    rows.reduce((sum, row) => sum + row.tally.runs, 0)
  } runs, ${total} failures, ${seconds.toFixed(0)} s`,
);
// The plain closing line CI reads: runs without a failure, and failures.
const runs = rows.reduce((sum, row) => sum + row.tally.runs, 0);
console.log(`torture: ${Math.max(0, runs - total)} passed, ${total} failed`);
process.exitCode = total === 0 ? 0 : 1;
