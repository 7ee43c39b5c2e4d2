/**
 * The requests of a connection being handled, so that shutdown can wait until their answers are
 * written.
 */
export class Inflight {
  readonly #pending = new Set<Promise<unknown>>();

  /** How many requests are being handled. */
  get size(): number {
    return this.#pending.size;
  }

  /**
   * Tracks a handler's result until it settles.
   *
   * @param result What the handler returned
   * @returns The same result
   */
  track<Result>(result: Result): Result {
    if (result instanceof Promise) {
      const settled = result.catch(() => {});
      this.#pending.add(settled);
      void settled.then(() => this.#pending.delete(settled));
    }
    return result;
  }

  /** Settles once the requests being handled now have settled (not those that start meanwhile). */
  async current(): Promise<void> {
    await Promise.all([...this.#pending]);
  }

  /** Settles once no request is being handled, including those that start meanwhile. */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }
}
