/**
 * The session logs of {@link JsonlSessionStore}: `sessions/<id>.jsonl`, appended with one
 * synchronous `O_APPEND` write per batch, made durable with group commit, torn tails cut. Also
 * what this process knows about each log it read or wrote, and the per-session operation chains.
 *
 * @module
 */
import type { Host } from "../host/host.ts";
import type { Logger } from "../log/logger.ts";
import { canonicalTime, groupFlush, isNotFound, readIfExists } from "./_common.ts";
import { type LogReader, openLogReader } from "./_log_reader.ts";
import {
  collectFacts,
  type LogEnd,
  type LogSummary,
  type ParsedLog,
  parseSessionLog,
  recordText,
  summarizeLog,
} from "./_session_log.ts";
import type { SessionHeader, StoredEvent } from "./session_store.ts";
import { SessionExistsError, SessionNotFoundError } from "./store_errors.ts";

/** How long a commit point waits for others to share its `fdatasync` (group commit). */
export const SYNC_DELAY_MS = 2;

/** What this process knows about a session log it has read or written. */
export interface LogState {
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
  /**
   * Set on a log this process created until its first commit point: what that commit point must
   * also make durable (the directory entry, the index line), besides the log's data.
   */
  creation?: (() => Promise<void>) | undefined;
}

/** What one write changed, for the index. */
export interface WriteResult {
  /** `host.now()` at the write. */
  readonly now: number;
  /** A new title or new attachment references: the index line is due at once. */
  readonly changed: boolean;
}

interface SyncState {
  done: Promise<void>;
  started: boolean;
  next?: Promise<void>;
}

