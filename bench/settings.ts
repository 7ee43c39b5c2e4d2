/**
 * What one bench run does: its command line (`--quick`, `--runtime`, `--only`) turned into the
 * counts every phase reads, and the names of the phases.
 *
 * @module
 */
import { print } from "../tests/_helpers/print.ts";

/** The runtimes ours and the bare agent run on. */
export const RUNTIMES = ["deno", "node", "bun"] as const;
/** One of {@link RUNTIMES}. */
export type Runtime = typeof RUNTIMES[number];
/** Which agent: ours or the bare SDK echo agent. */
export type Kind = "ours" | "bare";

/** The per-runtime phases, in the order they run (`--only` names them). */
export const PHASE_NAMES = [
  "start-up",
  "round trip",
  "sessions",
  "throughput",
  "LLM turn",
  "LLM breakdown",
  "session/list",
  "session/load",
  "session/fork",
  "MCP",
  "delegation",
  "HTTP",
  "compaction",
  "worktrees",
] as const;
/** One of {@link PHASE_NAMES}. */
export type PhaseName = typeof PHASE_NAMES[number];

/** The modes of the in-process append benchmark (`bench/store_bench.ts`), in the order they run. */
export const APPEND_MODES = ["awaited", "burst", "nosync"] as const;
/** One of {@link APPEND_MODES}. */
export type AppendMode = typeof APPEND_MODES[number];

/** The phases run once for all runtimes, after the per-runtime ones (`--only` names them too). */
export const SHARED_PHASES = ["builds", "appends", "start-up profile", "scale"] as const;

/** How much work one run does. */
export interface Settings {
  readonly quick: boolean;
  readonly runtimes: readonly Runtime[];
  readonly startupRuns: number;
  readonly warmupPrompts: number;
  readonly prompts: number;
  readonly promptBlock: number;
  readonly chunks: number;
  readonly throughputRuns: number;
  readonly llmTurnWarmups: number;
  readonly llmTurnRuns: number;
  readonly listWarmups: number;
  readonly listRuns: number;
  readonly loadWarmups: number;
  readonly loadRuns: number;
  /** Appends per mode of the in-process append benchmark. */
  readonly appends: Readonly<Record<AppendMode, number>>;
  /** Appends issued together in the `burst` mode. */
  readonly appendBurst: number;
  /** Runs of the many-sessions phase: fresh servers each, sessions opened, then stdin EOF. */
  readonly sessionRuns: number;
  /** `session/new` calls in a row per server and run. */
  readonly sessionsPerRun: number;
  /** Ours and bare alternate in blocks of this many `session/new` calls. */
  readonly sessionBlock: number;
  /** Only these per-runtime phases (`--only`, for working on a section), or all. */
  readonly only: readonly string[] | undefined;
}

/**
 * Whether `--only` lets phase `name` run.
 *
 * @example
 * ```ts ignore
 * if (selected(settings, "builds")) await measureBuildStartup(settings, compiled);
 * ```
 */
export function selected(settings: Settings, name: string): boolean {
  return settings.only === undefined || settings.only.includes(name);
}

/** Ours first on even iterations, bare first on odd ones, so that they share the noise. */
export function orderFor(iteration: number): readonly Kind[] {
  return iteration % 2 === 0 ? ["ours", "bare"] : ["bare", "ours"];
}

/** What the command line asks for, before the counts are derived from it. */
interface Arguments {
  readonly quick: boolean;
  readonly runtimes: readonly Runtime[];
  readonly only: string[] | undefined;
}

const USAGE = "usage: deno run -A bench/main.ts [--quick] [--runtime deno|node|bun]... " +
  "[--only <phase>,...]\n" +
  "  --only runs only the named per-runtime phases (for working on a section; the " +
  "report is partial): " + [...PHASE_NAMES, ...SHARED_PHASES].join(", ") + "\n" +
  "  scale (bench/scale.ts, about ten minutes) runs only when --only names it; its section is " +
  "spliced into the report";

/**
 * The settings of a run from its command line; prints the usage and exits on `--help`.
 *
 * @throws {Error} On an unknown argument, runtime or phase
 */
export function parseSettings(args: readonly string[]): Settings {
  const { quick, runtimes, only } = parseArguments(args);
  return {
    quick,
    runtimes: runtimes.length > 0 ? runtimes : RUNTIMES,
    startupRuns: quick ? 3 : 15,
    warmupPrompts: quick ? 20 : 4_000,
    prompts: quick ? 200 : 2000,
    promptBlock: quick ? 50 : 100,
    chunks: quick ? 2000 : 20_000,
    throughputRuns: quick ? 1 : 3,
    llmTurnWarmups: quick ? 1 : 3,
    llmTurnRuns: quick ? 3 : 9,
    listWarmups: quick ? 5 : 20,
    listRuns: quick ? 10 : 50,
    loadWarmups: quick ? 1 : 2,
    loadRuns: quick ? 3 : 7,
    appends: quick
      ? { awaited: 100, burst: 2_000, nosync: 2_000 }
      : { awaited: 1_000, burst: 20_000, nosync: 20_000 },
    appendBurst: 100,
    sessionRuns: quick ? 2 : 3,
    sessionsPerRun: quick ? 200 : 1_000,
    sessionBlock: quick ? 50 : 100,
    only,
  };
}

function parseArguments(args: readonly string[]): Arguments {
  let quick = false;
  const runtimes: Runtime[] = [];
  let only: string[] | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    if (arg === "--quick") {
      quick = true;
    } else if (arg === "--runtime" || arg.startsWith("--runtime=")) {
      const value = arg === "--runtime" ? args[++i] : arg.slice("--runtime=".length);
      for (const name of (value ?? "").split(",")) {
        if (!isRuntime(name)) throw new Error(`--runtime expects deno, node or bun, got "${name}"`);
        if (!runtimes.includes(name)) runtimes.push(name);
      }
    } else if (arg === "--only" || arg.startsWith("--only=")) {
      const value = arg === "--only" ? args[++i] : arg.slice("--only=".length);
      only = [...only ?? [], ...(value ?? "").split(",").filter((name) => name !== "")];
    } else if (arg === "--help" || arg === "-h") {
      print(USAGE);
      Deno.exit(0);
    } else {
      throw new Error(`unknown argument "${arg}"`);
    }
  }
  const phaseNames: readonly string[] = [...PHASE_NAMES, ...SHARED_PHASES];
  for (const name of only ?? []) {
    if (!phaseNames.includes(name)) {
      throw new Error(`--only expects some of ${phaseNames.join(", ")}; got "${name}"`);
    }
  }
  return { quick, runtimes, only };
}

function isRuntime(name: string): name is Runtime {
  return (RUNTIMES as readonly string[]).includes(name);
}
