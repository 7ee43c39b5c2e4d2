/**
 * The index of {@link JsonlSessionStore}: `index.jsonl`, an append-only cache of the logs that
 * `list` reads incrementally, written under `index.lock`, compacted when bloated and rebuilt from
 * the logs when missing or corrupt. Also the attachment references that `delete` releases.
 *
 * @module
 */
import type { Host } from "../host/host.ts";
import type { Logger } from "../log/logger.ts";
import {
  bytesEqual,
  canonicalTime,
  creationTime,
  groupFlush,
  isNotFound,
  isValidSessionId,
  parentOf,
  tenantOf,
} from "./_common.ts";
import { abortableDelay } from "../util/abortable_delay.ts";
import { type JsonlLogs, type LogState, SYNC_DELAY_MS } from "./_jsonl_log.ts";
import { type HeldLock, tryLock } from "./_lock_file.ts";
import {
  type IndexHeader,
  type IndexLine,
  type IndexUnreadable,
  type IndexUpdate,
  type ListKey,
  type PageFilter,
  SessionIndex,
  toIndexHeader,
  toIndexLine,
} from "./_session_index.ts";
import { type LogSummary, type ParsedLog, summarizeLog } from "./_session_log.ts";
import type { SessionHeader, SessionSummary, UnreadableSession } from "./session_store.ts";
import { CorruptSessionLogError } from "./store_errors.ts";
import { decodeLines } from "../util/decode_lines.ts";

/** How long a writer waits for `index.lock` before giving up. */
const INDEX_LOCK_TIMEOUT_MS = 10_000;
/** A live process holds `index.lock` for milliseconds; one held this long is abandoned. */
const INDEX_LOCK_STALE_MS = 30_000;
/** How many logs a rebuild reads at once. */
const REBUILD_CONCURRENCY = 16;

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

/** Flushes that share one index write. */
interface FlushBatch {
  /** The sessions whose lines are due. */
  readonly ids: Set<string>;
  /** Whether the write is fsynced. */
  sync: boolean;
  /** Settles once the write is done (never rejects). */
  done: Promise<void>;
}

/**
 * What reading a log for the index found: its summary line, an unreadable line, or `undefined`
 * when there is no log.
 */
type Probe = IndexUpdate | IndexUnreadable | undefined;

/**
 * `outdated`: written by a version whose lines lack the creation time that orders the list, or
 * the parent that filters it.
 */
type IndexState = "ok" | "missing" | "corrupt" | "outdated";

/** Options for {@link JsonlIndex}. */
export interface JsonlIndexOptions {
  readonly host: Host;
  /** The data directory. */
  readonly dir: string;
  readonly logger: Logger;
  /** The session logs, whose unwritten summaries the index carries. */
  readonly logs: JsonlLogs;
  /** The least time between two index lines of one session that only move its `updatedAt`. */
  readonly interval: number;
  /** Index lines allowed beyond twice the live sessions before the index is rewritten. */
  readonly slack: number;
  /** Creates the data directory's subdirectories. */
  readonly ensureDirs: () => Promise<void>;
  /** A lock file this process holds, which `index.lock` can be a hard link to (no new file). */
  readonly lockTemplate?: () => HeldLock | undefined;
}

