/**
 * esbuild, for the files outside `scripts/` that use it (the tests and the bench). esbuild is a
 * build tool, so it is in `scripts/package.json` (installed by `deno task tools`), not in the root
 * manifest whose packages `deno run -A mod.ts` installs; a bare `"esbuild"` resolves from the
 * `node_modules` beside the importing file's nearest manifest, so only files under `scripts/` can
 * import it by name. One module for everyone also means one esbuild service to `stop()`.
 *
 * @example
 * ```ts ignore
 * import { build, stop } from "../scripts/esbuild.ts";
 * ```
 *
 * @module
 */
export { build, stop } from "esbuild";
export type { BuildOptions, Metafile, Plugin } from "esbuild";
