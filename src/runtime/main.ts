/**
 * Starts the CLI on whichever runtime is running it.
 *
 * @returns Never returns normally: the runtime entry exits the process
 */
export async function main(): Promise<void> {
  routeConsoleToStderr();
  const runtime = globalThis as { Deno?: unknown; Bun?: unknown };
  if (runtime.Deno !== undefined) return (await import("./deno.ts")).main();
  if (runtime.Bun !== undefined) return (await import("./bun.ts")).main();
  return (await import("./node.ts")).main();
}

/**
 * Sends `console.log`, `console.info` and `console.debug` to stderr, as `console.error` does. The
 * server's stdout carries protocol frames only; libraries it loads (the MCP client prints
 * diagnostics with `console.debug`) must not write anything else there. The CLI's own output
 * (`--help`, `--version`, `models`) goes through its stdout stream, not the console.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { routeConsoleToStderr } from "./main.ts";
 * const saved = { ...console };
 * const lines: unknown[][] = [];
 * console.error = (...args: unknown[]) => void lines.push(args);
 * try {
 *   routeConsoleToStderr();
 *   console.log("a");
 *   console.debug("b");
 *   assert.deepEqual(lines, [["a"], ["b"]]);
 * } finally {
 *   Object.assign(console, saved);
 * }
 * ```
 */
export function routeConsoleToStderr(): void {
  // The console is what this guards, not a way to print.
  const target = console;
  const toStderr = (...args: unknown[]): void => target.error(...args);
  Object.assign(target, { log: toStderr, info: toStderr, debug: toStderr });
}
