/**
 * The start-up profile for `bench/RESULTS.md`: which modules acp-harness loads before it can
 * answer `initialize` on each runtime, how big they are, and what loading them costs.
 *
 * - Deno (`deno run -A mod.ts`) and Bun (`bun mod.ts`) run the sources: the modules are the
 *   start-up graph of {@link sourceStartupGraph}, grouped by npm package, `node:` built-ins and
 *   source directory. Cost, measured: a generated script (`.bench-tmp/startup_profile.ts`) imports
 *   first what the bare agent imports (the SDK, `node:process`, `node:stream`), then the modules
 *   in dependency order (each after what it imports), a run of modules of one group per
 *   `import()` step, timing each step with `performance.now()`. A group's cost is the sum of its
 *   steps, median of several processes: what loading its own modules took, nothing it imports.
 * - Node.js (`node dist/cli.js`) runs the bundle: the modules are the inputs of the files start-up
 *   reads (`cli.js` and the chunks it imports statically, {@link bundleStartupGraph}), grouped the
 *   same way, with the bytes each puts in those files. Cost, estimated: each group's share of the
 *   bytes times the measured load time of those files (below).
 * - Every runtime, measured: `load` is spawn → the first line of `--version` (which the CLI prints
 *   once every start-up module is loaded, before it reads any config) minus spawn → the first line
 *   of an empty script on the same runtime, medians of interleaved runs.
 *
 * `bench/phases.ts` calls {@link profileStartup} per runtime and `bench/report.ts` puts
 * {@link renderStartupProfiles} into RESULTS.md; `deno run -A bench/startup_profile.ts [runtime...]`
 * prints the same tables (needs `deno task build` for Node.js).
 *
 * @module
 */
import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { print } from "../tests/_helpers/print.ts";
import { table } from "./format.ts";
import { bundleStartupGraph, sourceStartupGraph } from "./startup_graph.ts";
import { median } from "./stats.ts";

/** A runtime acp-harness runs on. */
export type StartupRuntime = "deno" | "node" | "bun";

/** Options of {@link profileStartup}. */
export interface StartupProfileOptions {
  /** The repository root, without a trailing slash. */
  readonly root: string;
  /** The runtime to profile. */
  readonly runtime: StartupRuntime;
  /** That runtime's executable (Node.js: the one that runs `dist/cli.js`). */
  readonly command: string;
  /** The Deno executable (`deno info` reads the source graph). */
  readonly deno: string;
  /**
   * Processes per measurement (the import script, `--version`, the empty script).
   *
   * @default {7}
   */
  readonly runs?: number;
}

/** One group of start-up modules: an npm package, the `node:` built-ins or a source directory. */
export interface StartupModuleGroup {
  /** `@agentclientprotocol/sdk`, `zod`, `node: built-ins`, `src/store`, `(root)` (mod.ts, ...). */
  readonly name: string;
  /** Modules of the group loaded at start-up (an npm package counts as one on Deno and Bun). */
  readonly modules: number;
  /** Their size: source bytes (Deno, Bun), bytes in the start-up files (Node.js); `undefined` for npm packages read from `node_modules` (Deno, Bun). */
  readonly bytes: number | undefined;
  /** Load cost in ms, median: measured (Deno, Bun), estimated from the bytes (Node.js). */
  readonly ms: number;
  /** Whether the bare SDK agent loads it too (so it is not ours to defer). */
  readonly bare: boolean;
}

/** What {@link profileStartup} finds for one runtime. */
export interface StartupProfile {
  /** The runtime. */
  readonly runtime: StartupRuntime;
  /** How group costs were found: an import script per process, or bytes × the measured load. */
  readonly method: "measured" | "estimated";
  /** The groups, in the order they load. */
  readonly groups: readonly StartupModuleGroup[];
  /** Files read at start-up (Node.js: the bundle's); modules of the start-up graph elsewhere. */
  readonly files: number;
  /** Median spawn → first line of `--version`, ms. */
  readonly versionMs: number;
  /** Median spawn → first line of an empty script, ms. */
  readonly emptyMs: number;
  /** Processes per measurement. */
  readonly runs: number;
}

/** What the bare agent loads: its own group costs are the baseline. */
const BARE_IMPORTS = ["@agentclientprotocol/sdk", "node:process", "node:stream"] as const;
const BARE_GROUPS = new Set(["@agentclientprotocol/sdk", "zod", "node: built-ins"]);
const BASELINE = "(what the bare agent imports)";

