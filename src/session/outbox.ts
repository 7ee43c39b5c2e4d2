/**
 * What leaves a session: records for its store and updates for its client, in one order.
 *
 * @module
 */
import type { TraceCarrier } from "../telemetry/telemetry.ts";
import type { SessionUpdate } from "../transport/acp_types.ts";
import type { StoredEvent } from "../store/session_store.ts";
import type { Recorder, RecordTiming } from "./recorder.ts";
import type { UpdateQueue } from "./update_queue.ts";

/** Where a session's units put records and updates. */
export interface SessionOutput {
  /** Records events (see {@link Recorder.record}). */
  record(events: readonly StoredEvent[], commit: boolean, when?: RecordTiming): void;
  /**
   * Sends an update to the client after everything recorded so far.
   *
   * @returns A promise to await before sending more, when the client is behind
   */
  send(update: SessionUpdate): Promise<void> | undefined;
  /**
   * Hands everything held to the store, then to the client, now: before something that leaves
   * the process another way (a tool starts, a request to the client, the prompt's answer).
   */
  flush(): void;
}

/** Updates held before they are handed over at once, whatever the schedule. */
const HOLD_LIMIT = 256;

/**
 * Keeps the rule between a session's log and its client: an update is handed to the client only
 * after everything recorded before it has been handed to the store, so nothing the client was
 * shown can be missing from the log after a crash of this server (SIGKILL included).
 *
 * With a `defer` schedule (the runtime's `setImmediate`), records and the updates sent after them
 * are held until the work of the current event-loop task is done (or {@link flush} is called)
 * and then handed over together: one append and one burst of updates for what a turn does without
 * waiting (a whole offline turn), at a cost of microseconds in latency; an update with nothing
 * held before it (a streamed delta) is handed over at once. Without a schedule, every update is
 * handed over at once, after an append of what is held.
 */
export class Outbox implements SessionOutput {
  readonly #recorder: Recorder;
  readonly #updates: UpdateQueue;
  readonly #defer: ((task: () => void) => void) | undefined;
  #held: SessionUpdate[] = [];
  #scheduled = false;

  /**
   * @param recorder The session's recorder (built with {@link schedule} as its schedule when
   *   `defer` is given, else with its own)
   * @param updates The session's update queue
   * @param defer Runs a task once the current event-loop task's work is done
   */
  constructor(recorder: Recorder, updates: UpdateQueue, defer?: (task: () => void) => void) {
    this.#recorder = recorder;
    this.#updates = updates;
    this.#defer = defer;
  }

  /** The trace context of the running turn: its appends are its children in a trace. */
  get traceParent(): TraceCarrier | undefined {
    return this.#recorder.traceParent;
  }

  set traceParent(carrier: TraceCarrier | undefined) {
    this.#recorder.traceParent = carrier;
  }

  /** The recorder's schedule when there is a `defer`: held records go with the next hand-over. */
  schedule(): void {
    this.#scheduleHandOver();
  }

  /** @inheritdoc */
  record(events: readonly StoredEvent[], commit: boolean, when?: RecordTiming): void {
    this.#recorder.record(events, commit, when);
  }

  /**
   * Records events as a strict record (see {@link Recorder.recordStrict}).
   *
   * @returns Settles as the store's promise for the append that carries them
   */
  recordStrict(
    events: readonly StoredEvent[],
    commit: boolean,
    onThrown?: () => void,
  ): Promise<void> {
    return this.#recorder.recordStrict(events, commit, onThrown);
  }

  /** @inheritdoc */
  send(update: SessionUpdate): Promise<void> | undefined {
    // Nothing to batch it with (a streamed delta): handed over at once.
    if (this.#defer === undefined || (this.#held.length === 0 && this.#recorder.idle)) {
      this.#recorder.flush();
      return this.#updates.push(update);
    }
    this.#held.push(update);
    if (this.#held.length >= HOLD_LIMIT) this.flush();
    else this.#scheduleHandOver();
    return this.#updates.backlog();
  }

  /** @inheritdoc */
  flush(): void {
    this.#recorder.flush();
    if (this.#held.length === 0) return;
    const held = this.#held;
    this.#held = [];
    for (const update of held) this.#updates.push(update);
  }

  /** Hands everything recorded to the store and waits until it is durable. */
  async commit(): Promise<void> {
    this.flush();
    await this.#recorder.durable();
  }

  /**
   * Hands everything held to the store and waits until the store has written it (see
   * {@link Recorder.acknowledged}): before something that must not leave ahead of its records
   * (a prompt's answer, a tool that runs).
   *
   * @param signal Stops the wait
   * @throws The store's failure, or its timeout
   */
  acknowledged(signal?: AbortSignal): Promise<void> {
    this.flush();
    return this.#recorder.acknowledged(signal);
  }

  /** Waits for every update sent, then makes everything recorded durable. */
  async drain(): Promise<void> {
    if (this.#held.length > 0) this.flush();
    await this.#updates.flush();
    await this.commit();
  }

  #scheduleHandOver(): void {
    if (this.#scheduled || this.#defer === undefined) return;
    this.#scheduled = true;
    this.#defer(() => {
      this.#scheduled = false;
      this.flush();
    });
  }
}
