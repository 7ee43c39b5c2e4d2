/**
 * The one place where the test kit, the torture suite and the bench write a report line to the
 * terminal, so that none of them needs a file-wide `no-console` exemption.
 *
 * @module
 */

/**
 * Writes `parts` as one line on stdout, as `console.log` would.
 *
 * @example
 * ```ts
 * import { print } from "./print.ts";
 * print("round", 1, "of", 3);
 * ```
 */
export function print(...parts: readonly unknown[]): void {
  // deno-lint-ignore no-console
  console.log(...parts);
}

/**
 * Writes `parts` as one line on stderr, as `console.error` would: progress and diagnostics that
 * must not mix with a report on stdout.
 *
 * @example
 * ```ts
 * import { printError } from "./print.ts";
 * printError("phase http: 3 of 9");
 * ```
 */
export function printError(...parts: readonly unknown[]): void {
  // deno-lint-ignore no-console
  console.error(...parts);
}
