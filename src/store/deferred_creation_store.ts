/**
 * A session store whose new sessions are written after their `session/new` is answered: the
 * creation (lease, log, index line) runs once the current event-loop task is done, and every
 * operation that could observe the session in this process waits for it.
 *
 * @module
 */
import type {
  AppendOptions,
  CreateOptions,
  DeleteOptions,
  ListOptions,
  LoadedSession,
  SessionHeader,
  SessionLease,
  SessionPage,
  SessionRecordStream,
  SessionStore,
  StoreCallOptions,
  StoredEvent,
} from "./session_store.ts";
import { loadRecordStream } from "./record_stream.ts";

/**
 * Wraps a {@link SessionStore} so that creating a session costs its caller no disk work:
 * {@link createLeased} returns at once and writes the session (its lease and its log, then its
 * index line) after `defer` fires, in the background.
 *
 * Until that write is done, this process behaves as if it were: appends to the session wait
 * for it (in order), and so do `load`, `loadStream`, `exists`, `delete` and `acquire` of its id,
 * and `list` waits for every creation under way, so the session is listed. Other processes see
 * the session once the write is done; a crash before then loses it, which no client can tell
 * from a session whose `session/new` was never answered, as nothing was recorded in it yet. Its
 * first commit point (the first prompt admitted) waits for the write, so a session that was
 * used is always durable.
 *
 * A failed write fails the session's appends queued behind it with its error (so its first prompt
 * fails); the other operations then find no such session.
 *
 * @example A session listed before its write could have happened
 * ```ts
 * import assert from "node:assert/strict";
 * import { DeferredCreationStore } from "./deferred_creation_store.ts";
 * import { MemorySessionStore } from "./memory_session_store.ts";
 * const tasks: Array<() => void> = [];
 * const store = new DeferredCreationStore(new MemorySessionStore(), (task) => tasks.push(task));
 * const id = crypto.randomUUID();
 * const lease = store.createLeased({
 *   version: 1,
 *   id,
 *   cwd: "/work",
 *   additionalDirectories: [],
 *   createdAt: new Date().toISOString(),
 * });
 * const listed = store.list({ limit: 10 });
 * tasks.forEach((task) => task());
 * assert.deepEqual((await listed).sessions.map((session) => session.id), [id]);
 * await (await lease).release();
 * ```
 */
export class DeferredCreationStore implements SessionStore {
  readonly #inner: SessionStore;
  readonly #defer: (task: () => void) => void;
  /** Creations under way by session id; each rejects with the store's error when it failed. */
  readonly #pending = new Map<string, Promise<unknown>>();

  /**
   * @param inner The store written to
   * @param defer Runs a task once the current event-loop task's work is done (the runtime's
   *   `setImmediate`); the creations start there
   */
  constructor(inner: SessionStore, defer: (task: () => void) => void) {
    this.#inner = inner;
    this.#defer = defer;
  }

  /** How messages name the wrapped store. */
  get name(): string {
    return this.#inner.name ?? "configured";
  }

  /**
   * As the wrapped store's, after the session's creation when it is under way.
   *
   * @param id The session
   * @returns The wrapped store's promise, or `undefined` when it cannot tell
   */
  written(id: string): Promise<void> | undefined {
    const inner = this.#inner;
    if (inner.written === undefined) return undefined;
    const pending = this.#pending.get(id);
    if (pending === undefined) return inner.written(id);
    return pending.then(() => inner.written?.(id), () => {});
  }

  /** How many creations are under way. */
  get pending(): number {
    return this.#pending.size;
  }