/**
 * Lists the modules acp-harness loads at start-up on one runtime, grouped, with their size and
 * load cost (see the module documentation for how each is found).
 *
 * @example Profiling Deno
 * ```ts ignore
 * import { profileStartup, renderStartupProfiles } from "./startup_profile.ts";
 * const deno = await profileStartup({ root, runtime: "deno", command: DENO, deno: DENO });
 * print(renderStartupProfiles([deno]));
 * ```
 *
 * @param options The repository, the runtime and how many processes to run
 * @returns The profile
 */
export async function profileStartup(options: StartupProfileOptions): Promise<StartupProfile> {
  const runs = options.runs ?? 7;
  const tmp = `${options.root}/.bench-tmp`;
  await mkdir(tmp, { recursive: true });
  const empty = `${tmp}/startup_profile_empty.mjs`;
  await writeFile(empty, 'console.log("ready");\n');
  const line = (script: string, ...args: string[]): CommandLine => ({
    command: options.command,
    args: options.runtime === "deno" ? ["run", "-A", script, ...args] : [script, ...args],
    cwd: options.root,
  });
  const entry = options.runtime === "node" ? `${options.root}/dist/cli.js` : "mod.ts";
  const [emptyMs = 0, versionMs = 0] = await interleavedMedians(
    [line(empty), line(entry, "--version")],
    runs,
  );
  const loadMs = Math.max(0, versionMs - emptyMs);
  if (options.runtime === "node") {
    return {
      ...await bundleGroups(options.root, loadMs),
      runtime: "node",
      versionMs,
      emptyMs,
      runs,
    };
  }
  const graph = await sourceGroups(options.root, options.deno);
  const script = `${tmp}/startup_profile.ts`;
  await writeFile(script, importScript(graph.plan));
  // A group may load in several steps (between steps of other groups): its cost is their sum.
  const costs = new Map<string, number[]>();
  for (let run = 0; run < runs; run++) {
    const output = await firstLine(line(script));
    const sums = new Map<string, number>();
    for (const [name, ms] of JSON.parse(output.text) as [string, number][]) {
      sums.set(name, (sums.get(name) ?? 0) + ms);
    }
    for (const [name, ms] of sums) costs.set(name, [...costs.get(name) ?? [], ms]);
  }
  const names = new Set([BASELINE, ...graph.plan.map((step) => step.name)]);
  const groups = [...names].map((name) => {
    const found = graph.groups.get(name);
    return {
      name,
      modules: found?.modules ?? BARE_IMPORTS.length,
      bytes: found?.bytes,
      ms: median(costs.get(name) ?? [0]),
      bare: name === BASELINE || BARE_GROUPS.has(name),
    };
  });
  return {
    runtime: options.runtime,
    method: "measured",
    groups,
    files: graph.modules,
    versionMs,
    emptyMs,
    runs,
  };
}

/**
 * The profiles as Markdown for RESULTS.md: one table per runtime, then how they were found.
 *
 * @param profiles What {@link profileStartup} found, one per runtime
 * @returns The section's body (no heading)
 */
export function renderStartupProfiles(profiles: readonly StartupProfile[]): string {
  const parts: string[] = [];
  for (const profile of profiles) {
    const ours = profile.groups.filter((group) => !group.bare);
    const sum = (groups: readonly StartupModuleGroup[]): number =>
      groups.reduce((total, group) => total + group.ms, 0);
    const kib = (bytes: number | undefined): string =>
      bytes === undefined ? "n/a" : (bytes / 1024).toFixed(1);
    const oursBytes = ours.reduce((total, group) => total + (group.bytes ?? 0), 0);
    const rows = profile.groups.map((group) => [
      group.bare ? `${group.name} (bare agent too)` : group.name,
      String(group.modules),
      kib(group.bytes),
      group.ms.toFixed(1),
    ]);
    rows.push([
      "**ours, total**",
      String(ours.reduce((total, group) => total + group.modules, 0)),
      kib(oursBytes),
      `**${sum(ours).toFixed(1)}**`,
    ]);
    const how = profile.method === "measured"
      ? "measured: its modules imported in dependency order in one process"
      : "estimated: its share of the start-up files' bytes × their measured load time";
    parts.push(
      `### ${label(profile.runtime)}`,
      "",
      table(["group", "modules", "KiB", `load ms (${how})`], rows),
      "",
      `Load of the whole start-up graph, measured: spawn → \`--version\` ${
        profile.versionMs.toFixed(1)
      } ms − spawn → an empty script ${profile.emptyMs.toFixed(1)} ms = ${
        (profile.versionMs - profile.emptyMs).toFixed(1)
      } ms (medians of ${profile.runs}); ${
        profile.runtime === "node"
          ? `${profile.files} files read at start-up`
          : `${profile.files} modules in the start-up graph`
      }.`,
      "",
    );
  }
  parts.push(
    "Groups: npm packages, the `node:` built-ins, and source directories (`(root)`: mod.ts, " +
      "server.ts, deno.json). Deno and Bun load the sources: the start-up graph is `deno info " +
      "--json mod.ts` closed over static imports plus the `import()`s of mod.ts and " +
      "src/runtime/main.ts; a generated script imports what the bare agent imports, then the " +
      "modules in dependency order, a run of one group's modules per step, and times each step; " +
      "a group's cost is the sum of its steps (median of the processes). Node.js loads the bundle `dist/cli.js`: the groups are the " +
      "inputs of the files start-up reads (esbuild metafile, the build script's options), their " +
      "bytes as bundled, their cost estimated from those bytes. Everything else (the session " +
      "side, the built-in tools on Node.js, the host's file system and processes, the providers, " +
      "the MCP client, the HTTP transport, re2js, PostgreSQL) is imported on first use.",
  );
  return parts.join("\n");
}

