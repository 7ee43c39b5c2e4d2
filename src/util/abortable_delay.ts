/**
 * Waits `ms` milliseconds unless `signal` aborts first.
 *
 * The timer is always cleared, so an aborted wait leaves nothing behind.
 *
 * @example Waiting with a deadline
 * ```ts
 * import assert from "node:assert/strict";
 * import { abortableDelay } from "./abortable_delay.ts";
 * const done = await abortableDelay(1, AbortSignal.timeout(1000));
 * assert(done === true);
 * ```
 *
 * @param ms How long to wait
 * @param signal Ends the wait early; without one, the wait always runs its time
 * @returns `true` when the time passed, `false` when the signal aborted
 */
export function abortableDelay(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
