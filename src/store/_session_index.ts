/**
 * The in-memory session index: summaries by id, kept in list order (newest creation first, ties
 * by id) overall and per cwd, so a page costs a binary search plus the page, whatever the number
 * of sessions. The order key never changes while a session lives, so a cursor (the last key of a
 * page) stays a valid position however sessions are updated, created or deleted between pages.
 *
 * @module
 */
import type { ListOptions } from "./session_store.ts";
import {
  isCanonicalTime,
  isSessionParent,
  isStringArray,
  isValidSessionId,
  SHA256_HEX,
  TENANT_NAME,
} from "./_common.ts";
import { isRecord } from "../util/json.ts";
import { InvalidCursorError, type SessionParent, type SessionSummary } from "./session_store.ts";

/** An index line that sets a session's summary and adds attachment references. */
export interface IndexUpdate {
  readonly id: string;
  readonly cwd: string;
  readonly additionalDirectories: readonly string[];
  readonly title?: string;
  /**
   * Canonical ISO 8601 creation time (the log header's), the list order key. Lines written by
   * versions before it existed lack it: the first line of a session then stands in (the create
   * line's `updatedAt` is the creation time).
   */
  readonly createdAt?: string;
  /** Canonical ISO 8601; the index keeps the latest it has seen for the session. */
  readonly updatedAt: string;
  /** Attachment hashes the session references, added to the ones already known. */
  readonly attachments?: readonly string[];
  /**
   * The header's parent. Fixed at creation, so a line without it (written by a version before
   * it existed) keeps the one an earlier line gave.
   */
  readonly parent?: SessionParent;
  /** The header's tenant. Fixed at creation, so a line without it keeps the one an earlier gave. */
  readonly tenant?: string;
}

/** An index line that removes a session. */
export interface IndexTombstone {
  readonly id: string;
  readonly deleted: true;
}

/**
 * An index line that records a log the index could not read: not listed, and read again once it
 * changes. A version that predates it reads it as the tombstone it also is.
 */
export interface IndexUnreadable extends IndexTombstone {
  /** Why the log could not be read (`line 5 is not valid JSON`). */
  readonly unreadable: string;
  /** The log's size when it was read. */
  readonly size: number;
  /** The log's modification time when it was read (ms since the epoch). */
  readonly mtimeMs: number;
}

/** One line of `index.jsonl` after its first. */
export type IndexLine = IndexUpdate | IndexTombstone | IndexUnreadable;

/** A log the index could not read, as its last {@link IndexUnreadable} line says. */
export interface UnreadableLog {
  readonly reason: string;
  readonly size: number;
  readonly mtimeMs: number;
}

/** The first line of `index.jsonl`: a new generation each time the file is rewritten. */
export interface IndexHeader {
  readonly acpHarnessIndex: 1;
  readonly generation: string;
  /**
   * Set by the versions whose lines carry each session's `parent`. An index without it was last
   * rewritten by an older version, which drops the parents: it is rebuilt from the logs.
   */
  readonly parents?: 1;
}

/**
 * Validates a parsed index line.
 *
 * @param value A parsed JSON line
 * @returns The line, or `undefined` when it is not a valid update or tombstone
 */
export function toIndexLine(value: unknown): IndexLine | undefined {
  if (!isRecord(value) || !isValidSessionId(value.id)) return undefined;
  if (value.deleted === true) {
    const { unreadable, size, mtimeMs } = value;
    return typeof unreadable === "string" && Number.isSafeInteger(size) && (size as number) >= 0 &&
        Number.isFinite(mtimeMs)
      ? {
        id: value.id,
        deleted: true,
        unreadable,
        size: size as number,
        mtimeMs: mtimeMs as number,
      }
      : { id: value.id, deleted: true };
  }
  if (
    typeof value.cwd !== "string" || !isStringArray(value.additionalDirectories) ||
    !isCanonicalTime(value.updatedAt) ||
    (value.createdAt !== undefined && !isCanonicalTime(value.createdAt)) ||
    (value.title !== undefined && typeof value.title !== "string") ||
    (value.parent !== undefined && !isSessionParent(value.parent)) ||
    (value.tenant !== undefined &&
      !(typeof value.tenant === "string" && TENANT_NAME.test(value.tenant))) ||
    (value.attachments !== undefined &&
      !(isStringArray(value.attachments) && value.attachments.every((s) => SHA256_HEX.test(s))))
  ) {
    return undefined;
  }
  return value as unknown as IndexUpdate;
}

