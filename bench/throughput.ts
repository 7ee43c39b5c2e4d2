/**
 * The throughput phase: one prompt answered by many `agent_message_chunk` notifications, ours
 * and bare alternating prompt by prompt; and the ceiling of this client alone, `cat` of a
 * ready-made NDJSON file.
 *
 * @module
 */
import { printError } from "../tests/_helpers/print.ts";
import {
  AgentProcess,
  finish,
  killAllChildren,
  openSession,
  prompt,
  startAgent,
} from "./agent_process.ts";
import { CEILING_FILE } from "./paths.ts";
import type { BenchRun, Pair, RuntimeResult } from "./results.ts";
import { orderFor, type Runtime } from "./settings.ts";
import { median } from "./stats.ts";

/** Measures the update throughput of ours and bare on `runtime`. */
export async function measureThroughput(
  runtime: Runtime,
  result: RuntimeResult,
  { settings }: BenchRun,
): Promise<void> {
  const chunks = settings.chunks;
  const agents: Pair<AgentProcess> = {
    ours: startAgent({ runtime, kind: "ours", workload: "stream", chunks }),
    bare: startAgent({ runtime, kind: "bare", workload: "stream", chunks }),
  };
  const sessions: Pair<string> = {
    ours: (await openSession(agents.ours)).sessionId,
    bare: (await openSession(agents.bare)).sessionId,
  };
  const rates: Pair<number[]> = { ours: [], bare: [] };
  const counts: Pair<number[]> = { ours: [], bare: [] };
  // Run 0 is a warm-up; the script has one step per run.
  for (let run = 0; run <= settings.throughputRuns; run++) {
    for (const kind of orderFor(run)) {
      const agent = agents[kind];
      agent.messageChunks = 0;
      const sentAt = performance.now();
      const reply = await prompt(agent, sessions[kind], `stream ${run}`);
      if (run === 0) continue;
      rates[kind].push(agent.messageChunks / ((reply.at - sentAt) / 1000));
      counts[kind].push(agent.messageChunks);
    }
  }
  const ours = await finish(agents.ours);
  const bare = await finish(agents.bare);
  result.exitMs.ours.push(ours.exitMs);
  result.exitMs.bare.push(bare.exitMs);
  result.throughput = {
    notificationsPerSecond: { ours: median(rates.ours), bare: median(rates.bare) },
    chunksPerPrompt: { ours: Math.min(...counts.ours), bare: Math.min(...counts.bare) },
    rssMib: { ours: ours.rssMib, bare: bare.rssMib },
  };
}

/**
 * How fast this client alone takes in notifications: `cat` of a ready-made NDJSON file.
 *
 * @returns Notifications per second, or undefined when `cat` cannot run
 */
export async function measureClientCeiling(): Promise<number | undefined> {
  const rates: number[] = [];
  try {
    for (let run = 0; run < 3; run++) {
      const agent = new AgentProcess("cat", { command: "cat", args: [CEILING_FILE], env: {} });
      const { at } = await agent.request("session/prompt", {});
      rates.push(agent.messageChunks / ((at - agent.spawnedAt) / 1000));
      await agent.waitExit();
    }
  } catch (error) {
    printError(`[bench] client ceiling not measured: ${(error as Error).message}`);
    return undefined;
  } finally {
    killAllChildren();
  }
  return median(rates);
}
