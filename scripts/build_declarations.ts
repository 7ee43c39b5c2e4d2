/**
 * The type declarations of the npm package's entries (`.`, `./llm`, `./store`, …). The TypeScript
 * compiler emits declarations for the source (with `scripts/tsconfig.declarations.json`) and
 * dts-bundle-generator joins everything the entries reach into one self-contained file,
 * `_declarations.d.ts`; the types it uses from `@agentclientprotocol/sdk` are copied in, since the
 * package has no dependencies (its bundles hold the SDK). Each entry's own `.d.ts` then re-exports
 * its names from that file. One file for all, rather than a bundle per entry: a class (with its
 * `#private` fields) declared twice would be two types, and a `ModelCatalog` from `./llm` would
 * not fit the `catalog` of `createAgentServer` from `.`.
 *
 * @module
 */
import { createRequire } from "node:module";
import { rm, writeFile } from "node:fs/promises";
import type * as Generator from "./tools/node_modules/dts-bundle-generator/dist/bundle-generator.d.ts";
import type * as TypeScript from "./tools/node_modules/typescript/lib/typescript.d.ts";

// Build tools of scripts/tools/package.json: Deno resolves bare names only from the root
// manifest, so they are loaded with Node's resolution from there (as scripts/esbuild.ts loads
// esbuild).
const requireTool = createRequire(new URL("./tools/package.json", import.meta.url));

/** The file every entry's declarations re-export from, in `dist/`. */
export const SHARED_DECLARATIONS = "_declarations.d.ts";

/** One entry of the package: its source (from the root) and its output name in `dist/`. */
export interface DeclarationEntry {
  /** The source file, relative to the repository root (`llm.ts`). */
  readonly source: string;
  /** The output's name without extension (`llm`: `dist/llm.d.ts`). */
  readonly output: string;
}

/**
 * Generates the declarations of the package's entries.
 *
 * @param root The repository root, with a trailing slash
 * @param entries The entries
 * @returns The files to write into `dist/`, by name: {@link SHARED_DECLARATIONS} and one
 *   `<output>.d.ts` per entry
 */
export async function declarationFiles(
  root: string,
  entries: readonly DeclarationEntry[],
): Promise<Map<string, string>> {
  const config = `${root}scripts/tsconfig.declarations.json`;
  // The union of the entries, as the one root the bundle is generated from (a module of `export *`
  // may name a binding twice when both are the same, as here).
  const union = `${root}dist/_declarations.ts`;
  await writeFile(
    union,
    entries.map((entry) => `export * from "../${entry.source}";\n`).join(""),
  );
  try {
    const { generateDtsBundle } = requireTool("dts-bundle-generator") as typeof Generator;
    const [text] = generateDtsBundle(
      [{
        filePath: union,
        libraries: { inlinedLibraries: ["@agentclientprotocol/sdk"] },
        output: { noBanner: true },
      }],
      { preferredConfigPath: config },
    );
    if (text === undefined) throw new Error("dts-bundle-generator produced no declarations");
    const files = new Map<string, string>([[SHARED_DECLARATIONS, text]]);
    const names = exportedNames(config, entries.map((entry) => `${root}${entry.source}`));
    const shared = `./${SHARED_DECLARATIONS.replace(/\.d\.ts$/, ".js")}`;
    entries.forEach((entry, index) => {
      const list = (names[index] ?? []).map((name) => `  ${name},\n`).join("");
      files.set(`${entry.output}.d.ts`, `export {\n${list}} from "${shared}";\n`);
    });
    return files;
  } finally {
    await rm(union, { force: true });
  }
}

/** The names each of `files` exports (values and types), sorted, by the compiler's reading. */
function exportedNames(config: string, files: readonly string[]): string[][] {
  const ts = requireTool("typescript") as typeof TypeScript;
  const read = ts.readConfigFile(config, (path) => ts.sys.readFile(path));
  const parsed = ts.parseJsonConfigFileContent(
    read.config,
    ts.sys,
    config.slice(0, config.lastIndexOf("/")),
  );
  const program = ts.createProgram([...files], parsed.options);
  const checker = program.getTypeChecker();
  return files.map((file) => {
    const source = program.getSourceFile(file);
    const module = source && checker.getSymbolAtLocation(source);
    if (!module) throw new Error(`Cannot read the exports of ${file}`);
    return checker.getExportsOfModule(module).map((symbol) => symbol.getName()).sort();
  });
}
