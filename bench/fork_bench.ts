/**
 * The `session/fork` part of `bench/main.ts`: forking the 10,000-event session of the
 * `session/load` data (`bench/store_bench.ts`) through a real server on the JSONL store, against
 * the least a fork can do in this process: read the log, parse every line and write a copy of it
 * (one write, then an fsync, as the store's create does).
 *
 * @module
 */
import { fixed, ratioOf, ratioText, table } from "./format.ts";
import type { Results } from "./results.ts";
import { type StartServer, STORE_BENCH, type StoreFixture } from "./store_bench.ts";
import { INITIALIZE_PARAMS } from "./rpc_client.ts";
import { median } from "./stats.ts";

/** Median, min and max of some timings (ms). */
export interface ForkSpread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

/** What the fork phase measured. */
export interface ForkResult {
  /** `session/fork` request → response (the copy written, the fork open). */
  readonly fork: ForkSpread;
  /** Reading, parsing and writing a copy of the log in this process. */
  readonly copy: ForkSpread;
  /** Events copied per fork. */
  readonly events: number;
  /** Exit-after-EOF time of the server (ms). */
  readonly exitMs: number;
}

function spreadOf(values: readonly number[]): ForkSpread {
  return { median: median([...values]), min: Math.min(...values), max: Math.max(...values) };
}

/** The baseline: read the log, `JSON.parse` each line, write the copy and flush it. */
async function copyLog(path: string, to: string): Promise<number> {
  const text = await Deno.readTextFile(path);
  let parsed = 0;
  for (const line of text.split("\n")) {
    if (line === "") continue;
    JSON.parse(line);
    parsed++;
  }
  const file = await Deno.open(to, { write: true, createNew: true });
  try {
    await file.write(new TextEncoder().encode(text));
    await file.sync();
  } finally {
    file.close();
  }
  return parsed;
}

/**
 * Forks the 10,000-event session (each fork deleted again, untimed, so that every fork writes a
 * new log beside the same data) and runs the copy baseline, alternating after warm-ups. Works on
 * a copy of the load data directory, so the shared data does not change.
 *
 * @param start Starts our server on a data directory
 * @param fixture The generated data (its `load` session is forked)
 * @param options Warm-ups and timed runs of each side
 * @returns The timings
 */
export async function measureSessionFork(
  start: StartServer,
  fixture: StoreFixture,
  options: { readonly warmups: number; readonly runs: number },
): Promise<ForkResult> {
  const { load } = fixture;
  const dataDir = await Deno.makeTempDir({ prefix: "acp-harness-bench-fork-" });
  try {
    const copied = await new Deno.Command("cp", { args: ["-R", `${load.dataDir}/.`, dataDir] })
      .output();
    if (!copied.success) throw new Error(`cannot copy ${load.dataDir} to ${dataDir}`);
    const server = start(dataDir);
    await server.request("initialize", INITIALIZE_PARAMS);
    const params = { sessionId: load.sessionId, cwd: fixture.workspace, mcpServers: [] };
    const forkOnce = async (): Promise<number> => {
      const sentAt = performance.now();
      const reply = await server.request("session/fork", params);
      const forkId = (reply.result as { sessionId?: unknown } | undefined)?.sessionId;
      if (typeof forkId !== "string") {
        throw new Error(`${server.label}: session/fork did not answer a session id`);
      }
      const elapsed = reply.at - sentAt;
      await server.request("session/delete", { sessionId: forkId });
      return elapsed;
    };
    let copies = 0;
    const copyOnce = async (): Promise<number> => {
      const to = `${dataDir}/copy-${copies++}.jsonl`;
      const startedAt = performance.now();
      const parsed = await copyLog(load.logPath, to);
      const elapsed = performance.now() - startedAt;
      await Deno.remove(to);
      if (parsed !== load.events + 1) throw new Error(`parsed ${parsed} lines of ${load.logPath}`);
      return elapsed;
    };
    for (let i = 0; i < options.warmups; i++) {
      await forkOnce();
      await copyOnce();
    }
    const forks: number[] = [];
    const baseline: number[] = [];
    for (let i = 0; i < options.runs; i++) {
      if (i % 2 === 0) {
        forks.push(await forkOnce());
        baseline.push(await copyOnce());
      } else {
        baseline.push(await copyOnce());
        forks.push(await forkOnce());
      }
    }
    const eofAt = server.closeStdin();
    const exitMs = await server.waitExit() - eofAt;
    return { fork: spreadOf(forks), copy: spreadOf(baseline), events: load.events, exitMs };
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
}

/**
 * The `session/fork` section of the report (no target: the figures and the ratio to the copy).
 *
 * @param run The results
 * @returns The section's Markdown
 */
export function renderSessionForkSection(run: Results): string {
  const { settings } = run;
  const rows = run.runtimes.map((r) => {
    const f = r.sessionFork;
    return [
      r.runtime,
      fixed(f?.fork.median, 1),
      fixed(f?.copy.median, 1),
      ratioText(ratioOf(f?.fork.median, f?.copy.median)),
      fixed(f === undefined ? undefined : f.fork.median / f.events * 1000, 2),
      `${fixed(f?.fork.min, 1)} – ${fixed(f?.fork.max, 1)}`,
      `${fixed(f?.copy.min, 1)} – ${fixed(f?.copy.max, 1)}`,
    ];
  });
  return [
    `### \`session/fork\` of a ${
      STORE_BENCH.loadEvents.toLocaleString("en-US")
    }-event session vs reading, parsing and writing a copy of its log (ms, median of ` +
    `${settings.loadRuns} after ${settings.loadWarmups} warm-up(s))`,
    "",
    table(
      [
        "runtime",
        "session/fork",
        "read + parse + write",
        "ratio",
        "µs per event",
        "fork min – max",
        "copy min – max",
      ],
      rows,
    ),
    "",
    "The session of the `session/load` row, on a copy of its data directory (JSONL store). Ours: " +
    "`session/fork` over stdio, timed from the request to its response: the server reads the " +
    "source's log through the store (no lease), rebuilds the conversation from the copy, opens " +
    "the fork and answers; its log (header and every event in one exclusive create) and index " +
    "line are written right after the answer, as a new session's are (its first prompt waits " +
    "for them); each fork is deleted again, untimed (the delete waits for that write). The baseline is the least a fork can do in this bench process: read the log, " +
    "`JSON.parse` every line, write the text to a new file and fsync it. There is no bare " +
    "agent to compare with (the SDK echo agent has no sessions to fork), so no target: the " +
    "ratio and the cost per event are the figures. The runs alternate between the two sides.",
  ].join("\n");
}
