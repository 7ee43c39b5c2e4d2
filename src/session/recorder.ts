/**
 * Batches a session's events into its store, in call order.
 *
 * @module
 */
import type { Logger } from "../log/logger.ts";
import type { SessionStore, StoredEvent } from "../store/session_store.ts";
import { SessionLogFailedError, StoreCommitTimeoutError } from "../store/store_errors.ts";
import type { Telemetry, TraceCarrier } from "../telemetry/telemetry.ts";

/** How long {@link Recorder.acknowledged} waits for the store by default, in ms. */
export const DEFAULT_COMMIT_TIMEOUT_MS = 30_000;

/**
 * Promises of a store's `written` seen settled: the same one again (the JSONL and memory stores'
 * usual answer) is awaited without a timer.
 */
const SETTLED = new WeakSet<Promise<void>>();

/**
 * When a record is handed to the store. `soon`: with whatever else the current microtask records,
 * in one append when it ends. `later`: held for the next append, which something always makes
 * before anything outside the process happens (an update to the client, a tool, the turn's end).
 */
export type RecordTiming = "soon" | "later";

/** What a {@link Recorder} is built from. */
export interface RecorderOptions {
  readonly sessionId: string;
  /** `append`, and `written` and `name` when it has them. */
  readonly store: Pick<SessionStore, "append" | "written" | "name">;
  readonly logger: Logger;
  /**
   * How long {@link Recorder.acknowledged} waits for the store before the turn fails.
   * @default {DEFAULT_COMMIT_TIMEOUT_MS}
   */
  readonly commitTimeoutMs?: number;
  /**
   * Arranges for {@link Recorder.flush} to be called soon, when records are held that should
   * not wait for an update (`soon` records, strict ones). The session's {@link Outbox} passes its
   * own schedule, so that what a turn records up to its next update goes in one append.
   * @default {queueMicrotask: at the end of the current microtask}
   */
  readonly schedule?: (flush: () => void) => void;
  /** Times each append until the store acknowledges it. @default {not timed} */
  readonly telemetry?: Telemetry;
}

/**
 * Records events in a session's log, in call order, batching what is recorded until the next
 * flush (by default the end of the microtask; see {@link RecorderOptions.schedule}) into one
 * append. Commit points (`commit`) are made durable in the background ({@link durable} waits for
 * them); what must not leave before the records do (a prompt's answer, a tool that runs) waits for
 * {@link acknowledged}. A strict record ({@link recordStrict}) fails its caller when it cannot be
 * written. The first failure of the store (or a store that did not confirm within the commit
 * timeout) ends the log's recording: it is logged, nothing more is appended (so no hole in the
 * log ever closes up), and every later strict record and acknowledgement fails with it.
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
  /** The first failure: nothing is appended after it. */
  #failure: { readonly error: unknown } | undefined;

  /** The trace context of the running turn, told to the telemetry of each append. */
  #traceParent: TraceCarrier | undefined;

  /** @param options The store, the session id and the logger */
  constructor(options: RecorderOptions) {
    this.#options = options;
  }

  /** The trace context of the running turn: its appends are its children in a trace. */
  get traceParent(): TraceCarrier | undefined {
    return this.#traceParent;
  }

  set traceParent(carrier: TraceCarrier | undefined) {
    this.#traceParent = carrier;
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
    if (this.#failure) {
      // Refused: appending after a failed append would leave a hole in the log.
      for (const { reject } of strict) reject(this.#refusal(), true);
      return;
    }
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

  /**
   * Waits until everything handed to the store so far is written (see the store contract:
   * acknowledgements): usually an already settled promise for the JSONL and memory stores, the
   * commits for PostgreSQL. Call {@link flush} first to include what is held.
   *
   * @param signal Stops the wait (rejects with its reason); the records stay with the store
   * @returns Resolves once they are written
   * @throws The store's failure, a {@link SessionLogFailedError} once a failure ended the log,
   *   or a {@link StoreCommitTimeoutError} when the store did not confirm within the commit
   *   timeout (which ends the log's recording too)
   */
  async acknowledged(signal?: AbortSignal): Promise<void> {
    if (this.#failure) throw this.#refusal();
    const { store, sessionId } = this.#options;
    const written = store.written?.(sessionId) ?? this.#durable;
    if (SETTLED.has(written) && !signal?.aborted) {
      await written;
      return this.#throwFailure();
    }
    void written.then(() => SETTLED.add(written));
    const timeoutMs = this.#options.commitTimeoutMs ?? DEFAULT_COMMIT_TIMEOUT_MS;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let onAbort: (() => void) | undefined;
    try {
      const outcome = await Promise.race([
        written.then(() => "written" as const),
        new Promise<"timeout">((resolve) =>
          timer = setTimeout(() => resolve("timeout"), timeoutMs)
        ),
        ...(signal
          ? [
            new Promise<never>((_, reject) => {
              onAbort = () => reject(signal.reason);
              if (signal.aborted) onAbort();
              else signal.addEventListener("abort", onAbort, { once: true });
            }),
          ]
          : []),
      ]);
      if (outcome === "timeout") {
        this.#fail(new StoreCommitTimeoutError(sessionId, store.name ?? "session", timeoutMs));
      }
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener("abort", onAbort);
    }
    this.#throwFailure();
  }

  /** Throws the first failure, if there was one. */
  #throwFailure(): void {
    if (this.#failure) throw this.#failure.error;
  }

  #append(events: readonly StoredEvent[], commit: boolean, strict = false): Promise<void> {
    const { store, sessionId, telemetry } = this.#options;
    const timed = telemetry?.storeCommit(this.#traceParent, events.length);
    let appended: Promise<void>;
    try {
      appended = Promise.resolve(store.append(sessionId, events, { sync: commit }));
    } catch (error) {
      timed?.end(false);
      this.#fail(error);
      if (strict) throw error;
      return Promise.resolve();
    }
    // Handled first, so that the failure is known to whoever resumes after the store's promise.
    const settled = appended.then(() => timed?.end(true), (error: unknown) => {
      timed?.end(false);
      this.#fail(error);
    });
    this.#durable = Promise.all([this.#durable, settled]).then(() => {});
    return appended;
  }

  /** Ends the log's recording with its first failure (logged once). */
  #fail(error: unknown): void {
    if (this.#failure) return;
    this.#failure = { error };
    const { logger, sessionId } = this.#options;
    logger.error("cannot write the session log: the session records nothing more", {
      sessionId,
      error,
    });
  }

  /** What a record or an acknowledgement after the first failure is refused with. */
  #refusal(): unknown {
    const error = this.#failure?.error;
    return error instanceof SessionLogFailedError || error instanceof StoreCommitTimeoutError
      ? error
      : new SessionLogFailedError(this.#options.sessionId, error);
  }
}
