/**
 * Bundles the Node.js entry point into minified ESM, `dist/cli.js`, runnable with
 * `node dist/cli.js` on Node.js 20+. One bundle starts much faster than loading the SDK and zod
 * module by module. Code loaded on demand (the MCP client, for sessions with MCP servers) goes in
 * chunks under `dist/chunks/`, so start-up does not read it.
 *
 * With `--package`, or under `npm pack` / `npm publish` (npm runs `prepare`, which runs this,
 * before packing), it also builds what the npm package exports: the
 * library API of `mod.ts` as ESM, `dist/mod.js` (its lazy parts in `dist/chunks/` too), and its
 * type declarations in one file, `dist/mod.d.ts` (see `scripts/build_declarations.ts`).
 *
 * @module
 */
import { rm, writeFile } from "node:fs/promises";
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
    // `ws` (in the chunk of the Node.js HTTP listener) is CommonJS and requires Node.js built-ins:
    // in ESM output that `require` needs defining. The banner heads every output file.
    banner: {
      js: [
        "#!/usr/bin/env node",
        'import { createRequire as __acpCreateRequire } from "node:module";',
        "const require = __acpCreateRequire(import.meta.url);",
      ].join("\n"),
    },
    legalComments: "none",
    logLevel: "warning",
  };
}

/**
 * The esbuild options of the library bundle, `mod.js`: the exports of `mod.ts` with every
 * dependency inside, for Node.js 20+ and Bun. `import.meta.main` is defined as `false`, so
 * importing the bundle never starts the command line (and the runtime entry points are left out).
 *
 * @param root The repository root, with a trailing slash
 * @param outdir Where `mod.js` and `chunks/` go
 * @returns The options
 */
export function libraryBuildOptions(root: string, outdir: string): BuildOptions {
  return {
    entryPoints: { mod: `${root}mod.ts` },
    bundle: true,
    splitting: true,
    minify: true,
    // Error classes and the like keep their names in stack traces and `constructor.name`.
    keepNames: true,
    format: "esm",
    platform: "node",
    target: "node20",
    outdir,
    chunkNames: "chunks/[name]-[hash]",
    define: { "import.meta.main": "false" },
    legalComments: "none",
    logLevel: "warning",
  };
}

if (import.meta.main) {
  const root = new URL("..", import.meta.url).pathname;
  // `npm pack` and `npm publish` run `prepare` too: what is packed needs the library build.
  const npmCommand = Deno.env.get("npm_command");
  const forPackage = Deno.args.includes("--package") || npmCommand === "pack" ||
    npmCommand === "publish";
  // Chunks of an earlier build would pile up (their names carry content hashes). The compiled
  // binary (dist/bin, `deno task compile`) is not this build's and stays.
  for (const output of ["chunks", "cli.js", "mod.js", "mod.d.ts"]) {
    await rm(`${root}dist/${output}`, { recursive: true, force: true });
  }
  await build(cliBuildOptions(root, `${root}dist`));
  if (forPackage) {
    await build(libraryBuildOptions(root, `${root}dist`));
    // The TypeScript compiler is loaded only here: the plain build stays quick.
    const { declarationBundle } = await import("./build_declarations.ts");
    await writeFile(`${root}dist/mod.d.ts`, declarationBundle(root));
  }
}
