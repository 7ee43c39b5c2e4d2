/**
 * The {@link SessionStore} in memory, for tests and embedding without a disk: the same contract
 * as the JSONL store (order, listing, cursors, leases, attachment release), except that nothing
 * survives a restart.
 *
 * @module
 */
import {
  canonicalTime,
  checkHeader,
  creationTime,
  isValidSessionId,
  parentOf,
  tenantOf,
} from "./_common.ts";
import { encodeCursor, type IndexUpdate, listStart, SessionIndex } from "./_session_index.ts";
import { collectFacts, recordText } from "./_session_log.ts";
import { MemoryAttachmentStore } from "./memory_attachment_store.ts";
import { deleteTree } from "./session_tree.ts";
import {
  type AppendOptions,
  type AttachmentStore,
  type CreateOptions,
  type DeleteOptions,
  type ListOptions,
  type LoadedSession,
  type SessionHeader,
  type SessionLease,
  SessionLockedError,
  type SessionPage,
  type SessionParent,
  type SessionStore,
  type StoreCallOptions,
  type StoredEvent,
  type StoredRecord,
} from "./session_store.ts";
import {
  InvalidSessionIdError,
  SessionExistsError,
  SessionLogFailedError,
  SessionNotFoundError,
} from "./store_errors.ts";

const WRITTEN = Promise.resolve();

/** Options for {@link MemorySessionStore}. */
export interface MemorySessionStoreOptions {
  /**
   * Where prompt images go, and where `delete` releases those no session references any more.
   * @default {new MemoryAttachmentStore()}
   */
  readonly attachments?: AttachmentStore;
  /**
   * The clock that times records, in ms since the epoch.
   * @default {Date.now}
   */
  readonly now?: () => number;
}

/** One stored session: records kept as the JSON text a log line would hold. */
interface MemorySession {
  /** The header as JSON. */
  readonly header: string;
  readonly cwd: string;
  readonly additionalDirectories: readonly string[];
  readonly createdAt: string;
  readonly parent: SessionParent | undefined;
  readonly tenant: string | undefined;
  readonly records: string[];
  updatedAt: string;
  title: string | undefined;
  readonly attachments: Set<string>;
}

/**
 * Sessions in memory, for one running server. Records are stored as JSON (so what `load` returns is
 * what a log would give back: fresh objects, `undefined` fields dropped), and `append` stores
 * them before it returns. Leases exclude other `acquire`s on this store; `sync` changes nothing.
 *
 * @example Creating, appending, loading and listing
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemorySessionStore } from "./memory_session_store.ts";
 * const store = new MemorySessionStore();
 * const id = crypto.randomUUID();
 * const lease = await store.acquire(id);
 * await store.create({
 *   version: 1, id, cwd: "/work", additionalDirectories: [], createdAt: new Date().toISOString(),
 * });
 * await store.append(id, [{ type: "title", title: "Fix the build" }], { sync: true });
 * assert.equal((await store.load(id))?.records[0]?.seq, 1);
 * assert.equal((await store.list({ limit: 50 })).sessions[0]?.title, "Fix the build");
 * await lease.release();
 * ```
 */
export class MemorySessionStore implements SessionStore {
  readonly #attachments: AttachmentStore;
  readonly #now: () => number;
  readonly #sessions = new Map<string, MemorySession>();
  readonly #index = new SessionIndex();
  readonly #leases = new Map<string, MemoryLease>();
  /** Sessions whose append failed, with the failure: later appends are refused until a load. */
  readonly #failed = new Map<string, unknown>();

  /** How messages name this kind of store. */
  readonly name = "memory";

  /**
   * Creates it.
   *
   * @param options The attachment store and the clock
   */
  constructor(options: MemorySessionStoreOptions = {}) {
    this.#attachments = options.attachments ?? new MemoryAttachmentStore();
    this.#now = options.now ?? Date.now;
  }

  /** The attachment store to which `delete` releases attachments. */
  get attachments(): AttachmentStore {
    return this.#attachments;
  }

