/** A clean-up step: stops a process, closes a network connection, releases a handle. */
export type Cleanup = () => void | Promise<void>;

/** What a session's resources register their clean-up with. */
export interface SessionCleanups {
  /**
   * Registers a clean-up step that runs when the session ends (closed, deleted, its connection
   * ended, or the server shut down). Steps run in reverse order of registration, one at a time.
   * A step registered after the session ended runs at once.
   *
   * @param cleanup The step; a throw or rejection is logged, and the other steps still run
   */
  defer(cleanup: Cleanup): void;
}

/**
 * The resources one session owns, released together when it ends: like `AsyncDisposableStack`,
 * which not every supported runtime has yet.
 *
 * @example Steps run last-in, first-out, once
 * ```ts
 * import assert from "node:assert/strict";
 * import { SessionDisposer } from "./session_disposer.ts";
 * const order: string[] = [];
 * const disposer = new SessionDisposer();
 * disposer.defer(() => void order.push("first"));
 * disposer.defer(async () => void order.push("second"));
 * await Promise.all([disposer.dispose(), disposer.dispose()]);
 * assert.deepEqual(order, ["second", "first"]);
 * ```
 */
export class SessionDisposer implements SessionCleanups {
  readonly #steps: Cleanup[] = [];
  readonly #onError: (error: unknown) => void;
  #disposing: Promise<void> | undefined;

  /** @param onError Told of every step that throws or rejects @default {ignores them} */
  constructor(onError: (error: unknown) => void = () => {}) {
    this.#onError = onError;
  }

  /** Whether {@link SessionDisposer.dispose} has been called. */
  get disposed(): boolean {
    return this.#disposing !== undefined;
  }

  /**
   * Registers a clean-up step; after disposal it runs at once.
   *
   * @param cleanup The step
   */
  defer(cleanup: Cleanup): void {
    if (this.#disposing) {
      this.#disposing = this.#disposing.then(() => this.#run(cleanup));
      return;
    }
    this.#steps.push(cleanup);
  }

  /**
   * Runs every step, newest first. Never rejects; concurrent and repeated calls share one run.
   *
   * @returns Settles once every step has finished
   */
  dispose(): Promise<void> {
    this.#disposing ??= (async () => {
      while (this.#steps.length > 0) await this.#run(this.#steps.pop()!);
    })();
    return this.#disposing;
  }

  async #run(cleanup: Cleanup): Promise<void> {
    try {
      await cleanup();
    } catch (error) {
      this.#onError(error);
    }
  }
}
