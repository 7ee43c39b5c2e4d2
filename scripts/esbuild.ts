/**
 * esbuild, for the build script, the tests and the bench. esbuild is a build tool, so it is in
 * `scripts/tools/package.json` (installed by `deno task tools`), not in the root manifest whose
 * packages `deno run -A mod.ts` installs. Deno resolves a bare `"esbuild"` only from the root
 * manifest, so it is loaded with Node's resolution from `scripts/tools/node_modules`, and its types
 * are named by path. One module for everyone also means one esbuild service to `stop()`.
 *
 * @example
 * ```ts ignore
 * import { build, stop } from "../scripts/esbuild.ts";
 * ```
 *
 * @module
 */
import { createRequire } from "node:module";
import type * as Esbuild from "./tools/node_modules/esbuild/lib/main.d.ts";

const esbuild = createRequire(new URL("./tools/package.json", import.meta.url))(
  "esbuild",
) as typeof Esbuild;

/** esbuild's `build` (see its documentation). */
export const build: typeof Esbuild.build = esbuild.build;
/** esbuild's `stop`: ends its service process, so that the caller can exit. */
export const stop: typeof Esbuild.stop = esbuild.stop;
export type { BuildOptions, Metafile, Plugin } from "./tools/node_modules/esbuild/lib/main.d.ts";