  /**
   * Creates a session and takes its lease, after `defer` fires: `acquire` and `create` of the
   * wrapped store at once (a new id: nobody else can hold or write it meanwhile).
   *
   * @param header The new session's header (a fresh id)
   * @param events Its first events, written with it
   * @returns The lease, once the session is written; rejects with the store's error, having
   *   given back whatever of the two succeeded
   */
  createLeased(header: SessionHeader, events?: readonly StoredEvent[]): Promise<SessionLease> {
    const leased = new Promise<void>((resolve) => this.#defer(resolve)).then(() =>
      createLeased(this.#inner, header, events)
    );
    this.#pending.set(header.id, leased);
    const forget = (): void => {
      if (this.#pending.get(header.id) === leased) this.#pending.delete(header.id);
    };
    leased.then(forget, forget);
    return leased;
  }

  /**
   * Creates a session at once (not deferred), as the wrapped store does.
   *
   * @param header The session's header
   * @param options Its first events, and an abort signal
   */
  async create(header: SessionHeader, options?: CreateOptions): Promise<void> {
    await this.#settled(header.id);
    await this.#inner.create(header, options);
  }

  /**
   * Appends after the session's creation when it is under way, else at once (as the wrapped
   * store does: its promise is returned as is).
   *
   * @param id The session
   * @param events The events
   * @param options `sync` as the wrapped store
   * @returns As the wrapped store's `append`; rejects with the creation's error when it failed
   */
  append(id: string, events: readonly StoredEvent[], options: AppendOptions): Promise<void> {
    const pending = this.#pending.get(id);
    if (pending === undefined) return this.#inner.append(id, events, options);
    return pending.then(() => this.#inner.append(id, events, options));
  }

  /**
   * @param id The session
   * @returns Whether it has a log, once a creation of it under way is done
   */
  async exists(id: string): Promise<boolean> {
    await this.#settled(id);
    return await this.#inner.exists(id);
  }

  /**
   * @param id The session
   * @param options An abort signal
   * @returns As the wrapped store, once a creation of it under way is done
   */
  async load(id: string, options?: StoreCallOptions): Promise<LoadedSession | undefined> {
    await this.#settled(id);
    return await this.#inner.load(id, options);
  }

  /**
   * @param id The session
   * @param options An abort signal
   * @returns As the wrapped store (its `load` in one batch when it cannot stream), once a
   *   creation of it under way is done
   */
  async loadStream(
    id: string,
    options?: StoreCallOptions,
  ): Promise<SessionRecordStream | undefined> {
    await this.#settled(id);
    return await loadRecordStream(this.#inner, id, options);
  }

  /**
   * @param options As the wrapped store
   * @returns The page, once every creation under way is done (so they are listed)
   */
  async list(options: ListOptions): Promise<SessionPage> {
    if (this.#pending.size > 0) await Promise.allSettled(this.#pending.values());
    return await this.#inner.list(options);
  }

  /**
   * @param id The session
   * @param options An abort signal
   */
  async delete(id: string, options?: DeleteOptions): Promise<void> {
    await this.#settled(id);
    await this.#inner.delete(id, options);
  }

  /**
   * @param id The session
   * @param options An abort signal
   * @returns The lease, once a creation of the id under way is done
   */
  async acquire(id: string, options?: StoreCallOptions): Promise<SessionLease> {
    await this.#settled(id);
    return await this.#inner.acquire(id, options);
  }

  /** Settles (never rejects) once a creation of `id` under way is done or failed. */
  async #settled(id: string): Promise<void> {
    await this.#pending.get(id)?.catch(() => {});
  }
}

/**
 * Creates a session and takes its lease at once: `acquire` and `create` of the store together
 * (a new id: nobody else can hold or write it meanwhile).
 *
 * @param store The store
 * @param header The new session's header
 * @param events Its first events, written with it
 * @returns The lease, once both are done; rejects with the store's error, having given back
 *   whatever of the two succeeded
 */
export async function createLeased(
  store: SessionStore,
  header: SessionHeader,
  events?: readonly StoredEvent[],
): Promise<SessionLease> {
  const lease = store.acquire(header.id);
  const created = store.create(header, events === undefined ? {} : { events });
  try {
    const [held] = await Promise.all([lease, created]);
    return held;
  } catch (error) {
    await Promise.allSettled([created]);
    await lease.then((held) => held.release(), () => {});
    throw error;
  }
}
