/**
 * What the scale section's phases share (`bench/scale_http.ts`, `bench/scale_store.ts`,
 * `bench/scale_long.ts`, `bench/scale_cluster.ts`): an HTTP server started as a child and read
 * off its `listening on <url>` line, `/proc` memory figures, medians with their spread, and the
 * bare HTTP agent bundled for Node.js.
 *
 * @module
 */
import type { ChildProcess } from "node:child_process";
import { build, stop as stopEsbuild } from "../scripts/esbuild.ts";
import { type CommandLine, spawnTracked } from "./agent_process.ts";
import { exitOf } from "./http_clients.ts";
import { BUN, DENO, NODE, ROOT, TMP } from "./paths.ts";
import type { Runtime } from "./settings.ts";
import { summarize, type Summary } from "./stats.ts";

/** The bare HTTP agent bundled for Node.js. */
export const BARE_HTTP_BUNDLE = `${TMP}/bare_http_agent.js`;

/** Median, min and max of a sample (`NaN`s when empty). */
export type ScaleSpread = Summary;

/** Median, min and max of `values`. */
export function spreadOf(values: readonly number[]): ScaleSpread {
  return summarize(values);
}

/** An HTTP server child, listening. */
export interface ListeningServer {
  readonly child: ChildProcess;
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Spawn → `listening on` line (ms). */
  readonly listenMs: number;
  /** Its stderr so far. */
  stderr(): string;
  /** SIGTERM, then the exit (SIGKILL after a bound). */
  stop(): Promise<void>;
}

/**
 * Spawns `line` and waits for its `listening on http://…` line on stderr.
 *
 * @param line What to run
 * @param label Its name in errors
 * @param timeoutMs The bound on the line
 * @returns The server
 */
export async function startListening(
  line: CommandLine,
  label: string,
  timeoutMs = 60_000,
): Promise<ListeningServer> {
  const spawnedAt = performance.now();
  const child = spawnTracked(line);
  let stderr = "";
  child.stderr?.setEncoding("utf8");
  child.stdin?.on("error", () => {});
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new Error(`${label}: no "listening on" within ${timeoutMs} ms: ${stderr.slice(-500)}`),
      );
    }, timeoutMs);
    const onExit = (): void => {
      clearTimeout(timer);
      reject(new Error(`${label} exited before listening: ${stderr.slice(-500)}`));
    };
    child.once("exit", onExit);
    child.stderr?.on("data", (data: string) => {
      stderr = (stderr + data).slice(-20_000);
      const match = /listening on (http:\/\/\S+)\n/.exec(stderr);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        child.off("exit", onExit);
        resolve(match[1]);
      }
    });
  });
  return {
    child,
    url,
    listenMs: performance.now() - spawnedAt,
    stderr: () => stderr,
    async stop(): Promise<void> {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = exitOf(child, label, 15_000);
      child.kill("SIGTERM");
      await exited.catch(() => child.kill("SIGKILL"));
    },
  };
}

/** A field of `/proc/<pid>/status` in MiB (`VmRSS`, `VmHWM`), or undefined without it. */
export async function procMib(pid: number | undefined, field: string): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  try {
    const status = await Deno.readTextFile(`/proc/${pid}/status`);
    const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, "m").exec(status);
    return match?.[1] === undefined ? undefined : Number(match[1]) / 1024;
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) a process has used so far (`/proc/<pid>/stat`), or 0. */
export async function cpuSeconds(pid: number | undefined): Promise<number> {
  if (pid === undefined) return 0;
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime are fields 14 and 15 of the line (11 and 12 after the name), in ticks.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** Bundles `bench/bare_http_agent.ts` for Node.js. */
export async function bundleBareHttpAgent(): Promise<void> {
  try {
    await build({
      entryPoints: [`${ROOT}/bench/bare_http_agent.ts`],
      bundle: true,
      minify: true,
      format: "esm",
      platform: "node",
      target: "node20",
      outfile: BARE_HTTP_BUNDLE,
      legalComments: "none",
      logLevel: "warning",
    });
  } finally {
    await stopEsbuild();
  }
}

/** The bare HTTP agent on `runtime`, streaming from `llmUrl` (the `/v1` base). */
export function bareHttpCommand(runtime: Runtime, llmUrl: string): CommandLine {
  const env = { BARE_LLM_URL: llmUrl };
  switch (runtime) {
    case "deno":
      return { command: DENO, args: ["run", "-A", "bench/bare_http_agent.ts"], env };
    case "node":
      if (NODE === undefined) throw new Error("node is not on PATH");
      return { command: NODE, args: [BARE_HTTP_BUNDLE], env };
    case "bun":
      return { command: BUN, args: ["bench/bare_http_agent.ts"], env };
  }
}

/** Runs `task` on `count` indexes, at most `limit` at a time; resolves with the results. */
export async function inBatches<T>(
  count: number,
  limit: number,
  task: (index: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = [];
  for (let start = 0; start < count; start += limit) {
    const end = Math.min(count, start + limit);
    const batch = Array.from({ length: end - start }, (_, i) => task(start + i));
    results.push(...await Promise.all(batch));
  }
  return results;
}
