/**
 * Waits for tests that are not fixed sleeps: a bounded poll for state that announces itself
 * by no event, one event-loop turn for checking that something did NOT happen, and a promise
 * for the moment code under test starts listening to an abort signal.
 *
 * @module
 */

/** Options for {@link pollUntil}. */
export interface PollOptions {
  /** What is awaited, for the error when it never comes. */
  readonly what: string;
  /**
   * How long to keep polling.
   *
   * @default 10_000
   */
  readonly timeoutMs?: number;
  /**
   * The pause between two checks.
   *
   * @default 20
   */
  readonly intervalMs?: number;
}

/**
 * Checks `ready` until it holds, pausing `intervalMs` between checks; rejects after
 * `timeoutMs`. Only for state with no event to wait on (a file another process writes, a
 * process that is not our child, another process's writes to a shared directory): say why at
 * the call.
 *
 * @param ready The check
 * @param options What is awaited and how long
 */
export async function pollUntil(
  ready: () => boolean | Promise<boolean>,
  options: PollOptions,
): Promise<void> {
  const { timeoutMs = 10_000, intervalMs = 20 } = options;
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms: ${options.what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Resolves after one turn of the event loop, once every promise job queued so far has run.
 * Only for asserting that something did NOT happen; never to wait for something to happen.
 */
export function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * Resolves when code first adds an `abort` listener to `signal` (as `abortableDelay` and
 * fetch do when they start waiting), so a test can abort exactly while that wait is running.
 *
 * @param signal The signal handed to the code under test
 */
export function abortListened(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const add = signal.addEventListener.bind(signal);
    signal.addEventListener = ((...args: Parameters<typeof add>) => {
      add(...args);
      if (args[0] === "abort") {
        Reflect.deleteProperty(signal, "addEventListener");
        resolve();
      }
    }) as typeof signal.addEventListener;
  });
}
