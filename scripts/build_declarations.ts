/**
 * The type declarations of the npm package's library API: what `mod.ts` exports, in one
 * self-contained `.d.ts` file. The TypeScript compiler emits declarations for the source (with
 * `scripts/tsconfig.declarations.json`) and dts-bundle-generator joins those `mod.ts` reaches into
 * one file; the types it uses from `@agentclientprotocol/sdk` are copied in, since the package has
 * no dependencies (its bundles hold the SDK).
 *
 * @module
 */
import { createRequire } from "node:module";
import type * as Generator from "./tools/node_modules/dts-bundle-generator/dist/bundle-generator.d.ts";

// A build tool of scripts/tools/package.json: Deno resolves bare names only from the root
// manifest, so it is loaded with Node's resolution from there (as scripts/esbuild.ts loads esbuild).
const { generateDtsBundle } = createRequire(new URL("./tools/package.json", import.meta.url))(
  "dts-bundle-generator",
) as typeof Generator;

/**
 * Generates the declarations of `mod.ts`.
 *
 * @param root The repository root, with a trailing slash
 * @returns The text of `mod.d.ts`
 */
export function declarationBundle(root: string): string {
  const [text] = generateDtsBundle(
    [{
      filePath: `${root}mod.ts`,
      libraries: { inlinedLibraries: ["@agentclientprotocol/sdk"] },
      output: { noBanner: true },
    }],
    { preferredConfigPath: `${root}scripts/tsconfig.declarations.json` },
  );
  if (text === undefined) throw new Error("dts-bundle-generator produced no declarations");
  return text;
}
