// deno-lint-ignore-file no-console
/**
 * Installs the build tools (`scripts/tools/package.json`, own lock file: esbuild, dts-bundle-generator,
 * TypeScript) when any of them is missing, with `npm ci --prefix scripts/tools`. They are kept out of
 * the root manifest because Deno installs every package of the root manifest on
 * `deno run -A mod.ts` (`"nodeModulesDir": "auto"`), and running the server needs none of them.
 * `deno task build` and `deno task check` run this first; so does `prepare`, after `npm install`.
 *
 *   deno task tools
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { missingPackages } from "./test_setup.ts";

const TOOLS = new URL("./tools/", import.meta.url).pathname;

if (import.meta.main) {
  const missing = missingPackages(TOOLS);
  if (missing.length > 0) {
    console.error(`scripts/tools: installing ${missing.join(", ")} with npm`);
    // npm is a .cmd on Windows, which only a shell runs.
    const result = spawnSync(
      "npm",
      ["ci", "--no-audit", "--no-fund", "--prefix", TOOLS],
      { stdio: "inherit", shell: Deno.build.os === "windows" },
    );
    if (result.error !== undefined || result.status !== 0) {
      console.error(
        "scripts/tools: `npm ci --prefix scripts/tools` failed" +
          (result.error === undefined ? "" : ` (${result.error.message})`) +
          ": the build, check, test, bench and torture tasks need the build tools, and npm to" +
          " install them (npm comes with Node.js 20+); running the server (deno run -A mod.ts)" +
          " does not",
      );
      Deno.exit(1);
    }
  }
}
