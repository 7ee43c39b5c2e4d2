/**
 * Waiting for a condition that changes on events (a frame received, a socket closed), checked
 * again each time the owner says something happened: no polling and no fixed sleep.
 *
 * @example Wait for a message
 * ```ts
 * import { Waiters } from "./waiters.ts";
 * const messages: string[] = [];
 * const waiters = new Waiters();
 * const arrived = waiters.until(() => messages.includes("hello"), 1_000);
 * messages.push("hello");
 * waiters.wake();
 * console.assert(await arrived);
 * ```
 *
 * @module
 */

/** The pending waits of one owner, re-checked on {@link Waiters.wake}. */
export class Waiters {
  readonly #checks = new Set<() => void>();

  /** Re-checks every pending wait (the owner calls it after each event). */
  wake(): void {
    for (const check of [...this.#checks]) check();
  }

  /**
   * Resolves true once `predicate` holds (checked now and on every {@link wake}), false when
   * `timeoutMs` passed or `giveUp` held at a wake first (`giveUp` is not checked now: output
   * may still come after the event it stands for).
   *
   * @param predicate What to wait for
   * @param timeoutMs How long to wait
   * @param giveUp Ends the wait early, false, when it holds and `predicate` does not
   * @returns Whether `predicate` held
   */
  until(predicate: () => boolean, timeoutMs: number, giveUp?: () => boolean): Promise<boolean> {
    if (predicate()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (value: boolean): void => {
        clearTimeout(timer);
        this.#checks.delete(check);
        resolve(value);
      };
      const timer = setTimeout(() => done(false), timeoutMs);
      const check = (): void => {
        if (predicate()) done(true);
        else if (giveUp?.() === true) done(false);
      };
      this.#checks.add(check);
    });
  }
}
