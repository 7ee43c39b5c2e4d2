/**
 * The {@link SessionStore} on PostgreSQL, shared by every acp-harness instance on one database.
 *
 * ## Order and durability
 *
 * A commit point is a committed transaction. Appends to one session go through a queue of this
 * store: each transaction takes every append queued so far (group commit), numbers their events
 * after the session's `last_seq` (its row locked for the transaction) and inserts them under
 * `PRIMARY KEY (session_id, seq)`, so an event can be neither lost between two others nor
 * stored twice. Transactions of a session run one after the other, so appends commit in call
 * order and a failed one leaves nothing of its batch behind.
 *
 * A batch whose transaction failed on the way to the database (the server is down or
 * restarting, a connection broke) is retried in place, with backoff, for up to
 * `commitTimeoutMs`; it is never skipped. The store knows the session's `last_seq` as it last
 * committed it: a retry whose earlier attempt committed after all (the answer was lost) is taken
 * as done, and a session whose `last_seq` is not what this store committed (a database crash
 * lost asynchronously committed events) is not written after the hole. Any batch that fails for
 * good poisons the session for this store: its pending and later appends reject
 * (`SessionLogFailedError`) until the session is loaded again or its lease taken again, so no
 * sequence gap ever closes up.
 *
 * - An append with `sync` resolves once its transaction committed with `synchronous_commit` on:
 *   its events, and every earlier one of the session (committed before it), survive a crash of
 *   this process, of the database server and of its machine.
 * - An append without `sync` is committed with `synchronous_commit = off` (PostgreSQL's
 *   asynchronous commit): once it resolves, its events survive a crash of this process, but a
 *   crash of the database server within a few hundred milliseconds may lose them, and a later
 *   synced commit of the session makes them durable.
 * - Where PostgreSQL differs from the contract: events cannot be in the database when `append`
 *   merely returned, so "once `append` has returned its events survive a crash of this process"
 *   holds here only once the promise resolved (a `SIGKILL` in between loses the batch, never a
 *   part of it, never one in the middle). What the session layer relies on holds: a `load` by
 *   this store after `append` returned sees the events (it waits for the session's queue), and a
 *   turn's events reach the database at the latest at its next commit point.
 *
 * ## Ownership
 *
 * Leases are rows (`_leases.ts`). Besides the caller's lease, every append checks in its
 * transaction, after locking the session's row, that no other instance holds a live lease on
 * the session: an instance that lost its lease (it stalled past the lease time and another took
 * the session over, which locks the same row) gets `SessionLockedError` instead of writing
 * between the new owner's events.
 *
 * ## Listing
 *
 * Every `list` reads the database (no cache): a title or a session written by another instance
 * shows at once. Pages are keyset pages on the index `(created_at DESC, id)` (and
 * `(cwd, created_at DESC, id)`, and their like for a lineage filter: see `schema.ts`), so a page
 * costs the same however many sessions there are; cursors are the same as the other stores'.
 *
 * @module
 */
import type postgres from "postgres";
import {
  canonicalTime,
  checkHeader,
  creationTime,
  isSessionParent,
  isValidSessionId,
  parentOf,
  SHA256_HEX,
  tenantOf,
} from "../_common.ts";
import { deleteTree } from "../session_tree.ts";
import { isRecord } from "../../util/json.ts";
import { encodeCursor, listStart } from "../_session_index.ts";
import { collectFacts } from "../_session_log.ts";
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
  type SessionSummary,
  type StoreCallOptions,
  type StoredEvent,
  type StoredRecord,
} from "../session_store.ts";
import {
  CorruptSessionLogError,
  InvalidSessionIdError,
  SessionExistsError,
  SessionLogFailedError,
  SessionNotFoundError,
} from "../store_errors.ts";
import { type Logger, nullLogger } from "../../log/logger.ts";
import type { PostgresLeases } from "./_leases.ts";
import { toStoreError } from "./postgres_store_error.ts";