/**
 * Validates a parsed index header line.
 *
 * @param value A parsed JSON line
 * @returns The header, or `undefined`
 */
export function toIndexHeader(value: unknown): IndexHeader | undefined {
  if (!isRecord(value) || value.acpHarnessIndex !== 1 || typeof value.generation !== "string") {
    return undefined;
  }
  return value as unknown as IndexHeader;
}

/** A position in list order: a page starts strictly after the key of the previous page's last. */
export interface ListKey {
  /** Canonical ISO 8601 creation time. */
  readonly createdAt: string;
  readonly id: string;
}

/**
 * List order: newer creation first, then id ascending (UTF-16 code units; ids are ASCII, so
 * byte-wise). Canonical times of one length compare as strings.
 */
function compare(a: ListKey, b: ListKey): number {
  if (a.createdAt !== b.createdAt) return a.createdAt > b.createdAt ? -1 : 1;
  if (a.id !== b.id) return a.id < b.id ? -1 : 1;
  return 0;
}

interface Entry {
  /** The list order key. */
  readonly key: ListKey;
  /** Whether `key.createdAt` stands in for a creation time no line gave. */
  readonly guessed: boolean;
  summary: SessionSummary;
  attachments: Set<string>;
}

/** Entries in list order; insert and remove are a binary search and one splice. */
class SortedEntries {
  readonly items: Entry[] = [];

  /** Index of the first item after `key`. */
  after(key: ListKey): number {
    let low = 0;
    let high = this.items.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compare((this.items[middle] as Entry).key, key) <= 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  insert(entry: Entry): void {
    let low = 0;
    let high = this.items.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compare((this.items[middle] as Entry).key, entry.key) < 0) low = middle + 1;
      else high = middle;
    }
    this.items.splice(low, 0, entry);
  }

  remove(entry: Entry): void {
    const at = this.after(entry.key) - 1;
    if (at >= 0 && this.items[at] === entry) this.items.splice(at, 1);
  }

  sort(): void {
    this.items.sort((a, b) => compare(a.key, b.key));
  }
}

/**
 * What a page lists: a cwd, a lineage (see `ListOptions.parent`), both, or every session; of one
 * tenant (see `ListOptions.tenant`) or of all.
 */
export interface PageFilter {
  readonly cwd?: string | undefined;
  readonly parent?: string | null | undefined;
  readonly tenant?: string | undefined;
}

/**
 * The lists an entry is in, each in list order: every session, by cwd, the sessions without a
 * parent (overall and by cwd), and by parent; a tenant's session is in each of them once more
 * under its tenant's prefix, so that a tenant's page costs what any page costs.
 */
function groupsOf(summary: SessionSummary): string[] {
  const { cwd, parent, tenant } = summary;
  const groups = parent === undefined
    ? ["all", `cwd\0${cwd}`, "top", `top\0${cwd}`]
    : ["all", `cwd\0${cwd}`, `parent\0${parent.sessionId}`];
  return tenant === undefined
    ? groups
    : [...groups, ...groups.map((group) => `tenant\0${tenant}\0${group}`)];
}

/** The in-memory index. */
export class SessionIndex {
  readonly #entries = new Map<string, Entry>();
  /** The lists of {@link groupsOf}, by group; an empty one is dropped. */
  readonly #groups = new Map<string, SortedEntries>();
  /** How many live sessions reference each attachment. */
  readonly #references = new Map<string, number>();
  /** Logs that could not be read, by session id: not listed. */
  readonly #unreadable = new Map<string, UnreadableLog>();
  #guessed = 0;

  /** Live sessions. */
  get size(): number {
    return this.#entries.size;
  }

  /** Live sessions whose creation time no line gave (lines of an older version). */
  get guessed(): number {
    return this.#guessed;
  }

  /** The logs that could not be read, by session id (not listed). */
  get unreadable(): ReadonlyMap<string, UnreadableLog> {
    return this.#unreadable;
  }

  /** A live session's summary, creation time and attachment references. */
  get(id: string): IndexEntry | undefined {
    const entry = this.#entries.get(id);
    return entry && view(entry);
  }

