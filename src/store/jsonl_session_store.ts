/**
 * The {@link SessionStore} on plain files: one append-only JSONL log per session, an append-only
 * index for `session/list`, lock files for ownership, content-addressed attachments.
 *
 * ## Layout under `dataDir`
 *
 * ```text
 * sessions/<id>.jsonl        line 1: the SessionHeader; then one StoredRecord per line
 *                            ({...event, seq, time}, seq 1, 2, … in order)
 * index.jsonl                line 1: {"acpHarnessIndex":1,"generation":"<uuid>","parents":1}
 *                            (new on rewrite; without `parents`: rebuilt from the logs);
 *                            then one line per change, appended:
 *                              {id, cwd, additionalDirectories, title?, createdAt, updatedAt,
 *                               attachments?, parent?, tenant?}
 *                                (sets the summary; `attachments` adds references), or
 *                              {id, deleted: true} (a tombstone), or
 *                              {id, deleted: true, unreadable, size, mtimeMs}
 *                                (a log that could not be read: not listed, read again)
 * index.lock                 held (O_EXCL) while a process writes or rewrites index.jsonl
 * locks/<id>.lock            {pid, hostname, time, nonce}: the process that has the session open
 * attachments/<aa>/<sha256>  image bytes by content (see FileAttachmentStore)
 * ```
 *
 * ## Guarantees
 *
 * - **Appends.** One `append` is one `O_APPEND` write, so a batch lands whole or torn at its end.
 *   The write is synchronous when this process knows the log (it created or loaded it, or
 *   appended before): the records are in the operating system's hands when `append` returns, so
 *   a crash of this process cannot lose them; with `sync` they are fdatasynced before the
 *   promise resolves. Sequence numbers continue from the last record. Only the process holding a
 *   session's lease appends to it.
 * - **Torn tails.** `load` ignores a final line without a newline or that is not JSON, and warns.
 *   When the loading process holds the session's lease (or before it first appends) it truncates
 *   the torn bytes (an fsynced `ftruncate`: no rewrite of the whole log, and no window where the
 *   file is missing), so every later load sees a clean log. A bad line anywhere else is a
 *   {@link CorruptSessionLogError}.
 * - **Index.** Read once, then incrementally: each `list` stats `index.jsonl` and reads only the
 *   bytes appended since (a changed generation line means another process rewrote it: read it
 *   again). Sessions are kept sorted (newest `createdAt` first, id ascending), so a page costs a
 *   binary search plus the page. Every index write happens under `index.lock`, after catching up
 *   with the file, so lines never interleave and a rewrite never loses another process's line.
 *   The file is rewritten compactly (temp + rename) once it has more than twice as many lines as
 *   live sessions (plus a slack), and rebuilt from the logs, with a warning, when it is missing or
 *   has a bad line other than a torn tail (and, quietly, when an earlier version wrote it without
 *   creation times).
 * - **Unreadable logs** (a bad line before the last, no complete header) are not listed, but not
 *   forgotten either: a rebuild gives each an index line saying why (a tombstone to a version that
 *   predates it), so every process counts them ({@link JsonlSessionStore.unreadable}). The first
 *   page of a `list` reads one again once its size or time changes, `unreadable()` reads them
 *   all again (and every log no index line names), and a `load` that reads one lists it.
 * - **Index updates** follow create, title events, new image references, and otherwise at most
 *   one per `indexUpdateIntervalMs` per session; in between, this process's index is updated in
 *   memory (so `list` is exact here) and the last time is written when the lease is released.
 *   A change made while a line is being written (a title, say) keeps the session due, so the
 *   next flush, at the latest the release, writes it.
 *   Index lines are a cache of the logs: after a crash they can lag, and `load` under a lease
 *   writes a correcting line.
 * - **Locks.** `acquire` creates `locks/<id>.lock` exclusively. A lock whose process is dead on
 *   this host (or that is unparsable and a few seconds old) is taken over under a second
 *   exclusive file, replacing it by rename and checking the result.
 * - **Delete** takes the lease (refusing a session open in another live process), removes the
 *   log, appends a tombstone, and releases (`AttachmentStore.release`) the attachments no
 *   live session references any more, still under `index.lock`.
 *
 * ## Modules
 *
 * This class composes three private ones: `_jsonl_log.ts` (the logs: appends, group commit,
 * repairs, per-session operation order), `_jsonl_index.ts` (the index: cache, incremental reads,
 * compaction, rebuild, attachment references) and `_jsonl_leases.ts` (lock files).
 *
 * @module
 */
