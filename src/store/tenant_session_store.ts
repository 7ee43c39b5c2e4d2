/**
 * One tenant's view of a session store (see {@link TenantSessionStore}).
 *
 * @module
 */
import { loadRecordStream } from "./record_stream.ts";
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
import { SessionNotFoundError } from "./store_errors.ts";

/**
 * A session store as one tenant sees it: the sessions it creates are recorded with its name
 * (`SessionHeader.tenant`), `list` asks the store for its sessions only (the store filters before
 * paging: in SQL on PostgreSQL), and every call naming a session by id (`exists`, `load`,
 * `loadStream`, `delete`, `acquire`) treats a session of another tenant, or of none, exactly as
 * an id that is not stored: absent, a no-op, or `SessionNotFoundError`. So an id guessed or
 * learned elsewhere tells the tenant nothing.
 *
 * @example Two tenants on one store
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemorySessionStore } from "./memory_session_store.ts";
 * import { TenantSessionStore } from "./tenant_session_store.ts";
 * const store = new MemorySessionStore();
 * const ci = new TenantSessionStore(store, "ci");
 * const web = new TenantSessionStore(store, "web");
 * const id = crypto.randomUUID();
 * await ci.create({
 *   version: 1, id, cwd: "/work", additionalDirectories: [], createdAt: new Date().toISOString(),
 * });
 * assert.equal((await store.load(id))?.header.tenant, "ci");
 * assert.equal(await ci.exists(id), true);
 * assert.equal(await web.exists(id), false);
 * assert.deepEqual((await web.list({ limit: 10 })).sessions, []);
 * ```
 */
export class TenantSessionStore implements SessionStore {
  readonly #inner: SessionStore;
  /** The tenant's name. */
  readonly tenant: string;

  /**
   * Makes the view.
   *
   * @param inner The store every tenant shares
   * @param tenant The tenant's name (see `TENANT_NAME`)
   */
  constructor(inner: SessionStore, tenant: string) {
    this.#inner = inner;
    this.tenant = tenant;
    this.name = inner.name ?? "session";
  }

  /** The inner store's name. */
  readonly name: string;

  /**
   * See {@link SessionStore.written}.
   *
   * @param id The session
   * @returns The inner store's answer
   */
  written(id: string): Promise<void> | undefined {
    return this.#inner.written?.(id);
  }

  /**
   * Stores a new session of this tenant.
   *
   * @param header The header; its `tenant` is set to this tenant's
   * @param options The first events, and an abort signal
   * @returns Resolves once stored
   */
  create(header: SessionHeader, options?: CreateOptions): Promise<void> {
    return this.#inner.create({ ...header, tenant: this.tenant }, options);
  }

  /**
   * Appends to a session the caller holds the lease of (which it got through this view).
   *
   * @param id The session
   * @param events The events
   * @param options `sync`
   * @returns The inner store's answer
   */
  append(id: string, events: readonly StoredEvent[], options: AppendOptions): Promise<void> {
    return this.#inner.append(id, events, options);
  }

  /**
   * Whether a session of this tenant has this id.
   *
   * @param id The session
   * @returns `false` for another tenant's session too
   */
  async exists(id: string): Promise<boolean> {
    return (await this.#storedTenant(id))?.tenant === this.tenant;
  }

  /**
   * Reads a session of this tenant.
   *
   * @param id The session
   * @param options An abort signal
   * @returns The session, or `undefined` (another tenant's too)
   */
  async load(id: string, options?: StoreCallOptions): Promise<LoadedSession | undefined> {
    const loaded = await this.#inner.load(id, options);
    return loaded !== undefined && loaded.header.tenant === this.tenant ? loaded : undefined;
  }

  /**
   * Reads a session of this tenant a batch at a time.
   *
   * @param id The session
   * @param options An abort signal
   * @returns The stream, or `undefined` (another tenant's too)
   */
  async loadStream(
    id: string,
    options?: StoreCallOptions,
  ): Promise<SessionRecordStream | undefined> {
    const stream = await loadRecordStream(this.#inner, id, options);
    if (stream === undefined || stream.header.tenant === this.tenant) return stream;
    await stream.close();
    return undefined;
  }

  /**
   * A page of this tenant's sessions (the inner store filters before paging).
   *
   * @param options As for any store; `tenant` is this tenant's
   * @returns The page
   */
  list(options: ListOptions): Promise<SessionPage> {
    return this.#inner.list({ ...options, tenant: this.tenant });
  }

  /**
   * Removes a session of this tenant and its descendants of this tenant (a session of another
   * tenant that names it as its parent stays); another tenant's id is a no-op, as an unknown id
   * is.
   *
   * @param id The session
   * @param options An abort signal
   * @returns Resolves once done
   */
  async delete(id: string, options?: DeleteOptions): Promise<void> {
    if ((await this.#storedTenant(id))?.tenant !== this.tenant) return;
    await this.#inner.delete(id, { ...options, tenant: this.tenant });
  }

  /**
   * Takes a session's lease: one of this tenant's, or an id not stored yet (a session about to be
   * created).
   *
   * @param id The session
   * @param options An abort signal
   * @returns The lease
   * @throws {SessionNotFoundError} The id is another tenant's session (rejects)
   */
  async acquire(id: string, options?: StoreCallOptions): Promise<SessionLease> {
    const stored = await this.#storedTenant(id);
    if (stored !== undefined && stored.tenant !== this.tenant) throw new SessionNotFoundError(id);
    return await this.#inner.acquire(id, options);
  }

  /**
   * Whose the stored session with this id is (`tenant` undefined: no tenant's), or `undefined`
   * when none is stored; read from its header alone, in one read.
   */
  async #storedTenant(id: string): Promise<{ readonly tenant: string | undefined } | undefined> {
    // A log that cannot be read is nobody's here: its error would tell another tenant it exists.
    const stream = await loadRecordStream(this.#inner, id).catch(() => null);
    if (stream === null) return { tenant: undefined };
    if (stream === undefined) return undefined;
    await stream.close();
    return { tenant: stream.header.tenant };
  }
}
