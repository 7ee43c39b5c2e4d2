/**
 * The shapes of what a bench run measures: one {@link RuntimeResult} per runtime, filled in by
 * the phases, and the whole run's {@link Results}, which `bench/report.ts` renders.
 *
 * @module
 */
import type { CompiledBinary } from "../scripts/compile.ts";
import type { CommandLine } from "./agent_process.ts";
import type { CompactionResult } from "./compaction.ts";
import type { DelegationResult } from "./delegation.ts";
import type { HttpResult, HttpStartupGraph } from "./http.ts";
import type { FirstUpdateResult, TurnCpuResult } from "./llm_breakdown.ts";
import type { McpResult, McpStartupGraph } from "./mcp.ts";
import type { Kind, Runtime, Settings } from "./settings.ts";
import type { StartupProfile } from "./startup_profile.ts";
import type { AppendResult, ListResult, LoadResult, StoreFixture } from "./store_bench.ts";
import type { ForkResult } from "./fork_bench.ts";
import type { WorktreeResult } from "./worktree_bench.ts";
import type { ScaleResult } from "./scale.ts";

/** One figure for ours and one for the bare agent. */
export interface Pair<T> {
  ours: T;
  bare: T;
}

/** Spawn → `initialize` → `session/new`, then stdin EOF → exit: medians of the runs. */
export interface StartupResult {
  initializeMs: Pair<number>;
  sessionNewMs: Pair<number>;
  /** Ours / bare spawn → `session/new` of each round (ours and bare run back to back). */
  sessionNewRatios: readonly number[];
  /** The first `session/new` alone: its request → its response (ours on a fresh data dir). */
  firstSessionNewMs: Pair<number>;
  firstSessionNewMaxMs: Pair<number>;
  exitMs: Pair<number>;
  rssMib: Pair<number | undefined>;
}

/** Sequential prompts on one session: ours durable, ours on `--store memory:`, and bare. */
export interface RoundTripResult {
  p50Ms: Pair<number>;
  /** Ours with `--store memory:` (no log), interleaved with the others. */
  memory: { p50Ms: number; p99Ms: number; promptsPerSecond: number };
  /** p50 of the first and of the last block, to show drift as the session grows. */
  firstBlockP50Ms: Pair<number>;
  lastBlockP50Ms: Pair<number>;
  p99Ms: Pair<number>;
  promptsPerSecond: Pair<number>;
  /** Block by block (each block a round of all three sides): p50 over bare's p50. */
  blockRatios: { durable: readonly number[]; memory: readonly number[] };
}

/** One prompt answered by many `agent_message_chunk` notifications. */
export interface ThroughputResult {
  notificationsPerSecond: Pair<number>;
  chunksPerPrompt: Pair<number>;
  rssMib: Pair<number | undefined>;
}

/** One turn against the fake model, ours against a bare read of the same streams. */
export interface LlmTurnResult {
  /** Median time of one turn. */
  ms: Pair<number>;
  minMs: Pair<number>;
  maxMs: Pair<number>;
  /** Measured turns per side (warm-ups not counted). */
  runs: number;
}

/** Many `session/new` in a row on one server, then stdin EOF with those sessions open. */
export interface SessionsResult {
  p50Ms: Pair<number>;
  p99Ms: Pair<number>;
  /** Exit after stdin EOF with the sessions open, median over the runs. */
  exitMs: Pair<number>;
  exitMaxMs: Pair<number>;
  runs: number;
}

/** Everything measured on one runtime (a phase that failed or did not run leaves its field out). */
export interface RuntimeResult {
  runtime: Runtime;
  startup?: StartupResult;
  roundTrip?: RoundTripResult;
  sessions?: SessionsResult;
  firstUpdate?: FirstUpdateResult;
  turnCpu?: TurnCpuResult;
  throughput?: ThroughputResult;
  llmTurn?: LlmTurnResult;
  sessionList?: ListResult;
  sessionLoad?: LoadResult;
  sessionFork?: ForkResult;
  mcp?: McpResult;
  delegation?: DelegationResult;
  http?: HttpResult;
  compaction?: CompactionResult;
  worktrees?: WorktreeResult;
  /** Exit-after-EOF times of every process of the runtime, for the max column. */
  exitMs: Pair<number[]>;
  /** `<phase>: <message>` for each phase that failed. */
  errors: string[];
}

/** One way of running an agent in the start-up comparison of builds. */
export interface BuildLine {
  /** How the report names it. */
  readonly label: string;
  /**
   * The runtime, `binary`, or a runtime running a bundle (`deno bundle`, `bun bundle`): ours and
   * bare of the same key are compared.
   */
  readonly key: Runtime | "binary" | "deno bundle" | "bun bundle";
  readonly kind: Kind;
  readonly line: CommandLine;
  /** The executable's size, for the compiled binaries. */
  readonly bytes?: number;
}

/** The start-up of one build: medians and range over the runs. */
export interface BuildStartup extends BuildLine {
  readonly initializeMs: number;
  readonly minMs: number;
  readonly maxMs: number;
  readonly sessionNewMs: number;
  /** Ours only: ours / bare of the same key, spawn → `session/new`, round by round. */
  readonly sessionNewRatios?: readonly number[];
  readonly exitMs: number;
  readonly rssMib: number | undefined;
}

/** The compiled binaries of ours and of the bare agent, or why they could not be built. */
export type Compiled = { ours: CompiledBinary; bare: CompiledBinary } | string;

/** The in-process appends, each mode on a fresh store. */
export interface AppendsOutcome {
  readonly results: readonly AppendResult[];
  readonly errors: readonly string[];
  /** What a `setTimeout(SYNC_DELAY_MS)` really takes in this process (ms). */
  readonly timerMs?: number;
}

/** The machine the run was on. */
export interface Machine {
  readonly date: string;
  readonly nproc: number;
  readonly cpu: string;
  readonly memoryGib: number;
  readonly kernel: string;
  readonly node: string;
  readonly deno: string;
  readonly bun: string;
  readonly clientCeiling: number | undefined;
  /** The 1-minute load average when the run started and when it ended. */
  readonly load: readonly [number, number];
}

/** A whole run: what `bench/report.ts` renders into `bench/RESULTS.md`. */
export interface Results {
  readonly settings: Settings;
  readonly machine: Machine;
  readonly runtimes: readonly RuntimeResult[];
  readonly warnings: readonly string[];
  readonly appends: AppendsOutcome;
  /** The durable-session data, when it could be written. */
  readonly fixture: StoreFixture | undefined;
  /** The start-up graphs of the MCP and HTTP code, or why they could not be read. */
  readonly mcpGraph: McpStartupGraph | string;
  readonly httpGraph: HttpStartupGraph | string;
  readonly compiled: Compiled;
  /** The start-up of every build, or why it was not measured. */
  readonly builds: readonly BuildStartup[] | string;
  /** The start-up module profiles, or why they were not measured. */
  readonly profiles: readonly StartupProfile[] | string;
  /** The scale phase (`bench/scale.ts`), when `--only` named it. */
  readonly scale?: ScaleResult;
}

/** What every per-runtime phase is given besides its runtime and result. */
export interface BenchRun {
  readonly settings: Settings;
  /** The start-up graphs (read before the runtimes run), or why they could not be. */
  readonly mcpGraph: McpStartupGraph | string;
  readonly httpGraph: HttpStartupGraph | string;
  /** The durable-session data: written on first use, shared by every runtime. */
  storeData(): Promise<StoreFixture>;
}