import type { Host } from "../host/host.ts";
import { type Logger, nullLogger } from "../log/logger.ts";
import { checkHeader, isValidSessionId } from "./_common.ts";
import { JsonlIndex } from "./_jsonl_index.ts";
import { JsonlLeases } from "./_jsonl_leases.ts";
import { JsonlLogs, type LogState } from "./_jsonl_log.ts";
import { type LogReader, recordStream } from "./_log_reader.ts";
import { summarizeLog } from "./_session_log.ts";
import { encodeCursor, listStart } from "./_session_index.ts";
import { FileAttachmentStore } from "./attachment_store.ts";
import { deleteTree } from "./session_tree.ts";
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
  UnreadableSession,
} from "./session_store.ts";
import {
  InvalidSessionIdError,
  SessionLogFailedError,
  SessionNotFoundError,
} from "./store_errors.ts";

const WRITTEN = Promise.resolve();

export { SYNC_DELAY_MS } from "./_jsonl_log.ts";

/** Options for {@link JsonlSessionStore}. */
export interface JsonlSessionStoreOptions {
  /** The operating system. */
  readonly host: Host;
  /** Absolute directory holding everything (created on first use). */
  readonly dataDir: string;
  /**
   * Where repairs, rebuilds and index problems are reported.
   * @default {nullLogger}
   */
  readonly logger?: Logger;
  /**
   * The least time between two index lines of one session that only move its `updatedAt`.
   * @default {1000}
   */
  readonly indexUpdateIntervalMs?: number;
  /**
   * Index lines allowed beyond twice the live sessions before the index is rewritten.
   * @default {100}
   */
  readonly indexCompactSlack?: number;
}

/**
 * Sessions as JSONL files under one data directory, shareable by several processes; meets the
 * {@link SessionStore} contract, durability included.
 *
 * @example Creating, appending, loading and listing
 * ```ts ignore
 * import { NodeHost } from "../host/node_host.ts";
 * import { JsonlSessionStore } from "./jsonl_session_store.ts";
 * const store = new JsonlSessionStore({ host: new NodeHost(), dataDir: "/tmp/acp-data" });
 * const id = crypto.randomUUID();
 * const lease = await store.acquire(id);
 * await store.create({
 *   version: 1, id, cwd: "/work", additionalDirectories: [], createdAt: new Date().toISOString(),
 * });
 * await store.append(id, [{ type: "title", title: "Fix the build" }], { sync: true });
 * const { records } = (await store.load(id))!; // [{ type: "title", …, seq: 1, time: "…" }]
 * const { sessions } = await store.list({ limit: 50 }); // [{ id, cwd: "/work", title, … }]
 * await lease.release();
 * ```
 */
export class JsonlSessionStore implements SessionStore {
  readonly #host: Host;
  readonly #dir: string;
  readonly #attachments: FileAttachmentStore;
  readonly #logs: JsonlLogs;
  readonly #index: JsonlIndex;
  readonly #leases: JsonlLeases;
  #dirs: Promise<void> | undefined;
  /**
   * Sessions an append of which failed, with the failure: later appends are refused until the
   * session is loaded again or its lease taken again (see the contract: failed appends).
   */
  readonly #failed = new Map<string, unknown>();

  /** How messages name this kind of store. */
  readonly name = "JSONL";

