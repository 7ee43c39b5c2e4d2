/**
 * Parsing of one session log: `sessions/<id>.jsonl`, a header line then one record per line.
 *
 * @module
 */
import { isObject, isStringArray } from "./_common.ts";
import type { SessionHeader, StoredRecord } from "./session_store.ts";
import { CorruptSessionLogError } from "./store_errors.ts";

const NEWLINE = 0x0a;

/** A log as read from disk. */
export interface ParsedLog {
  readonly header: SessionHeader;
  readonly records: StoredRecord[];
  /** Bytes of the valid prefix; less than {@link length} when the log has a torn tail. */
  readonly cleanLength: number;
  /** Bytes read. */
  readonly length: number;
}

/**
 * Parses a session log. The last line is a torn tail (ignored, reported through
 * `cleanLength < length`) when it has no final newline or is not JSON; any other bad line throws.
 *
 * @param bytes The file content
 * @param path The file, for error messages
 * @param id The session id the file name says
 * @returns The log, or `undefined` when not even the header line is complete (a crash during
 *   create)
 * @throws {CorruptSessionLogError} A bad header, a bad line before the last, a broken sequence
 */
export function parseSessionLog(
  bytes: Uint8Array,
  path: string,
  id: string,
): ParsedLog | undefined {
  let end = bytes.lastIndexOf(NEWLINE) + 1;
  if (end === 0) return undefined;
  const text = new TextDecoder().decode(bytes.subarray(0, end));
  const lines = text.split("\n");
  lines.pop();
  const last = lines.length - 1;
  let header: SessionHeader | undefined;
  const records: StoredRecord[] = [];
  for (let index = 0; index < lines.length; index++) {
    let value: unknown;
    try {
      value = JSON.parse(lines[index] as string);
    } catch {
      if (index < last) throw new CorruptSessionLogError(path, index + 1, "is not valid JSON");
      end = bytes.lastIndexOf(NEWLINE, end - 2) + 1;
      break;
    }
    if (index === 0) {
      header = checkHeader(value, path, id);
      continue;
    }
    const record = checkRecord(value, path, index + 1, records.length + 1);
    records.push(record);
  }
  if (header === undefined) return undefined;
  return { header, records, cleanLength: end, length: bytes.byteLength };
}

function checkHeader(value: unknown, path: string, id: string): SessionHeader {
  if (!isObject(value)) throw new CorruptSessionLogError(path, 1, "is not a header object");
  if (value.version !== 1) {
    throw new CorruptSessionLogError(
      path,
      1,
      `has unsupported version ${JSON.stringify(value.version)} (expected 1)`,
    );
  }
  if (value.id !== id) {
    throw new CorruptSessionLogError(path, 1, `names session ${JSON.stringify(value.id)}`);
  }
  if (
    typeof value.cwd !== "string" || !isStringArray(value.additionalDirectories) ||
    typeof value.createdAt !== "string"
  ) {
    throw new CorruptSessionLogError(
      path,
      1,
      "lacks cwd, additionalDirectories or createdAt",
    );
  }
  return value as unknown as SessionHeader;
}

function checkRecord(value: unknown, path: string, line: number, seq: number): StoredRecord {
  if (!isObject(value) || typeof value.type !== "string" || typeof value.time !== "string") {
    throw new CorruptSessionLogError(path, line, "is not a record with a type and a time");
  }
  if (value.seq !== seq) {
    throw new CorruptSessionLogError(
      path,
      line,
      `has seq ${JSON.stringify(value.seq)} (expected ${seq})`,
    );
  }
  return value as unknown as StoredRecord;
}

/** What the index needs from a log: its last event time, last title and image references. */
export interface LogSummary {
  readonly updatedAt: string;
  readonly title?: string;
  readonly attachments: ReadonlySet<string>;
}

/**
 * Folds records into the facts the index keeps.
 *
 * @param header The log header
 * @param records Its records
 * @returns The last event time (the creation time without records), title and image hashes
 */
export function summarizeLog(
  header: SessionHeader,
  records: readonly StoredRecord[],
): LogSummary {
  let title: string | undefined;
  const attachments = new Set<string>();
  for (const record of records) collectFacts(record, attachments, (text) => title = text);
  const updatedAt = records.at(-1)?.time ?? header.createdAt;
  return title === undefined ? { updatedAt, attachments } : { updatedAt, title, attachments };
}

/**
 * Adds the image hashes of a `user` event to `attachments` and reports a `title` event's title.
 *
 * @param event A stored event
 * @param attachments Receives image hashes
 * @param onTitle Receives a title
 */
export function collectFacts(
  event: { readonly type: string },
  attachments: Set<string>,
  onTitle: (title: string) => void,
): void {
  if (event.type === "title") {
    const title = (event as { title?: unknown }).title;
    if (typeof title === "string") onTitle(title);
  } else if (event.type === "user") {
    const content = (event as { content?: unknown }).content;
    if (!Array.isArray(content)) return;
    for (const part of content) {
      if (isObject(part) && part.type === "image" && typeof part.sha256 === "string") {
        attachments.add(part.sha256);
      }
    }
  }
}
