/**
 * Bundles the CLI entry point into minified ESM, `dist/cli.js`, runnable with `node dist/cli.js`
 * on Node.js 20+ (and with `deno run -A` or `bun`: each runtime's own entry is a chunk of its own).
 * One bundle starts much faster than loading the SDK and zod module by module. Code loaded on demand (the session side of a connection, the built-in tools,
 * the MCP client, the HTTP transport, ...) goes in chunks under `dist/chunks/`, so start-up does
 * not read it; what start-up does read is `cli.js` and one shared chunk (see
 * {@link startupChunkPlugin}).
 *
 * With `--package`, or under `npm pack` / `npm publish` (npm runs `prepack`, which runs this
 * before packing; `prepare` runs it after `npm install` in a clone, and is left out of the packed
 * manifest by `scripts/pack_manifest.ts`), it also builds what the npm package exports, the same
 * entries as JSR's (see {@link PACKAGE_ENTRIES}): each as ESM, `dist/<name>.js` (the code they
 * share and their lazy parts in `dist/chunks/` too), with its type declarations,
 * `dist/<name>.d.ts` (see `scripts/build_declarations.ts`).
 *
 * @module
 */
import { readFile, rm, writeFile } from "node:fs/promises";
import { build, type BuildOptions, type Plugin } from "./esbuild.ts";

/**
 * The entries of the npm package, by subpath: the source each is built from (the file that
 * `deno.json` exports at that subpath) and its name in `dist/`. `./cli` is `cli_main`, as
 * `dist/cli.js` is the bin (which runs the program when loaded; the entry only exports `main`).
 */
export const PACKAGE_ENTRIES: Readonly<
  Record<string, { readonly source: string; readonly output: string }>
> = {
  ".": { source: "mod.ts", output: "mod" },
  "./server": { source: "server.ts", output: "server" },
  "./llm": { source: "llm.ts", output: "llm" },
  "./tools": { source: "tools.ts", output: "tools" },
  "./store": { source: "store.ts", output: "store" },
  "./host": { source: "host.ts", output: "host" },
  "./stdio": { source: "stdio.ts", output: "stdio" },
  "./cli": { source: "cli.ts", output: "cli_main" },
};

/**
 * Keeps the code start-up runs in one shared chunk. esbuild puts each module in a chunk named by
 * the set of entry points (the CLI and every module loaded by `import()`) that reach it, so the
 * code the CLI shares with a few lazy modules would be spread over a dozen small chunks, all read
 * at start-up (each file costs Node.js about half a millisecond). This plugin adds an
 * `import "<startupRoot>"` to every module the CLI loads by `import()`: every module start-up
 * loads is then reached by every entry point, and lands in one chunk. The import changes nothing
 * when it runs (start-up has loaded that module already). It acts only on builds of `entry`.
 *
 * @param entry The CLI entry point (absolute path)
 * @param startupRoot The module that statically imports what start-up needs (absolute path; no
 *   top-level await, which `entry` has)
 * @returns The plugin
 */
export function startupChunkPlugin(entry: string, startupRoot: string): Plugin {
  return {
    name: "startup-chunk",
    setup(plugin): void {
      const options = plugin.initialOptions;
      const entries = Object.values(options.entryPoints ?? {}) as unknown[];
      if (!entries.includes(entry)) return;
      let lazy = new Set<string>();
      plugin.onStart(async () => {
        // The modules loaded by `import()`, from a first pass with the same options.
        const { metafile } = await build({
          ...options,
          plugins: [],
          write: false,
          metafile: true,
          logLevel: "silent",
        });
        const cwd = options.absWorkingDir ?? Deno.cwd();
        lazy = new Set();
        for (const input of Object.values(metafile.inputs)) {
          for (const imported of input.imports) {
            if (imported.kind === "dynamic-import" && !imported.external) {
              lazy.add(imported.path.startsWith("/") ? imported.path : `${cwd}/${imported.path}`);
            }
          }
        }
      });
      plugin.onLoad({ filter: /\.[cm]?[jt]s$/ }, async (args) => {
        if (!lazy.has(args.path)) return undefined;
        const source = await readFile(args.path, "utf8");
        return {
          contents: `${source}\nimport ${JSON.stringify(startupRoot)};\n`,
          loader: /\.[cm]?ts$/.test(args.path) ? "ts" : "js",
        };
      });
    },
  };
}

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
    plugins: [
      startupChunkPlugin(`${root}scripts/cli_entry.ts`, `${root}src/runtime/node.ts`),
    ],
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
 * The esbuild options of the library bundles, one per entry of {@link PACKAGE_ENTRIES}
 * (`mod.js`, `llm.js`, …): the exports of each entry with every dependency inside, for Node.js
 * 20+ and Bun. `import.meta.main` is defined as `false`, so importing a bundle never starts the
 * command line (`./cli` runs it when its `main` is called).
 *
 * @param root The repository root, with a trailing slash
 * @param outdir Where the bundles and `chunks/` go
 * @returns The options
 */
export function libraryBuildOptions(root: string, outdir: string): BuildOptions {
  return {
    entryPoints: Object.fromEntries(
      Object.values(PACKAGE_ENTRIES).map((entry) => [entry.output, `${root}${entry.source}`]),
    ),
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
  // `npm pack` and `npm publish` run `prepack`: what is packed needs the library build.
  const npmCommand = Deno.env.get("npm_command");
  const forPackage = Deno.args.includes("--package") || npmCommand === "pack" ||
    npmCommand === "publish";
  // Chunks of an earlier build would pile up (their names carry content hashes). The compiled
  // binary (dist/bin, `deno task compile`) is not this build's and stays.
  // The TypeScript compiler is loaded only by `declarationFiles`: the plain build stays quick.
  const { declarationFiles, SHARED_DECLARATIONS } = await import("./build_declarations.ts");
  const outputs = ["chunks", "cli.js", SHARED_DECLARATIONS];
  for (const { output } of Object.values(PACKAGE_ENTRIES)) {
    outputs.push(`${output}.js`, `${output}.d.ts`);
  }
  for (const output of outputs) {
    await rm(`${root}dist/${output}`, { recursive: true, force: true });
  }
  await build(cliBuildOptions(root, `${root}dist`));
  if (forPackage) {
    await build(libraryBuildOptions(root, `${root}dist`));
    const files = await declarationFiles(root, Object.values(PACKAGE_ENTRIES));
    for (const [name, text] of files) await writeFile(`${root}dist/${name}`, text);
  }
}