  /**
   * Opens a store in `options.dataDir`.
   *
   * @param options Host, data directory, logger and index tuning
   */
  constructor(options: JsonlSessionStoreOptions) {
    if (typeof options.dataDir !== "string" || options.dataDir === "") {
      throw new TypeError("Cannot open session store: dataDir is empty");
    }
    const host = options.host;
    const dir = options.dataDir.replace(/\/+$/, "") || "/";
    const logger = options.logger ?? nullLogger;
    const ensureDirs = (): Promise<void> => this.#ensureDirs();
    this.#host = host;
    this.#dir = dir;
    this.#attachments = new FileAttachmentStore({ host, dir: `${dir}/attachments`, logger });
    this.#logs = new JsonlLogs(host, `${dir}/sessions`, logger);
    this.#index = new JsonlIndex({
      host,
      dir,
      logger,
      logs: this.#logs,
      interval: options.indexUpdateIntervalMs ?? 1_000,
      slack: options.indexCompactSlack ?? 100,
      ensureDirs,
      lockTemplate: () => this.#leases.template(),
    });
    this.#leases = new JsonlLeases(host, `${dir}/locks`, ensureDirs);
  }

  /**
   * The attachment store under `<dataDir>/attachments`, to which `delete` releases the
   * attachments no session references any more.
   */
  get attachments(): FileAttachmentStore {
    return this.#attachments;
  }

  /**
   * Writes a new log holding the header and `options.events` (one exclusive create) and its index
   * line: once this resolves, the session survives a crash of this process and every process
   * lists it. Nothing
   * is flushed to disk here: the session's first commit point (an `append` with `sync`, such as
   * an admitted prompt) flushes the log, its directory entry and the index line, each with group
   * commit, and resolves only once all are durable.
   *
   * @param header The session's header; `createdAt` becomes its first `updatedAt`
   * @param options The first events, and an abort signal, honoured until the log is written
   * @throws {InvalidSessionIdError} A bad id
   * @throws {SessionExistsError} The session already has a log
   */
  async create(header: SessionHeader, options?: CreateOptions): Promise<void> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    checkHeader(header);
    await this.#ensureDirs();
    // Have an index before the first log exists, so a fresh data directory is not "rebuilt".
    await this.#index.open();
    const { id } = header;
    await this.#logs.serial(id, async () => {
      signal?.throwIfAborted();
      // The first commit point flushes the index line too.
      const state = await this.#logs.create(
        header,
        () => this.#index.flushSoon(),
        options?.events,
      );
      await this.#index.created(id, state);
    });
  }

  /**
   * Appends events as records `{...event, seq, time}` with one write; never throws.
   *
   * When this process knows the log (it created or loaded it, or appended before) and nothing
   * else is queued for the session, the write happens before this returns, so a crash of this
   * process cannot lose the events; otherwise the log is read first. The in-memory index is
   * updated at once. The promise resolves when the data is on disk (`sync`) and the index line,
   * when one is due, is written.
   *
   * @param id The session (this process should hold its lease)
   * @param events The events, in order
   * @param options `sync`: on disk when the promise resolves (a commit point)
   * @returns Settles as described; rejects with {@link InvalidSessionIdError} for a bad id,
   *   `SessionNotFoundError` for a session without a log, or the write's error
   */
  append(id: string, events: readonly StoredEvent[], options: AppendOptions): Promise<void> {
    let appended: Promise<void>;
    try {
      if (!isValidSessionId(id)) throw new InvalidSessionIdError(id);
      const known = this.#logs.states.get(id);
      if (known !== undefined && known.repairTo === undefined && !this.#logs.busy(id)) {
        appended = this.#write(id, known, events, options.sync);
      } else {
        appended = this.#logs.serial(id, async () => {
          this.#refuseFailed(id);
          const state = await this.#logs.state(id);
          await this.#logs.repair(id, state);
          await this.#write(id, state, events, options.sync);
        });
      }
    } catch (error) {
      this.#noteFailure(id, error);
      return Promise.reject(error);
    }
    appended.catch((error: unknown) => this.#noteFailure(id, error));
    return appended;
  }

  /**
   * Everything appended is in the operating system's hands once `append` returned, unless it
   * had to wait for the session's other operations (then once they are done).
   *
   * @param id The session
   * @returns A promise, usually already settled
   */
  written(id: string): Promise<void> {
    return this.#logs.busy(id) ? this.#logs.serial(id, () => WRITTEN) : WRITTEN;
  }

  /** Throws when an earlier append of the session failed (see {@link #failed}). */
  #refuseFailed(id: string): void {
    if (this.#failed.has(id)) throw new SessionLogFailedError(id, this.#failed.get(id));
  }

  /** Remembers a failed append: later ones are refused (a session that is not there aside). */
  #noteFailure(id: string, error: unknown): void {
    if (error instanceof InvalidSessionIdError || error instanceof SessionNotFoundError) return;
    if (error instanceof SessionLogFailedError || this.#failed.has(id)) return;
    this.#failed.set(id, error);
  }

  /**
   * Whether a session with this id has a log.
   *
   * @param id The session
   * @returns `false` for a malformed id too
   */
  async exists(id: string): Promise<boolean> {
    if (!isValidSessionId(id)) return false;
    return (await this.#host.stat(this.#logs.path(id)))?.isFile === true;
  }

  /**
   * Reads a session's log, ignoring (and warning about) a torn final line. When this process
   * holds the session's lease, the torn bytes are cut off now and a lagging index is corrected.
   *
   * @param id The session
   * @param options An abort signal, honoured until the read starts
   * @returns Header and records, or `undefined` when there is no such session (or the id could
   *   not name one)
   * @throws {CorruptSessionLogError} A bad line before the last one
   */
  async load(id: string, options?: StoreCallOptions): Promise<LoadedSession | undefined> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    if (!isValidSessionId(id)) return undefined;
    return await this.#logs.serial(id, async () => {
      signal?.throwIfAborted();
      // Loaded anew: the caller goes on from what is stored.
      this.#failed.delete(id);
      const parsed = await this.#logs.read(id);
      if (parsed === undefined) {
        this.#logs.states.delete(id);
        return undefined;
      }
      // Only a lease holder appends, so only then is the log's state worth keeping.
      if (this.#leases.held(id)) {
        const state = this.#logs.remember(id, parsed);
        await this.#logs.repair(id, state);
        await this.#index.reconcile(id, state);
      } else {
        await this.#index.listIfMissing(
          id,
          parsed.header,
          () => summarizeLog(parsed.header, parsed.records),
        );
      }
      return { header: parsed.header, records: parsed.records };
    });
  }

  /**
   * Reads a session's log like {@link load}, a piece at a time: the records of each piece come
   * as a batch while the next piece is read. Other operations on the session wait until the
   * stream is read to its end or closed. The torn tail and the index are seen to (under the lease)
   * once the last batch is read, before the iteration ends.
   *
   * @param id The session
   * @param options An abort signal, honoured before the read and between pieces
   * @returns The header and the batches to come, or `undefined` when there is no such session (or
   *   the id could not name one)
   * @throws {CorruptSessionLogError} A bad header (rejects); a bad line before the last throws
   *   from the batches once it is reached
   */
  async loadStream(
    id: string,
    options?: StoreCallOptions,
  ): Promise<SessionRecordStream | undefined> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    if (!isValidSessionId(id)) return undefined;
    const release = await this.#logs.turn(id);
    let reader: LogReader | undefined;
    try {
      signal?.throwIfAborted();
      reader = await this.#logs.openReader(id);
    } catch (error) {
      release();
      throw error;
    }
    this.#failed.delete(id);
    if (reader === undefined) {
      this.#logs.states.delete(id);
      release();
      return undefined;
    }
    return recordStream(reader, {
      release,
      signal,
      finish: async (end, summary) => {
        this.#logs.warnTorn(id, end);
        // Only a lease holder appends, so only then is the log's state worth keeping.
        if (!this.#leases.held(id)) {
          return await this.#index.listIfMissing(id, end.header, () => summary);
        }
        const state = this.#logs.rememberEnd(id, end, summary);
        await this.#logs.repair(id, state);
        await this.#index.reconcile(id, state);
      },
    });
  }

  /**
   * A page of sessions, newest creation first, ties by id. The cursor is the last key of the
   * page, an order that updates never change: see {@link SessionStore.list}.
   *
   * @param options Exact canonical `cwd` filter, lineage filter (`parent`), `cursor` from the
   *   previous page, page size, an abort signal honoured until the index is read
   * @returns The page; `nextCursor` only when more sessions follow
   * @throws {InvalidCursorError} A cursor this store did not issue
   * @throws {RangeError} A limit that is not a positive integer
   */
  async list(options: ListOptions): Promise<SessionPage> {
    const { limit, cwd, parent, tenant, signal } = options;
    const after = listStart(options);
    const { sessions, next } = await this.#index.page(
      { cwd, parent, tenant },
      after,
      limit,
      () => signal?.throwIfAborted(),
    );
    return next === undefined ? { sessions } : { sessions, nextCursor: encodeCursor(next) };
  }

  /**
   * The sessions whose logs cannot be read (a bad line before the last, no complete header), which
   * {@link list} leaves out. Reads every log the index does not list (one that could not be read
   * before, one no index line names): those readable are listed from then on. A log that could
   * not be read is also read again by the first page of a `list` once its size or time changes,
   * and by a `load` of it.
   *
   * @param options An abort signal, honoured between the steps
   * @returns Each unreadable session and why, in id order
   */
  async unreadable(options?: StoreCallOptions): Promise<readonly UnreadableSession[]> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    return await this.#index.unreadable(() => signal?.throwIfAborted());
  }

  /**
   * Deletes a session and its descendants (see {@link SessionStore.delete}), each: log, index
   * entry (a tombstone), then releases to {@link attachments} the attachments no other live
   * session references. Releases this process's leases on them. Unknown ids are fine.
   *
   * @param id The session
   * @param options An abort signal, honoured until the removal starts
   * @throws {SessionLockedError} Another live process has the session or a descendant open
   */
  async delete(id: string, options?: DeleteOptions): Promise<void> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    if (!isValidSessionId(id)) return;
    await deleteTree(id, options, {
      list: (list) => this.list(list),
      lease: async (session) => this.#leases.held(session) ?? await this.acquire(session, options),
      remove: (session) =>
        this.#logs.serial(session, async () => {
          this.#logs.states.delete(session);
          this.#failed.delete(session);
          await this.#index.remove(
            session,
            (unreferenced) => this.#attachments.release(unreferenced),
          );
        }),
    });
  }

  /**
   * Takes exclusive ownership of a session (whether or not it exists yet) for this process
   * (acp-harness instance).
   *
   * @param id The session
   * @param options An abort signal; a lock taken when it fires is given back
   * @returns The lease; `release()` writes what the index still lacks, then removes the lock
   * @throws {InvalidSessionIdError} A bad id
   * @throws {SessionLockedError} Another live process, or this store already, holds it
   */
  async acquire(id: string, options?: StoreCallOptions): Promise<SessionLease> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    if (!isValidSessionId(id)) throw new InvalidSessionIdError(id);
    return await this.#leases.acquire(id, {
      acquired: () =>
        this.#logs.serial(id, () => {
          this.#failed.delete(id);
          return this.#logs.revalidate(id);
        }),
      releasing: () =>
        this.#logs.serial(id, async () => {
          await this.#index.flush(id, false);
          await this.#logs.forget(id);
        }),
    }, signal);
  }

  /**
   * Appends the records with one synchronous write (before this returns), then returns what is
   * left to wait for: the flush and the index line. Throws when the write fails.
   */
  #write(
    id: string,
    state: LogState,
    events: readonly StoredEvent[],
    sync: boolean,
  ): Promise<void> {
    this.#refuseFailed(id);
    const written = this.#logs.write(id, state, events);
    // No events: a commit point still makes what came before durable (a new log, say).
    if (written === undefined) return sync ? this.#logs.sync(id) : Promise.resolve();
    const indexed = this.#index.written(id, state, written.now, written.changed, sync);
    if (!sync) return indexed;
    return Promise.all([this.#logs.sync(id), indexed]).then(() => {});
  }

  #ensureDirs(): Promise<void> {
    this.#dirs ??= (async (): Promise<void> => {
      await this.#host.mkdir(`${this.#dir}/sessions`);
      await this.#host.mkdir(`${this.#dir}/locks`);
    })().catch((error) => {
      this.#dirs = undefined;
      throw error;
    });
    return this.#dirs;
  }
}
