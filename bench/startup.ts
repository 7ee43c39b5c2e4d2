/**
 * The start-up phase: spawn → `initialize` response, spawn → the first `session/new` answered
 * (ours on a fresh data directory), and stdin EOF → exit, ours and bare interleaved run by run
 * (each run a round: ours and bare, the order alternating), with the per-round ratio of the
 * spawn → `session/new` times that the target is judged on.
 *
 * @module
 */
import {
  type AgentProcess,
  finish,
  openSession,
  removeHome,
  startAgent,
  startFreshOurs,
} from "./agent_process.ts";
import type { BenchRun, Pair, RuntimeResult } from "./results.ts";
import { type Kind, orderFor, type Runtime } from "./settings.ts";
import { median } from "./stats.ts";

/** One start-up run: spawn → `initialize` → `session/new`, then stdin EOF → exit. */
export interface StartupRun {
  initializeMs: number;
  sessionNewMs: number;
  /** `session/new` request → response. */
  firstSessionNewMs: number;
  exitMs: number;
  rssMib?: number;
}

/** One start-up run of `agent`, just spawned. */
export async function startupRun(agent: AgentProcess): Promise<StartupRun> {
  const opened = await openSession(agent);
  const { rssMib, exitMs } = await finish(agent);
  return {
    initializeMs: opened.initializedAt - agent.spawnedAt,
    sessionNewMs: opened.sessionAt - agent.spawnedAt,
    firstSessionNewMs: opened.sessionAt - opened.sessionSentAt,
    exitMs,
    ...(rssMib === undefined ? {} : { rssMib }),
  };
}

/** One start-up run; ours gets a fresh, empty data directory of its own. */
async function measureStartupOnce(runtime: Runtime, kind: Kind): Promise<StartupRun> {
  if (kind === "bare") return await startupRun(startAgent({ runtime, kind, workload: "echo" }));
  const { agent, home } = await startFreshOurs(runtime);
  try {
    return await startupRun(agent);
  } finally {
    await removeHome(agent, home);
  }
}

interface Samples {
  init: number[];
  session: number[];
  first: number[];
  exit: number[];
  rss: number[];
}

/** Measures the start-up of ours and bare on `runtime` (after a warm-up run of each). */
export async function measureStartup(
  runtime: Runtime,
  result: RuntimeResult,
  { settings }: BenchRun,
): Promise<void> {
  for (const kind of orderFor(0)) await measureStartupOnce(runtime, kind); // warm-up
  const samples: Pair<Samples> = {
    ours: { init: [], session: [], first: [], exit: [], rss: [] },
    bare: { init: [], session: [], first: [], exit: [], rss: [] },
  };
  const ratios: number[] = [];
  for (let i = 0; i < settings.startupRuns; i++) {
    const round: Partial<Record<Kind, number>> = {};
    for (const kind of orderFor(i)) {
      const run = await measureStartupOnce(runtime, kind);
      round[kind] = run.sessionNewMs;
      samples[kind].init.push(run.initializeMs);
      samples[kind].session.push(run.sessionNewMs);
      samples[kind].first.push(run.firstSessionNewMs);
      samples[kind].exit.push(run.exitMs);
      result.exitMs[kind].push(run.exitMs);
      if (run.rssMib !== undefined) samples[kind].rss.push(run.rssMib);
    }
    if (round.ours !== undefined && round.bare) ratios.push(round.ours / round.bare);
  }
  const rss = (values: number[]): number | undefined =>
    values.length === 0 ? undefined : median(values);
  result.startup = {
    initializeMs: { ours: median(samples.ours.init), bare: median(samples.bare.init) },
    sessionNewMs: { ours: median(samples.ours.session), bare: median(samples.bare.session) },
    sessionNewRatios: ratios,
    firstSessionNewMs: { ours: median(samples.ours.first), bare: median(samples.bare.first) },
    firstSessionNewMaxMs: {
      ours: Math.max(...samples.ours.first),
      bare: Math.max(...samples.bare.first),
    },
    exitMs: { ours: median(samples.ours.exit), bare: median(samples.bare.exit) },
    rssMib: { ours: rss(samples.ours.rss), bare: rss(samples.bare.rss) },
  };
}
