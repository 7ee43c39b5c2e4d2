/**
 * The start-up module graph of `mod.ts` from `deno info --json`, shared by the MCP and HTTP
 * sections: which modules `deno run mod.ts` / `bun mod.ts` load at start-up, and the lazy
 * `import()`s that lead to a given kind of code.
 *
 * The start-up graph is the closure of `mod.ts` over static imports plus the `import()`s of
 * `mod.ts` and `src/runtime/main.ts` (the entry and the runtime dispatch, run at every start);
 * every other `import()` is lazy.
 *
 * @module
 */

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
  const output = await new Deno.Command(deno, {
    args: ["info", "--json", "mod.ts"],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!output.success) {
    throw new Error(`deno info failed: ${new TextDecoder().decode(output.stderr).trim()}`);
  }
  const info = JSON.parse(new TextDecoder().decode(output.stdout)) as DenoInfo;
  const modules = new Map(info.modules.map((module) => [module.specifier, module]));
  const entries = new Set([`file://${root}/mod.ts`, `file://${root}/src/runtime/main.ts`]);
  const closure = (roots: readonly string[], followLazy: boolean): Set<string> => {
    const seen = new Set<string>();
    const stack = [...roots];
    while (stack.length > 0) {
      const raw = stack.pop() as string;
      const specifier = info.redirects[raw] ?? raw;
      if (seen.has(specifier)) continue;
      seen.add(specifier);
      for (const dependency of modules.get(specifier)?.dependencies ?? []) {
        const target = dependency.code?.specifier;
        if (target === undefined) continue;
        if (dependency.isDynamic && !followLazy && !entries.has(specifier)) continue;
        stack.push(target);
      }
    }
    return seen;
  };
  const startup = closure(info.roots, false);
  const lazyEdges: string[] = [];
  for (const specifier of startup) {
    for (const dependency of modules.get(specifier)?.dependencies ?? []) {
      const target = dependency.code?.specifier;
      if (!dependency.isDynamic || entries.has(specifier) || target === undefined) continue;
      if ([...closure([target], true)].some(isTarget)) {
        lazyEdges.push(`${specifier.replace(`file://${root}/`, "")} → ${dependency.specifier}`);
      }
    }
  }
  return { startup, modules, lazyEdges };
}
