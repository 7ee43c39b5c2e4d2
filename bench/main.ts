/**
 * Benchmarks acp-harness against a bare SDK echo agent (`bench/bare_agent.ts`) on Deno, Node.js
 * and Bun, side by side in one run, from a small NDJSON JSON-RPC client in this Deno process:
 *
 * - start-up: spawn → `initialize` response (median), the first `session/new` on a fresh data
 *   directory, and stdin EOF → process exit (median); then every way of running ours side by
 *   side with the compiled binary (`scripts/compile.ts`, built into `.bench-tmp/bin/` here) and
 *   the bare agent run and compiled the same ways;
 * - `session/new` many times in a row on one server (p50, p99), then stdin EOF → exit with all
 *   those sessions open;
 * - prompt round trip: sequential `session/prompt` calls on one session (p50, p99, prompts/s),
 *   ours durable and with `--store memory:` beside the bare agent;
 * - update throughput: one prompt answered by many `agent_message_chunk` notifications;
 * - peak RSS of the child (VmHWM) just before stdin is closed;
 * - LLM turn: one `session/prompt` whose model (the fake OpenAI-compatible server of
 *   `tests/_helpers/fake_llm_server.ts`, on 127.0.0.1) streams 5,000 text deltas and 20
 *   `read_file` calls, then a short answer; the baseline is a minimal fetch + SSE client in this
 *   process that reads the same two responses.
 * - LLM turn breakdown (`bench/llm_breakdown.ts`): time from the fake server writing a response's
 *   first text delta to the client receiving its `agent_message_chunk` (`--stream`), and the
 *   agent's CPU (`/proc/<pid>/task/<tid>/schedstat`) per streamed delta and per tool call.
 * - durable sessions (`bench/store_bench.ts`): `session/list` first page at 100 and at 10,000
 *   stored sessions, `session/load` of a 10,000-event session (to its response and to its first
 *   replayed update) against reading and parsing its log in this process, and appends per
 *   second of the session store in this process.
 * - MCP servers (`bench/mcp.ts`): `session/new` with three stdio MCP servers against a bare
 *   `@modelcontextprotocol/client` starting them, one MCP tool call inside a turn against the bare
 *   client's `tools/call`, and whether the MCP client is in the start-up module graph.
 * - delegation (`bench/delegation.ts`): a no-op turn delegated to a child of ours on the same
 *   runtime against the same turn run directly, and the child's start-up and exit on their own.
 * - HTTP transport (`bench/http.ts`): ours as `serve --http`: update throughput over SSE and
 *   WebSocket against stdio, many connections streaming turns from the fake model at once
 *   (latency of each delta, peak RSS, wall time), idle memory per connection, and whether the
 *   HTTP code is in the stdio start-up graph.
 *
 * The files: this one reads the command line (`bench/settings.ts`), prepares the run
 * (`bench/prepare.ts`), runs the phases (`bench/phases.ts`, one file per phase) and writes the
 * report that `bench/report.ts` renders from one `Results` object (`bench/results.ts`). Every
 * agent is driven by the bench's one JSON-RPC client (`bench/rpc_client.ts`) over stdio
 * (`bench/agent_process.ts`) or HTTP (`bench/http_clients.ts`).
 *
 * Ours and the bare agent are interleaved so they share the machine's noise. Results go to
 * `bench/RESULTS.md` and stdout. Run `deno task bench` (builds `dist/` first), or
 * `deno run -A bench/main.ts [--quick] [--runtime deno|node|bun]... [--only <phase>,...]`
 * (`--only`: some phases, for working on a section; the report is partial).
 *
 * @module
 */
import os from "node:os";
import { print, printError } from "../tests/_helpers/print.ts";
import { killAllChildren, runCommand } from "./agent_process.ts";
import { measureBuildStartupPhase } from "./builds.ts";
import { httpStartupGraph } from "./http.ts";
import { mcpStartupGraph } from "./mcp.ts";
import { BUN, DENO, FRESH_HOMES, NODE, RESULTS_FILE, ROOT, STORE_DIR, TMP } from "./paths.ts";
import { measureAllAppends, profileStartups, runRuntime } from "./phases.ts";
import { prepare, versionOf } from "./prepare.ts";
import { renderReport } from "./report.ts";
import type { AppendsOutcome, BenchRun, Machine, Results, RuntimeResult } from "./results.ts";
import { parseSettings, selected, type Settings } from "./settings.ts";
import { createStoreFixture, type StoreFixture } from "./store_bench.ts";
import { measureClientCeiling } from "./throughput.ts";
import { measureScale, scaleSelected, spliceScaleSection } from "./scale.ts";

/**
 * Keeps every request to the fake LLM server (this process's and the agents', which inherit the
 * environment) off any HTTP proxy the shell names: Deno's and Bun's fetch honour `HTTP_PROXY`,
 * and `NO_PROXY` exempts loopback. Set before this process first uses fetch.
 */
