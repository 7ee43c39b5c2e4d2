/**
 * A session's one prompt slot.
 *
 * @module
 */

/** Thrown when a request does not fit the session's state (maps to -32602). */
export class SessionStateError extends Error {
  /** @param message Says what state the session is in */
  constructor(message: string) {
    super(message);
    this.name = "SessionStateError";
  }
}

interface ActiveTurn {
  readonly controller: AbortController;
  done: Promise<unknown>;
}

/**
 * Runs at most one turn at a time: the slot is taken synchronously, the turn gets an
 * `AbortController` that the request's signal, {@link cancel} and {@link close} abort, and the slot
 * is free again once the turn has settled. After {@link close} nothing more is taken.
 */
export class PromptSlot {
  readonly #sessionId: string;
  #turn: ActiveTurn | undefined;
  #controller = new AbortController();
  #closed = false;

  /** @param sessionId The session's id (for the errors) */
  constructor(sessionId: string) {
    this.#sessionId = sessionId;
  }

  /** Whether a turn holds the slot. */
  get busy(): boolean {
    return this.#turn !== undefined;
  }

  /**
   * Checks that the session is not closing.
   *
   * @throws {SessionStateError} When it is
   */
  assertOpen(): void {
    if (this.#closed) throw new SessionStateError(`session ${this.#sessionId} is closing`);
  }

  /**
   * Checks that a turn could start now.
   *
   * @throws {SessionStateError} When a turn holds the slot or the session is closing
   */
  assertFree(): void {
    this.assertOpen();
    if (this.#turn) {
      throw new SessionStateError(`a prompt is already in flight for session ${this.#sessionId}`);
    }
  }

  /**
   * Takes the slot synchronously and runs a turn in it.
   *
   * @param signal The request's signal: aborting it aborts the turn
   * @param run The turn; its controller is aborted on cancel (it may abort it itself)
   * @returns The turn's outcome, once the slot is free again
   * @throws {SessionStateError} When a turn holds the slot or the session is closing
   */
  take<T>(signal: AbortSignal, run: (controller: AbortController) => Promise<T>): Promise<T> {
    this.assertFree();
    // A controller is only used up by an abort, so an uncancelled one serves the next turn too.
    if (this.#controller.signal.aborted) this.#controller = new AbortController();
    const controller = this.#controller;
    // The slot is taken before the turn starts: a turn can settle before `run` returns (an
    // already cancelled request), and its end must find the slot to free it.
    const turn: ActiveTurn = { controller, done: Promise.resolve() };
    this.#turn = turn;
    const done = this.#run(turn, signal, run);
    turn.done = done;
    return done;
  }

  /** Cancels the turn in the slot, if any. Harmless when idle. */
  cancel(): void {
    this.#turn?.controller.abort();
  }

  /**
   * Refuses new turns from now on, cancels the turn in the slot and waits for it to settle.
   *
   * @returns Once the slot is free for good
   */
  async close(): Promise<void> {
    this.#closed = true;
    const turn = this.#turn;
    turn?.controller.abort();
    await turn?.done.catch(() => {});
  }

  async #run<T>(
    turn: ActiveTurn,
    signal: AbortSignal,
    run: (controller: AbortController) => Promise<T>,
  ): Promise<T> {
    const { controller } = turn;
    const onAbort = (): void => controller.abort();
    signal.addEventListener("abort", onAbort, { once: true });
    if (signal.aborted) controller.abort();
    try {
      return await run(controller);
    } finally {
      signal.removeEventListener("abort", onAbort);
      if (this.#turn === turn) this.#turn = undefined;
    }
  }
}
