/**
 * The sessions phase: `session/new` many times in a row on one server of ours (a fresh data
 * directory) and one bare, alternating in blocks; then stdin EOF with all those sessions open,
 * timed to the exit. Repeated on fresh servers; latencies are pooled over the runs.
 *
 * @module
 */
import { type AgentProcess, removeHome, startAgent, startFreshOurs } from "./agent_process.ts";
import { ROOT } from "./paths.ts";
import type { BenchRun, Pair, RuntimeResult } from "./results.ts";
import { INITIALIZE_PARAMS } from "./rpc_client.ts";
import { orderFor, type Runtime, type Settings } from "./settings.ts";
import { median, percentile } from "./stats.ts";

/** One run's `session/new` calls on both servers, in blocks; resolves with their latencies. */
async function openSessions(
  agents: Pair<AgentProcess>,
  run: number,
  settings: Settings,
): Promise<Pair<number[]>> {
  const latencies: Pair<number[]> = { ours: [], bare: [] };
  for (const kind of orderFor(run)) await agents[kind].request("initialize", INITIALIZE_PARAMS);
  const blocks = Math.ceil(settings.sessionsPerRun / settings.sessionBlock);
  for (let block = 0; block < blocks; block++) {
    const size = Math.min(
      settings.sessionBlock,
      settings.sessionsPerRun - block * settings.sessionBlock,
    );
    for (const kind of orderFor(run + block)) {
      for (let i = 0; i < size; i++) {
        const sentAt = performance.now();
        const reply = await agents[kind].request("session/new", { cwd: ROOT, mcpServers: [] });
        const sessionId = (reply.result as { sessionId?: unknown } | null)?.sessionId;
        if (typeof sessionId !== "string") {
          throw new Error(`${agents[kind].label}: session/new had no id`);
        }
        latencies[kind].push(reply.at - sentAt);
      }
    }
  }
  return latencies;
}

/** Measures many `session/new` in a row and the exit with those sessions open on `runtime`. */
export async function measureSessions(
  runtime: Runtime,
  result: RuntimeResult,
  { settings }: BenchRun,
): Promise<void> {
  const latencies: Pair<number[]> = { ours: [], bare: [] };
  const exits: Pair<number[]> = { ours: [], bare: [] };
  for (let run = 0; run < settings.sessionRuns; run++) {
    const fresh = await startFreshOurs(runtime);
    const agents: Pair<AgentProcess> = {
      ours: fresh.agent,
      bare: startAgent({ runtime, kind: "bare", workload: "echo" }),
    };
    try {
      const opened = await openSessions(agents, run, settings);
      latencies.ours.push(...opened.ours);
      latencies.bare.push(...opened.bare);
      for (const kind of orderFor(run)) {
        const eofAt = agents[kind].closeStdin();
        const exitMs = await agents[kind].waitExit() - eofAt;
        exits[kind].push(exitMs);
      }
    } finally {
      await removeHome(fresh.agent, fresh.home);
    }
  }
  result.sessions = {
    p50Ms: { ours: percentile(latencies.ours, 0.5), bare: percentile(latencies.bare, 0.5) },
    p99Ms: { ours: percentile(latencies.ours, 0.99), bare: percentile(latencies.bare, 0.99) },
    exitMs: { ours: median(exits.ours), bare: median(exits.bare) },
    exitMaxMs: { ours: Math.max(...exits.ours), bare: Math.max(...exits.bare) },
    runs: settings.sessionRuns,
  };
}