/** Options for {@link PostgresSessionStore}. */
export interface PostgresSessionStoreOptions {
  /** The connection pool (migrated: see `schema.ts`). */
  readonly sql: postgres.Sql;
  /** Where `delete` releases the attachments no session references any more. */
  readonly attachments: AttachmentStore;
  /** This store's leases. */
  readonly leases: PostgresLeases;
  /**
   * The clock that times records, in ms since the epoch.
   * @default {Date.now}
   */
  readonly now?: () => number;
  /**
   * How long a batch whose transaction failed on the way to the database is retried before the
   * session's log is given up (poisoned), in ms.
   * @default {30_000}
   */
  readonly commitTimeoutMs?: number;
  /** Told when a batch is retried and when a session's log is given up. */
  readonly logger?: Logger;
}

/** The first pause between two attempts of a failed batch, doubled up to {@link RETRY_MAX_MS}. */
const RETRY_FIRST_MS = 50;
const RETRY_MAX_MS = 1_000;

/** Most events, and most bytes of event JSON, in one append transaction. */
const BATCH_EVENTS = 1_000;
const BATCH_BYTES = 4 * 1024 * 1024;

/** The `to_char` format of a UTC time the way `Date.prototype.toISOString` writes it. */
const ISO = 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"';

/** One `append` call waiting for its transaction. */
interface PendingAppend {
  /** The events as JSON text. */
  readonly texts: readonly string[];
  readonly bytes: number;
  /** ISO 8601, the time of every event of the call. */
  readonly time: string;
  readonly sync: boolean;
  readonly title: string | undefined;
  readonly attachments: ReadonlySet<string>;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/** A session's append queue. */
interface AppendQueue {
  readonly pending: PendingAppend[];
  running: boolean;
  /** Settles (never rejects) once every append queued so far has settled. */
  tail: Promise<void>;
}

/** What this store knows of a session's log it writes, kept while it holds the session. */
interface LogWriter {
  /** The session's `last_seq` as this store last committed it (or read it, first). */
  lastSeq: number | undefined;
  /** Set once a batch failed for good: every later append is refused with it. */
  failed?: { readonly error: unknown };
}

interface SessionRow {
  readonly id: string;
  readonly cwd: string;
  readonly additionalDirectories: string[];
  readonly title: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** The header's `parent` as JSON text, or `null`. */
  readonly parent: string | null;
  /** The tenant that owns the session, or `null`. */
  readonly tenant: string | null;
}

/**
 * Sessions in PostgreSQL (see the module documentation for order, durability, ownership and
 * listing). Made by `openPostgresStore`, which migrates the schema and owns the pool.
 *
 * @example Creating, appending, loading and listing
 * ```ts ignore
 * import { openPostgresStore } from "./postgres_store.ts";
 * await using pg = await openPostgresStore({ url, logger });
 * const { store } = pg;
 * const id = crypto.randomUUID();
 * const lease = await store.acquire(id);
 * await store.create({
 *   version: 1, id, cwd: "/work", additionalDirectories: [], createdAt: new Date().toISOString(),
 * });
 * await store.append(id, [{ type: "title", title: "Fix the build" }], { sync: true });
 * (await store.load(id))?.records[0]?.seq; // 1
 * (await store.list({ limit: 50 })).sessions[0]?.title; // "Fix the build"
 * await lease.release();
 * ```
 */
export class PostgresSessionStore implements SessionStore {
  readonly #sql: postgres.Sql;
  readonly #attachments: AttachmentStore;
  readonly #leases: PostgresLeases;
  readonly #now: () => number;
  readonly #queues = new Map<string, AppendQueue>();
  readonly #writers = new Map<string, LogWriter>();
  readonly #retryMs: number;
  readonly #logger: Logger;

  /** How messages name this kind of store. */
  readonly name = "PostgreSQL";

  /**
   * Creates it on a migrated database.
   *
   * @param options Pool, attachment store, leases, clock
   */
  constructor(options: PostgresSessionStoreOptions) {
    this.#sql = options.sql;
    this.#attachments = options.attachments;
    this.#leases = options.leases;
    this.#now = options.now ?? Date.now;
    this.#retryMs = options.commitTimeoutMs ?? 30_000;
    this.#logger = options.logger ?? nullLogger;
  }

  /** The attachment store to which `delete` releases attachments. */
  get attachments(): AttachmentStore {
    return this.#attachments;
  }

