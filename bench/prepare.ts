/**
 * What a run needs before its phases: `dist/` checked, the bare agent bundled for Node.js, the
 * compiled binaries built, the throughput script and the ceiling file written; and the versions
 * of the runtimes.
 *
 * @module
 */
import { build, stop as stopEsbuild } from "../scripts/esbuild.ts";
import { compileBinary } from "../scripts/compile.ts";
import { runCommand } from "./agent_process.ts";
import {
  AGENT_HOME,
  BARE_BINARY,
  BARE_BUNDLE,
  CEILING_FILE,
  OURS_BINARY,
  ROOT,
  STREAM_SCRIPT,
  TMP,
} from "./paths.ts";
import type { Compiled } from "./results.ts";
import { selected, type Settings } from "./settings.ts";

async function newestMtime(path: string): Promise<number> {
  const info = await Deno.stat(path);
  if (!info.isDirectory) return info.mtime?.getTime() ?? 0;
  let newest = 0;
  for await (const entry of Deno.readDir(path)) {
    newest = Math.max(newest, await newestMtime(`${path}/${entry.name}`));
  }
  return newest;
}

/** A warning when `dist/cli.js` is older than the sources; throws when it is missing. */
async function checkDist(): Promise<string[]> {
  let distMtime: number;
  try {
    distMtime = await newestMtime(`${ROOT}/dist/cli.js`);
  } catch {
    throw new Error("dist/cli.js is missing: run `deno task build` (or `deno task bench`)");
  }
  const sourceMtime = Math.max(
    await newestMtime(`${ROOT}/src`),
    await newestMtime(`${ROOT}/mod.ts`),
  );
  return sourceMtime > distMtime
    ? ["dist/cli.js is older than src/: the Node figures may not match the sources"]
    : [];
}

async function bundleBareAgent(): Promise<void> {
  try {
    await build({
      entryPoints: [`${ROOT}/bench/bare_agent.ts`],
      bundle: true,
      minify: true,
      format: "esm",
      platform: "node",
      target: "node20",
      outfile: BARE_BUNDLE,
      legalComments: "none",
      logLevel: "warning",
    });
  } finally {
    await stopEsbuild();
  }
}

async function compileBinaries(settings: Settings): Promise<Compiled> {
  try {
    if (!selected(settings, "builds")) throw new Error("not built: --only leaves out the builds");
    return {
      ours: await compileBinary({ outfile: OURS_BINARY }),
      bare: await compileBinary({ outfile: BARE_BINARY, entry: "bench/bare_agent.ts" }),
    };
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** The scripted model's steps for the throughput phase, and the client-ceiling file. */
async function writeStreamFiles(settings: Settings): Promise<void> {
  const words = Array.from({ length: settings.chunks }, (_, i) => `w${i} `);
  const steps = Array.from({ length: settings.throughputRuns + 1 }, () => ({ text: words }));
  await Deno.writeTextFile(STREAM_SCRIPT, JSON.stringify(steps));
  const notification = (i: number): string =>
    JSON.stringify({
      jsonrpc: "2.0",
      method: "session/update",
      params: {
        sessionId: crypto.randomUUID(),
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `w${i} ` } },
      },
    });
  const lines = Array.from({ length: settings.chunks }, (_, i) => notification(i));
  lines.push(JSON.stringify({ jsonrpc: "2.0", id: 0, result: { stopReason: "end_turn" } }));
  await Deno.writeTextFile(CEILING_FILE, lines.join("\n") + "\n");
}

/** Prepares a run; resolves with its warnings and the compiled binaries (or why not built). */
export async function prepare(
  settings: Settings,
): Promise<{ warnings: string[]; compiled: Compiled }> {
  const warnings = await checkDist();
  await Deno.mkdir(TMP, { recursive: true });
  await Deno.remove(AGENT_HOME, { recursive: true }).catch(() => {});
  await Deno.mkdir(AGENT_HOME, { recursive: true });
  await bundleBareAgent();
  const compiled = await compileBinaries(settings);
  if (typeof compiled === "string") {
    warnings.push(`the compiled binaries could not be built: ${compiled.split("\n")[0]}`);
  }
  await writeStreamFiles(settings);
  return { warnings, compiled };
}

/** The first line a `--version` run prints. */
export async function versionOf(command: string | undefined): Promise<string> {
  if (command === undefined) return "not found";
  try {
    const { stdout } = await runCommand(command, ["--version"]);
    return stdout.trim().split("\n")[0] ?? "unknown";
  } catch {
    return "unavailable";
  }
}
