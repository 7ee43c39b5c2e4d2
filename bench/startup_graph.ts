/**
 * The start-up module graph of `mod.ts` from `deno info --json`, shared by the MCP and HTTP
 * sections: which modules `deno run mod.ts` / `bun mod.ts` load at start-up, and the lazy
 * `import()`s that lead to a given kind of code.
 *
 * The start-up graph is the closure of `mod.ts` over static imports plus the `import()`s of
 * `mod.ts` and `src/runtime/main.ts` (the entry and the runtime dispatch, run at every start);
 * every other `import()` is lazy. Lazy imports written `import("./x" + ".ts")` stay out of the
 * graph `deno info` (and `deno run`) builds (see src/runtime/main.ts): they are found in the
 * sources, and what they lead to is read with `deno info` of their target.
 *
 * @module
 */
import { build, type Metafile, stop as stopEsbuild } from "../scripts/esbuild.ts";
import { cliBuildOptions } from "../scripts/build.ts";

interface DenoInfoDependency {
  readonly specifier: string;
  readonly isDynamic?: boolean;
  readonly code?: { readonly specifier?: string };
}

/** One module of `deno info --json`. */
export interface DenoInfoModule {
  readonly specifier: string;
  readonly size?: number;
  readonly dependencies?: readonly DenoInfoDependency[];
}

interface DenoInfo {
  readonly roots: readonly string[];
  readonly modules: readonly DenoInfoModule[];
  readonly redirects: Readonly<Record<string, string>>;
}

/** What {@link sourceStartupGraph} finds. */
export interface SourceStartupGraph {
  /** The specifiers loaded at start-up. */
  readonly startup: ReadonlySet<string>;
  /** Every module of the graph, by specifier. */
  readonly modules: ReadonlyMap<string, DenoInfoModule>;
  /** `importer → specifier` of each lazy `import()` from start-up code that leads to target code. */
  readonly lazyEdges: readonly string[];
  /** Specifiers as imported → as in `modules` (`npm:zod` → `npm:/zod@4.6.7`). */
  readonly redirects: Readonly<Record<string, string>>;
}

/**
 * Reads the start-up graph of `mod.ts`.
 *
 * @param root The repository root
 * @param deno The Deno executable
 * @param isTarget Whether a specifier is of the kind of code whose lazy paths are wanted
 * @returns The start-up modules, every module, and the lazy edges to target code
 */
