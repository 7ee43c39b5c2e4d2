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
  /**
   * Arranges for {@link Recorder.flush} to be called soon, when records are held that should
   * not wait for an update (`soon` records, strict ones). The session's {@link Outbox} passes its
   * own schedule, so that what a turn records up to its next update goes in one append.
   * @default {queueMicrotask: at the end of the current microtask}
   */
  readonly schedule?: (flush: () => void) => void;
}

/**
 * Records events in a session's log, in call order, batching what is recorded until the next
 * flush (by default the end of the microtask; see {@link RecorderOptions.schedule}) into one
 * append. Commit points (`commit`) are made durable in the background ({@link durable} waits for
 * them). A strict record ({@link recordStrict}) fails its caller when it cannot be written; other
 * failures are logged.
 */
export class Recorder {
  readonly #options: RecorderOptions;
  /** Records waiting for the next append, and whether one of them is a commit point. */
  #pending: StoredEvent[] = [];
  #pendingCommit = false;
  #flushScheduled = false;
  /** Strict records held: settled with the append that carries them. */
  #strict: Array<{ resolve: () => void; reject: (error: unknown, thrown: boolean) => void }> = [];
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
    if (when === "soon") this.#scheduleFlush();
    for (const event of events) this.#pending.push(event);
    this.#pendingCommit ||= commit;
  }

  /**
   * Records events as a strict record (such as an admitted prompt), after everything held: in
   * the next append, which is made soon (see {@link RecorderOptions.schedule}).
   *
   * @param events The events
   * @param commit Whether they are a commit point
   * @param onThrown Called before the rejection when the store threw at once: nothing of the
   *   append was stored
   * @returns Settles as the store's promise for that append: it rejects when the store reports
   *   a failure, or throws at once (which is logged as well)
   */
  recordStrict(
    events: readonly StoredEvent[],
    commit: boolean,
    onThrown?: () => void,
  ): Promise<void> {
    const settled = new Promise<void>((resolve, reject) =>
      this.#strict.push({
        resolve,
        reject: (error, thrown) => {
          if (thrown) onThrown?.();
          reject(error);
        },
      })
    );
    this.record(events, commit);
    return settled;
  }

  /** Whether nothing is held for the next append. */
  get idle(): boolean {
    return this.#pending.length === 0;
  }

  /** Hands everything held to the store now. */
  flush(): void {
    // A flush scheduled earlier finds nothing, or what was recorded since: harmless either way.
    this.#flushScheduled = false;
    if (this.#pending.length === 0) return;
    const events = this.#pending;
    const commit = this.#pendingCommit;
    const strict = this.#strict;
    this.#pending = [];
    this.#pendingCommit = false;
    this.#strict = [];
    if (strict.length === 0) {
      this.#append(events, commit);
      return;
    }
    let appended: Promise<void>;
    try {
      appended = this.#append(events, commit, true);
    } catch (error) {
      for (const { reject } of strict) reject(error, true);
      return;
    }
    appended.then(
      () => strict.forEach(({ resolve }) => resolve()),
      (error: unknown) => strict.forEach(({ reject }) => reject(error, false)),
    );
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    const flush = (): void => this.flush();
    if (this.#options.schedule) this.#options.schedule(flush);
    else queueMicrotask(flush);
  }

  /** Settles once everything appended so far is durable (or failed, which is logged). */
  durable(): Promise<void> {
    return this.#durable;
  }

  #append(events: readonly StoredEvent[], commit: boolean, strict = false): Promise<void> {
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