/** `index.jsonl` and its in-memory image; its operations run one at a time. */
export class JsonlIndex {
  readonly #host: Host;
  readonly #dir: string;
  readonly #logger: Logger;
  readonly #logs: JsonlLogs;
  readonly #interval: number;
  readonly #slack: number;
  readonly #ensureDirs: () => Promise<void>;
  readonly #lockTemplate: () => HeldLock | undefined;
  #index = new SessionIndex();
  #file: IndexFile | undefined;
  /** Index operations of this process run one at a time. */
  #queue: Promise<void> = Promise.resolve();
  /** The flushes waiting for their write, which later flushes join. */
  #batch: FlushBatch | undefined;
  /** The group flush of `index.jsonl` (see {@link flushSoon}). */
  readonly #flushIndexSoon: () => Promise<void> = groupFlush(
    SYNC_DELAY_MS,
    () =>
      this.#host.syncFile(this.#path).catch((error: unknown) => {
        this.#logger.warn("cannot flush the session index", { error });
      }),
  );

  /** @param options Where the index is, the logs, tuning */
  constructor(options: JsonlIndexOptions) {
    this.#host = options.host;
    this.#dir = options.dir;
    this.#logger = options.logger;
    this.#logs = options.logs;
    this.#interval = options.interval;
    this.#slack = options.slack;
    this.#ensureDirs = options.ensureDirs;
    this.#lockTemplate = options.lockTemplate ?? (() => undefined);
  }

  get #path(): string {
    return `${this.#dir}/index.jsonl`;
  }

  /** Reads the index once, so that a fresh data directory gets one before its first log. */
  async open(): Promise<void> {
    if (this.#file === undefined) await this.#task(() => this.#sync(false));
  }

  /**
   * Lists a session created by this process: in memory at once, and with a line written to
   * `index.jsonl` together with those of the other sessions created meanwhile (one index write),
   * so that other processes, and this one after a crash, list it. Not flushed: see
   * {@link flushSoon}.
   *
   * @returns Settles once the line is written (never rejects: failures are logged, the index is a
   *   cache of the logs)
   */
  created(id: string, state: LogState): Promise<void> {
    if (this.#file !== undefined) {
      this.#index.applyAll([updateLine(id, state, [...state.unindexed])]);
    }
    return this.flush(id, false);
  }

  /**
   * `fdatasync`s `index.jsonl` after {@link SYNC_DELAY_MS}, once for every caller meanwhile
   * (what was written before the call is on disk when it resolves).
   *
   * @returns Settles once flushed (never rejects: a failure is logged)
   */
  flushSoon(): Promise<void> {
    return this.#flushIndexSoon();
  }

  /**
   * Updates the in-memory index after a write to a log and writes the line when one is due (a
   * new title or references, a session not listed yet, or the interval passed).
   *
   * @returns Settles once the due line is written (failures are logged)
   */
  written(
    id: string,
    state: LogState,
    now: number,
    changed: boolean,
    sync: boolean,
  ): Promise<void> {
    const listed = this.#file === undefined || this.#index.get(id) !== undefined;
    state.indexDirty = true;
    state.revision++;
    if (this.#file !== undefined) {
      this.#index.applyAll([updateLine(id, state, [...state.unindexed])]);
    }
    const due = changed || !listed || now - state.indexedAtMs >= this.#interval;
    return due ? this.flush(id, sync) : Promise.resolve();
  }

  /**
   * One page in list order, after catching up with the file. The first page also reads again the
   * unreadable logs that changed since they were read (a size or time of their own), and lists
   * those now readable.
   *
   * @param before Checked when the task starts (an abort signal's `throwIfAborted`)
   */
  page(
    filter: PageFilter,
    after: ListKey | undefined,
    limit: number,
    before: () => void,
  ): Promise<{ readonly sessions: SessionSummary[]; readonly next?: ListKey }> {
    return this.#task(async () => {
      before();
      await this.#sync(false);
      if (after === undefined) await this.#retryChanged();
      return this.#index.page(filter, after, limit);
    });
  }

  /**
   * Reads every log the index does not list: one it could not read before, one no line names
   * (written by hand, or by a process that died before its index line). Lists those readable,
   * records the others.
   *
   * @param before Checked before each step (an abort signal's `throwIfAborted`)
   * @returns The logs that cannot be read, in id order
   */
  unreadable(before: () => void): Promise<UnreadableSession[]> {
    return this.#task(async () => {
      before();
      await this.#sync(false);
      const ids = new Set((await this.#logIds()).filter((id) => this.#index.get(id) === undefined));
      for (const id of this.#index.unreadable.keys()) ids.add(id);
      const probes = await this.#probeAll([...ids], before);
      await this.#record(probes);
      return [...this.#index.unreadable]
        .map(([id, log]) => ({ id, reason: log.reason }))
        .sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    });
  }

  /**
   * After a load without the lease: lists the session when the index does not (its log could not
   * be read before, or no line names it). Failures are logged: the index is a cache of the logs.
   *
   * @param summary The loaded log's summary, worked out only when needed
   */
  listIfMissing(id: string, header: SessionHeader, summary: () => LogSummary): Promise<void> {
    return this.#task(async () => {
      try {
        await this.#sync(false);
        if (this.#index.get(id) !== undefined) return;
        await this.#record(new Map([[id, lineFromLog(header, summary())]]));
      } catch (error) {
        this.#logger.warn("cannot update the session index", { id, error });
      }
    });
  }

  /**
   * Writes the session's current summary (and its unwritten references) as an index line, unless
   * an earlier flush already did. Flushes asked for before the write starts share it: one write
   * under one `index.lock` for all of them (many sessions released at once cost one write).
   * Failures are logged: the index is a cache of the logs.
   *
   * @param sync Whether the write is fsynced (it is when any flush sharing it asks)
   * @returns Settles once the line is written (or the failure logged)
   */
  flush(id: string, sync: boolean): Promise<void> {
    // Not dirty: its line is written already (a flag is cleared only once its write is done).
    if (this.#logs.states.get(id)?.indexDirty !== true) return Promise.resolve();
    const batch = this.#batch ??= this.#nextBatch();
    batch.ids.add(id);
    batch.sync ||= sync;
    return batch.done;
  }

  /** A batch of flushes, written once every earlier index operation is done. */
  #nextBatch(): FlushBatch {
    const batch: FlushBatch = { ids: new Set(), sync: false, done: Promise.resolve() };
    batch.done = this.#task(() => {
      // From now on, flushes go to the next batch: this one is being written.
      if (this.#batch === batch) this.#batch = undefined;
      return this.#flushBatch(batch.ids, batch.sync);
    });
    return batch;
  }

  /** Writes one line per dirty session of `ids`, in one write. */
  async #flushBatch(ids: ReadonlySet<string>, sync: boolean): Promise<void> {
    const due: { id: string; state: LogState; references: string[]; revision: number }[] = [];
    for (const id of ids) {
      const state = this.#logs.states.get(id);
      if (state === undefined || !state.indexDirty) continue;
      due.push({ id, state, references: [...state.unindexed], revision: state.revision });
    }
    if (due.length === 0) return;
    const now = this.#host.now();
    try {
      await this.#write(
        due.map(({ id, state, references }) => updateLine(id, state, references)),
        sync,
      );
    } catch (error) {
      this.#logger.warn("cannot update the session index; the next update retries", {
        ...(due.length === 1 ? { id: due[0]!.id } : { sessions: due.length }),
        error,
      });
      return;
    }
    for (const { state, references, revision } of due) {
      for (const sha of references) state.unindexed.delete(sha);
      state.indexedAtMs = now;
      // An append during the write (a title, say) is not in the line: it stays due.
      if (state.revision === revision) state.indexDirty = false;
    }
  }

  /** After a load under a lease: corrects the index when it lags behind the log (a crash). */
  reconcile(id: string, state: LogState): Promise<void> {
    return this.#task(async () => {
      try {
        await this.#sync(false);
        const entry = this.#index.get(id);
        const stale = entry === undefined || entry.summary.updatedAt < state.updatedAt ||
          entry.summary.cwd !== state.header.cwd ||
          entry.guessed || entry.createdAt !== headerCreationTime(state.header) ||
          (state.title !== undefined && entry.summary.title !== state.title) ||
          [...state.attachments].some((sha) => !entry.attachments.has(sha));
        if (!stale) return;
        const { revision } = state;
        const references = [...state.attachments];
        await this.#write([updateLine(id, state, references)], false);
        for (const sha of references) state.unindexed.delete(sha);
        state.indexedAtMs = this.#host.now();
        if (state.revision === revision) state.indexDirty = false;
      } catch (error) {
        this.#logger.warn("cannot update the session index", { id, error });
      }
    });
  }

  /**
   * Removes a session under `index.lock`: its log, then a tombstone, then hands `release` the
   * attachments no live session references any more (still under the lock, so no other process
   * adds a reference in between).
   */
  remove(id: string, release: (unreferenced: readonly string[]) => Promise<void>): Promise<void> {
    return this.#task(() => this.#withLock(() => this.#removeLocked(id, release)));
  }

  async #removeLocked(
    id: string,
    release: (unreferenced: readonly string[]) => Promise<void>,
  ): Promise<void> {
    await this.#sync(true);
    const entry = this.#index.get(id);
    let references: readonly string[];
    if (entry !== undefined) {
      references = [...entry.attachments];
    } else {
      // Not indexed (a crash right after create): the log itself says what it references.
      let parsed: ParsedLog | undefined;
      try {
        parsed = await this.#logs.read(id, true);
      } catch {
        parsed = undefined;
      }
      if (parsed === undefined && await this.#host.stat(this.#logs.path(id)) === undefined) return;
      references = parsed ? [...summarizeLog(parsed.header, parsed.records).attachments] : [];
    }
    await this.#host.remove(this.#logs.path(id));
    if (entry !== undefined || this.#index.unreadable.has(id)) {
      await this.#appendLocked([{ id, deleted: true }], true);
    }
    const unreferenced = references.filter((sha) => !this.#index.isReferenced(sha));
    if (unreferenced.length > 0) await release(unreferenced);
    await this.#compactIfBloated();
  }

  /** Runs `task` after every earlier index operation of this store. */
  #task<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task);
    this.#queue = run.then(() => {}, () => {});
    return run;
  }

  /** Appends lines under `index.lock`, after catching up; rewrites the file when it is bloated. */
  #write(lines: readonly IndexLine[], sync: boolean): Promise<void> {
    return this.#withLock(async () => {
      await this.#sync(true);
      await this.#appendLocked(lines, sync);
      await this.#compactIfBloated();
    });
  }

  /** Appends lines to an index that is up to date in memory (under the lock). */
  async #appendLocked(lines: readonly IndexLine[], sync: boolean): Promise<void> {
    const file = this.#file as IndexFile;
    const bytes = new TextEncoder().encode(
      lines.map((line) => JSON.stringify(line) + "\n").join(""),
    );
    await this.#host.appendFile(this.#path, bytes, { sync, create: false });
    file.offset += bytes.byteLength;
    file.size = file.offset;
    file.lines += lines.length;
    this.#index.applyAll(lines);
    // Nobody else writes while we hold the lock: what the file looks like now is what we wrote,
    // so the next look finds it unchanged with a stat, instead of reading it again.
    const info = await this.#host.stat(this.#path).catch(() => undefined);
    file.mtimeMs = info?.size === file.size ? info.mtimeMs : NaN;
  }

  /** Rewrites the index once it has more than twice as many lines as live sessions, plus slack. */
  async #compactIfBloated(): Promise<void> {
    const file = this.#file as IndexFile;
    const kept = this.#index.size + this.#index.unreadable.size;
    if (file.lines - 1 > 2 * kept + this.#slack) await this.#rewrite();
  }

  /** Brings the in-memory index up to date; rebuilds the file (under the lock) when needed. */
  async #sync(locked: boolean): Promise<void> {
    const state = await this.#read(locked);
    if (state === "ok") return;
    if (!locked) return await this.#withLock(() => this.#sync(true));
    await this.#rebuild(state);
  }

  async #read(locked: boolean): Promise<IndexState> {
    const path = this.#path;
    const info = await this.#host.stat(path);
    if (info === undefined) return "missing";
    const file = this.#file;
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
    let header: IndexHeader | undefined;
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
    if (this.#index.guessed > 0 || header.parents !== 1) {
      // Left unread, so that the rebuild under the lock reads it whole again first.
      this.#file = undefined;
      return "outdated";
    }
    this.#file = {
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
    const file = this.#file as IndexFile;
    if (!locked || file.size <= file.offset) return "ok";
    await this.#host.truncate(this.#path, file.offset, { sync: true });
    this.#logger.warn("removed the torn tail of the session index", {
      path: this.#path,
      bytes: file.size - file.offset,
    });
    file.size = file.offset;
    file.mtimeMs = NaN;
    return "ok";
  }

  /** Puts this process's not yet written updates back after the index was re-read. */
  #reapplyDirty(): void {
    for (const [id, state] of this.#logs.states) {
      if (state.indexDirty) this.#index.applyAll([updateLine(id, state, [...state.attachments])]);
    }
  }

  /** Rewrites `index.jsonl` with one line per live session and unreadable log (under the lock). */
  async #rewrite(): Promise<void> {
    const lines: IndexLine[] = [];
    for (const { summary, createdAt, guessed, attachments } of this.#index.entries()) {
      lines.push({
        ...summary,
        ...(guessed ? {} : { createdAt }),
        ...(attachments.size === 0 ? {} : { attachments: [...attachments] }),
      });
    }
    for (const [id, { reason, size, mtimeMs }] of this.#index.unreadable) {
      lines.push({ id, deleted: true, unreadable: reason, size, mtimeMs });
    }
    const header = JSON.stringify({
      acpHarnessIndex: 1,
      generation: crypto.randomUUID(),
      parents: 1,
    }) + "\n";
    const encoder = new TextEncoder();
    const bytes = encoder.encode(
      header + lines.map((line) => JSON.stringify(line) + "\n").join(""),
    );
    await this.#host.writeFileAtomic(this.#path, bytes);
    this.#file = {
      header: encoder.encode(header),
      offset: bytes.byteLength,
      size: bytes.byteLength,
      mtimeMs: NaN,
      lines: 1 + lines.length,
    };
  }

  /**
   * Rebuilds the index from the session logs (under the lock): a line per readable log, and one
   * per unreadable log, so that it is counted and read again rather than forgotten.
   */
  async #rebuild(reason: "missing" | "corrupt" | "outdated"): Promise<void> {
    const probes = await this.#probeAll(await this.#logIds());
    const lines = [...probes.values()].filter((line) => line !== undefined);
    this.#index = new SessionIndex();
    this.#index.applyAll(lines);
    this.#reapplyDirty();
    await this.#rewrite();
    const unreadable = this.#index.unreadable.size;
    const counts = { sessions: lines.length - unreadable, ...(unreadable ? { unreadable } : {}) };
    if (reason === "outdated") {
      this.#logger.info("brought the session index up to date from the session logs", {
        path: this.#path,
        ...counts,
      });
    } else if (reason === "corrupt" || lines.length > 0) {
      this.#logger.warn(`the session index was ${reason}; rebuilt it from the session logs`, {
        path: this.#path,
        ...counts,
      });
    }
  }

  /** The ids of the logs in the `sessions` directory. */
  async #logIds(): Promise<string[]> {
    try {
      return (await this.#host.readDir(this.#logs.dir))
        .filter((entry) => entry.isFile && entry.name.endsWith(".jsonl"))
        .map((entry) => entry.name.slice(0, -".jsonl".length))
        .filter(isValidSessionId);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      return [];
    }
  }

  /** Reads logs for the index, {@link REBUILD_CONCURRENCY} at a time, warning about bad ones. */
  async #probeAll(ids: readonly string[], before?: () => void): Promise<Map<string, Probe>> {
    const probes = new Map<string, Probe>();
    for (let start = 0; start < ids.length; start += REBUILD_CONCURRENCY) {
      before?.();
      const batch = ids.slice(start, start + REBUILD_CONCURRENCY);
      const lines = await Promise.all(batch.map((id) => this.#probe(id)));
      batch.forEach((id, index) => probes.set(id, lines[index]));
    }
    for (const [id, line] of probes) {
      if (line === undefined || !("unreadable" in line) || this.#knows(id, line)) continue;
      this.#logger.warn(
        "cannot index an unreadable session log; it is read again once it changes",
        {
          path: this.#logs.path(id),
          reason: line.unreadable,
        },
      );
    }
    return probes;
  }

  /** Reads one log for the index. */
  async #probe(id: string): Promise<Probe> {
    const path = this.#logs.path(id);
    let size = 0;
    let mtimeMs = 0;
    let reason: string;
    try {
      const info = await this.#host.stat(path);
      if (info === undefined) return undefined;
      // Whole milliseconds: runtimes differ in the precision they report.
      ({ size, mtimeMs } = { size: info.size, mtimeMs: Math.trunc(info.mtimeMs) });
      const log = await this.#logs.read(id, true);
      if (log !== undefined) return lineFromLog(log.header, summarizeLog(log.header, log.records));
      reason = "has no complete header line";
    } catch (error) {
      if (isNotFound(error)) return undefined;
      reason = error instanceof CorruptSessionLogError ? error.reason : String(error);
    }
    return { id, deleted: true, unreadable: reason, size, mtimeMs };
  }

  /** Whether the index already says what `line` says about an unlisted log. */
  #knows(id: string, line: Probe): boolean {
    const known = this.#index.unreadable.get(id);
    if (line === undefined) return known === undefined;
    if (!("unreadable" in line)) return false;
    return known !== undefined && known.reason === line.unreadable && known.size === line.size &&
      known.mtimeMs === line.mtimeMs;
  }

  /** Reads again the unreadable logs whose size or time changed since they were read. */
  async #retryChanged(): Promise<void> {
    if (this.#index.unreadable.size === 0) return;
    const due: string[] = [];
    for (const [id, known] of this.#index.unreadable) {
      const info = await this.#host.stat(this.#logs.path(id)).catch(() => undefined);
      if (info?.size !== known.size || Math.trunc(info.mtimeMs) !== known.mtimeMs) due.push(id);
    }
    if (due.length > 0) await this.#record(await this.#probeAll(due));
  }

  /**
   * Writes what reading unlisted logs found, under the lock and after catching up, for each log
   * the index does not list and says otherwise about: a readable log is listed (if it is still
   * there: a delete removes it under the lock), an unreadable one recorded, a vanished one
   * forgotten.
   */
  async #record(probes: ReadonlyMap<string, Probe>): Promise<void> {
    const due = (id: string, line: Probe): boolean =>
      this.#index.get(id) === undefined && !this.#knows(id, line);
    if (![...probes].some(([id, line]) => due(id, line))) return;
    await this.#withLock(async () => {
      await this.#sync(true);
      const lines: IndexLine[] = [];
      for (const [id, line] of probes) {
        if (!due(id, line)) continue;
        if (line === undefined) lines.push({ id, deleted: true });
        else if ("unreadable" in line) lines.push(line);
        else if (await this.#host.stat(this.#logs.path(id)) !== undefined) lines.push(line);
      }
      if (lines.length === 0) return;
      await this.#appendLocked(lines, false);
      await this.#compactIfBloated();
    });
  }

  /** Runs `task` holding `index.lock`, waiting for another holder up to a timeout. */
  async #withLock<T>(task: () => Promise<T>): Promise<T> {
    await this.#ensureDirs();
    const path = `${this.#dir}/index.lock`;
    let waited = 0;
    for (let delay = 1;; delay = Math.min(delay * 2, 25)) {
      const template = this.#lockTemplate();
      const attempt = await tryLock(this.#host, path, {
        staleAfterMs: INDEX_LOCK_STALE_MS,
        ...(template ? { sameAs: template } : {}),
      });
      if (attempt.acquired) {
        try {
          return await task();
        } finally {
          attempt.lock.releaseSync();
        }
      }
      if (waited > INDEX_LOCK_TIMEOUT_MS) {
        throw new Error(
          `Cannot update the session index: "${path}" stays locked by pid ${
            attempt.holder?.pid ?? "unknown"
          }`,
        );
      }
      await abortableDelay(delay);
      waited += delay;
    }
  }
}

