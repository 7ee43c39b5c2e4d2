/**
 * `acp-harness copy-sessions --from <url-or-dir> --to <url-or-dir>`: copies sessions, with their
 * events (sequence numbers and times kept) and the attachments they reference, from one store to
 * another: a JSONL data directory into PostgreSQL and back. Idempotent: a session already at the
 * destination with as many events is skipped, one with fewer (an interrupted copy) gets the rest.
 * A session the source holds but cannot read is not copied: it is counted and named, and the
 * command fails (exit 1) once the others are copied.
 *
 * @module
 */
import type { Host } from "../host/host.ts";
import type { Logger } from "../log/logger.ts";
import { ConfigError } from "../config/value_types.ts";
import {
  MEMORY_STORE,
  type OpenedSessionStore,
  openSessionStore,
} from "../store/open_session_store.ts";
import type {
  LoadedSession,
  SessionStore,
  StoredEvent,
  StoredRecord,
  UnreadableSession,
} from "../store/session_store.ts";
import { CorruptSessionLogError } from "../store/store_errors.ts";

/** Sessions between two progress lines. */
const PROGRESS_EVERY = 100;

/** Sessions per source listing page. */
const PAGE_SIZE = 100;

/** What {@link copySessions} did. */
export interface CopySessionsResult {
  /** Sessions in the source: those copied, completed and skipped, and those it could not read. */
  readonly total: number;
  /** Sessions created at the destination. */
  readonly copied: number;
  /** Sessions that were at the destination with fewer events and got the rest. */
  readonly completed: number;
  /** Sessions already at the destination with as many events (or more), left alone. */
  readonly skipped: number;
  /** Sessions the source holds but could not read, not copied (in id order). */
  readonly unreadable: readonly UnreadableSession[];
}

/** Options for {@link copySessions}. */
export interface CopySessionsOptions {
  /** Where the sessions are read. */
  readonly from: Pick<OpenedSessionStore, "store" | "attachments">;
  /** Where they are written. */
  readonly to: Pick<OpenedSessionStore, "store" | "attachments">;
  /**
   * Receives progress lines (`120/400 listed sessions done: 118 copied, 0 completed, 2 already
   * there`), each ending in a newline.
   */
  readonly progress?: (line: string) => void;
  /**
   * Called with each record's time (ms since the epoch) before the append that writes it, so a
   * destination whose clock the caller controls keeps the original times; `undefined` after.
   */
  readonly setTime?: (ms: number | undefined) => void;
  /** Stops between sessions and appends. */
  readonly signal?: AbortSignal;
}

/**
 * Copies every session of one store into another.
 *
 * @example Copying a JSONL data directory into PostgreSQL
 * ```ts ignore
 * const from = await openSessionStore({ location: "/data/acp", host });
 * const to = await openSessionStore({ location: "postgres://acp@db/acp", host });
 * const result = await copySessions({ from, to, progress: (line) => console.error(line) });
 * ```
 *
 * @param options The two stores, the progress sink, the clock hook and a signal
 * @returns How many sessions were copied, completed and skipped, and those the source could not
 *   read (not copied)
 */
export async function copySessions(options: CopySessionsOptions): Promise<CopySessionsResult> {
  const { from, to, signal } = options;
  const call = signal ? { signal } : {};
  const unreadable = new Map<string, string>();
  for (const { id, reason } of await from.store.unreadable?.(call) ?? []) {
    unreadable.set(id, reason);
  }
  const ids = await listIds(from.store, signal);
  // Listed since (repaired meanwhile): copied, unless it fails to load.
  for (const id of ids) unreadable.delete(id);
  let copied = 0;
  let completed = 0;
  let skipped = 0;
  let done = 0;
  for (const id of ids) {
    signal?.throwIfAborted();
    const source = await loadSource(from.store, id, unreadable, signal);
    if (source !== undefined) {
      const lease = await to.store.acquire(id, call);
      try {
        const existing = await to.store.load(id, call);
        const have = existing?.records.length ?? 0;
        if (existing !== undefined && have >= source.records.length) skipped++;
        else {
          if (existing === undefined) {
            options.setTime?.(Date.parse(source.header.createdAt));
            await to.store.create(source.header, call);
          }
          await copyAttachments(options, source.records.slice(have));
          await appendRecords(options, id, source.records.slice(have));
          if (existing === undefined) copied++;
          else completed++;
        }
      } finally {
        options.setTime?.(undefined);
        await lease.release();
      }
    }
    done++;
    if (done % PROGRESS_EVERY === 0 || done === ids.length) {
      options.progress?.(
        `${done}/${ids.length} listed sessions done: ${copied} copied, ${completed} completed, ` +
          `${skipped} already there\n`,
      );
    }
  }
  if (ids.length === 0) options.progress?.("0/0 listed sessions done\n");
  return {
    total: copied + completed + skipped + unreadable.size,
    copied,
    completed,
    skipped,
    unreadable: [...unreadable]
      .map(([id, reason]) => ({ id, reason }))
      .sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  };
}

/** The ids of every session the store lists, in list order. */
async function listIds(store: SessionStore, signal: AbortSignal | undefined): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.list({
      limit: PAGE_SIZE,
      ...(cursor === undefined ? {} : { cursor }),
      ...(signal ? { signal } : {}),
    });
    for (const session of page.sessions) ids.push(session.id);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return ids;
}

