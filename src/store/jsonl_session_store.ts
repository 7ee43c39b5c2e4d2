/**
 * The {@link SessionStore} on plain files: one append-only JSONL log per session, an append-only
 * index for `session/list`, lock files for ownership, content-addressed attachments.
 *
 * ## Layout under `dataDir`
 *
 * ```text
 * sessions/<id>.jsonl        line 1: the SessionHeader; then one StoredRecord per line
 *                            ({...event, seq, time}, seq 1, 2, … in order)
 * index.jsonl                line 1: {"acpHarnessIndex":1,"generation":"<uuid>"} (new on rewrite);
 *                            then one line per change, appended:
 *                              {id, cwd, additionalDirectories, title?, createdAt, updatedAt,
 *                               attachments?}
 *                                (sets the summary; `attachments` adds references), or
 *                              {id, deleted: true} (a tombstone)
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
 *   log, appends a tombstone, and removes attachments no live session references any more.
 *
 * @module
 */
import type { Host } from "../host/host.ts";
import { type Logger, nullLogger } from "../log/logger.ts";
import {
  bytesEqual,
  isCanonicalTime,
  isNotFound,
  isStringArray,
  isValidSessionId,
  sleep,
} from "./_common.ts";
import { type HeldLock, type LockOwner, tryLock } from "./_lock_file.ts";
import {
  decodeCursor,
  encodeCursor,
  type IndexLine,
  type IndexUpdate,
  SessionIndex,
  toIndexHeader,
  toIndexLine,
} from "./_session_index.ts";
import { collectFacts, type ParsedLog, parseSessionLog, summarizeLog } from "./_session_log.ts";
import { FileAttachmentStore } from "./attachment_store.ts";
import {
  type ListOptions,
  type LoadedSession,
  type SessionHeader,
  type SessionLease,
  SessionLockedError,
  type SessionPage,
  type SessionStore,
  type StoredEvent,
} from "./session_store.ts";
import { InvalidSessionIdError, SessionExistsError, SessionNotFoundError } from "./store_errors.ts";

/** How long a writer waits for `index.lock` before giving up. */
const INDEX_LOCK_TIMEOUT_MS = 10_000;
/** A live process holds `index.lock` for milliseconds; one held this long is abandoned. */
const INDEX_LOCK_STALE_MS = 30_000;
/** How many logs a rebuild reads at once. */
const REBUILD_CONCURRENCY = 16;

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

/** What this process knows about a session log it has read or written. */
interface LogState {
  readonly header: SessionHeader;
  /** Seq of the last record (0: header only). */
  seq: number;
  /** Bytes of the log as this process last saw or wrote it. */
  size: number;
  /** Canonical time of the last record (the creation time without records). */
  updatedAt: string;
  title: string | undefined;
  /** Every attachment the log references. */
  readonly attachments: Set<string>;
  /** References not yet written to the index. */
  readonly unindexed: Set<string>;
  /** Set after a load found a torn tail: the length to truncate to before the next append. */
  repairTo: number | undefined;
  /** `host.now()` when this process last wrote an index line for the session. */
  indexedAtMs: number;
  /** This process's in-memory index is ahead of `index.jsonl` for the session. */
  indexDirty: boolean;
  /**
   * Counts the changes to the summary. An index write clears `indexDirty` only when no change
   * came in while it was writing, so a title appended meanwhile is not taken as written.
   */
  revision: number;
}

/** What this process knows about `index.jsonl`. */
interface IndexFile {
  /** The generation line, newline included. */
  readonly header: Uint8Array;
  /** Bytes applied to the in-memory index (whole lines). */
  offset: number;
  /** Size at the last look; more than `offset` while a torn or in-flight line is pending. */
  size: number;
  /** Modification time at the last look (`NaN` after our own write). */
  mtimeMs: number;
  /** Lines in the file, generation line included. */
  lines: number;
}

/** `outdated`: written by a version whose lines lack the creation time that orders the list. */
type IndexState = "ok" | "missing" | "corrupt" | "outdated";

/** How long a commit point waits for others to share its `fdatasync` (group commit). */
export const SYNC_DELAY_MS = 2;