export async function sourceStartupGraph(
  root: string,
  deno: string,
  isTarget: (specifier: string) => boolean,
): Promise<SourceStartupGraph> {
  const info = await denoInfo(root, deno, "mod.ts");
  const modules = new Map(info.modules.map((module) => [module.specifier, module]));
  const redirects: Record<string, string> = { ...info.redirects };
  const entries = new Set([`file://${root}/mod.ts`, `file://${root}/src/runtime/main.ts`]);
  // `import("./x" + ".ts")` of each source module, resolved, with the graph of its target added.
  const hidden = new Map<string, { specifier: string; target: string }[]>();
  const hiddenImports = async (
    specifier: string,
  ): Promise<{ specifier: string; target: string }[]> => {
    let found = hidden.get(specifier);
    if (found) return found;
    found = [];
    hidden.set(specifier, found);
    if (!specifier.startsWith("file:")) return found;
    // Comments out (a block comment may show the idiom); a comment inside a string is not ours.
    const source = (await Deno.readTextFile(new URL(specifier)))
      .replace(/\/\*[\s\S]*?\*\//g, "")
      .replace(/^\s*\/\/.*$/gm, "");
    for (const match of source.matchAll(/import\(\s*"([^"]*)"\s*\+\s*"([^"]*)"\s*\)/g)) {
      const written = `${match[1]}${match[2]}`;
      const target = new URL(written, specifier).href;
      found.push({ specifier: written, target });
      if (!modules.has(target)) {
        const more = await denoInfo(root, deno, target);
        for (const module of more.modules) modules.set(module.specifier, module);
        Object.assign(redirects, more.redirects);
      }
    }
    return found;
  };
  const closure = async (roots: readonly string[], followLazy: boolean): Promise<Set<string>> => {
    const seen = new Set<string>();
    const stack = [...roots];
    while (stack.length > 0) {
      const raw = stack.pop() as string;
      const specifier = redirects[raw] ?? raw;
      if (seen.has(specifier)) continue;
      seen.add(specifier);
      for (const dependency of modules.get(specifier)?.dependencies ?? []) {
        const target = dependency.code?.specifier;
        if (target === undefined) continue;
        if (dependency.isDynamic && !followLazy && !entries.has(specifier)) continue;
        stack.push(target);
      }
      if (followLazy) stack.push(...(await hiddenImports(specifier)).map((edge) => edge.target));
    }
    return seen;
  };
  const startup = await closure(info.roots, false);
  const lazyEdges: string[] = [];
  for (const specifier of startup) {
    const lazy = (modules.get(specifier)?.dependencies ?? [])
      .filter((dependency) => dependency.isDynamic && !entries.has(specifier))
      .flatMap((dependency) =>
        dependency.code?.specifier === undefined
          ? []
          : [{ specifier: dependency.specifier, target: dependency.code.specifier }]
      );
    for (const edge of [...lazy, ...await hiddenImports(specifier)]) {
      if ([...await closure([edge.target], true)].some(isTarget)) {
        lazyEdges.push(`${specifier.replace(`file://${root}/`, "")} → ${edge.specifier}`);
      }
    }
  }
  return { startup, modules, lazyEdges, redirects };
}

/** `deno info --json` of a module. */
async function denoInfo(root: string, deno: string, module: string): Promise<DenoInfo> {
  const output = await new Deno.Command(deno, {
    args: ["info", "--json", module],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!output.success) {
    throw new Error(`deno info failed: ${new TextDecoder().decode(output.stderr).trim()}`);
  }
  return JSON.parse(new TextDecoder().decode(output.stdout)) as DenoInfo;
}

/** What {@link bundleStartupGraph} finds. */
export interface BundleStartupGraph {
  /** The build's outputs (metafile). */
  readonly outputs: Metafile["outputs"];
  /** The files `node dist/cli.js` reads at start-up: the entry and the chunks it imports statically. */
  readonly startupFiles: ReadonlySet<string>;
  /** The same build with some entry files left out (external): its `cli.js` and its total size. */
  readonly without: { readonly file: string; readonly bytes: number };
}

/**
 * Bundles `dist/cli.js` again in memory with the build script's options and a metafile, and a
 * variant on disk (`.bench-tmp/cli_without_<name>/`) with the files matching `leaveOut` external.
 *
 * @param root The repository root
 * @param name Names the variant
 * @param leaveOut The source files the variant leaves out
 * @returns The outputs, the start-up files and the variant
 */
export async function bundleStartupGraph(
  root: string,
  name: string,
  leaveOut: RegExp,
): Promise<BundleStartupGraph> {
  const withoutDir = `${root}/.bench-tmp/cli_without_${name}`;
  const variantOptions = cliBuildOptions(`${root}/`, withoutDir);
  const [result, variant] = await Promise.all([
    build({
      ...cliBuildOptions(`${root}/`, `${root}/.bench-tmp/cli_metafile`),
      write: false,
      metafile: true,
    }),
    build({
      ...variantOptions,
      metafile: true,
      plugins: [...(variantOptions.plugins ?? []), {
        name: `without-${name}`,
        setup(plugin): void {
          plugin.onResolve({ filter: leaveOut }, (args) => ({ path: args.path, external: true }));
        },
      }],
    }),
  ]).finally(() => stopEsbuild());
  const outputs = result.metafile.outputs;
  const entry = Object.keys(outputs).find((path) => path.endsWith("/cli.js")) as string;
  const startupFiles = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const path = pending.pop() as string;
    if (startupFiles.has(path)) continue;
    startupFiles.add(path);
    for (const imported of outputs[path]?.imports ?? []) {
      if (imported.kind === "import-statement" && !imported.external) pending.push(imported.path);
    }
  }
  return {
    outputs,
    startupFiles,
    without: {
      file: `${withoutDir}/cli.js`,
      bytes: Object.values(variant.metafile.outputs).reduce((sum, out) => sum + out.bytes, 0),
    },
  };
}
