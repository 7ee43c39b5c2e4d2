/**
 * Runs Bun's real binary from this checkout's `node_modules` with the given arguments:
 * `npx deno task bun mod.ts --stream`. The `bun` npm package's own `node_modules/.bin/bun` is a
 * stub until its install script has run (npm 11 does not run it unless approved; Deno's
 * `node_modules` never does), so `npx bun` fails after the quick start; the platform package
 * holds the binary all the same (`tests/_helpers/runtime_binaries.ts` finds it).
 *
 * Standard input and output are the binary's own (inherited), SIGINT and SIGTERM are passed on,
 * and its exit code is this one's.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { constants } from "node:os";
import process from "node:process";
import { findBun } from "../tests/_helpers/runtime_binaries.ts";

if (import.meta.main) {
  const root = new URL("..", import.meta.url).pathname;
  const child = spawn(findBun(root), Deno.args, { stdio: "inherit" });
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => child.kill(signal));
  }
  child.on("error", (error) => {
    // deno-lint-ignore no-console
    console.error(`run_bun: cannot start Bun: ${error.message}`);
    process.exit(127);
  });
  child.on("exit", (code, signal) => {
    process.exit(code ?? 128 + (signal === null ? 0 : constants.signals[signal] ?? 0));
  });
}