/**
 * Sessions as JSONL files under one data directory, shareable by several processes.
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
  readonly #syncs = new Map<
    string,
    { done: Promise<void>; started: boolean; next?: Promise<void> }
  >();
  readonly #host: Host;
  readonly #dir: string;
  readonly #logger: Logger;
  readonly #interval: number;
  readonly #slack: number;
  readonly #attachments: FileAttachmentStore;
  readonly #logs = new Map<string, LogState>();
  /** Per-session operation chains: appends, loads and deletes of one session never overlap. */
  readonly #queues = new Map<string, Promise<void>>();
  /** Operations queued or running per session; absent when none. */
  readonly #pending = new Map<string, number>();
  /** Leases of this store; `null` while an acquire is in flight. */
  readonly #leases = new Map<string, JsonlSessionLease | null>();
  #index = new SessionIndex();
  #indexFile: IndexFile | undefined;
  /** Index operations of this process run one at a time. */
  #indexQueue: Promise<void> = Promise.resolve();
  #dirs: Promise<void> | undefined;

  /**
   * Opens a store in `options.dataDir`.
   *
   * @param options Host, data directory, logger and index tuning
   */
  constructor(options: JsonlSessionStoreOptions) {
    if (typeof options.dataDir !== "string" || options.dataDir === "") {
      throw new TypeError("Cannot open session store: dataDir is empty");
    }
    this.#host = options.host;
    this.#dir = options.dataDir.replace(/\/+$/, "") || "/";
    this.#logger = options.logger ?? nullLogger;
    this.#interval = options.indexUpdateIntervalMs ?? 1_000;
    this.#slack = options.indexCompactSlack ?? 100;
    this.#attachments = new FileAttachmentStore({
      host: this.#host,
      dir: `${this.#dir}/attachments`,
      logger: this.#logger,
    });
  }

  /** The attachment store under `<dataDir>/attachments`, whose files `delete` cleans up. */
  get attachments(): FileAttachmentStore {
    return this.#attachments;
  }

  /**
   * Writes a new log holding the header, fsynced, and lists the session.
   *
   * @param header The session's header; `createdAt` becomes its first `updatedAt`
   * @throws {InvalidSessionIdError} A bad id
   * @throws {SessionExistsError} The session already has a log
   */
  async create(header: SessionHeader): Promise<void> {
    checkHeader(header);
    await this.#ensureDirs();
    // Have an index before the first log exists, so a fresh data directory is not "rebuilt".
    if (this.#indexFile === undefined) await this.#indexTask(() => this.#syncIndex(false));
    const { id } = header;
    await this.#serial(id, async () => {
      const text = JSON.stringify(header) + "\n";
      const created = await this.#host.createExclusive(this.#logPath(id), text, { sync: true });
      if (!created) throw new SessionExistsError(id);
      await this.#host.syncDir(`${this.#dir}/sessions`);
      const state: LogState = {
        header,
        seq: 0,
        size: new TextEncoder().encode(text).byteLength,
        updatedAt: new Date(header.createdAt).toISOString(),
        title: undefined,
        attachments: new Set(),
        unindexed: new Set(),
        repairTo: undefined,
        indexedAtMs: 0,
        indexDirty: true,
        revision: 0,
      };
      this.#logs.set(id, state);
      if (this.#indexFile !== undefined) this.#index.applyAll([updateLine(id, state, [])]);
      await this.#flushIndex(id, true);
    });
  }

  /**
   * Appends events as records `{...event, seq, time}` with one write.
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
   * @returns Settles as described
   * @throws {InvalidSessionIdError} A bad id (thrown)
   * @throws {SessionNotFoundError} The session has no log (thrown or rejected)
   */
  append(
    id: string,
    events: readonly StoredEvent[],
    options: { readonly sync: boolean },
  ): Promise<void> {
    if (!isValidSessionId(id)) throw new InvalidSessionIdError(id);
    const known = this.#logs.get(id);
    if (known !== undefined && known.repairTo === undefined && !this.#pending.has(id)) {
      return this.#write(id, known, events, options.sync);
    }
    return this.#serial(id, async () => {
      const state = await this.#state(id);
      await this.#repair(id, state);
      await this.#write(id, state, events, options.sync);
    });
  }

  /**
   * Reads a session's log, ignoring (and warning about) a torn final line. When this process
   * holds the session's lease, the torn bytes are cut off now and a lagging index is corrected.
   *
   * @param id The session
   * @returns Header and records, or `undefined` when there is no such session (or the id could
   *   not name one)
   * @throws {CorruptSessionLogError} A bad line before the last one
   */
  /**
   * Whether a session with this id has a log.
   *
   * @param id The session
   * @returns `false` for a malformed id too
   */
  async exists(id: string): Promise<boolean> {
    if (!isValidSessionId(id)) return false;
    return (await this.#host.stat(this.#logPath(id)))?.isFile === true;
  }

  load(id: string): Promise<LoadedSession | undefined> {
    if (!isValidSessionId(id)) return Promise.resolve(undefined);
    return this.#serial(id, async () => {
      const parsed = await this.#readLog(id);
      if (parsed === undefined) {
        this.#logs.delete(id);
        return undefined;
      }
      // Only a lease holder appends, so only then is the log's state worth keeping.
      if (this.#leases.get(id)) {
        const state = this.#remember(id, parsed);
        await this.#repair(id, state);
        await this.#reconcile(id, state);
      }
      return { header: parsed.header, records: parsed.records };
    });
  }

  /**
   * A page of sessions, newest creation first, ties by id. The cursor is the last key of the
   * page, an order that updates never change: see {@link SessionStore.list}.
   *
   * @param options Exact canonical `cwd` filter, `cursor` from the previous page, page size
   * @returns The page; `nextCursor` only when more sessions follow
   * @throws {InvalidCursorError} A cursor this store did not issue
   * @throws {RangeError} A limit that is not a positive integer
   */
  async list(options: ListOptions): Promise<SessionPage> {
    const { limit, cwd } = options;
    if (!Number.isSafeInteger(limit) || limit < 1) {
      throw new RangeError(`Cannot list sessions: limit must be a positive integer, got ${limit}`);
    }
    const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor);
    return await this.#indexTask(async () => {
      await this.#syncIndex(false);
      const { sessions, next } = this.#index.page(cwd, after, limit);
      return next === undefined ? { sessions } : { sessions, nextCursor: encodeCursor(next) };
    });
  }

  /**
   * Deletes a session: log, index entry (a tombstone) and attachments no other live session
   * references. Releases this process's lease on it. Unknown ids are fine.
   *
   * @param id The session
   * @throws {SessionLockedError} Another live process has the session open
   */
  async delete(id: string): Promise<void> {
    if (!isValidSessionId(id)) return;
    const held = this.#leases.get(id);
    const lease = held ?? await this.acquire(id);
    try {
      await this.#serial(id, async () => {
        this.#logs.delete(id);
        await this.#indexTask(() => this.#withIndexLock(() => this.#deleteLocked(id)));
      });
    } finally {
      await lease.release();
    }
  }

  /**
   * Takes exclusive ownership of a session (whether or not it exists yet) for this process
   * (acp-harness instance).
   *
   * @param id The session
   * @returns The lease; `release()` removes the lock
   * @throws {InvalidSessionIdError} A bad id
   * @throws {SessionLockedError} Another live process, or this store already, holds it
   */
  async acquire(id: string): Promise<SessionLease> {
    if (!isValidSessionId(id)) throw new InvalidSessionIdError(id);
    if (this.#leases.has(id)) {
      throw lockedError(id, { pid: this.#host.pid(), hostname: this.#host.hostname() }, this.#host);
    }
    this.#leases.set(id, null);
    let lock: HeldLock | undefined;
    try {
      await this.#ensureDirs();
      const attempt = await tryLock(this.#host, this.#lockPath(id));
      if (!attempt.acquired) throw lockedError(id, attempt.holder, this.#host);
      lock = attempt.lock;
      await this.#serial(id, async () => {
        // What this process knew may be stale if another process held the session meanwhile.
        const state = this.#logs.get(id);
        if (state === undefined) return;
        const info = await this.#host.stat(this.#logPath(id));
        if (info?.size !== state.size) {
          this.#logs.delete(id);
          return;
        }
        await this.#repair(id, state);
      });
      const held = lock;
      const lease: JsonlSessionLease = new JsonlSessionLease(() => this.#release(id, lease, held));
      this.#leases.set(id, lease);
      return lease;
    } catch (error) {
      this.#leases.delete(id);
      await lock?.release();
      throw error;
    }
  }

  async #release(id: string, lease: JsonlSessionLease, lock: HeldLock): Promise<void> {
    try {
      await this.#serial(id, async () => {
        await this.#flushIndex(id, false);
        this.#logs.delete(id);
        // Wait for a pending group commit, then let go of the log's open descriptor.
        await this.#syncs.get(this.#logPath(id))?.done.catch(() => {});
        this.#host.forgetFile(this.#logPath(id));
      });
      await lock.release();
    } finally {
      if (this.#leases.get(id) === lease) this.#leases.delete(id);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Session logs

  /**
   * Appends the records with one synchronous write, updates what this process knows and the
   * in-memory index, and returns what is left to wait for: the flush and the index line.
   */
  #write(
    id: string,
    state: LogState,
    events: readonly StoredEvent[],
    sync: boolean,
  ): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    const path = this.#logPath(id);
    const now = this.#host.now();
    const time = new Date(now).toISOString();
    const references = new Set<string>();
    let title = state.title;
    let text = "";
    for (const [offset, event] of events.entries()) {
      text += JSON.stringify({ ...event, seq: state.seq + offset + 1, time }) + "\n";
      collectFacts(event, references, (value) => title = value);
    }
    const bytes = new TextEncoder().encode(text);
    try {
      this.#host.appendFileSync(path, bytes, { create: false });
    } catch (error) {
      // The tail may now be torn: forget what we knew, the next append re-reads (and repairs).
      this.#logs.delete(id);
      if (isNotFound(error)) throw new SessionNotFoundError(id);
      throw error;
    }
    state.seq += events.length;
    state.size += bytes.byteLength;
    if (time > state.updatedAt) state.updatedAt = time;
    let added = false;
    for (const sha of references) {
      if (state.attachments.has(sha)) continue;
      state.attachments.add(sha);
      state.unindexed.add(sha);
      added = true;
    }
    const retitled = title !== state.title;
    state.title = title;
    const listed = this.#indexFile === undefined || this.#index.get(id) !== undefined;
    state.indexDirty = true;
    state.revision++;
    if (this.#indexFile !== undefined) {
      this.#index.applyAll([updateLine(id, state, [...state.unindexed])]);
    }
    const due = retitled || added || !listed || now - state.indexedAtMs >= this.#interval;
    const indexed = due ? this.#flushIndex(id, sync) : Promise.resolve();
    if (!sync) return indexed;
    return Promise.all([this.#sync(path), indexed]).then(() => {});
  }

  /**
   * `fdatasync`s a log with group commit: a sync starts {@link SYNC_DELAY_MS} after the first
   * request, and every request until it starts shares it; requests made while it runs share the
   * one after it. Bursts of commit points (a busy session, many sessions) thus cost a few syncs,
   * and appends rarely wait behind one.
   */
  #sync(path: string): Promise<void> {
    const state = this.#syncs.get(path);
    if (state && !state.started) return state.done;
    if (state) {
      state.next ??= state.done.catch(() => {}).then(() => this.#sync(path));
      return state.next;
    }
    const entry: { done: Promise<void>; started: boolean; next?: Promise<void> } = {
      done: Promise.resolve(),
      started: false,
    };
    entry.done = new Promise<void>((resolve) => setTimeout(resolve, SYNC_DELAY_MS))
      .then(() => {
        entry.started = true;
        return this.#host.syncFile(path);
      })
      .finally(() => {
        if (this.#syncs.get(path) === entry) this.#syncs.delete(path);
      });
    this.#syncs.set(path, entry);
    return entry.done;
  }

  /** Cuts a torn tail found by a load, before anything is appended after it. */
  async #repair(id: string, state: LogState): Promise<void> {
    if (state.repairTo === undefined) return;
    const path = this.#logPath(id);
    await this.#host.truncate(path, state.repairTo, { sync: true });
    this.#logger.warn("removed the torn tail of a session log", {
      path,
      bytes: state.size - state.repairTo,
    });
    state.size = state.repairTo;
    state.repairTo = undefined;
  }

  #logPath(id: string): string {
    return `${this.#dir}/sessions/${id}.jsonl`;
  }

  #lockPath(id: string): string {
    return `${this.#dir}/locks/${id}.lock`;
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

  /**
   * Runs `task` after every earlier operation on the same session. The pending count drops
   * before the returned promise settles, so a caller resuming after it sees the session idle.
   */
  #serial<T>(id: string, task: () => Promise<T>): Promise<T> {
    this.#pending.set(id, (this.#pending.get(id) ?? 0) + 1);
    const run = (this.#queues.get(id) ?? Promise.resolve()).then(async () => {
      try {
        return await task();
      } finally {
        const left = (this.#pending.get(id) ?? 1) - 1;
        if (left > 0) {
          this.#pending.set(id, left);
        } else {
          this.#pending.delete(id);
          this.#queues.delete(id);
        }
      }
    });
    if (this.#pending.has(id)) this.#queues.set(id, run.then(() => {}, () => {}));
    return run;
  }

  async #readLog(id: string, quiet = false): Promise<ParsedLog | undefined> {
    const path = this.#logPath(id);
    let bytes: Uint8Array;
    try {
      bytes = await this.#host.readFile(path);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
    const parsed = parseSessionLog(bytes, path, id);
    if (quiet) return parsed;
    if (parsed === undefined) {
      if (bytes.byteLength > 0) {
        this.#logger.warn("ignoring a session log without a complete header", { path });
      }
    } else if (parsed.cleanLength < parsed.length) {
      this.#logger.warn("ignoring the torn tail of a session log", {
        path,
        bytes: parsed.length - parsed.cleanLength,
      });
    }
    return parsed;
  }

  async #state(id: string): Promise<LogState> {
    const known = this.#logs.get(id);
    if (known !== undefined) return known;
    const parsed = await this.#readLog(id);
    if (parsed === undefined) throw new SessionNotFoundError(id);
    return this.#remember(id, parsed);
  }

  #remember(id: string, parsed: ParsedLog): LogState {
    const summary = summarizeLog(parsed.header, parsed.records);
    const previous = this.#logs.get(id);
    const state: LogState = {
      header: parsed.header,
      seq: parsed.records.at(-1)?.seq ?? 0,
      size: parsed.length,
      updatedAt: canonicalTime(summary.updatedAt, parsed.header.createdAt),
      title: summary.title,
      attachments: new Set(summary.attachments),
      unindexed: previous?.unindexed ?? new Set(),
      repairTo: parsed.cleanLength < parsed.length ? parsed.cleanLength : undefined,
      indexedAtMs: previous?.indexedAtMs ?? 0,
      indexDirty: previous?.indexDirty ?? false,
      revision: (previous?.revision ?? 0) + 1,
    };
    this.#logs.set(id, state);
    return state;
  }

  // ---------------------------------------------------------------------------------------------
  // The index

  get #indexPath(): string {
    return `${this.#dir}/index.jsonl`;
  }

  /** Runs `task` after every earlier index operation of this store. */
  #indexTask<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#indexQueue.then(task);
    this.#indexQueue = run.then(() => {}, () => {});
    return run;
  }

  /**
   * Writes the session's current summary (and its unwritten references) as an index line, unless
   * an earlier flush already did. Failures are logged: the index is a cache of the logs.
   */
  #flushIndex(id: string, sync: boolean): Promise<void> {
    return this.#indexTask(async () => {
      const state = this.#logs.get(id);
      if (state === undefined || !state.indexDirty) return;
      const references = [...state.unindexed];
      const now = this.#host.now();
      const { revision } = state;
      try {
        await this.#writeIndex([updateLine(id, state, references)], sync);
        for (const sha of references) state.unindexed.delete(sha);
        state.indexedAtMs = now;
        // An append during the write (a title, say) is not in the line: it stays due.
        if (state.revision === revision) state.indexDirty = false;
      } catch (error) {
        this.#logger.warn("cannot update the session index; the next update retries", {
          id,
          error,
        });
      }
    });
  }

  /** After a load under a lease: corrects the index when it lags behind the log (a crash). */
  #reconcile(id: string, state: LogState): Promise<void> {
    return this.#indexTask(async () => {
      try {
        await this.#syncIndex(false);
        const entry = this.#index.get(id);
        const stale = entry === undefined || entry.summary.updatedAt < state.updatedAt ||
          entry.summary.cwd !== state.header.cwd ||
          entry.guessed || entry.createdAt !== creationTime(state.header) ||
          (state.title !== undefined && entry.summary.title !== state.title) ||
          [...state.attachments].some((sha) => !entry.attachments.has(sha));
        if (!stale) return;
        const { revision } = state;
        const references = [...state.attachments];
        await this.#writeIndex([updateLine(id, state, references)], false);
        for (const sha of references) state.unindexed.delete(sha);
        state.indexedAtMs = this.#host.now();
        if (state.revision === revision) state.indexDirty = false;
      } catch (error) {
        this.#logger.warn("cannot update the session index", { id, error });
      }
    });
  }

  /** Appends lines under `index.lock`, after catching up; rewrites the file when it is bloated. */
  #writeIndex(lines: readonly IndexLine[], sync: boolean): Promise<void> {
    return this.#withIndexLock(async () => {
      await this.#syncIndex(true);
      await this.#appendIndexLocked(lines, sync);
      await this.#compactIfBloated();
    });
  }

  /** Appends lines to an index that is up to date in memory (under the lock). */
  async #appendIndexLocked(lines: readonly IndexLine[], sync: boolean): Promise<void> {
    const file = this.#indexFile as IndexFile;
    const bytes = new TextEncoder().encode(
      lines.map((line) => JSON.stringify(line) + "\n").join(""),
    );
    await this.#host.appendFile(this.#indexPath, bytes, { sync, create: false });
    file.offset += bytes.byteLength;
    file.size = file.offset;
    file.mtimeMs = NaN;
    file.lines += lines.length;
    this.#index.applyAll(lines);
  }

  /** Rewrites the index once it has more than twice as many lines as live sessions, plus slack. */
  async #compactIfBloated(): Promise<void> {
    const file = this.#indexFile as IndexFile;
    if (file.lines - 1 > 2 * this.#index.size + this.#slack) await this.#rewriteIndex();
  }

  async #deleteLocked(id: string): Promise<void> {
    await this.#syncIndex(true);
    const entry = this.#index.get(id);
    let references: readonly string[];
    if (entry !== undefined) {
      references = [...entry.attachments];
    } else {
      // Not indexed (a crash right after create): the log itself says what it references.
      let parsed: ParsedLog | undefined;
      try {
        parsed = await this.#readLog(id, true);
      } catch {
        parsed = undefined;
      }
      if (parsed === undefined && await this.#host.stat(this.#logPath(id)) === undefined) return;
      references = parsed ? [...summarizeLog(parsed.header, parsed.records).attachments] : [];
    }
    await this.#host.remove(this.#logPath(id));
    if (entry !== undefined) await this.#appendIndexLocked([{ id, deleted: true }], true);
    for (const sha of references) {
      if (!this.#index.isReferenced(sha)) await this.#attachments.delete(sha);
    }
    await this.#compactIfBloated();
  }

  /** Brings the in-memory index up to date; rebuilds the file (under the lock) when needed. */
  async #syncIndex(locked: boolean): Promise<void> {
    const state = await this.#readIndex(locked);
    if (state === "ok") return;
    if (!locked) return await this.#withIndexLock(() => this.#syncIndex(true));
    await this.#rebuildIndex(state);
  }

  async #readIndex(locked: boolean): Promise<IndexState> {
    const path = this.#indexPath;
    const info = await this.#host.stat(path);
    if (info === undefined) return "missing";
    const file = this.#indexFile;
    if (file !== undefined) {
      if (info.size === file.size && info.mtimeMs === file.mtimeMs) return this.#trimTail(locked);
      if (info.size >= file.offset) {
        // The tail first, then the generation line: if the generation still matches, the tail
        // came from the same file (a rewrite only ever replaces it by a new generation).
        const tail = await readRange(this.#host, path, file.offset, info.size);
        const head = tail && await readRange(this.#host, path, 0, file.header.byteLength);
        if (tail !== undefined && head !== undefined && bytesEqual(head, file.header)) {
          const parsed = parseIndexLines(tail);
          if (parsed === undefined) return "corrupt";
          this.#index.applyAll(parsed.lines);
          file.offset += parsed.consumed;
          file.lines += parsed.lines.length;
          file.size = info.size;
          file.mtimeMs = info.mtimeMs;
          return this.#trimTail(locked);
        }
      }
    }
    // First use, or another process rewrote the file: read all of it.
    let bytes: Uint8Array;
    try {
      bytes = await this.#host.readFile(path);
    } catch (error) {
      if (isNotFound(error)) return "missing";
      throw error;
    }
    const headerEnd = bytes.indexOf(0x0a) + 1;
    if (headerEnd === 0) return "corrupt";
    let header: unknown;
    try {
      header = toIndexHeader(JSON.parse(new TextDecoder().decode(bytes.subarray(0, headerEnd))));
    } catch {
      return "corrupt";
    }
    if (header === undefined) return "corrupt";
    const parsed = parseIndexLines(bytes.subarray(headerEnd));
    if (parsed === undefined) return "corrupt";
    this.#index = new SessionIndex();
    this.#index.applyAll(parsed.lines);
    this.#reapplyDirty();
    if (this.#index.guessed > 0) {
      // Left unread, so that the rebuild under the lock reads it whole again first.
      this.#indexFile = undefined;
      return "outdated";
    }
    this.#indexFile = {
      header: bytes.slice(0, headerEnd),
      offset: headerEnd + parsed.consumed,
      size: bytes.byteLength,
      // The stat before the read describes these bytes only if the size still matches.
      mtimeMs: info.size === bytes.byteLength ? info.mtimeMs : NaN,
      lines: 1 + parsed.lines.length,
    };
    return this.#trimTail(locked);
  }

  /**
   * Under the lock nobody else is writing, so bytes after the last whole line are the torn
   * write of a writer that crashed: cut them before appending after them.
   */
  async #trimTail(locked: boolean): Promise<IndexState> {
    const file = this.#indexFile as IndexFile;
    if (!locked || file.size <= file.offset) return "ok";
    await this.#host.truncate(this.#indexPath, file.offset, { sync: true });
    this.#logger.warn("removed the torn tail of the session index", {
      path: this.#indexPath,
      bytes: file.size - file.offset,
    });
    file.size = file.offset;
    file.mtimeMs = NaN;
    return "ok";
  }

  /** Puts this process's not yet written updates back after the index was re-read. */
  #reapplyDirty(): void {
    for (const [id, state] of this.#logs) {
      if (state.indexDirty) this.#index.applyAll([updateLine(id, state, [...state.attachments])]);
    }
  }

  /** Rewrites `index.jsonl` with one line per live session (under the lock). */
  async #rewriteIndex(): Promise<void> {
    const lines: IndexUpdate[] = [];
    for (const { summary, createdAt, guessed, attachments } of this.#index.entries()) {
      lines.push({
        ...summary,
        ...(guessed ? {} : { createdAt }),
        ...(attachments.size === 0 ? {} : { attachments: [...attachments] }),
      });
    }
    const header = JSON.stringify({ acpHarnessIndex: 1, generation: crypto.randomUUID() }) + "\n";
    const encoder = new TextEncoder();
    const bytes = encoder.encode(
      header + lines.map((line) => JSON.stringify(line) + "\n").join(""),
    );
    await this.#host.writeFileAtomic(this.#indexPath, bytes);
    this.#indexFile = {
      header: encoder.encode(header),
      offset: bytes.byteLength,
      size: bytes.byteLength,
      mtimeMs: NaN,
      lines: 1 + lines.length,
    };
  }

  /** Rebuilds the index from the session logs (under the lock). */
  async #rebuildIndex(reason: "missing" | "corrupt" | "outdated"): Promise<void> {
    const dir = `${this.#dir}/sessions`;
    let ids: string[] = [];
    try {
      ids = (await this.#host.readDir(dir))
        .filter((entry) => entry.isFile && entry.name.endsWith(".jsonl"))
        .map((entry) => entry.name.slice(0, -".jsonl".length))
        .filter(isValidSessionId);
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    const lines: IndexUpdate[] = [];
    for (let start = 0; start < ids.length; start += REBUILD_CONCURRENCY) {
      const batch = ids.slice(start, start + REBUILD_CONCURRENCY);
      const parsed = await Promise.all(batch.map(async (id) => {
        try {
          return await this.#readLog(id, true);
        } catch (error) {
          this.#logger.warn("cannot index an unreadable session log", {
            path: this.#logPath(id),
            error,
          });
          return undefined;
        }
      }));
      for (const log of parsed) {
        if (log === undefined) continue;
        const { header } = log;
        const summary = summarizeLog(header, log.records);
        lines.push({
          id: header.id,
          cwd: header.cwd,
          additionalDirectories: header.additionalDirectories,
          ...(summary.title === undefined ? {} : { title: summary.title }),
          createdAt: creationTime(header),
          updatedAt: canonicalTime(summary.updatedAt, header.createdAt),
          ...(summary.attachments.size === 0 ? {} : { attachments: [...summary.attachments] }),
        });
      }
    }
    this.#index = new SessionIndex();
    this.#index.applyAll(lines);
    this.#reapplyDirty();
    await this.#rewriteIndex();
    if (reason === "outdated") {
      this.#logger.info("added creation times to the session index from the session logs", {
        path: this.#indexPath,
        sessions: lines.length,
      });
    } else if (reason === "corrupt" || lines.length > 0) {
      this.#logger.warn(`the session index was ${reason}; rebuilt it from the session logs`, {
        path: this.#indexPath,
        sessions: lines.length,
      });
    }
  }

  /** Runs `task` holding `index.lock`, waiting for another holder up to a timeout. */
  async #withIndexLock<T>(task: () => Promise<T>): Promise<T> {
    await this.#ensureDirs();
    const path = `${this.#dir}/index.lock`;
    let waited = 0;
    for (let delay = 1;; delay = Math.min(delay * 2, 25)) {
      const attempt = await tryLock(this.#host, path, { staleAfterMs: INDEX_LOCK_STALE_MS });
      if (attempt.acquired) {
        try {
          return await task();
        } finally {
          await attempt.lock.release();
        }
      }
      if (waited > INDEX_LOCK_TIMEOUT_MS) {
        throw new Error(
          `Cannot update the session index: "${path}" stays locked by pid ${
            attempt.holder?.pid ?? "unknown"
          }`,
        );
      }
      await sleep(delay);
      waited += delay;
    }
  }
}

