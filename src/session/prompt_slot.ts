/**
 * A session's one prompt slot and its queue: where its lifecycle (`./session_state.ts`) moves
 * between `open` and `prompting`, and into `closing`.
 *
 * @module
 */
import { SessionLifecycle, SessionStateError } from "./session_state.ts";

interface ActiveTurn {
  readonly controller: AbortController;
  done: Promise<unknown>;
}

/** A turn waiting for the slot. */
interface QueuedTurn {
  readonly signal: AbortSignal;
  /** Starts it in the slot. */
  readonly start: () => void;
  /** Settles it without running (cancelled before it started). */
  readonly drop: () => void;
}

/**
 * Runs at most one turn at a time and queues the ones that arrive meanwhile: the slot is taken
 * synchronously (the session moves to `prompting`), each turn gets an `AbortController` that its
 * request's signal, {@link cancel} and {@link close} abort, and when a turn has settled the next
 * queued one starts, a macrotask later (after the settled turn's answer is written), in arrival
 * order. A queued turn whose request is cancelled, and every queued turn on {@link cancel} or
 * {@link close}, settles with its `dropped` value without running. {@link close} moves the
 * session to `closing`: nothing more is taken.
 *
 * @example Two turns, the second queued behind the first
 * ```ts
 * import assert from "node:assert/strict";
 * import { PromptSlot } from "./prompt_slot.ts";
 * const slot = new PromptSlot("s1", undefined, { queue: 1 });
 * const order: string[] = [];
 * const run = (name: string) => () => Promise.resolve(order.push(name)).then(() => name);
 * const signal = new AbortController().signal;
 * const first = slot.take(signal, run("first"), () => "dropped");
 * const second = slot.take(signal, run("second"), () => "dropped");
 * assert.equal(slot.queued, 1);
 * assert.deepEqual([await first, await second], ["first", "second"]);
 * assert.deepEqual(order, ["first", "second"]);
 * ```
 */
export class PromptSlot {
  readonly #lifecycle: SessionLifecycle;
  readonly #limit: number;
  /** The turn holding the slot, until it has settled (through a close too). */
  #turn: ActiveTurn | undefined;
  #controller = new AbortController();
  /** Turns waiting for the slot, in arrival order. */
  readonly #queue: QueuedTurn[] = [];
  /** The timer that starts the next queued turn, while one is set. */
  #next: ReturnType<typeof setTimeout> | undefined;

  /**
   * @param sessionId The session's id (for the errors)
   * @param lifecycle The session's state, shared with the session; a slot of its own, `open`,
   *   when not given
   * @param options `queue`: most turns waiting while one runs (0, the default: a prompt while one
   *   runs is refused)
   */
  constructor(
    sessionId: string,
    lifecycle: SessionLifecycle = new SessionLifecycle(sessionId),
    options: { readonly queue?: number } = {},
  ) {
    this.#lifecycle = lifecycle;
    this.#limit = options.queue ?? 0;
  }

  /** Whether a turn holds the slot (or is about to: queued turns are waiting for their start). */
  get busy(): boolean {
    // Between a settled turn and its successor's start (`#next` set), the slot is still taken:
    // a prompt then queues even if the successor was dropped meanwhile.
    return this.#turn !== undefined || this.#queue.length > 0 || this.#next !== undefined;
  }