  /**
   * Stores a new session with its first events (`options.events`), in one transaction; durable
   * when it resolves.
   *
   * @param header The header
   * @param options The first events, and an abort signal, honoured until the row is written
   * @throws {InvalidSessionIdError} A bad id
   * @throws {SessionExistsError} The id is taken
   */
  async create(header: SessionHeader, options?: CreateOptions): Promise<void> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    checkHeader(header);
    const createdAt = creationTime(header);
    const events = prepareEvents(header.id, options?.events ?? []);
    const time = new Date(this.#now()).toISOString();
    const updatedAt = events.texts.length > 0 && time > createdAt ? time : createdAt;
    const title = events.title === undefined ? null : pgText(events.title);
    const attachments = [...events.attachments];
    const parent = parentOf(header);
    const parentId = parent === undefined ? null : pgText(parent.sessionId);
    const tenant = tenantOf(header) ?? null;
    try {
      await this.#sql.begin(async (tx) => {
        const rows = await tx`
          INSERT INTO acp_harness.sessions (id, header, cwd, additional_directories, created_at,
            updated_at, title, last_seq, parent_id, tenant)
          VALUES (${header.id}, ${JSON.stringify(header)}::text::json, ${pgText(header.cwd)},
            ${header.additionalDirectories.map(pgText)}::text[], ${createdAt}::timestamptz,
            ${updatedAt}::timestamptz, ${title}::text, ${events.texts.length}, ${parentId}::text,
            ${tenant}::text)
          ON CONFLICT (id) DO NOTHING
          RETURNING id`;
        if (rows.length === 0) throw new SessionExistsError(header.id);
        if (events.texts.length === 0) return;
        await Promise.all([
          tx`
            INSERT INTO acp_harness.events (session_id, seq, time, event)
            SELECT ${header.id}, e.ord::integer, ${time}::timestamptz, e.event::json
            FROM unnest(${events.texts}::text[]) WITH ORDINALITY AS e(event, ord)`,
          attachments.length === 0 ? undefined : tx`
            INSERT INTO acp_harness.session_attachments (session_id, sha256)
            SELECT ${header.id}, unnest(${attachments}::text[])
            ON CONFLICT DO NOTHING`,
        ]);
      });
    } catch (error) {
      throw toStoreError(`create session "${header.id}"`, error, signal);
    }
  }

  /**
   * Queues events for the session's next transaction (see the module documentation); never
   * throws.
   *
   * @param id The session
   * @param events The events, in order
   * @param options `sync`: resolve only once committed durably
   * @returns Resolves once committed; rejects with `InvalidSessionIdError`,
   *   `SessionNotFoundError`, `SessionLockedError` (another instance took the session over) or
   *   `PostgresStoreError`
   */
  append(id: string, events: readonly StoredEvent[], options: AppendOptions): Promise<void> {
    if (!isValidSessionId(id)) return Promise.reject(new InvalidSessionIdError(String(id)));
    const failed = this.#writers.get(id)?.failed;
    if (failed) return Promise.reject(new SessionLogFailedError(id, failed.error));
    let prepared: PreparedEvents;
    try {
      prepared = prepareEvents(id, events);
    } catch (error) {
      this.#writer(id).failed = { error };
      return Promise.reject(error);
    }
    const { texts, bytes, title, attachments } = prepared;
    const time = new Date(this.#now()).toISOString();
    let queue = this.#queues.get(id);
    if (queue === undefined) {
      queue = { pending: [], running: false, tail: Promise.resolve() };
      this.#queues.set(id, queue);
    }
    const done = new Promise<void>((resolve, reject) => {
      queue.pending.push({
        texts,
        bytes,
        time,
        sync: options?.sync === true,
        title,
        attachments,
        resolve,
        reject,
      });
    });
    queue.tail = done.then(() => {}, () => {});
    void this.#pump(id, queue);
    return done;
  }

  /**
   * Whether a session with this id is stored.
   *
   * @param id The session
   * @returns `false` for a malformed id too
   */
  async exists(id: string): Promise<boolean> {
    if (!isValidSessionId(id)) return false;
    try {
      const rows = await this.#sql`SELECT 1 FROM acp_harness.sessions WHERE id = ${id}`;
      return rows.length > 0;
    } catch (error) {
      throw toStoreError(`look up session "${id}"`, error);
    }
  }

  /**
   * Reads a session's header and events, after this store's pending appends of it committed, in
   * one snapshot.
   *
   * @param id The session
   * @param options An abort signal, honoured until the read starts
   * @returns The session, or `undefined` when none is stored under this id
   * @throws {CorruptSessionLogError} Rows that do not read back as a session
   */
  async load(id: string, options?: StoreCallOptions): Promise<LoadedSession | undefined> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    if (!isValidSessionId(id)) return undefined;
    await untilSettled(this.#settled(id), signal);
    signal?.throwIfAborted();
    // Loaded anew: the caller goes on from what is stored (read again before the next write).
    this.#writers.delete(id);
    let rows: [{ header: string }[], { seq: number; time: string; event: string }[]];
    try {
      rows = await this.#sql.begin(
        "isolation level repeatable read read only",
        (tx) =>
          Promise.all([
            tx<{ header: string }[]>`
            SELECT header::text AS header FROM acp_harness.sessions WHERE id = ${id}`,
            tx<{ seq: number; time: string; event: string }[]>`
            SELECT seq, to_char(time AT TIME ZONE 'UTC', ${ISO}) AS time, event::text AS event
            FROM acp_harness.events WHERE session_id = ${id} ORDER BY seq`,
          ]),
      );
    } catch (error) {
      throw toStoreError(`load session "${id}"`, error, signal);
    }
    const [[session], events] = rows;
    if (session === undefined) return undefined;
    const where = `PostgreSQL acp_harness.events of session ${id}`;
    const header = JSON.parse(session.header) as SessionHeader;
    const records = events.map((row, index): StoredRecord => {
      if (row.seq !== index + 1) {
        throw new CorruptSessionLogError(where, index + 1, `has seq ${row.seq}`);
      }
      let event: unknown;
      try {
        event = JSON.parse(row.event);
      } catch {
        throw new CorruptSessionLogError(where, row.seq, "is not JSON");
      }
      if (!isRecord(event) || typeof event.type !== "string") {
        throw new CorruptSessionLogError(where, row.seq, "is not an event");
      }
      return { ...(event as StoredEvent), seq: row.seq, time: row.time };
    });
    return { header, records };
  }

  /**
   * A page of sessions, newest creation first, ties by id, read from the database.
   *
   * @param options Filters (cwd, lineage), cursor, page size, abort signal
   * @returns The page
   * @throws {InvalidCursorError} A cursor no store issued
   * @throws {RangeError} A limit that is not a positive integer
   */
  async list(options: ListOptions): Promise<SessionPage> {
    const after = listStart(options);
    const { limit, cwd, parent, tenant, signal } = options;
    const sql = this.#sql;
    let rows: SessionRow[];
    try {
      rows = await sql<SessionRow[]>`
        SELECT id, cwd, additional_directories AS "additionalDirectories", title,
          to_char(created_at AT TIME ZONE 'UTC', ${ISO}) AS "createdAt",
          to_char(updated_at AT TIME ZONE 'UTC', ${ISO}) AS "updatedAt",
          CASE WHEN parent_id IS NULL THEN NULL ELSE (header->'parent')::text END AS parent,
          tenant
        FROM acp_harness.sessions
        WHERE true
          ${tenant === undefined ? sql`` : sql`AND tenant = ${tenant}`}
          ${cwd === undefined ? sql`` : sql`AND cwd = ${pgText(cwd)}`}
          ${
        parent === undefined
          ? sql``
          : parent === null
          ? sql`AND parent_id IS NULL`
          : sql`AND parent_id = ${pgText(parent)}`
      }
          ${
        after === undefined ? sql`` : sql`AND created_at <= ${after.createdAt}::timestamptz
            AND (created_at < ${after.createdAt}::timestamptz OR id > ${after.id})`
      }
        ORDER BY created_at DESC, id
        LIMIT ${limit + 1}`;
    } catch (error) {
      throw toStoreError("list sessions", error, signal);
    }
    const page = rows.slice(0, limit);
    const sessions = page.map((row): SessionSummary => ({
      id: row.id,
      cwd: row.cwd,
      additionalDirectories: row.additionalDirectories,
      ...(row.title === null ? {} : { title: row.title }),
      updatedAt: canonicalTime(row.updatedAt, row.createdAt),
      ...parentField(row.parent),
      ...(row.tenant === null ? {} : { tenant: row.tenant }),
    }));
    const last = page.at(-1);
    return rows.length > limit && last !== undefined
      ? { sessions, nextCursor: encodeCursor({ createdAt: last.createdAt, id: last.id }) }
      : { sessions };
  }

  /**
   * Removes a session and its descendants (see {@link SessionStore.delete}), each under its lease
   * (this store's, or one taken for the time), then releases the attachments no other session
   * references.
   *
   * @param id The session; unknown and malformed ids are fine
   * @param options An abort signal, honoured until the removal starts
   * @throws {SessionLockedError} Another instance holds the lease of the session or a descendant
   */
  async delete(id: string, options?: DeleteOptions): Promise<void> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    if (!isValidSessionId(id)) return;
    let removing = false;
    try {
      await deleteTree(id, options, {
        list: (list) => this.list(list),
        lease: async (session) => this.#leases.get(session) ?? await this.acquire(session, options),
        remove: async (session) => {
          // The first removal waits for the session's pending appends while the signal may still
          // stop it; the ones after it are part of a delete under way.
          await untilSettled(this.#settled(session), removing ? undefined : signal);
          if (!removing) signal?.throwIfAborted();
          removing = true;
          await this.#remove(session);
        },
      });
    } catch (error) {
      throw toStoreError(`delete session "${id}"`, error, signal);
    }
  }

  /** Removes one session's rows, then releases the attachments no other session references. */
  async #remove(id: string): Promise<void> {
    const unreferenced = await this.#sql.begin(async (tx) => {
      const references = await tx<{ sha256: string }[]>`
        DELETE FROM acp_harness.session_attachments WHERE session_id = ${id}
        RETURNING sha256`;
      await tx`DELETE FROM acp_harness.sessions WHERE id = ${id}`;
      if (references.length === 0) return [];
      const shas = references.map((row) => row.sha256);
      const rows = await tx<{ sha256: string }[]>`
        SELECT s.sha256 FROM unnest(${shas}::text[]) AS s(sha256)
        WHERE NOT EXISTS (
          SELECT 1 FROM acp_harness.session_attachments r WHERE r.sha256 = s.sha256
        )`;
      return rows.map((row) => row.sha256);
    });
    this.#writers.delete(id);
    if (unreferenced.length > 0) await this.#attachments.release(unreferenced);
  }

  /**
   * Takes the session's lease for this instance (see `_leases.ts`).
   *
   * @param id The session (stored or not)
   * @param options An abort signal; a lease taken when it fires is given back
   * @returns The lease; its release waits for this store's pending appends of the session
   * @throws {SessionLockedError} Another instance holds a live lease (named), or this store does
   */
  async acquire(id: string, options?: StoreCallOptions): Promise<SessionLease> {
    const signal = options?.signal;
    let lease: SessionLease;
    try {
      lease = await this.#leases.acquire(id, {
        ...(signal === undefined ? {} : { signal }),
        settle: () => this.#settled(id),
      });
    } catch (error) {
      throw toStoreError(`acquire session "${id}"`, error, signal);
    }
    // A new holder starts from what is stored.
    const writer: LogWriter = { lastSeq: undefined };
    this.#writers.set(id, writer);
    return {
      release: async () => {
        await lease.release();
        if (this.#writers.get(id) === writer) this.#writers.delete(id);
      },
    };
  }

  /**
   * Resolves once every append queued so far has settled (for `close`).
   *
   * @returns Resolves when the queues are empty
   */
  async drain(): Promise<void> {
    while (this.#queues.size > 0) {
      await Promise.all([...this.#queues.values()].map((queue) => queue.tail));
    }
  }

  /** Settles once the session's appends queued so far have settled. */
  #settled(id: string): Promise<void> {
    return this.#queues.get(id)?.tail ?? Promise.resolve();
  }

  /** What this store knows of the session's log (made on first use). */
  #writer(id: string): LogWriter {
    let writer = this.#writers.get(id);
    if (writer === undefined) {
      writer = { lastSeq: undefined };
      this.#writers.set(id, writer);
    }
    return writer;
  }

  /**
   * Writes the session's queued appends, a batch per transaction, until the queue is empty; a
   * batch that fails for good fails it and everything after it (see the module documentation).
   */
  async #pump(id: string, queue: AppendQueue): Promise<void> {
    if (queue.running) return;
    queue.running = true;
    try {
      while (queue.pending.length > 0) {
        const writer = this.#writer(id);
        if (writer.failed) {
          const refused = new SessionLogFailedError(id, writer.failed.error);
          for (const append of queue.pending.splice(0)) append.reject(refused);
          break;
        }
        const batch = takeBatch(queue.pending);
        try {
          await this.#writeRetrying(id, writer, batch);
        } catch (error) {
          const failure = toStoreError(`append to session "${id}"`, error);
          writer.failed = { error: failure };
          this.#logger.error("cannot write the session log: later appends are refused", {
            sessionId: id,
            error: failure,
          });
          for (const append of batch) append.reject(failure);
          continue;
        }
        for (const append of batch) append.resolve();
      }
    } finally {
      queue.running = false;
      if (queue.pending.length === 0 && this.#queues.get(id) === queue) this.#queues.delete(id);
    }
  }

  /**
   * Writes a batch, retrying it in place while the database cannot be reached, up to the commit
   * timeout.
   */
  async #writeRetrying(
    id: string,
    writer: LogWriter,
    batch: readonly PendingAppend[],
  ): Promise<void> {
    const deadline = Date.now() + this.#retryMs;
    for (let attempt = 0;; attempt++) {
      try {
        await this.#write(id, writer, batch, attempt > 0);
        if (attempt > 0) this.#logger.info("wrote the session log again", { sessionId: id });
        return;
      } catch (error) {
        const pause = Math.min(RETRY_FIRST_MS * 2 ** attempt, RETRY_MAX_MS);
        if (!isTransient(error) || Date.now() + pause > deadline) throw error;
        if (attempt === 0) {
          this.#logger.warn("cannot write the session log: retrying", {
            sessionId: id,
            error: toStoreError(`append to session "${id}"`, error),
          });
        }
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  }

  /**
   * One transaction: the batch's events after the session's last, in order; `retry` when an
   * earlier attempt of the same batch failed (it may have committed after all).
   */
  async #write(
    id: string,
    writer: LogWriter,
    batch: readonly PendingAppend[],
    retry: boolean,
  ): Promise<void> {
    const sync = batch.some((append) => append.sync);
    const texts = batch.flatMap((append) => append.texts);
    const times = batch.flatMap((append) => append.texts.map(() => append.time));
    const latest = batch.reduce((max, append) => append.time > max ? append.time : max, "");
    const last = batch.findLast((append) => append.title !== undefined)?.title;
    const title = last === undefined ? null : pgText(last);
    const attachments = [...new Set(batch.flatMap((append) => [...append.attachments]))];
    const owner = this.#leases.owner;
    const committed = await this.#sql.begin(async (tx): Promise<number | undefined> => {
      // One round trip: the lease check runs after the row lock is granted, in a fresh
      // snapshot, so it sees a takeover that committed while this waited for the lock.
      const [, locked, holders] = await Promise.all([
        sync ? tx`SELECT 1` : tx`SET LOCAL synchronous_commit = off`,
        tx<{ lastSeq: number }[]>`
          SELECT last_seq AS "lastSeq" FROM acp_harness.sessions WHERE id = ${id} FOR UPDATE`,
        tx<{ instance: string }[]>`
          SELECT instance FROM acp_harness.leases
          WHERE session_id = ${id} AND owner <> ${owner} AND expires_at > clock_timestamp()`,
      ]);
      const last = locked[0]?.lastSeq;
      if (last === undefined) throw new SessionNotFoundError(id);
      const holder = holders[0]?.instance;
      if (holder !== undefined) {
        throw new SessionLockedError(
          `session ${id} is open in another acp-harness instance ("${holder}"): ` +
            "this instance lost its lease",
        );
      }
      const known = writer.lastSeq;
      if (retry && known !== undefined && last === known + texts.length) {
        // The earlier attempt committed; only its answer was lost.
        return last;
      }
      if (known !== undefined && last !== known) {
        throw new SessionLogFailedError(
          id,
          `the database holds ${last} events of it where this instance committed ${known}` +
            " (a crash of the database server lost committed events)",
        );
      }
      writer.lastSeq = last;
      if (texts.length === 0) return last;
      await Promise.all([
        tx`
          INSERT INTO acp_harness.events (session_id, seq, time, event)
          SELECT ${id}, ${last}::integer + e.ord::integer, e.time, e.event::json
          FROM unnest(${times}::timestamptz[], ${texts}::text[]) WITH ORDINALITY
            AS e(time, event, ord)`,
        tx`
          UPDATE acp_harness.sessions
          SET last_seq = ${last + texts.length},
            updated_at = greatest(updated_at, ${latest}::timestamptz),
            title = coalesce(${title}::text, title)
          WHERE id = ${id}`,
        attachments.length === 0 ? undefined : tx`
          INSERT INTO acp_harness.session_attachments (session_id, sha256)
          SELECT ${id}, unnest(${attachments}::text[])
          ON CONFLICT DO NOTHING`,
      ]);
      return last + texts.length;
    });
    writer.lastSeq = committed;
  }
}

