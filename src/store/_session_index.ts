/**
 * The in-memory session index: summaries by id, kept sorted newest first (ties by id) overall and
 * per cwd, so a page costs a binary search plus the page, whatever the number of sessions.
 *
 * @module
 */
import {
  isCanonicalTime,
  isObject,
  isStringArray,
  isValidSessionId,
  SHA256_HEX,
} from "./_common.ts";
import { InvalidCursorError, type SessionSummary } from "./session_store.ts";

/** An index line that sets a session's summary and adds attachment references. */
export interface IndexUpdate {
  readonly id: string;
  readonly cwd: string;
  readonly additionalDirectories: readonly string[];
  readonly title?: string;
  /** Canonical ISO 8601; the index keeps the latest it has seen for the session. */
  readonly updatedAt: string;
  /** Attachment hashes the session references, added to the ones already known. */
  readonly attachments?: readonly string[];
}

/** An index line that removes a session. */
export interface IndexTombstone {
  readonly id: string;
  readonly deleted: true;
}

/** One line of `index.jsonl` after its first. */
export type IndexLine = IndexUpdate | IndexTombstone;

/** The first line of `index.jsonl`: a new generation each time the file is rewritten. */
export interface IndexHeader {
  readonly acpHarnessIndex: 1;
  readonly generation: string;
}

/**
 * Validates a parsed index line.
 *
 * @param value A parsed JSON line
 * @returns The line, or `undefined` when it is not a valid update or tombstone
 */
export function toIndexLine(value: unknown): IndexLine | undefined {
  if (!isObject(value) || !isValidSessionId(value.id)) return undefined;
  if (value.deleted === true) return { id: value.id, deleted: true };
  if (
    typeof value.cwd !== "string" || !isStringArray(value.additionalDirectories) ||
    !isCanonicalTime(value.updatedAt) ||
    (value.title !== undefined && typeof value.title !== "string") ||
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
  if (!isObject(value) || value.acpHarnessIndex !== 1 || typeof value.generation !== "string") {
    return undefined;
  }
  return value as unknown as IndexHeader;
}

/** Where a page starts: strictly after this key in list order. */
export interface ListKey {
  readonly updatedAt: string;
  readonly id: string;
}

/** List order: newer first, then id ascending (UTF-16 code units; ids are ASCII, so byte-wise). */
function compare(a: ListKey, b: ListKey): number {
  if (a.updatedAt !== b.updatedAt) return a.updatedAt > b.updatedAt ? -1 : 1;
  if (a.id !== b.id) return a.id < b.id ? -1 : 1;
  return 0;
}

/** Summaries in list order; insert and remove are a binary search and one splice. */
class SortedSummaries {
  readonly items: SessionSummary[] = [];

  /** Index of the first item after `key`. */
  after(key: ListKey): number {
    let low = 0;
    let high = this.items.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compare(this.items[middle] as SessionSummary, key) <= 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  insert(summary: SessionSummary): void {
    let low = 0;
    let high = this.items.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compare(this.items[middle] as SessionSummary, summary) < 0) low = middle + 1;
      else high = middle;
    }
    this.items.splice(low, 0, summary);
  }

  remove(summary: SessionSummary): void {
    const at = this.after(summary) - 1;
    if (at >= 0 && this.items[at] === summary) this.items.splice(at, 1);
  }

  sort(): void {
    this.items.sort(compare);
  }
}

interface Entry {
  summary: SessionSummary;
  attachments: Set<string>;
}

/** The index in memory. */
export class SessionIndex {
  readonly #entries = new Map<string, Entry>();
  readonly #all = new SortedSummaries();
  readonly #byCwd = new Map<string, SortedSummaries>();
  /** How many live sessions reference each attachment. */
  readonly #references = new Map<string, number>();

  /** Live sessions. */
  get size(): number {
    return this.#entries.size;
  }

  /** A live session's summary and attachment references. */
  get(
    id: string,
  ): { readonly summary: SessionSummary; readonly attachments: ReadonlySet<string> } | undefined {
    return this.#entries.get(id);
  }