/**
 * Loads a listed session from the source; one that cannot be read (stored data that does not
 * read back, or nothing found where the store holds something) goes into `unreadable`, one
 * deleted since it was listed is left out.
 */
async function loadSource(
  store: SessionStore,
  id: string,
  unreadable: Map<string, string>,
  signal: AbortSignal | undefined,
): Promise<LoadedSession | undefined> {
  try {
    const source = await store.load(id, signal ? { signal } : {});
    if (source === undefined && await store.exists(id)) unreadable.set(id, "it does not load");
    return source;
  } catch (error) {
    // Anything else (the store is gone, say) stops the copy.
    if (!(error instanceof CorruptSessionLogError)) throw error;
    unreadable.set(id, error.reason);
    return undefined;
  }
}

/** Puts the images the records reference into the destination's attachment store. */
async function copyAttachments(
  options: CopySessionsOptions,
  records: readonly StoredRecord[],
): Promise<void> {
  const call = options.signal ? { signal: options.signal } : {};
  for (const record of records) {
    if (record.type !== "user") continue;
    for (const part of record.content) {
      if (part.type !== "image") continue;
      if (await options.to.attachments.get(part.sha256, call) !== undefined) continue;
      const bytes = await options.from.attachments.get(part.sha256, call);
      // A missing attachment stays a reference: readers show it as a marker, as at the source.
      if (bytes !== undefined) await options.to.attachments.put(bytes, part.mimeType, call);
    }
  }
}

/**
 * Appends the records in runs of one time each; the last append is a commit point (with no
 * records, an empty one: it makes the new session itself durable).
 */
async function appendRecords(
  options: CopySessionsOptions,
  id: string,
  records: readonly StoredRecord[],
): Promise<void> {
  if (records.length === 0) return await options.to.store.append(id, [], { sync: true });
  let start = 0;
  while (start < records.length) {
    options.signal?.throwIfAborted();
    const time = records[start]?.time;
    let end = start + 1;
    while (end < records.length && records[end]?.time === time) end++;
    const events = records.slice(start, end).map(toEvent);
    options.setTime?.(time === undefined ? undefined : Date.parse(time));
    await options.to.store.append(id, events, { sync: end === records.length });
    start = end;
  }
}

/** A record without its sequence number and time: the event as it was appended. */
function toEvent(record: StoredRecord): StoredEvent {
  const { seq: _seq, time: _time, ...event } = record;
  return event as StoredEvent;
}

/**
 * A host whose clock can be set: `now()` returns the time set, or the real time when none is.
 * The JSONL store stamps records with `host.now()`, so a copy keeps the original times.
 *
 * @param host The real host
 * @returns The host and the clock setter
 */
export function settableClock(
  host: Host,
): { readonly host: Host; setTime(ms: number | undefined): void } {
  let fixed: number | undefined;
  const proxy = new Proxy(host, {
    get(target, property): unknown {
      if (property === "now") return () => fixed ?? target.now();
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return {
    host: proxy,
    setTime(ms: number | undefined): void {
      fixed = ms;
    },
  };
}

/** Options for {@link runCopySessions}. */
export interface RunCopySessionsOptions {
  /** The source location: a `postgres://` URL or an absolute JSONL data directory. */
  readonly from: string;
  /** The destination location, likewise. */
  readonly to: string;
  /** The operating system. */
  readonly host: Host;
  /** Where the stores report. */
  readonly logger: Logger;
  /** PostgreSQL lease expiry. */
  readonly leaseTtlMs: number;
  /** Receives the progress lines and the summary (stderr). */
  readonly writeStderr: (text: string) => void;
}

/**
 * Opens both stores, copies, prints a summary (naming the sessions that could not be read) and
 * closes them.
 *
 * @param options The locations, the host, the logger and the stderr sink
 * @returns What was copied; the command exits 1 when `unreadable` is not empty
 * @throws {ConfigError} A store cannot be opened (rejects)
 */
export async function runCopySessions(
  options: RunCopySessionsOptions,
): Promise<CopySessionsResult> {
  for (const location of [options.from, options.to]) {
    if (location === MEMORY_STORE) {
      throw new ConfigError(
        "copy-sessions copies between stores that outlive it: memory: keeps nothing after exit",
      );
    }
  }
  const clock = settableClock(options.host);
  const open = (location: string, host: Host): Promise<OpenedSessionStore> =>
    openSessionStore({
      location,
      host,
      logger: options.logger,
      leaseTtlMs: options.leaseTtlMs,
      now: () => host.now(),
    });
  const from = await open(options.from, options.host);
  try {
    const to = await open(options.to, clock.host);
    try {
      const result = await copySessions({
        from,
        to,
        progress: options.writeStderr,
        setTime: (ms) => clock.setTime(ms),
      });
      options.writeStderr(
        `copy-sessions: ${result.copied} copied, ${result.completed} completed, ` +
          `${result.skipped} already at ${to.description}\n`,
      );
      const { unreadable, total } = result;
      if (unreadable.length > 0) {
        options.writeStderr(
          `copy-sessions: ${unreadable.length} of ${total} sessions could not be read and were ` +
            `not copied:\n${unreadable.map(({ id, reason }) => `  ${id}: ${reason}\n`).join("")}`,
        );
      }
      return result;
    } finally {
      await to.close();
    }
  } finally {
    await from.close();
  }
}
