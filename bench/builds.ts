/**
 * The start-up by build phase: every way of running ours (the compiled binary, each runtime,
 * the bundle on Deno and Bun) and the bare agent run the same ways, in one rotation.
 *
 * @module
 */
import { printError } from "../tests/_helpers/print.ts";
import { agentCommand, AgentProcess, killAllChildren } from "./agent_process.ts";
import { BARE_BUNDLE, BUN, DENO, NODE } from "./paths.ts";
import type { BuildLine, BuildStartup, Compiled } from "./results.ts";
import type { Kind, Runtime, Settings } from "./settings.ts";
import { type StartupRun, startupRun } from "./startup.ts";
import { median } from "./stats.ts";

/** Ours run every way (the compiled binary first), then the bare agent the same ways. */
function buildLines(settings: Settings, compiled: Compiled): BuildLine[] {
  const lines: BuildLine[] = [];
  const ours = agentCommand({ runtime: "deno", kind: "ours", workload: "echo" }).env;
  const binary = (kind: Kind, label: string): void => {
    if (typeof compiled === "string") return;
    const { path, bytes } = compiled[kind];
    const env = kind === "ours" ? ours : {};
    lines.push({ label, key: "binary", kind, line: { command: path, args: [], env }, bytes });
  };
  const each = (kind: Kind, labels: Readonly<Record<Runtime, string>>): void => {
    for (const runtime of settings.runtimes) {
      if (runtime === "node" && NODE === undefined) continue;
      const line = agentCommand({ runtime, kind, workload: "echo" });
      lines.push({ label: labels[runtime], key: runtime, kind, line });
    }
  };
  // The bundles on Deno and Bun, against the bare agent's bundle run the same way.
  const bundles = (kind: Kind, entry: string, label: (runtime: string) => string): void => {
    const env = kind === "ours" ? ours : {};
    if (settings.runtimes.includes("deno")) {
      lines.push({
        label: label("deno run -A"),
        key: "deno bundle",
        kind,
        line: { command: DENO, args: ["run", "-A", entry], env },
      });
    }
    if (settings.runtimes.includes("bun")) {
      lines.push({
        label: label("bun"),
        key: "bun bundle",
        kind,
        line: { command: BUN, args: [entry], env },
      });
    }
  };
  binary("ours", "compiled binary (`scripts/compile.ts`)");
  each("ours", { deno: "`deno run -A mod.ts`", node: "`node dist/cli.js`", bun: "`bun mod.ts`" });
  bundles("ours", "dist/cli.js", (run) => `\`${run} dist/cli.js\``);
  binary("bare", "bare: compiled binary");
  each("bare", {
    deno: "bare: `deno run -A bare_agent.ts`",
    node: "bare: `node` bundle",
    bun: "bare: `bun bare_agent.ts`",
  });
  bundles("bare", BARE_BUNDLE, (run) => `bare: \`${run}\` bundle`);
  return lines;
}

/**
 * The start-up of every build side by side: the builds take turns run by run (the order rotating
 * each run), so they share the machine's noise.
 */
async function measureBuildStartup(
  settings: Settings,
  compiled: Compiled,
): Promise<BuildStartup[]> {
  const lines = buildLines(settings, compiled);
  for (const build of lines) await startupRun(new AgentProcess(build.label, build.line)); // warm-up
  const runs: StartupRun[][] = lines.map(() => []);
  for (let i = 0; i < settings.startupRuns; i++) {
    for (let j = 0; j < lines.length; j++) {
      const index = (i + j) % lines.length;
      const build = lines[index] as BuildLine;
      runs[index]?.push(await startupRun(new AgentProcess(build.label, build.line)));
    }
  }
  const ratiosOf = (build: BuildLine, samples: readonly StartupRun[]): number[] | undefined => {
    const bareIndex = lines.findIndex((l) => l.kind === "bare" && l.key === build.key);
    if (build.kind !== "ours" || bareIndex < 0) return undefined;
    const bare = runs[bareIndex] ?? [];
    return samples.map((run, i) => run.sessionNewMs / (bare[i]?.sessionNewMs ?? Number.NaN));
  };
  return lines.map((build, index) => {
    const samples = runs[index] ?? [];
    const ratios = ratiosOf(build, samples);
    const init = samples.map((run) => run.initializeMs);
    const rss = samples.flatMap((run) => run.rssMib === undefined ? [] : [run.rssMib]);
    return {
      ...build,
      initializeMs: median(init),
      minMs: Math.min(...init),
      maxMs: Math.max(...init),
      sessionNewMs: median(samples.map((run) => run.sessionNewMs)),
      ...(ratios === undefined ? {} : { sessionNewRatios: ratios }),
      exitMs: median(samples.map((run) => run.exitMs)),
      rssMib: rss.length === 0 ? undefined : median(rss),
    };
  });
}

/** Runs {@link measureBuildStartup}; resolves with its rows, or why it failed. */
export async function measureBuildStartupPhase(
  settings: Settings,
  compiled: Compiled,
): Promise<BuildStartup[] | string> {
  const started = performance.now();
  printError("[bench] start-up by build…");
  try {
    return await measureBuildStartup(settings, compiled);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    printError(`[bench] start-up by build failed: ${message}`);
    return message;
  } finally {
    killAllChildren();
    printError(
      `[bench] start-up by build took ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }
}