/** The lease handed out by {@link JsonlSessionStore.acquire}; `release` is idempotent. */
class JsonlSessionLease implements SessionLease {
  readonly #release: () => Promise<void>;
  #released: Promise<void> | undefined;

  constructor(release: () => Promise<void>) {
    this.#release = release;
  }

  release(): Promise<void> {
    this.#released ??= this.#release();
    return this.#released;
  }
}

function checkHeader(header: SessionHeader): void {
  if (!isValidSessionId(header?.id)) throw new InvalidSessionIdError(String(header?.id));
  if (
    header.version !== 1 || typeof header.cwd !== "string" ||
    !isStringArray(header.additionalDirectories) ||
    !Number.isFinite(Date.parse(header.createdAt))
  ) {
    throw new TypeError(
      `Cannot create session "${header.id}": the header needs version 1, cwd, ` +
        "additionalDirectories and an ISO 8601 createdAt",
    );
  }
}

function lockedError(
  id: string,
  holder: Pick<LockOwner, "pid" | "hostname"> | undefined,
  host: Host,
): SessionLockedError {
  if (holder === undefined) {
    return new SessionLockedError(
      `session ${id} is open in another acp-harness process (pid unknown)`,
    );
  }
  if (holder.hostname !== host.hostname()) {
    return new SessionLockedError(
      `session ${id} is open in another acp-harness process (pid ${holder.pid} on ${holder.hostname})`,
    );
  }
  if (holder.pid === host.pid()) {
    return new SessionLockedError(
      `session ${id} is already open in this acp-harness process (pid ${holder.pid})`,
    );
  }
  return new SessionLockedError(
    `session ${id} is open in another acp-harness process (pid ${holder.pid})`,
  );
}