/** PostgreSQL's SQLSTATE classes and codes of a failure worth retrying the transaction for. */
const TRANSIENT_STATES = /^(08|53|57P0[123]|40001|40P01|55006)/;
/** The client's and the socket's codes of a connection that failed or broke. */
const TRANSIENT_CODES = new Set([
  "CONNECTION_CLOSED",
  "CONNECT_TIMEOUT",
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "ENOTCONN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
]);

/** Whether a transaction failed on the way to the database (worth another attempt). */
function isTransient(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== "string") return false;
  return TRANSIENT_CODES.has(code) || TRANSIENT_STATES.test(code);
}

/** Events as the store writes them: JSON texts, and what they say for the session's row. */
interface PreparedEvents {
  readonly texts: readonly string[];
  /** Characters of the texts, for the batch limits. */
  readonly bytes: number;
  /** The last title among them. */
  readonly title: string | undefined;
  /** The attachments they reference (valid sha256 only). */
  readonly attachments: ReadonlySet<string>;
}

/**
 * Serializes a session's events and collects their title and references.
 *
 * @throws {TypeError} An event that is not an object or cannot be written as JSON
 */
function prepareEvents(id: string, events: readonly StoredEvent[]): PreparedEvents {
  const texts: string[] = [];
  let bytes = 0;
  let title: string | undefined;
  const attachments = new Set<string>();
  for (const event of events) {
    const text = JSON.stringify(event);
    if (!isRecord(event) || typeof text !== "string") {
      throw new TypeError(`Cannot append to session "${id}": an event is not an object`);
    }
    texts.push(text);
    bytes += text.length;
    collectFacts(event, attachments, (found) => title = found);
  }
  for (const sha of attachments) if (!SHA256_HEX.test(sha)) attachments.delete(sha);
  return { texts, bytes, title, attachments };
}

