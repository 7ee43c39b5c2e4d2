/**
 * What leaves a session: records for its store and updates for its client, in one order.
 *
 * @module
 */
import type { SessionUpdate } from "../protocol/acp_types.ts";
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
}

/**
 * Keeps the rule between a session's log and its client: an update is handed to the client only
 * after everything recorded before it has been handed to the store, so nothing the client was
 * shown can be missing from the log after a crash of this server (SIGKILL included).
 */
export class Outbox implements SessionOutput {
  readonly #recorder: Recorder;
  readonly #updates: UpdateQueue;

  /**
   * @param recorder The session's recorder
   * @param updates The session's update queue
   */
  constructor(recorder: Recorder, updates: UpdateQueue) {
    this.#recorder = recorder;
    this.#updates = updates;
  }

  /** @inheritdoc */
  record(events: readonly StoredEvent[], commit: boolean, when?: RecordTiming): void {
    this.#recorder.record(events, commit, when);
  }

  /**
   * Records events at once (a strict record; see {@link Recorder.recordNow}).
   *
   * @returns The store's promise for the append
   */
  recordNow(events: readonly StoredEvent[], commit: boolean): Promise<void> {
    return this.#recorder.recordNow(events, commit);
  }

  /** @inheritdoc */
  send(update: SessionUpdate): Promise<void> | undefined {
    this.#recorder.flush();
    return this.#updates.push(update);
  }

  /**
   * Sends updates one after another (a replay).
   *
   * @returns Once they are written
   */
  sendAll(updates: readonly SessionUpdate[]): Promise<void> {
    this.#recorder.flush();
    for (const update of updates) this.#updates.push(update);
    return this.#updates.flush();
  }

  /** Hands everything recorded to the store and waits until it is durable. */
  async commit(): Promise<void> {
    this.#recorder.flush();
    await this.#recorder.durable();
  }

  /** Waits for every update sent, then makes everything recorded durable. */
  async drain(): Promise<void> {
    await this.#updates.flush();
    await this.commit();
  }
}
