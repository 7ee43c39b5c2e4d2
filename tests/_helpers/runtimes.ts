/**
 * How to start the server on each runtime, for tests that spawn real processes.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { findBun, findDeno } from "./runtime_binaries.ts";

/** The repository root. */
export const ROOT: string = fileURLToPath(new URL("../../", import.meta.url));

/**
 * The real Deno binary of `node_modules` (the platform package's, so it is found when install
 * scripts were skipped), else `node_modules/.bin/deno`.
 */
export const DENO: string = findDeno(ROOT);

/**
 * The real Bun binary of `node_modules` (the platform package's: with install scripts skipped,
 * `node_modules/.bin/bun` is a stub that only prints an error), else `node_modules/.bin/bun`.
 */
export const BUN: string = findBun(ROOT);

/** A runtime and the command line that starts the server on it. */
export interface Runtime {
  readonly name: "deno" | "node" | "bun";
  readonly command: string;
  readonly args: readonly string[];
}

/** The three runtimes: Deno and Bun run the source, Node.js runs the bundled build. */
export const RUNTIMES: readonly Runtime[] = [
  { name: "deno", command: DENO, args: ["run", "-A", `${ROOT}mod.ts`] },
  { name: "node", command: "node", args: [`${ROOT}dist/cli.js`] },
  { name: "bun", command: BUN, args: [`${ROOT}mod.ts`] },
];

if (!existsSync(`${ROOT}dist/cli.js`)) {
  throw new Error("dist/cli.js is missing: run `deno task build` (deno task test does)");
}

/** The command line of a runtime as one shell-like string, for clients such as acpx. */
export function commandLine(runtime: Runtime, extra: readonly string[] = []): string {
  return [runtime.command, ...runtime.args, ...extra].map((part) => JSON.stringify(part)).join(" ");
}
