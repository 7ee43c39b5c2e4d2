/**
 * Lazy imports: how a module stays out of what start-up loads, while every bundler still finds it.
 *
 * Start-up loads only what serving needs before it can answer `initialize` (the list, and the
 * test that guards it, are in `tests/startup_test.ts`); everything else is imported on first use.
 * Such an import is written
 *
 * ```ts ignore
 * lazyImport<typeof Module>(import("./module" + ".ts"))
 * ```
 *
 * with the specifier spelt as a sum of two strings, for this reason: before it runs anything,
 * `deno run` builds the module graph of the main module, and that graph follows every
 * `import("literal")` too. A literal would make Deno read, analyse and resolve (npm packages
 * included) everything the lazy import leads to before the first line runs, which is most of what
 * start-up would save. A sum is not a literal, so the graph stops there; esbuild
 * (`scripts/build.ts`) and `bun build` fold the sum into a literal and bundle the module as
 * before, in a chunk of its own. The `import()` stays at the call site, since a specifier is
 * resolved against the module that imports it; {@link lazyImport} gives the site a name to find
 * it by and the module's type (type-only imports of the module cost nothing at run time).
 *
 * An npm package is imported by its name as a literal (`import("postgres")`), not through this:
 * `deno publish` rewrites only literal names to `npm:` specifiers. Deno then resolves the package
 * before start, but loads it only when the import runs.
 *
 * The loaders built on this live beside their callers, one module per layer where there are
 * several: `src/cli/lazy.ts` (the commands, the tools, the HTTP transport), `src/runtime/lazy.ts`
 * (the HTTP listeners); the lower layers (`src/llm/`, `src/store/`, `src/host/`, the session side
 * of a connection) call it at their one or two sites.
 *
 * @module
 */

/**
 * Marks a lazy import and gives it its module's type: `loading` is an `import("./x" + ".ts")`
 * written at the call site (see the module documentation for why the specifier is a sum).
 *
 * @typeParam T The module's type, `typeof X` of an `import type * as X from "./x.ts"`
 * @param loading The dynamic import
 * @returns The same promise, typed as the module
 *
 * @example Loading a module on first use
 * ```ts
 * import assert from "node:assert/strict";
 * import { lazyImport } from "./lazy_import.ts";
 * import type * as Path from "./path.ts";
 *
 * const loadPath = (): Promise<typeof Path> => lazyImport<typeof Path>(import("./path" + ".ts"));
 * const { isAbsolutePath } = await loadPath();
 * assert.equal(isAbsolutePath("/tmp"), true);
 * ```
 */
export function lazyImport<T>(loading: Promise<unknown>): Promise<T> {
  return loading as Promise<T>;
}
