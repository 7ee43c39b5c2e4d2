/**
 * The round-trip phase: sequential `session/prompt` calls on one session of each of three sides,
 * ours durable (on a fresh data directory), ours with `--store memory:` and bare, in blocks
 * whose order rotates.
 *
 * @module
 */
import {
  AgentProcess,
  finish,
  openSession,
  oursCommand,
  prompt,
  removeHome,
  startAgent,
  startFreshOurs,
} from "./agent_process.ts";
import type { BenchRun, RuntimeResult } from "./results.ts";
import type { Kind, Runtime } from "./settings.ts";
import { percentile } from "./stats.ts";

/** The round trip's sides: ours durable, ours with `--store memory:`, bare. */
type RoundTripSide = Kind | "memory";

/** The order of the round trip's three sides in block `block` (rotating). */
function roundTripOrder(block: number): readonly RoundTripSide[] {
  const sides: readonly RoundTripSide[] = ["ours", "memory", "bare"];
  return sides.map((_, i) => sides[(i + block) % sides.length] as RoundTripSide);
}

/** Each side's latencies (ms) and the time it spent in its blocks (ms). */
interface Timings {
  readonly latencies: Record<RoundTripSide, number[]>;
  readonly busyMs: Record<RoundTripSide, number>;
  /** Each block's p50 over bare's p50 in the same block (a block is a round of the three). */
  readonly blockRatios: { durable: number[]; memory: number[] };
}

/** The warm-up prompts, then the measured ones in rotating blocks. */
async function promptBlocks(
  agents: Record<RoundTripSide, AgentProcess>,
  sessions: Record<RoundTripSide, string>,
  { settings }: BenchRun,
): Promise<Timings> {
  for (const side of roundTripOrder(0)) {
    for (let i = 0; i < settings.warmupPrompts; i++) {
      await prompt(agents[side], sessions[side], `warm-up ${i}`);
    }
  }
  const latencies: Record<RoundTripSide, number[]> = { ours: [], memory: [], bare: [] };
  const busyMs: Record<RoundTripSide, number> = { ours: 0, memory: 0, bare: 0 };
  const blockRatios: { durable: number[]; memory: number[] } = { durable: [], memory: [] };
  const blocks = Math.ceil(settings.prompts / settings.promptBlock);
  for (let block = 0; block < blocks; block++) {
    const size = Math.min(settings.promptBlock, settings.prompts - block * settings.promptBlock);
    for (const side of roundTripOrder(block)) {
      const blockStart = performance.now();
      for (let i = 0; i < size; i++) {
        const sentAt = performance.now();
        const reply = await prompt(agents[side], sessions[side], `ping ${block}.${i}`);
        latencies[side].push(reply.at - sentAt);
      }
      busyMs[side] += performance.now() - blockStart;
    }
    const p50 = (side: RoundTripSide): number => percentile(latencies[side].slice(-size), 0.5);
    blockRatios.durable.push(p50("ours") / p50("bare"));
    blockRatios.memory.push(p50("memory") / p50("bare"));
  }
  return { latencies, busyMs, blockRatios };
}

/** Measures the prompt round trip of the three sides on `runtime`. */
export async function measureRoundTrip(
  runtime: Runtime,
  result: RuntimeResult,
  run: BenchRun,
): Promise<void> {
  const durable = await startFreshOurs(runtime);
  const agents: Record<RoundTripSide, AgentProcess> = {
    ours: durable.agent,
    memory: new AgentProcess(
      `ours-memory/${runtime}`,
      oursCommand(runtime, ["--store", "memory:"]),
    ),
    bare: startAgent({ runtime, kind: "bare", workload: "echo" }),
  };
  try {
    const sessions: Record<RoundTripSide, string> = {
      ours: (await openSession(agents.ours)).sessionId,
      memory: (await openSession(agents.memory)).sessionId,
      bare: (await openSession(agents.bare)).sessionId,
    };
    const { latencies, busyMs, blockRatios } = await promptBlocks(agents, sessions, run);
    for (const kind of ["ours", "bare"] as const) {
      result.exitMs[kind].push((await finish(agents[kind])).exitMs);
    }
    await finish(agents.memory);
    const rate = (side: RoundTripSide): number => latencies[side].length / (busyMs[side] / 1000);
    const block = run.settings.promptBlock;
    result.roundTrip = {
      p50Ms: { ours: percentile(latencies.ours, 0.5), bare: percentile(latencies.bare, 0.5) },
      p99Ms: { ours: percentile(latencies.ours, 0.99), bare: percentile(latencies.bare, 0.99) },
      memory: {
        p50Ms: percentile(latencies.memory, 0.5),
        p99Ms: percentile(latencies.memory, 0.99),
        promptsPerSecond: rate("memory"),
      },
      firstBlockP50Ms: {
        ours: percentile(latencies.ours.slice(0, block), 0.5),
        bare: percentile(latencies.bare.slice(0, block), 0.5),
      },
      lastBlockP50Ms: {
        ours: percentile(latencies.ours.slice(-block), 0.5),
        bare: percentile(latencies.bare.slice(-block), 0.5),
      },
      promptsPerSecond: { ours: rate("ours"), bare: rate("bare") },
      blockRatios,
    };
  } finally {
    await removeHome(durable.agent, durable.home);
  }
}
