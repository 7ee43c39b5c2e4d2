/**
 * Bundles the Node.js entry point into minified ESM, `dist/cli.js`, runnable with
 * `node dist/cli.js` on Node.js 20+. One bundle starts much faster than loading the SDK and zod
 * module by module. Code loaded on demand (the MCP client, for sessions with MCP servers) goes in
 * chunks under `dist/chunks/`, so start-up does not read it.
 *
 * @module
 */
import { rm } from "node:fs/promises";
import { build, type BuildOptions } from "esbuild";

/**
 * The esbuild options of the build (the bench reuses them to read the bundle's make-up).
 *
 * @param root The repository root, with a trailing slash
 * @param outdir Where `cli.js` and `chunks/` go
 * @returns The options
 */
export function cliBuildOptions(root: string, outdir: string): BuildOptions {
  return {
    entryPoints: { cli: `${root}scripts/cli_entry.ts` },
    bundle: true,
    splitting: true,
    minify: true,
    format: "esm",
    platform: "node",
    target: "node20",
    outdir,
    chunkNames: "chunks/[name]-[hash]",
    banner: { js: "#!/usr/bin/env node" },
    legalComments: "none",
    logLevel: "warning",
  };
}

if (import.meta.main) {
  const root = new URL("..", import.meta.url).pathname;
  // Chunks of an earlier build would pile up (their names carry content hashes).
  await rm(`${root}dist`, { recursive: true, force: true });
  await build(cliBuildOptions(root, `${root}dist`));
}