  /**
   * Stores a new session, with its first events.
   *
   * @param header The header (validated like the JSONL store's)
   * @param options The first events, and an abort signal, honoured first
   * @throws {InvalidSessionIdError} A bad id
   * @throws {SessionExistsError} The id is taken
   */
  async create(header: SessionHeader, options?: CreateOptions): Promise<void> {
    options?.signal?.throwIfAborted();
    checkHeader(header);
    const { id } = header;
    if (this.#sessions.has(id)) throw new SessionExistsError(id);
    const session: MemorySession = {
      header: JSON.stringify(header),
      cwd: header.cwd,
      additionalDirectories: Object.freeze([...header.additionalDirectories]),
      createdAt: creationTime(header),
      parent: parentOf(header),
      tenant: tenantOf(header),
      records: [],
      updatedAt: new Date(header.createdAt).toISOString(),
      title: undefined,
      attachments: new Set(),
    };
    const events = options?.events ?? [];
    const time = new Date(this.#now()).toISOString();
    // Serialized before anything is stored: a create whose events cannot be stored stores nothing.
    const lines = this.#lines(session, events, time);
    this.#sessions.set(id, session);
    this.#index.applyAll([indexLine(id, session, [])]);
    if (lines.length > 0) this.#store(id, session, events, lines, time);
    await Promise.resolve();
  }

  /**
   * Appends events as records `{...event, seq, time}`, stored before this returns; never throws.
   *
   * @param id The session
   * @param events The events, in order
   * @param _options `sync` changes nothing in memory
   * @returns Resolves at once; rejects with `InvalidSessionIdError`, `SessionNotFoundError`,
   *   the failure of events that cannot be stored (which refuses later appends until a load) or
   *   `SessionLogFailedError` (a refused one)
   */
  append(id: string, events: readonly StoredEvent[], _options: AppendOptions): Promise<void> {
    if (!isValidSessionId(id)) return Promise.reject(new InvalidSessionIdError(id));
    const session = this.#sessions.get(id);
    if (session === undefined) return Promise.reject(new SessionNotFoundError(id));
    if (this.#failed.has(id)) {
      return Promise.reject(new SessionLogFailedError(id, this.#failed.get(id)));
    }
    if (events.length === 0) return Promise.resolve();
    const time = new Date(this.#now()).toISOString();
    let lines: string[];
    try {
      lines = this.#lines(session, events, time);
    } catch (error) {
      this.#failed.set(id, error);
      return Promise.reject(error);
    }
    this.#store(id, session, events, lines, time);
    return Promise.resolve();
  }

  /**
   * Everything appended is stored when `append` returns.
   *
   * @param _id The session
   * @returns An already settled promise
   */
  written(_id: string): Promise<void> {
    return WRITTEN;
  }

  /** The records of `events` after the session's last, as JSON; throws before anything changes. */
  #lines(session: MemorySession, events: readonly StoredEvent[], time: string): string[] {
    return events.map((event, offset) =>
      recordText(event, session.records.length + offset + 1, time)
    );
  }

  /** Adds the records made by {@link #lines} to the session, its title, references and index line. */
  #store(
    id: string,
    session: MemorySession,
    events: readonly StoredEvent[],
    lines: readonly string[],
    time: string,
  ): void {
    const added = new Set<string>();
    session.records.push(...lines);
    for (const event of events) collectFacts(event, added, (title) => session.title = title);
    const references = [...added].filter((sha) => !session.attachments.has(sha));
    for (const sha of references) session.attachments.add(sha);
    if (time > session.updatedAt) session.updatedAt = time;
    this.#index.applyAll([indexLine(id, session, references)]);
  }

  /**
   * Whether a session with this id is stored.
   *
   * @param id The session
   */
  exists(id: string): Promise<boolean> {
    return Promise.resolve(this.#sessions.has(id));
  }

  /**
   * The session's header and records, as fresh objects.
   *
   * @param id The session
   * @param options An abort signal, honoured first
   * @returns The session, or `undefined` when none is stored under this id
   */
  async load(id: string, options?: StoreCallOptions): Promise<LoadedSession | undefined> {
    options?.signal?.throwIfAborted();
    const session = this.#sessions.get(id);
    if (session === undefined) return undefined;
    // Loaded anew: the caller goes on from what is stored.
    this.#failed.delete(id);
    await Promise.resolve();
    return {
      header: JSON.parse(session.header) as SessionHeader,
      records: session.records.map((line) => JSON.parse(line) as StoredRecord),
    };
  }

  /**
   * A page of sessions, newest creation first, ties by id; cursors as the JSONL store's.
   *
   * @param options Filters (cwd, lineage), cursor, page size, abort signal
   * @returns The page
   * @throws {InvalidCursorError} A cursor this store did not issue
   * @throws {RangeError} A limit that is not a positive integer
   */
  async list(options: ListOptions): Promise<SessionPage> {
    const { limit, cwd, parent, tenant } = options;
    const after = listStart(options);
    await Promise.resolve();
    const { sessions, next } = this.#index.page({ cwd, parent, tenant }, after, limit);
    return next === undefined ? { sessions } : { sessions, nextCursor: encodeCursor(next) };
  }

  /**
   * Removes a session and its descendants (see {@link SessionStore.delete}), then releases the
   * attachments no other session references. Uses this store's lease on each (released when
   * done) or takes one; one process holds them all, so a lease never blocks a delete here.
   * Unknown ids are fine.
   *
   * @param id The session
   * @param options An abort signal, honoured until the removal starts
   */
  async delete(id: string, options?: DeleteOptions): Promise<void> {
    options?.signal?.throwIfAborted();
    if (!isValidSessionId(id)) return;
    await deleteTree(id, options, {
      list: (list) => this.list(list),
      lease: async (session) => this.#leases.get(session) ?? await this.acquire(session),
      remove: (session) => this.#remove(session),
    });
  }

  /** Removes one session, then releases the attachments no other session references. */
  async #remove(id: string): Promise<void> {
    const session = this.#sessions.get(id);
    if (session === undefined) return;
    this.#sessions.delete(id);
    this.#failed.delete(id);
    this.#index.applyAll([{ id, deleted: true }]);
    const unreferenced = [...session.attachments].filter((sha) => !this.#index.isReferenced(sha));
    if (unreferenced.length > 0) await this.#attachments.release(unreferenced);
  }

  /**
   * Takes exclusive ownership of a session within this store.
   *
   * @param id The session (stored or not)
   * @param options An abort signal, honoured first
   * @returns The lease
   * @throws {InvalidSessionIdError} A bad id
   * @throws {SessionLockedError} This store already holds it
   */
  async acquire(id: string, options?: StoreCallOptions): Promise<SessionLease> {
    options?.signal?.throwIfAborted();
    if (!isValidSessionId(id)) throw new InvalidSessionIdError(id);
    if (this.#leases.has(id)) {
      throw new SessionLockedError(`session ${id} is already open in this acp-harness process`);
    }
    this.#failed.delete(id);
    const lease: MemoryLease = new MemoryLease(() => {
      if (this.#leases.get(id) === lease) this.#leases.delete(id);
    });
    this.#leases.set(id, lease);
    await Promise.resolve();
    return lease;
  }
}

/** A lease of {@link MemorySessionStore}; `release` is idempotent. */
class MemoryLease implements SessionLease {
  readonly #release: () => void;

  constructor(release: () => void) {
    this.#release = release;
  }

  release(): Promise<void> {
    this.#release();
    return Promise.resolve();
  }
}

function indexLine(
  id: string,
  session: MemorySession,
  attachments: readonly string[],
): IndexUpdate {
  return {
    id,
    cwd: session.cwd,
    additionalDirectories: session.additionalDirectories,
    ...(session.title === undefined ? {} : { title: session.title }),
    createdAt: session.createdAt,
    updatedAt: canonicalTime(session.updatedAt, session.createdAt),
    ...(attachments.length === 0 ? {} : { attachments }),
    ...(session.parent === undefined ? {} : { parent: session.parent }),
    ...(session.tenant === undefined ? {} : { tenant: session.tenant }),
  };
}