  /** Every live session, in no particular order. */
  *entries(): IterableIterator<IndexEntry> {
    for (const entry of this.#entries.values()) yield view(entry);
  }

  /** Whether any live session references the attachment. */
  isReferenced(sha256: string): boolean {
    return (this.#references.get(sha256) ?? 0) > 0;
  }

  /**
   * Applies lines in order. Many lines at once (a first read, a big tail) update the map and
   * re-sort once instead of splicing per line.
   */
  applyAll(lines: readonly IndexLine[]): void {
    if (lines.length > 64 && lines.length * 8 > this.#entries.size) {
      for (const line of lines) this.#apply(line, false);
      this.#groups.clear();
      for (const entry of this.#entries.values()) {
        for (const group of groupsOf(entry.summary)) this.#group(group).items.push(entry);
      }
      for (const list of this.#groups.values()) list.sort();
      return;
    }
    for (const line of lines) this.#apply(line, true);
  }

  /**
   * One page in list order.
   *
   * @param filter Only sessions with exactly this cwd, of this lineage (see `ListOptions.parent`)
   * @param after Start strictly after this key
   * @param limit Page size
   * @returns The page, and the key to continue after when more follow
   */
  page(
    filter: PageFilter,
    after: ListKey | undefined,
    limit: number,
  ): { readonly sessions: SessionSummary[]; readonly next?: ListKey } {
    const { cwd, parent, tenant } = filter;
    const group = parent === undefined
      ? (cwd === undefined ? "all" : `cwd\0${cwd}`)
      : parent === null
      ? (cwd === undefined ? "top" : `top\0${cwd}`)
      : `parent\0${parent}`;
    const list = this.#groups.get(tenant === undefined ? group : `tenant\0${tenant}\0${group}`);
    if (list === undefined) return { sessions: [] };
    const start = after === undefined ? 0 : list.after(after);
    if (typeof parent === "string" && cwd !== undefined) {
      // One session's children, of one cwd: few, so scanned.
      return scan(list.items, start, limit, (entry) => entry.summary.cwd === cwd);
    }
    const entries = list.items.slice(start, start + limit);
    const sessions = entries.map((entry) => entry.summary);
    const last = entries.at(-1);
    return start + limit < list.items.length && last !== undefined
      ? { sessions, next: last.key }
      : { sessions };
  }

  #group(group: string): SortedEntries {
    let list = this.#groups.get(group);
    if (list === undefined) {
      list = new SortedEntries();
      this.#groups.set(group, list);
    }
    return list;
  }

  #unlist(entry: Entry): void {
    for (const group of groupsOf(entry.summary)) {
      const list = this.#groups.get(group);
      list?.remove(entry);
      if (list?.items.length === 0) this.#groups.delete(group);
    }
  }

  #insert(entry: Entry): void {
    for (const group of groupsOf(entry.summary)) this.#group(group).insert(entry);
  }

  #apply(line: IndexLine, sorted: boolean): void {
    const entry = this.#entries.get(line.id);
    if ("unreadable" in line) {
      const { unreadable: reason, size, mtimeMs } = line;
      this.#unreadable.set(line.id, { reason, size, mtimeMs });
    } else {
      this.#unreadable.delete(line.id);
    }
    if ("deleted" in line) {
      if (entry === undefined) return;
      this.#entries.delete(line.id);
      if (entry.guessed) this.#guessed--;
      if (sorted) this.#unlist(entry);
      for (const sha of entry.attachments) this.#release(sha);
      return;
    }
    // The latest time wins: a coalesced update kept in memory must not go back in time when an
    // older line of the same session is read later.
    const updatedAt = entry !== undefined && entry.summary.updatedAt > line.updatedAt
      ? entry.summary.updatedAt
      : line.updatedAt;
    const title = line.title ?? entry?.summary.title;
    const parent = line.parent ?? entry?.summary.parent;
    const tenant = line.tenant ?? entry?.summary.tenant;
    const summary: SessionSummary = Object.freeze({
      id: line.id,
      cwd: line.cwd,
      additionalDirectories: Object.freeze([...line.additionalDirectories]),
      ...(title === undefined ? {} : { title }),
      updatedAt,
      ...(parent === undefined ? {} : {
        parent: Object.freeze({ sessionId: parent.sessionId, toolCallId: parent.toolCallId }),
      }),
      ...(tenant === undefined ? {} : { tenant }),
    });
    const attachments = entry?.attachments ?? new Set<string>();
    for (const sha of line.attachments ?? []) {
      if (attachments.has(sha)) continue;
      attachments.add(sha);
      this.#references.set(sha, (this.#references.get(sha) ?? 0) + 1);
    }
    // The key only changes when a creation time replaces a stand-in (a line of an older version).
    const createdAt = line.createdAt ?? entry?.key.createdAt ?? line.updatedAt;
    const guessed = line.createdAt === undefined && (entry?.guessed ?? true);
    if (
      entry !== undefined && entry.key.createdAt === createdAt &&
      entry.summary.cwd === summary.cwd && entry.guessed === guessed &&
      entry.summary.parent?.sessionId === summary.parent?.sessionId &&
      entry.summary.tenant === summary.tenant
    ) {
      // Same position: update in place (the sorted lists hold the entry itself).
      entry.summary = summary;
      return;
    }
    const next: Entry = { key: { createdAt, id: line.id }, guessed, summary, attachments };
    this.#guessed += Number(guessed) - Number(entry?.guessed ?? false);
    this.#entries.set(line.id, next);
    if (!sorted) return;
    if (entry !== undefined) this.#unlist(entry);
    this.#insert(next);
  }

  #release(sha: string): void {
    const count = (this.#references.get(sha) ?? 0) - 1;
    if (count > 0) this.#references.set(sha, count);
    else this.#references.delete(sha);
  }
}