function bypassProxies(): void {
  for (const name of ["NO_PROXY", "no_proxy"]) {
    const current = Deno.env.get(name);
    Deno.env.set(name, current ? `${current},127.0.0.1,localhost` : "127.0.0.1,localhost");
  }
}

/** Kills the children and removes the generated data when the run is interrupted. */
function onSignal(): void {
  killAllChildren();
  for (const dir of [STORE_DIR, FRESH_HOMES]) {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch {
      // not there
    }
  }
  Deno.exit(130);
}

/** What the report says of the machine, but its load at the end and the date. */
async function machineBefore(): Promise<Omit<Machine, "date" | "load">> {
  const [node, deno, bun] = await Promise.all([versionOf(NODE), versionOf(DENO), versionOf(BUN)]);
  const clientCeiling = await measureClientCeiling();
  return {
    nproc: navigator.hardwareConcurrency,
    cpu: os.cpus()[0]?.model.trim() ?? "unknown CPU",
    memoryGib: os.totalmem() / 1024 ** 3,
    kernel: os.release(),
    node,
    deno,
    bun,
    clientCeiling,
  };
}

/** The message of a failure, as the report shows it in place of a section's figures. */
function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The shared context of the per-runtime phases: the start-up graphs and the store data. */
async function benchRun(
  settings: Settings,
): Promise<{ run: BenchRun; fixture(): Promise<StoreFixture | undefined> }> {
  const mcpGraph = await mcpStartupGraph(ROOT, DENO).catch(messageOf);
  const httpGraph = await httpStartupGraph(ROOT, DENO).catch(messageOf);
  let storeFixture: Promise<StoreFixture> | undefined;
  const run: BenchRun = {
    settings,
    mcpGraph,
    httpGraph,
    storeData: () => {
      storeFixture ??= createStoreFixture(STORE_DIR).then((fixture) => {
        printError(`[bench] wrote and checked the session data in ${fixture.seconds.toFixed(1)} s`);
        return fixture;
      });
      return storeFixture;
    },
  };
  return { run, fixture: () => storeFixture?.catch(() => undefined) ?? Promise.resolve(undefined) };
}

/** Runs every selected phase; resolves with the results. */
async function measure(settings: Settings): Promise<Results> {
  const loadAtStart = os.loadavg()[0] ?? Number.NaN;
  const { warnings, compiled } = await prepare(settings);
  const machine = await machineBefore();
  const { run, fixture } = await benchRun(settings);
  const runtimes: RuntimeResult[] = [];
  for (const runtime of settings.runtimes) runtimes.push(await runRuntime(runtime, run));
  const builds = selected(settings, "builds")
    ? await measureBuildStartupPhase(settings, compiled)
    : "not measured (--only)";
  const profiles = selected(settings, "start-up profile")
    ? await profileStartups(settings).catch(messageOf)
    : "not measured (--only)";
  const appends: AppendsOutcome = selected(settings, "appends")
    ? await measureAllAppends(settings)
    : { results: [], errors: [] };
  const scale = scaleSelected(settings) ? await measureScale(settings) : undefined;
  return {
    settings,
    machine: {
      ...machine,
      date: new Date().toISOString(),
      load: [loadAtStart, os.loadavg()[0] ?? Number.NaN],
    },
    runtimes,
    warnings,
    appends,
    fixture: await fixture(),
    mcpGraph: run.mcpGraph,
    httpGraph: run.httpGraph,
    compiled,
    builds,
    profiles,
    ...(scale === undefined ? {} : { scale }),
  };
}

async function main(): Promise<void> {
  const settings = parseSettings(Deno.args);
  bypassProxies();
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  try {
    const results = await measure(settings);
    const previous = await Deno.readTextFile(RESULTS_FILE).catch(() => undefined);
    await Deno.writeTextFile(
      RESULTS_FILE,
      spliceScaleSection(renderReport(results), previous, {
        onlyScale: settings.only?.every((name) => name === "scale") ?? false,
        measured: results.scale !== undefined,
      }),
    );
    // Leave the file as the repo's formatter wants it, so `deno fmt --check` stays clean.
    const formatted = await runCommand(DENO, ["fmt", "--quiet", RESULTS_FILE]);
    if (formatted.code !== 0) printError(`[bench] deno fmt ${RESULTS_FILE} failed`);
    print(await Deno.readTextFile(RESULTS_FILE));
    printError(`[bench] wrote ${RESULTS_FILE}`);
  } finally {
    killAllChildren();
    await Deno.remove(STORE_DIR, { recursive: true }).catch(() => {});
    await Deno.remove(FRESH_HOMES, { recursive: true }).catch(() => {});
    // The compiled executables are large (each holds a whole runtime): not worth keeping.
    await Deno.remove(`${TMP}/bin`, { recursive: true }).catch(() => {});
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
  }
}

await main();
