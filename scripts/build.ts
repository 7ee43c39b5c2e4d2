/**
 * Bundles the Node.js entry point into one minified ESM file, `dist/cli.js`, runnable with
 * `node dist/cli.js` on Node.js 20+. One bundle starts much faster than loading the SDK and zod
 * module by module.
 *
 * @module
 */
import { build } from "esbuild";

await build({
  stdin: {
    contents: 'import { main } from "./src/runtime/node.ts";\nawait main();\n',
    resolveDir: new URL("..", import.meta.url).pathname,
    sourcefile: "cli.ts",
    loader: "ts",
  },
  bundle: true,
  minify: true,
  format: "esm",
  platform: "node",
  target: "node20",
  outfile: new URL("../dist/cli.js", import.meta.url).pathname,
  banner: { js: "#!/usr/bin/env node" },
  legalComments: "none",
  logLevel: "warning",
});