/** The creation time of each header seen, worked out once (a date parse and format each time). */
const creationTimes = new WeakMap<SessionHeader, string>();

function headerCreationTime(header: SessionHeader): string {
  let time = creationTimes.get(header);
  if (time === undefined) {
    time = creationTime(header);
    creationTimes.set(header, time);
  }
  return time;
}

/** The index line of a log just read. */
function lineFromLog(header: SessionHeader, summary: LogSummary): IndexUpdate {
  const parent = parentOf(header);
  const tenant = tenantOf(header);
  return {
    id: header.id,
    cwd: header.cwd,
    additionalDirectories: header.additionalDirectories,
    ...(summary.title === undefined ? {} : { title: summary.title }),
    createdAt: creationTime(header),
    updatedAt: canonicalTime(summary.updatedAt, header.createdAt),
    ...(summary.attachments.size === 0 ? {} : { attachments: [...summary.attachments] }),
    ...(parent === undefined ? {} : { parent }),
    ...(tenant === undefined ? {} : { tenant }),
  };
}

/** The index line of a session's current summary, adding `attachments` as references. */
export function updateLine(
  id: string,
  state: LogState,
  attachments: readonly string[],
): IndexUpdate {
  const parent = parentOf(state.header);
  const tenant = tenantOf(state.header);
  return {
    id,
    cwd: state.header.cwd,
    additionalDirectories: state.header.additionalDirectories,
    ...(state.title === undefined ? {} : { title: state.title }),
    createdAt: headerCreationTime(state.header),
    updatedAt: state.updatedAt,
    ...(attachments.length === 0 ? {} : { attachments }),
    ...(parent === undefined ? {} : { parent }),
    ...(tenant === undefined ? {} : { tenant }),
  };
}

/** Whole lines of `bytes` as index lines; `undefined` when one is bad. */
function parseIndexLines(
  bytes: Uint8Array,
): { readonly lines: IndexLine[]; readonly consumed: number } | undefined {
  const consumed = bytes.lastIndexOf(0x0a) + 1;
  const lines: IndexLine[] = [];
  if (consumed === 0) return { lines, consumed };
  // In pieces (see decodeLines): an index of many sessions is megabytes.
  for (const text of decodeLines(bytes.subarray(0, consumed))) {
    let line: IndexLine | undefined;
    try {
      line = toIndexLine(JSON.parse(text));
    } catch {
      return undefined;
    }
    if (line === undefined) return undefined;
    lines.push(line);
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