/** The session logs of one data directory, as this process sees them. */
export class JsonlLogs {
  /** What this process knows about logs it read or wrote (only kept under a lease). */
  readonly states: Map<string, LogState> = new Map();
  readonly #host: Host;
  readonly #dir: string;
  readonly #logger: Logger;
  readonly #syncs = new Map<string, SyncState>();
  /** `fsync`s the `sessions` directory, once for every caller within {@link SYNC_DELAY_MS}. */
  readonly #syncDirSoon: () => Promise<void> = groupFlush(
    SYNC_DELAY_MS,
    () => this.#host.syncDir(this.#dir),
  );
  /** Per-session operation chains: appends, loads and deletes of one session never overlap. */
  readonly #queues = new Map<string, Promise<void>>();
  /** Operations queued or running per session; absent when none. */
  readonly #pending = new Map<string, number>();

  /**
   * @param host File access
   * @param dir The `sessions` directory
   * @param logger Told about torn tails and repairs
   */
  constructor(host: Host, dir: string, logger: Logger) {
    this.#host = host;
    this.#dir = dir;
    this.#logger = logger;
  }

  /** The `sessions` directory. */
  get dir(): string {
    return this.#dir;
  }

  /** The log file of a session. */
  path(id: string): string {
    return `${this.#dir}/${id}.jsonl`;
  }

  /** Whether operations on the session are queued or running. */
  busy(id: string): boolean {
    return this.#pending.has(id);
  }

  /**
   * Runs `task` after every earlier operation on the same session. The pending count drops
   * before the returned promise settles, so a caller resuming after it sees the session idle.
   */
  serial<T>(id: string, task: () => Promise<T>): Promise<T> {
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

  /**
   * Writes a new log holding the header, and `events` as records after it, with one exclusive
   * create and write (in the operating system's hands when this resolves; off the main thread, as
   * creating a file can cost a millisecond of kernel time) and remembers it. Nothing is flushed
   * yet: the log's first commit point ({@link sync}) flushes the header with its records, and the
   * directory entry with those of the other logs it finds unflushed (one directory `fsync`).
   *
   * @param flushAlso What else the first commit point must make durable (the index line)
   * @param events Written as records after the header, as {@link write} would
   * @returns The log's state
   * @throws {SessionExistsError} The log exists
   */
  async create(
    header: SessionHeader,
    flushAlso: () => Promise<void>,
    events: readonly StoredEvent[] = [],
  ): Promise<LogState> {
    const { id } = header;
    const state: LogState = {
      header,
      seq: 0,
      size: 0,
      updatedAt: new Date(header.createdAt).toISOString(),
      title: undefined,
      attachments: new Set(),
      unindexed: new Set(),
      repairTo: undefined,
      indexedAtMs: 0,
      indexDirty: true,
      revision: 0,
    };
    const records = this.#records(state, events);
    const bytes = new TextEncoder().encode(JSON.stringify(header) + "\n" + (records?.text ?? ""));
    if (!await this.#host.createExclusive(this.path(id), bytes)) throw new SessionExistsError(id);
    state.size = bytes.byteLength;
    if (records) records.apply(0);
    state.creation = () => Promise.all([this.#syncDirSoon(), flushAlso()]).then(() => {});
    this.states.set(id, state);
    return state;
  }

  /**
   * Appends the records `{...event, seq, time}` with one synchronous write and updates `state`.
   *
   * @returns What changed, or `undefined` for no events
   * @throws {SessionNotFoundError} The log is gone; other write errors as they are
   */
  write(id: string, state: LogState, events: readonly StoredEvent[]): WriteResult | undefined {
    const records = this.#records(state, events);
    if (records === undefined) return undefined;
    const bytes = new TextEncoder().encode(records.text);
    try {
      this.#host.appendFileSync(this.path(id), bytes, { create: false });
    } catch (error) {
      // The tail may now be torn: forget what we knew, the next append re-reads (and repairs).
      this.states.delete(id);
      if (isNotFound(error)) throw new SessionNotFoundError(id);
      throw error;
    }
    return { now: records.now, changed: records.apply(bytes.byteLength) };
  }

  /**
   * The records of `events` after the log's last (`{...event, seq, time}`, one line each), and
   * how to update `state` once they are written.
   *
   * @returns The lines, and `apply(bytes)` (the bytes written) telling whether the title or the
   *   references changed; `undefined` for no events
   */
  #records(
    state: LogState,
    events: readonly StoredEvent[],
  ): { text: string; now: number; apply(bytes: number): boolean } | undefined {
    if (events.length === 0) return undefined;
    const now = this.#host.now();
    const time = new Date(now).toISOString();
    const references = new Set<string>();
    let title = state.title;
    let text = "";
    for (let offset = 0; offset < events.length; offset++) {
      const event = events[offset] as StoredEvent;
      text += recordText(event, state.seq + offset + 1, time) + "\n";
      collectFacts(event, references, (value) => title = value);
    }
    const apply = (bytes: number): boolean => {
      state.seq += events.length;
      state.size += bytes;
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
      return retitled || added;
    };
    return { text, now, apply };
  }

  /**
   * `fdatasync`s a log with group commit: a sync starts {@link SYNC_DELAY_MS} after the first
   * request, and every request until it starts shares it; requests made while it runs share the
   * one after it. Bursts of commit points (a busy session, many sessions) thus cost a few syncs,
   * and appends rarely wait behind one.
   */
  sync(id: string): Promise<void> {
    const state = this.states.get(id);
    const creation = state?.creation;
    if (creation === undefined) return this.#sync(id);
    return Promise.all([creation(), this.#sync(id)]).then(() => {
      if (state?.creation === creation) state.creation = undefined;
    });
  }

  #sync(id: string): Promise<void> {
    const path = this.path(id);
    const state = this.#syncs.get(path);
    if (state && !state.started) return state.done;
    if (state) {
      state.next ??= state.done.catch(() => {}).then(() => this.#sync(id));
      return state.next;
    }
    const entry: SyncState = { done: Promise.resolve(), started: false };
    entry.done = new Promise<void>((resolve) => setTimeout(resolve, SYNC_DELAY_MS))
      .then(() => {
        entry.started = true;
        return this.#host.syncFile(path).catch((error: unknown) => {
          if (isNotFound(error)) throw new SessionNotFoundError(id);
          throw error;
        });
      })
      .finally(() => {
        if (this.#syncs.get(path) === entry) this.#syncs.delete(path);
      });
    this.#syncs.set(path, entry);
    return entry.done;
  }

  /** Forgets a session: waits for a pending group commit, then lets go of the open descriptor. */
  async forget(id: string): Promise<void> {
    this.states.delete(id);
    await this.#syncs.get(this.path(id))?.done.catch(() => {});
    this.#host.forgetFile(this.path(id));
  }

  /** Cuts a torn tail found by a load, before anything is appended after it. */
  async repair(id: string, state: LogState): Promise<void> {
    if (state.repairTo === undefined) return;
    const path = this.path(id);
    await this.#host.truncate(path, state.repairTo, { sync: true });
    this.#logger.warn("removed the torn tail of a session log", {
      path,
      bytes: state.size - state.repairTo,
    });
    state.size = state.repairTo;
    state.repairTo = undefined;
  }

  /**
   * After taking a lease: what this process knew may be stale if another process held the
   * session meanwhile (forgotten then), else a pending repair is made.
   */
  async revalidate(id: string): Promise<void> {
    const state = this.states.get(id);
    if (state === undefined) return;
    const info = await this.#host.stat(this.path(id));
    if (info?.size !== state.size) {
      this.states.delete(id);
      return;
    }
    await this.repair(id, state);
  }

  /**
   * Reads and parses a log, warning about a torn tail or an incomplete header unless `quiet`.
   *
   * @returns The log, or `undefined` when there is none (or not even a whole header)
   * @throws {CorruptSessionLogError} A bad line before the last one
   */
  async read(id: string, quiet = false): Promise<ParsedLog | undefined> {
    const path = this.path(id);
    const bytes = await readIfExists(this.#host, path);
    if (bytes === undefined) return undefined;
    const parsed = parseSessionLog(bytes, path, id);
    if (quiet) return parsed;
    if (parsed === undefined) this.#warnHeaderless(path, bytes.byteLength);
    else this.warnTorn(id, parsed);
    return parsed;
  }

  /**
   * Opens a log to read it a piece at a time (`loadStream`), warning about an incomplete header;
   * call {@link warnTorn} once it is read.
   *
   * @returns The reader, or `undefined` when there is no log (or not even a whole header)
   * @throws {CorruptSessionLogError} A bad header
   */
  async openReader(id: string): Promise<LogReader | undefined> {
    const path = this.path(id);
    const reader = await openLogReader(this.#host, path, id);
    if (typeof reader !== "number") return reader;
    this.#warnHeaderless(path, reader);
    return undefined;
  }

  /** Warns about the torn tail of a log just read, if it has one. */
  warnTorn(id: string, end: { readonly cleanLength: number; readonly length: number }): void {
    if (end.cleanLength >= end.length) return;
    this.#logger.warn("ignoring the torn tail of a session log", {
      path: this.path(id),
      bytes: end.length - end.cleanLength,
    });
  }

  #warnHeaderless(path: string, bytes: number): void {
    if (bytes > 0) this.#logger.warn("ignoring a session log without a complete header", { path });
  }

  /**
   * Waits for the session's turn in its operation chain (see {@link serial}) and holds it: no
   * later operation on the session starts until the returned function is called.
   *
   * @returns Ends the hold (call it once)
   */
  turn(id: string): Promise<() => void> {
    return new Promise((resolve) => {
      void this.serial(id, () => new Promise<void>((release) => resolve(() => release())));
    });
  }

  /**
   * What this process knows about a log, reading it first when it knows nothing.
   *
   * @throws {SessionNotFoundError} There is no log
   */
  async state(id: string): Promise<LogState> {
    const known = this.states.get(id);
    if (known !== undefined) return known;
    const parsed = await this.read(id);
    if (parsed === undefined) throw new SessionNotFoundError(id);
    return this.remember(id, parsed);
  }

  /** Replaces what this process knows about a log by what was just read. */
  remember(id: string, parsed: ParsedLog): LogState {
    return this.rememberEnd(id, {
      header: parsed.header,
      seq: parsed.records.at(-1)?.seq ?? 0,
      cleanLength: parsed.cleanLength,
      length: parsed.length,
    }, summarizeLog(parsed.header, parsed.records));
  }

  /**
   * Replaces what this process knows about a log by what was just read, given where it ended and
   * its summary (a log read a piece at a time).
   */
  rememberEnd(id: string, end: LogEnd, summary: LogSummary): LogState {
    const previous = this.states.get(id);
    const state: LogState = {
      header: end.header,
      seq: end.seq,
      size: end.length,
      updatedAt: canonicalTime(summary.updatedAt, end.header.createdAt),
      title: summary.title,
      attachments: new Set(summary.attachments),
      unindexed: previous?.unindexed ?? new Set(),
      repairTo: end.cleanLength < end.length ? end.cleanLength : undefined,
      indexedAtMs: previous?.indexedAtMs ?? 0,
      indexDirty: previous?.indexDirty ?? false,
      revision: (previous?.revision ?? 0) + 1,
    };
    this.states.set(id, state);
    return state;
  }
}
