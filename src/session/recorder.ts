/**
 * Batches a session's events into its store, in call order.
 *
 * @module
 */
import type { Logger } from "../log/logger.ts";
import type { SessionStore, StoredEvent } from "../store/session_store.ts";

/**
 * When a record is handed to the store. `soon`: with whatever else the current microtask records,
 * in one append when it ends. `later`: held for the next append, which something always makes
 * before anything outside the process happens (an update to the client, a tool, the turn's end).
 */
export type RecordTiming = "soon" | "later";

/** What a {@link Recorder} is built from. */
export interface RecorderOptions {
  readonly sessionId: string;
  /** Only `append` is used. */
  readonly store: Pick<SessionStore, "append">;
  readonly logger: Logger;
}

/**
 * Records events in a session's log, in call order, batching what one microtask records into one
 * append. Commit points (`commit`) are made durable in the background ({@link durable} waits for
 * them). A strict record ({@link recordNow}) fails its caller when it cannot be written; other
 * failures are logged.
 */
export class Recorder {
  readonly #options: RecorderOptions;
  /** Records waiting for the next append, and whether one of them is a commit point. */
  #pending: StoredEvent[] = [];
  #pendingCommit = false;
  #flushScheduled = false;
  /** Settles when everything appended so far is durable (never rejects). */
  #durable: Promise<void> = Promise.resolve();

  /** @param options The store, the session id and the logger */
  constructor(options: RecorderOptions) {
    this.#options = options;
  }

  /**
   * Records events after everything recorded before.
   *
   * @param events The events
   * @param commit Whether they are a commit point (made durable in the background)
   * @param when `soon` (default) or `later`; see {@link RecordTiming}
   */
  record(events: readonly StoredEvent[], commit: boolean, when: RecordTiming = "soon"): void {
    if (when === "soon" && !this.#flushScheduled) {
      this.#flushScheduled = true;
      queueMicrotask(() => {
        this.#flushScheduled = false;
        this.flush();
      });
    }
    this.#pending.push(...events);
    this.#pendingCommit ||= commit;
  }

  /**
   * Records events at once, with everything held before them (a strict record, such as an
   * admitted prompt).
   *
   * @param events The events
   * @param commit Whether they are a commit point
   * @returns The store's promise for the append; it rejects when the store reports a failure
   *   (which is logged as well)
   * @throws When the store throws at once
   */
  recordNow(events: readonly StoredEvent[], commit: boolean): Promise<void> {
    const all = [...this.#pending, ...events];
    const pendingCommit = this.#pendingCommit;
    this.#pending = [];
    this.#pendingCommit = false;
    return this.#append(all, commit || pendingCommit, true);
  }

  /** Hands everything held to the store now. */
  flush(): void {
    if (this.#pending.length === 0) return;
    const events = this.#pending;
    const commit = this.#pendingCommit;
    this.#pending = [];
    this.#pendingCommit = false;
    this.#append(events, commit, false);
  }

  /** Settles once everything appended so far is durable (or failed, which is logged). */
  durable(): Promise<void> {
    return this.#durable;
  }

  #append(events: readonly StoredEvent[], commit: boolean, strict: boolean): Promise<void> {
    const { store, logger, sessionId } = this.#options;
    let appended: Promise<void>;
    try {
      appended = Promise.resolve(store.append(sessionId, events, { sync: commit }));
    } catch (error) {
      logger.error("cannot write the session log", { sessionId, error });
      if (strict) throw error;
      return Promise.resolve();
    }
    this.#durable = Promise.all([this.#durable, appended]).then(
      () => {},
      (error: unknown) => logger.error("cannot sync the session log", { sessionId, error }),
    );
    return appended;
  }
}
