/**
 * How to start the server on each runtime, for tests that spawn real processes.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The repository root. */
export const ROOT: string = fileURLToPath(new URL("../../", import.meta.url));

const bin = (name: string): string => `${ROOT}node_modules/.bin/${name}`;

/** A runtime and the command line that starts the server on it. */
export interface Runtime {
  readonly name: "deno" | "node" | "bun";
  readonly command: string;
  readonly args: readonly string[];
}

/** The three runtimes: Deno and Bun run the source, Node.js runs the bundled build. */
export const RUNTIMES: readonly Runtime[] = [
  { name: "deno", command: bin("deno"), args: ["run", "-A", `${ROOT}mod.ts`] },
  { name: "node", command: "node", args: [`${ROOT}dist/cli.js`] },
  { name: "bun", command: bin("bun"), args: [`${ROOT}mod.ts`] },
];

if (!existsSync(`${ROOT}dist/cli.js`)) {
  throw new Error("dist/cli.js is missing: run `deno task build` (deno task test does)");
}

/** The command line of a runtime as one shell-like string, for clients such as acpx. */
export function commandLine(runtime: Runtime, extra: readonly string[] = []): string {
  return [runtime.command, ...runtime.args, ...extra].map((part) => JSON.stringify(part)).join(" ");
}