  /** How many turns are waiting for the slot. */
  get queued(): number {
    return this.#queue.length;
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
   * Checks that a turn could be taken now: started, or queued.
   *
   * @param queueable Whether the turn may wait in the queue (else only a free slot takes it)
   * @throws {SessionStateError} When the session is closing, or a turn holds the slot and the
   *   queue is full (or there is none)
   */
  assertAdmits(queueable = true): void {
    this.assertOpen();
    if (!this.busy) return;
    const sessionId = this.#lifecycle.sessionId;
    if (this.#limit === 0 || !queueable) {
      throw new SessionStateError(`a prompt is already in flight for session ${sessionId}`);
    }
    if (this.#queue.length >= this.#limit) {
      throw new SessionStateError(
        `session ${sessionId} already has ${this.#queue.length} prompts queued behind the running ` +
          `one (the limit: --prompt-queue ${this.#limit})`,
      );
    }
  }

  /**
   * Takes the slot synchronously and runs a turn in it, or queues the turn when one holds it.
   *
   * @param signal The request's signal: aborting it aborts the turn, or drops it while queued
   * @param run The turn; its controller is aborted on cancel (it may abort it itself)
   * @param dropped The outcome of a queued turn cancelled before it started; without it the
   *   turn is not queued (a busy slot refuses it)
   * @param front Queue it ahead of the waiting turns, past the limit (the server's own turn)
   * @returns The turn's outcome, once the slot is free again
   * @throws {SessionStateError} When the session is closing or the queue is full
   */
  take<T>(
    signal: AbortSignal,
    run: (controller: AbortController) => Promise<T>,
    dropped?: () => T,
    front = false,
  ): Promise<T> {
    if (front) this.assertOpen();
    else this.assertAdmits(dropped !== undefined);
    if (!this.busy) return this.#start(signal, run);
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => {
        const index = this.#queue.indexOf(entry);
        if (index >= 0) this.#queue.splice(index, 1);
        entry.drop();
      };
      const entry: QueuedTurn = {
        signal,
        start: () => {
          signal.removeEventListener("abort", onAbort);
          this.#start(signal, run).then(resolve, reject);
        },
        drop: () => {
          signal.removeEventListener("abort", onAbort);
          try {
            resolve((dropped as () => T)());
          } catch (error) {
            reject(error);
          }
        },
      };
      if (signal.aborted) return entry.drop();
      signal.addEventListener("abort", onAbort, { once: true });
      if (front) this.#queue.unshift(entry);
      else this.#queue.push(entry);
    });
  }

  /** Cancels the turn in the slot, if any, and drops every queued one. Harmless when idle. */
  cancel(): void {
    this.#dropQueued();
    this.#turn?.controller.abort();
  }

  /**
   * Refuses new turns from now on, drops the queued ones, cancels the turn in the slot and waits
   * for it to settle.
   *
   * @returns Once the slot is free for good
   */
  async close(): Promise<void> {
    if (!this.#lifecycle.ending) this.#lifecycle.to("closing");
    this.#dropQueued();
    const turn = this.#turn;
    turn?.controller.abort();
    await turn?.done.catch(() => {});
  }

  #dropQueued(): void {
    for (const entry of this.#queue.splice(0)) entry.drop();
    if (this.#next !== undefined) {
      clearTimeout(this.#next);
      this.#next = undefined;
    }
    // Between a settled turn and the next queued one's start, nothing holds the slot now.
    if (this.#turn === undefined && this.#lifecycle.state === "prompting") {
      this.#lifecycle.to("open");
    }
  }

  #start<T>(signal: AbortSignal, run: (controller: AbortController) => Promise<T>): Promise<T> {
    // A controller is only used up by an abort, so an uncancelled one serves the next turn too.
    if (this.#controller.signal.aborted) this.#controller = new AbortController();
    const controller = this.#controller;
    // The slot is taken before the turn starts: a turn can settle before `run` returns (an
    // already cancelled request), and its end must find the slot to free it.
    const turn: ActiveTurn = { controller, done: Promise.resolve() };
    if (this.#lifecycle.state !== "prompting") this.#lifecycle.to("prompting");
    this.#turn = turn;
    const done = this.#run(turn, signal, run);
    turn.done = done;
    return done;
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
        if (this.#queue.length > 0 && !this.#lifecycle.ending) this.#startNextLater();
        // A close during the turn moved the session on already.
        else if (this.#lifecycle.state === "prompting") this.#lifecycle.to("open");
      }
    }
  }

  /**
   * Starts the next queued turn a macrotask from now: the settled turn's answer is written first,
   * so a client sees its answer before the next turn's updates. The session stays `prompting`.
   */
  #startNextLater(): void {
    this.#next = setTimeout(() => {
      this.#next = undefined;
      const next = this.#queue.shift();
      if (next && !this.#lifecycle.ending) return next.start();
      if (next) next.drop();
      if (this.#lifecycle.state === "prompting") this.#lifecycle.to("open");
    }, 0);
  }
}
