/**
 * The per-runtime phases in the order they run, each named as `--only` names it, and the
 * adapters that give the phase modules which take their agents from outside
 * (`bench/store_bench.ts`, `bench/mcp.ts`, `bench/delegation.ts`, `bench/http.ts`,
 * `bench/compaction.ts`) the agents of `bench/agent_process.ts`. Also the shared phases run
 * once for all runtimes (in-process appends, start-up profiles).
 *
 * @module
 */
import { print, printError } from "../tests/_helpers/print.ts";
import { SYNC_DELAY_MS } from "../src/store/jsonl_session_store.ts";
import {
  agentCommand,
  AgentProcess,
  type CommandLine,
  freshHome,
  killAllChildren,
  oursCommand,
  spawnTracked,
} from "./agent_process.ts";
import { measureCompaction } from "./compaction.ts";
import { delegationBenchCounts, measureDelegation } from "./delegation.ts";
import { httpBenchCounts, measureHttp } from "./http.ts";
import { measureLlmBreakdown, measureLlmTurn } from "./llm_turn.ts";
import { mcpBenchCounts, measureMcp } from "./mcp.ts";
import { BUN, DENO, NODE, ROOT, STORE_DIR, TMP } from "./paths.ts";
import type { AppendsOutcome, BenchRun, RuntimeResult } from "./results.ts";
import { measureRoundTrip } from "./round_trip.ts";
import { measureSessions } from "./sessions.ts";
import {
  APPEND_MODES,
  PHASE_NAMES,
  type PhaseName,
  type Runtime,
  selected,
  type Settings,
} from "./settings.ts";
import { measureStartup } from "./startup.ts";
import { profileStartup, type StartupProfile } from "./startup_profile.ts";
import {
  type AppendResult,
  measureAppends,
  measureSessionList,
  measureSessionLoad,
  timerDelayMs,
} from "./store_bench.ts";
import { measureThroughput } from "./throughput.ts";
import { measureSessionFork } from "./fork_bench.ts";
import { measureWorktrees } from "./worktree_bench.ts";

/** One per-runtime phase: fills in its part of `result` (and its processes' exit times). */
export type Phase = (runtime: Runtime, result: RuntimeResult, run: BenchRun) => Promise<void>;

/** Starts ours on a data directory (killed with every other child if left running). */
function storeServer(runtime: Runtime): (dataDir: string) => AgentProcess {
  return (dataDir) =>
    new AgentProcess(
      `ours/${runtime}`,
      agentCommand({ runtime, kind: "ours", workload: "store", dataDir }),
    );
}

const measureSessionListPhase: Phase = async (runtime, result, run) => {
  const { listWarmups: warmups, listRuns: runs } = run.settings;
  const fixture = await run.storeData();
  result.sessionList = await measureSessionList(storeServer(runtime), fixture, { warmups, runs });
  result.exitMs.ours.push(...result.sessionList.exitMs);
};

const measureSessionLoadPhase: Phase = async (runtime, result, run) => {
  const { loadWarmups: warmups, loadRuns: runs } = run.settings;
  const fixture = await run.storeData();
  const bare = (chunks: number): AgentProcess =>
    new AgentProcess(
      `bare/${runtime}`,
      agentCommand({ runtime, kind: "bare", workload: "stream", chunks }),
    );
  result.sessionLoad = await measureSessionLoad(
    { ours: storeServer(runtime), bare },
    fixture,
    { warmups, runs: Math.max(runs, 5) },
  );
  result.exitMs.ours.push(result.sessionLoad.exitMs);
};

const measureSessionForkPhase: Phase = async (runtime, result, run) => {
  const { loadWarmups: warmups, loadRuns: runs } = run.settings;
  const fixture = await run.storeData();
  result.sessionFork = await measureSessionFork(storeServer(runtime), fixture, { warmups, runs });
  result.exitMs.ours.push(result.sessionFork.exitMs);
};

const measureMcpPhase: Phase = async (runtime, result, { settings, mcpGraph }) => {
  if (NODE === undefined) throw new Error("node is not on PATH (it runs the MCP servers)");
  const start = (args: readonly string[]): AgentProcess =>
    new AgentProcess(`ours/${runtime}`, oursCommand(runtime, args));
  const bundles = runtime !== "node" || typeof mcpGraph === "string" ? undefined : {
    start: (bundle: string | undefined): AgentProcess => {
      const line = oursCommand(runtime);
      return new AgentProcess(`ours/${runtime}`, { ...line, args: [bundle ?? "dist/cli.js"] });
    },
    withoutMcp: mcpGraph.withoutMcp.file,
  };
  result.mcp = await measureMcp({
    start: (script) => start(["--model", "scripted", "--script", script]),
    paths: { root: ROOT, tmp: TMP, node: NODE },
    counts: mcpBenchCounts(settings.quick),
    ...(bundles === undefined ? {} : { bundles }),
  });
  result.exitMs.ours.push(result.mcp.exitMs);
};