/** What the index knows about one live session. */
export interface IndexEntry {
  /** What `list` reports. */
  readonly summary: SessionSummary;
  /** Canonical ISO 8601 creation time, the list order key (a stand-in when `guessed`). */
  readonly createdAt: string;
  /** Whether no line gave the creation time (lines of an older version). */
  readonly guessed: boolean;
  /** Attachment hashes the session references. */
  readonly attachments: ReadonlySet<string>;
}

/** The page of the entries from `start` that `keep` keeps: at most `limit`, and where to go on. */
function scan(
  items: readonly Entry[],
  start: number,
  limit: number,
  keep: (entry: Entry) => boolean,
): { readonly sessions: SessionSummary[]; readonly next?: ListKey } {
  const sessions: SessionSummary[] = [];
  let last: Entry | undefined;
  for (let at = start; at < items.length; at++) {
    const entry = items[at] as Entry;
    if (!keep(entry)) continue;
    if (sessions.length === limit) return { sessions, next: (last as Entry).key };
    sessions.push(entry.summary);
    last = entry;
  }
  return { sessions };
}

function view(entry: Entry): IndexEntry {
  return {
    summary: entry.summary,
    createdAt: entry.key.createdAt,
    guessed: entry.guessed,
    attachments: entry.attachments,
  };
}

/**
 * The opaque cursor after `key`: base64url (no padding) of `{"c": createdAt, "i": id}`.
 *
 * @example Round trip
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeCursor, encodeCursor } from "./_session_index.ts";
 * const key = { createdAt: "2025-01-02T03:04:05.006Z", id: "a1" };
 * assert.deepEqual(decodeCursor(encodeCursor(key)), key);
 * ```
 *
 * @param key The last session of a page
 * @returns The cursor
 */
export function encodeCursor(key: ListKey): string {
  const json = JSON.stringify({ c: key.createdAt, i: key.id });
  // Both fields are ASCII (a canonical time and a validated id), so btoa sees no wide characters.
  return btoa(json).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/**
 * Decodes a cursor, accepting exactly what {@link encodeCursor} produces.
 *
 * @param cursor A cursor from a client
 * @returns The key it names
 * @throws {InvalidCursorError} Anything else
 */
export function decodeCursor(cursor: string): ListKey {
  if (typeof cursor !== "string" || !/^[A-Za-z0-9_-]{1,1024}$/.test(cursor)) {
    throw new InvalidCursorError("Cannot use cursor: not a base64url string");
  }
  let json: string;
  try {
    json = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    throw new InvalidCursorError("Cannot use cursor: not valid base64url");
  }
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new InvalidCursorError("Cannot use cursor: not a cursor issued by session/list");
  }
  if (
    !isRecord(value) || Object.keys(value).length !== 2 || !isCanonicalTime(value.c) ||
    !isValidSessionId(value.i)
  ) {
    throw new InvalidCursorError("Cannot use cursor: not a cursor issued by session/list");
  }
  const key = { createdAt: value.c, id: value.i };
  if (encodeCursor(key) !== cursor) {
    throw new InvalidCursorError("Cannot use cursor: not a cursor issued by session/list");
  }
  return key;
}

/**
 * Checks the options of `SessionStore.list` and decodes the cursor (what every store does first).
 *
 * @param options The list options
 * @returns Where the page starts (`undefined`: at the newest session)
 * @throws {InvalidCursorError} A cursor no store issued
 * @throws {RangeError} A limit that is not a positive integer
 */
export function listStart(options: ListOptions): ListKey | undefined {
  options.signal?.throwIfAborted();
  const { limit } = options;
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new RangeError(`Cannot list sessions: limit must be a positive integer, got ${limit}`);
  }
  return options.cursor === undefined ? undefined : decodeCursor(options.cursor);
}