function label(runtime: StartupRuntime): string {
  return runtime === "deno"
    ? "Deno: `deno run -A mod.ts`"
    : runtime === "bun"
    ? "Bun: `bun mod.ts`"
    : "Node.js: `node dist/cli.js`";
}

// ---------------------------------------------------------------------------------------------
// Deno and Bun: the source graph, imported group by group.

interface GroupFacts {
  modules: number;
  bytes: number | undefined;
}

/** One step of the import script: modules of one group, and the specifiers that load them. */
interface ImportStep {
  readonly name: string;
  readonly specifiers: string[];
}

/** The start-up graph of the sources, grouped, and the order to import the groups in. */
async function sourceGroups(
  root: string,
  deno: string,
): Promise<{ groups: Map<string, GroupFacts>; plan: ImportStep[]; modules: number }> {
  const graph = await sourceStartupGraph(root, deno, () => false);
  const resolve = (specifier: string): string => graph.redirects[specifier] ?? specifier;
  const groupOf = (specifier: string): string => {
    if (specifier.startsWith("npm:")) {
      return specifier.replace(/^npm:\/?/, "").replace(/@[^@/]*$/, "");
    }
    if (specifier.startsWith("node:")) return "node: built-ins";
    const path = specifier.replace(`file://${root}/`, "");
    return path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "(root)";
  };
  // Post-order over static imports: a module comes after what it imports.
  const order: string[] = [];
  const seen = new Set<string>();
  const visit = (specifier: string): void => {
    if (seen.has(specifier)) return;
    seen.add(specifier);
    for (const dependency of graph.modules.get(specifier)?.dependencies ?? []) {
      const target = dependency.code?.specifier;
      if (target === undefined || dependency.isDynamic) continue;
      const resolved = resolve(target);
      if (graph.startup.has(resolved)) visit(resolved);
    }
    order.push(specifier);
  };
  for (const specifier of graph.startup) visit(specifier);
  // How the sources name each npm package they import (the import script uses the same names).
  const npmNames = new Map<string, Set<string>>();
  for (const specifier of graph.startup) {
    for (const dependency of graph.modules.get(specifier)?.dependencies ?? []) {
      const target = dependency.code?.specifier;
      if (target === undefined || !resolve(target).startsWith("npm:")) continue;
      const group = groupOf(resolve(target));
      npmNames.set(group, (npmNames.get(group) ?? new Set()).add(dependency.specifier));
    }
  }
  // The steps: runs of modules of one group in that order, so that every step finds what it
  // imports loaded, and its time is its own modules' load.
  const groups = new Map<string, GroupFacts>();
  const plan: ImportStep[] = [];
  for (const specifier of order) {
    const name = groupOf(specifier);
    const facts = groups.get(name) ?? { modules: 0, bytes: undefined };
    facts.modules++;
    const size = graph.modules.get(specifier)?.size;
    if (specifier.startsWith("file:") && size !== undefined) {
      facts.bytes = (facts.bytes ?? 0) + size;
    }
    groups.set(name, facts);
    // JSON modules load with their importer (an import attribute), not on their own.
    if (specifier.endsWith(".json")) continue;
    const importAs = specifier.startsWith("npm:") ? [...npmNames.get(name) ?? []] : [specifier];
    const previous = plan.at(-1);
    if (previous?.name === name) previous.specifiers.push(...importAs);
    else plan.push({ name, specifiers: importAs });
  }
  return { groups, plan, modules: graph.startup.size };
}