function updateLine(id: string, state: LogState, attachments: readonly string[]): IndexUpdate {
  return {
    id,
    cwd: state.header.cwd,
    additionalDirectories: state.header.additionalDirectories,
    ...(state.title === undefined ? {} : { title: state.title }),
    createdAt: creationTime(state.header),
    updatedAt: state.updatedAt,
    ...(attachments.length === 0 ? {} : { attachments }),
  };
}

/** The header's creation time in canonical form (the epoch when it is not a time at all). */
function creationTime(header: SessionHeader): string {
  return canonicalTime(header.createdAt, new Date(0).toISOString());
}

/** `value` if canonical, else its canonical form, else `fallback`'s. */
function canonicalTime(value: string, fallback: string): string {
  if (isCanonicalTime(value)) return value;
  const ms = Date.parse(value);
  return new Date(Number.isFinite(ms) ? ms : Date.parse(fallback)).toISOString();
}

/** Whole lines of `bytes` as index lines; `undefined` when one is bad. */
function parseIndexLines(
  bytes: Uint8Array,
): { readonly lines: IndexLine[]; readonly consumed: number } | undefined {
  const consumed = bytes.lastIndexOf(0x0a) + 1;
  const lines: IndexLine[] = [];
  if (consumed === 0) return { lines, consumed };
  const text = new TextDecoder().decode(bytes.subarray(0, consumed));
  for (let start = 0; start < text.length;) {
    const end = text.indexOf("\n", start);
    let line: IndexLine | undefined;
    try {
      line = toIndexLine(JSON.parse(text.slice(start, end)));
    } catch {
      return undefined;
    }
    if (line === undefined) return undefined;
    lines.push(line);
    start = end + 1;
  }
  return { lines, consumed };
}

async function readRange(
  host: Host,
  path: string,
  start: number,
  end: number,
): Promise<Uint8Array | undefined> {
  try {
    return await host.readFileRange(path, start, end);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}
