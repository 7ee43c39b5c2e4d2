// deno-lint-ignore-file no-console
/**
 * Installs the third-party clients and MCP servers the tests drive (`tests/clients/`, own
 * manifest and lock) when any of them is missing, so `deno task test` works right after the
 * project's own install. They are installed with npm: one of them (acpx) depends on platform
 * packages at a version that was never published, which npm skips and Deno's installer does not.
 *
 *   deno run -A scripts/test_setup.ts     # deno task test runs it first
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

const CLIENTS = new URL("../tests/clients/", import.meta.url).pathname;

/**
 * The packages of a manifest that are not installed in the `node_modules` beside it.
 *
 * @param dir The directory holding `package.json`
 * @returns The names of the missing packages (empty when all are installed)
 */
export function missingPackages(dir: string): string[] {
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  const names = Object.keys({ ...manifest.dependencies, ...manifest.devDependencies });
  return names.filter((name) => !existsSync(join(dir, "node_modules", name, "package.json")));
}

if (import.meta.main) {
  const missing = missingPackages(CLIENTS);
  if (missing.length > 0) {
    console.error(`tests/clients: installing ${missing.join(", ")} with npm`);
    // npm is a .cmd on Windows, which only a shell runs.
    const result = spawnSync(
      "npm",
      ["install", "--no-audit", "--no-fund", "--prefix", CLIENTS],
      { stdio: "inherit", shell: Deno.build.os === "windows" },
    );
    if (result.error !== undefined || result.status !== 0) {
      console.error(
        "tests/clients: `npm install --prefix tests/clients` failed" +
          (result.error === undefined ? "" : ` (${result.error.message})`) +
          ": the tests that drive third-party clients need it (npm comes with Node.js 20+)",
      );
      Deno.exit(1);
    }
  }
}