/** The `parent` of a list row (the header's, as JSON text) as a summary field. */
function parentField(json: string | null): { parent?: SessionParent } {
  if (json === null) return {};
  const parent: unknown = JSON.parse(json);
  return isSessionParent(parent)
    ? { parent: { sessionId: parent.sessionId, toolCallId: parent.toolCallId } }
    : {};
}

/**
 * A string as a PostgreSQL `text` value can hold it: NUL characters, which `text` refuses, become
 * U+FFFD. Only the list columns (cwd, directories, title) go through it; the header and the events
 * are stored as JSON text, where a NUL is the escape `\u0000`, and read back exactly.
 */
function pgText(value: string): string {
  return value.includes("\u0000") ? value.replaceAll("\u0000", "\ufffd") : value;
}

/** Takes the first appends of the queue, up to the batch limits (at least one). */
function takeBatch(pending: PendingAppend[]): PendingAppend[] {
  let count = 0;
  let events = 0;
  let bytes = 0;
  for (const append of pending) {
    if (
      count > 0 &&
      (events + append.texts.length > BATCH_EVENTS || bytes + append.bytes > BATCH_BYTES)
    ) {
      break;
    }
    count++;
    events += append.texts.length;
    bytes += append.bytes;
  }
  return pending.splice(0, count);
}

/** Waits for `settled`, or rejects with the signal's reason when it fires first. */
async function untilSettled(
  settled: Promise<void>,
  signal: AbortSignal | undefined,
): Promise<void> {
  if (signal === undefined) return await settled;
  signal.throwIfAborted();
  let onAbort: (() => void) | undefined;
  try {
    await Promise.race([
      settled,
      new Promise<never>((_, reject) => {
        onAbort = () => reject(signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
      }),
    ]);
  } finally {
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}
