/**
 * Keeps the server's stdout for protocol frames: the console's stdout methods go to stderr.
 *
 * @module
 */

/**
 * Sends `console.log`, `console.info` and `console.debug` to stderr, as `console.error` does. The
 * server's stdout carries protocol frames only; libraries it loads (the MCP client prints
 * diagnostics with `console.debug`) must not write anything else there. The CLI's own output
 * (`--help`, `--version`, `models`) goes through its stdout stream, not the console.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { routeConsoleToStderr } from "./route_console.ts";
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
