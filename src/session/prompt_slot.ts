/**
 * A session's one prompt slot: where its lifecycle (`./session_state.ts`) moves between `open`
 * and `prompting`, and into `closing`.
 *
 * @module
 */
import { SessionLifecycle, SessionStateError } from "./session_state.ts";

interface ActiveTurn {
  readonly controller: AbortController;
  done: Promise<unknown>;
}

/**
 * Runs at most one turn at a time: the slot is taken synchronously (the session moves to
 * `prompting`), the turn gets an `AbortController` that the request's signal, {@link cancel} and
 * {@link close} abort, and the slot is free again once the turn has settled (back to `open`).
 * {@link close} moves the session to `closing`: nothing more is taken.
 */
export class PromptSlot {
  readonly #lifecycle: SessionLifecycle;
  /** The turn holding the slot, until it has settled (through a close too). */
  #turn: ActiveTurn | undefined;
  #controller = new AbortController();

  /**
   * @param sessionId The session's id (for the errors)
   * @param lifecycle The session's state, shared with the session; a slot of its own, `open`,
   *   when not given
   */
  constructor(sessionId: string, lifecycle: SessionLifecycle = new SessionLifecycle(sessionId)) {
    this.#lifecycle = lifecycle;
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
    const lifecycle = this.#lifecycle;
    if (lifecycle.ending) throw new SessionStateError(`session ${lifecycle.sessionId} is closing`);
  }

  /**
   * Checks that a turn could start now.
   *
   * @throws {SessionStateError} When a turn holds the slot or the session is closing
   */
  assertFree(): void {
    this.assertOpen();
    if (this.#lifecycle.state === "prompting") {
      const sessionId = this.#lifecycle.sessionId;
      throw new SessionStateError(`a prompt is already in flight for session ${sessionId}`);
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
    this.#lifecycle.to("prompting");
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
    if (!this.#lifecycle.ending) this.#lifecycle.to("closing");
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
      if (this.#turn === turn) {
        this.#turn = undefined;
        // A close during the turn moved the session on already.
        if (this.#lifecycle.state === "prompting") this.#lifecycle.to("open");
      }
    }
  }
}
