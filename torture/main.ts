/**
 * The torture suite: `deno task torture` (full), `deno task torture --quick`, or
 * `deno run -A torture/main.ts [--quick] [--runtime deno|node|bun]... [--scenario name]...`.
 * Runs each scenario against real server processes on each runtime, prints the table of runs
 * and failures, and exits 1 when any failure was counted. `TORTURE_SIZE=quick` is the same as
 * `--quick`; `TORTURE_SIZE=test` runs the handful the regular tests run. Every temporary
 * directory of the run lives under one root, removed at the end (also on SIGINT and SIGTERM).
 *
 * @module
 */
import { existsSync, rmSync } from "node:fs";
import process from "node:process";
import { print, printError } from "../tests/_helpers/print.ts";
import { tempRun } from "../tests/_helpers/temp_dir.ts";
import type { Size } from "./context.ts";
import { ROOT, RUNTIME_SPECS, type RuntimeName, type RuntimeSpec } from "./driver.ts";
import { failures, formatTable, type Row } from "./report.ts";
import { runScenario, SCENARIOS } from "./suite.ts";

/** What the command line asked for. */
interface Options {
  readonly size: Size;
  readonly runtimes: readonly RuntimeName[];
  readonly names: readonly string[];
  readonly seed: number;
}

/** Reads the options; prints the usage and exits on anything else (0 for `--help`). */
function parseOptions(args: string[]): Options {
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
      print(
        "usage: deno run -A torture/main.ts [--quick] [--runtime deno|node|bun]... [--scenario <name>]... [--seed n]\n" +
          `scenarios: ${SCENARIOS.map(({ name }) => name).join(", ")}`,
      );
      Deno.exit(arg === "--help" || arg === "-h" ? 0 : 2);
    }
  }
  return { size, runtimes, names, seed };
}

/** Runs the chosen scenarios on the chosen runtimes; returns a row per pair. */
async function runAll(options: Options): Promise<Row[]> {
  const { size, runtimes, names, seed } = options;
  const specs = RUNTIME_SPECS.filter(({ name }) =>
    runtimes.length === 0 || runtimes.includes(name)
  );
  const scenarios = SCENARIOS.filter(({ name }) => names.length === 0 || names.includes(name));
  const rows: Row[] = [];
  printError(
    `[torture] ${size} run, seed ${seed}, ${scenarios.length} scenarios × ${specs.length} runtimes`,
  );
  for (const scenario of scenarios) {
    const run = async (runtime: RuntimeSpec): Promise<Row> => {
      const tally = await runScenario(scenario, runtime, size, seed);
      printError(
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
  return rows;
}

/** Prints the table and the closing lines; returns the number of failures. */
function report(rows: readonly Row[], options: Options, seconds: number): number {
  print(formatTable(rows));
  const total = rows.reduce((sum, row) => sum + failures(row.tally), 0);
  const runs = rows.reduce((sum, row) => sum + row.tally.runs, 0);
  print(
    `\n${options.size} run, seed ${options.seed}: ${runs} runs, ${total} failures, ${
      seconds.toFixed(0)
    } s`,
  );
  // The plain closing line CI reads: runs without a failure, and failures.
  print(`torture: ${Math.max(0, runs - total)} passed, ${total} failed`);
  return total;
}

if (import.meta.main) {
  const options = parseOptions([...Deno.args]);
  if (!existsSync(`${ROOT}dist/cli.js`)) {
    printError("dist/cli.js is missing: run `deno task build` first (deno task torture does)");
    Deno.exit(2);
  }
  await using run = await tempRun("acp-torture-run-");
  // An interrupted run removes its root too; its servers get the same signal from the terminal.
  const listeners = (["SIGINT", "SIGTERM"] as const).map((signal) => {
    const listener = (): void => {
      rmSync(run.path, { recursive: true, force: true });
      Deno.exit(signal === "SIGINT" ? 130 : 143);
    };
    Deno.addSignalListener(signal, listener);
    return [signal, listener] as const;
  });
  try {
    const started = performance.now();
    const rows = await runAll(options);
    const total = report(rows, options, (performance.now() - started) / 1000);
    process.exitCode = total === 0 ? 0 : 1;
  } finally {
    for (const [signal, listener] of listeners) Deno.removeSignalListener(signal, listener);
  }
}