  /** Every live session, in no particular order. */
  entries(): IterableIterator<
    { readonly summary: SessionSummary; readonly attachments: ReadonlySet<string> }
  > {
    return this.#entries.values();
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
      this.#all.items.length = 0;
      this.#byCwd.clear();
      for (const { summary } of this.#entries.values()) {
        this.#all.items.push(summary);
        this.#cwdList(summary.cwd).items.push(summary);
      }
      this.#all.sort();
      for (const list of this.#byCwd.values()) list.sort();
      return;
    }
    for (const line of lines) this.#apply(line, true);
  }

  /**
   * One page in list order.
   *
   * @param cwd Only sessions with exactly this cwd, when given
   * @param after Start strictly after this key
   * @param limit Page size
   * @returns The page, and whether more follow it
   */
  page(
    cwd: string | undefined,
    after: ListKey | undefined,
    limit: number,
  ): { readonly sessions: SessionSummary[]; readonly more: boolean } {
    const list = cwd === undefined ? this.#all : this.#byCwd.get(cwd);
    if (list === undefined) return { sessions: [], more: false };
    const start = after === undefined ? 0 : list.after(after);
    const sessions = list.items.slice(start, start + limit);
    return { sessions, more: start + limit < list.items.length };
  }

  #cwdList(cwd: string): SortedSummaries {
    let list = this.#byCwd.get(cwd);
    if (list === undefined) {
      list = new SortedSummaries();
      this.#byCwd.set(cwd, list);
    }
    return list;
  }

  #unlist(summary: SessionSummary): void {
    this.#all.remove(summary);
    const list = this.#byCwd.get(summary.cwd);
    list?.remove(summary);
    if (list?.items.length === 0) this.#byCwd.delete(summary.cwd);
  }

  #apply(line: IndexLine, sorted: boolean): void {
    const entry = this.#entries.get(line.id);
    if ("deleted" in line) {
      if (entry === undefined) return;
      this.#entries.delete(line.id);
      if (sorted) this.#unlist(entry.summary);
      for (const sha of entry.attachments) this.#release(sha);
      return;
    }
    // The latest time wins: a coalesced update kept in memory must not go back in time when an
    // older line of the same session is read later.
    const updatedAt = entry !== undefined && entry.summary.updatedAt > line.updatedAt
      ? entry.summary.updatedAt
      : line.updatedAt;
    const title = line.title ?? entry?.summary.title;
    const summary: SessionSummary = Object.freeze({
      id: line.id,
      cwd: line.cwd,
      additionalDirectories: Object.freeze([...line.additionalDirectories]),
      ...(title === undefined ? {} : { title }),
      updatedAt,
    });
    const attachments = entry?.attachments ?? new Set<string>();
    for (const sha of line.attachments ?? []) {
      if (attachments.has(sha)) continue;
      attachments.add(sha);
      this.#references.set(sha, (this.#references.get(sha) ?? 0) + 1);
    }
    if (sorted) {
      if (entry !== undefined) this.#unlist(entry.summary);
      this.#all.insert(summary);
      this.#cwdList(summary.cwd).insert(summary);
    }
    this.#entries.set(line.id, { summary, attachments });
  }

  #release(sha: string): void {
    const count = (this.#references.get(sha) ?? 0) - 1;
    if (count > 0) this.#references.set(sha, count);
    else this.#references.delete(sha);
  }
}

/**
 * The opaque cursor after `key`: base64url (no padding) of `{"u": updatedAt, "i": id}`.
 *
 * @example Round trip
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeCursor, encodeCursor } from "./_session_index.ts";
 * const key = { updatedAt: "2025-01-02T03:04:05.006Z", id: "a1" };
 * assert.deepEqual(decodeCursor(encodeCursor(key)), key);
 * ```
 *
 * @param key The last session of a page
 * @returns The cursor
 */
export function encodeCursor(key: ListKey): string {
  const json = JSON.stringify({ u: key.updatedAt, i: key.id });
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
    !isObject(value) || Object.keys(value).length !== 2 || !isCanonicalTime(value.u) ||
    !isValidSessionId(value.i)
  ) {
    throw new InvalidCursorError("Cannot use cursor: not a cursor issued by session/list");
  }
  const key = { updatedAt: value.u, id: value.i };
  if (encodeCursor(key) !== cursor) {
    throw new InvalidCursorError("Cannot use cursor: not a cursor issued by session/list");
  }
  return key;
}