const measureCompactionPhase: Phase = async (runtime, result, { settings }) => {
  const dir = await freshHome();
  try {
    result.compaction = await measureCompaction(
      (args, home) =>
        new AgentProcess(`ours/${runtime}`, oursCommand(runtime, args, { ACP_HARNESS_HOME: home })),
      dir,
      settings.quick ? 50 : 200,
    );
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
};

const measureDelegationPhase: Phase = async (runtime, result, { settings }) => {
  const home = await freshHome();
  try {
    const line = oursCommand(runtime, [], { ACP_HARNESS_HOME: home });
    result.delegation = await measureDelegation({
      start: (extraArgs) =>
        new AgentProcess(`ours/${runtime}`, { ...line, args: [...line.args, ...extraArgs] }),
      child: line,
      paths: { root: ROOT, tmp: TMP },
      counts: delegationBenchCounts(settings.quick),
    });
  } finally {
    await Deno.remove(home, { recursive: true }).catch(() => {});
  }
};

const measureHttpPhase: Phase = async (runtime, result, { settings, httpGraph }) => {
  const bundles = runtime !== "node" || typeof httpGraph === "string" ? undefined : {
    start: (bundle: string | undefined): CommandLine => ({
      ...oursCommand(runtime),
      args: [bundle ?? "dist/cli.js"],
    }),
    withoutHttp: httpGraph.withoutHttp.file,
  };
  result.http = await measureHttp(
    {
      root: ROOT,
      tmp: TMP,
      ours: (args, env) => oursCommand(runtime, args, env),
      spawn: spawnTracked,
    },
    httpBenchCounts(settings.quick, settings.chunks),
    bundles,
  );
  result.exitMs.ours.push(result.http.stdioExitMs);
};

const measureWorktreesPhase: Phase = async (runtime, result, { settings }) => {
  result.worktrees = await measureWorktrees(
    (args, dataDir) =>
      new AgentProcess(`ours/${runtime}`, oursCommand(runtime, ["--data-dir", dataDir, ...args])),
    TMP,
    settings.quick ? { warmups: 1, runs: 3 } : { warmups: 2, runs: 7 },
  );
};

/** Every per-runtime phase by its name. */
const PHASES: Readonly<Record<PhaseName, Phase>> = {
  "start-up": measureStartup,
  "round trip": measureRoundTrip,
  "sessions": measureSessions,
  "throughput": measureThroughput,
  "LLM turn": measureLlmTurn,
  "LLM breakdown": measureLlmBreakdown,
  "session/list": measureSessionListPhase,
  "session/load": measureSessionLoadPhase,
  "session/fork": measureSessionForkPhase,
  "MCP": measureMcpPhase,
  "delegation": measureDelegationPhase,
  "HTTP": measureHttpPhase,
  "compaction": measureCompactionPhase,
  "worktrees": measureWorktreesPhase,
};

/** Seconds since `started`, as the progress lines print them. */
function secondsSince(started: number): string {
  return ((performance.now() - started) / 1000).toFixed(1);
}

/**
 * Runs the selected phases on `runtime`, one after the other; a phase that fails leaves its
 * error in the result and its processes killed, and the next one runs.
 */
export async function runRuntime(runtime: Runtime, run: BenchRun): Promise<RuntimeResult> {
  const result: RuntimeResult = { runtime, exitMs: { ours: [], bare: [] }, errors: [] };
  for (const name of PHASE_NAMES) {
    if (!selected(run.settings, name)) continue;
    const started = performance.now();
    printError(`[bench] ${runtime}: ${name}…`);
    try {
      await PHASES[name](runtime, result, run);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      result.errors.push(`${name}: ${message}`);
      printError(`[bench] ${runtime}: ${name} failed: ${message}`);
    } finally {
      killAllChildren();
    }
    printError(`[bench] ${runtime}: ${name} took ${secondsSince(started)} s`);
  }
  return result;
}

/** The start-up module profile of every runtime measured (`bench/startup_profile.ts`). */
export async function profileStartups(settings: Settings): Promise<StartupProfile[]> {
  const profiles: StartupProfile[] = [];
  const commands: Record<Runtime, string | undefined> = { deno: DENO, node: NODE, bun: BUN };
  for (const runtime of settings.runtimes) {
    const command = commands[runtime];
    if (command === undefined) continue;
    print(`[bench] start-up profile: ${runtime}`);
    profiles.push(
      await profileStartup({
        root: ROOT,
        runtime,
        command,
        deno: DENO,
        runs: settings.quick ? 3 : 7,
      }),
    );
  }
  return profiles;
}

/** The in-process appends of the session store, each mode on a fresh store. */
export async function measureAllAppends(settings: Settings): Promise<AppendsOutcome> {
  const results: AppendResult[] = [];
  const errors: string[] = [];
  for (const mode of APPEND_MODES) {
    const started = performance.now();
    printError(`[bench] appends (${mode}, in-process)…`);
    try {
      await Deno.mkdir(STORE_DIR, { recursive: true });
      results.push(
        await measureAppends(STORE_DIR, mode, {
          appends: settings.appends[mode],
          burst: settings.appendBurst,
        }),
      );
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      errors.push(`appends (${mode}): ${message}`);
      printError(`[bench] appends (${mode}) failed: ${message}`);
    }
    printError(`[bench] appends (${mode}) took ${secondsSince(started)} s`);
  }
  const timerMs = await timerDelayMs(SYNC_DELAY_MS, settings.quick ? 20 : 200);
  return { results, errors, timerMs };
}