/** The script that imports the bare agent's modules, then each step, and prints the times. */
function importScript(plan: readonly ImportStep[]): string {
  const step = (name: string, specifiers: readonly string[]): string =>
    [
      `await Promise.all([${specifiers.map((s) => `import(${JSON.stringify(s)})`).join(", ")}]);`,
      `times.push([${JSON.stringify(name)}, performance.now() - at]);`,
      "at = performance.now();",
    ].join("\n");
  return [
    "// Generated by bench/startup_profile.ts: imports the start-up graph step by step.",
    "const times: [string, number][] = [];",
    "let at = performance.now();",
    step(BASELINE, BARE_IMPORTS),
    ...plan.map(({ name, specifiers }) => step(name, specifiers)),
    "console.log(JSON.stringify(times));",
    "",
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------
// Node.js: the bundle's start-up files.

async function bundleGroups(
  root: string,
  loadMs: number,
): Promise<{ method: "estimated"; groups: StartupModuleGroup[]; files: number }> {
  // No module is left out of the variant: only the metafile of the real build is used here.
  const { outputs, startupFiles } = await bundleStartupGraph(root, "profile", /^$/);
  const facts = new Map<string, { modules: number; bytes: number }>();
  for (const file of startupFiles) {
    for (const [input, info] of Object.entries(outputs[file]?.inputs ?? {})) {
      if (info.bytesInOutput === 0) continue;
      const name = bundleGroupOf(input);
      const group = facts.get(name) ?? { modules: 0, bytes: 0 };
      group.modules++;
      group.bytes += info.bytesInOutput;
      facts.set(name, group);
    }
  }
  const total = [...facts.values()].reduce((sum, group) => sum + group.bytes, 0);
  const groups = [...facts].sort((a, b) => b[1].bytes - a[1].bytes).map(([name, group]) => ({
    name,
    modules: group.modules,
    bytes: group.bytes,
    ms: total === 0 ? 0 : loadMs * group.bytes / total,
    bare: BARE_GROUPS.has(name),
  }));
  return { method: "estimated", groups, files: startupFiles.size };
}

/** The group of a metafile input: its npm package, or its source directory. */
function bundleGroupOf(input: string): string {
  const npm = /node_modules\/(?:\.deno\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(input);
  if (npm) return npm[1] as string;
  return input.includes("/") ? input.slice(0, input.lastIndexOf("/")) : "(root)";
}

// ---------------------------------------------------------------------------------------------
// Processes.

interface CommandLine {
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd: string;
}

/** Spawns a command; resolves with the time to its first stdout line and that line. */
function firstLine(line: CommandLine): Promise<{ ms: number; text: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(line.command, [...line.args], {
      cwd: line.cwd,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    let found: { ms: number; text: string } | undefined;
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (data: string) => {
      out += data;
      const end = out.indexOf("\n");
      if (found === undefined && end >= 0) {
        found = { ms: performance.now() - started, text: out.slice(0, end) };
      }
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (data: string) => err = (err + data).slice(-2000));
    child.once("error", reject);
    child.once("close", (code) => {
      if (found) resolve(found);
      else reject(new Error(`${line.command} ${line.args.join(" ")} exited ${code}: ${err}`));
    });
  });
}

/** Runs the lines in turn, `runs` times (the order rotating), after a warm-up; the medians. */
async function interleavedMedians(
  lines: readonly CommandLine[],
  runs: number,
): Promise<number[]> {
  for (const line of lines) await firstLine(line);
  const times: number[][] = lines.map(() => []);
  for (let run = 0; run < runs; run++) {
    for (let k = 0; k < lines.length; k++) {
      const index = (run + k) % lines.length;
      times[index]?.push((await firstLine(lines[index] as CommandLine)).ms);
    }
  }
  return times.map(median);
}

if (import.meta.main) {
  const { findBun, findDeno } = await import("../tests/_helpers/runtime_binaries.ts");
  const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
  const deno = findDeno(root);
  const asked = Deno.args.length > 0 ? Deno.args : ["deno", "node", "bun"];
  const commands: Record<StartupRuntime, string> = { deno, node: "node", bun: findBun(root) };
  const profiles: StartupProfile[] = [];
  for (const runtime of asked as StartupRuntime[]) {
    profiles.push(await profileStartup({ root, runtime, command: commands[runtime], deno }));
  }
  print(renderStartupProfiles(profiles));
}
