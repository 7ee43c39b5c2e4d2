/**
 * Parsing of one session log: `sessions/<id>.jsonl`, a header line then one record per line.
 *
 * @module
 */
import { isRecord } from "../util/json.ts";
import { isStringArray } from "./_common.ts";
import type { SessionHeader, StoredEvent, StoredRecord } from "./session_store.ts";
import { CorruptSessionLogError } from "./store_errors.ts";
import { concatBytes } from "../util/concat_bytes.ts";
import { decodeLines } from "../util/decode_lines.ts";

const NEWLINE = 0x0a;

/**
 * The JSON text of an event recorded as number `seq` at `time`: the same as
 * `JSON.stringify({ ...event, seq, time })`, built without copying the event (this runs for every
 * event a session records).
 *
 * @param event The event
 * @param seq Its sequence number
 * @param time Its ISO 8601 time
 * @returns One line of JSON, without the newline
 */
export function recordText(event: StoredEvent, seq: number, time: string): string {
  // An event that carries its own `seq` or `time` (a record copied from another store) gets them
  // replaced in place, as the spread does.
  if ("seq" in event || "time" in event) return JSON.stringify({ ...event, seq, time });
  const json = JSON.stringify(event);
  return `${json.length > 2 ? `${json.slice(0, -1)},` : "{"}"seq":${seq},"time":${
    JSON.stringify(time)
  }}`;
}

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
  const parser = new SessionLogParser(path, id);
  const records = parser.push(bytes);
  const end = parser.end();
  if (end === undefined) return undefined;
  return { header: end.header, records, cleanLength: end.cleanLength, length: end.length };
}

/** Where a log read by {@link SessionLogParser} ended. */
export interface LogEnd {
  readonly header: SessionHeader;
  /** Seq of the last record (0: header only). */
  readonly seq: number;
  /** Bytes of the valid prefix; less than {@link length} when the log has a torn tail. */
  readonly cleanLength: number;
  /** Bytes read. */
  readonly length: number;
}

/**
 * Parses a session log a piece at a time, with the rules of {@link parseSessionLog}: records come
 * out as soon as their line is complete; whether an unparsable line is a torn tail (the last
 * line: ignored) or corruption (a line follows it: an error) is decided when the next line or the
 * end arrives.
 *
 * @example Two pieces, then the end
 * ```ts
 * import assert from "node:assert/strict";
 * import { SessionLogParser } from "./_session_log.ts";
 * const header = { version: 1, id: "s1", cwd: "/w", additionalDirectories: [], createdAt: "x" };
 * const text = JSON.stringify(header) + '\n{"type":"turn_start","seq":1,"time":"t"}\n{"ty';
 * const bytes = new TextEncoder().encode(text);
 * const parser = new SessionLogParser("/d/s1.jsonl", "s1");
 * assert.deepEqual(parser.push(bytes.subarray(0, 90)), []);
 * assert.equal(parser.push(bytes.subarray(90))[0]?.seq, 1);
 * assert.equal(parser.end()?.cleanLength, bytes.byteLength - 4);
 * ```
 */
export class SessionLogParser {
  readonly #path: string;
  readonly #id: string;
  /** Bytes after the last newline seen so far (a line still being read). */
  #partial: Uint8Array[] = [];
  /** Bytes pushed. */
  #length = 0;
  /** Bytes up to and including the last newline. */
  #complete = 0;
  /** Complete lines seen. */
  #lines = 0;
  #header: SessionHeader | undefined;
  #seq = 0;
  /** The last complete line, when it is not JSON: a torn tail unless another line follows. */
  #unparsable: { readonly line: number; readonly start: number } | undefined;

  /**
   * @param path The file, for error messages
   * @param id The session id the file name says
   */
  constructor(path: string, id: string) {
    this.#path = path;
    this.#id = id;
  }

  /** The header, once its line was read. */
  get header(): SessionHeader | undefined {
    return this.#header;
  }

  /** Seq of the last record parsed (0: none yet). */
  get seq(): number {
    return this.#seq;
  }

  /**
   * Parses the complete lines that `bytes` ends, keeping the rest for the next call.
   *
   * @param bytes The next bytes of the log (not kept: they may be reused afterwards)
   * @returns The records of the lines completed, in order
   * @throws {CorruptSessionLogError} A bad header, a bad line before the last, a broken sequence
   */
  push(bytes: Uint8Array): StoredRecord[] {
    this.#length += bytes.byteLength;
    const last = bytes.lastIndexOf(NEWLINE);
    if (last === -1) {
      if (bytes.byteLength > 0) this.#partial.push(bytes.slice());
      return [];
    }
    const line = bytes.subarray(0, last + 1);
    const block = this.#partial.length > 0 ? concatBytes([...this.#partial, line]) : line;
    const rest = bytes.subarray(last + 1);
    this.#partial = rest.byteLength > 0 ? [rest.slice()] : [];
    const blockStart = this.#complete;
    this.#complete += block.byteLength;
    if (this.#unparsable !== undefined) this.#corrupt(this.#unparsable.line, "is not valid JSON");
    // Decoded in pieces (see decodeLines); a byte order mark is dropped at the start of the log
    // only, as a whole-file decode does.
    const lines = decodeLines(block, blockStart === 0);
    const lastLine = lines.length - 1;
    const records: StoredRecord[] = [];
    for (let index = 0; index < lines.length; index++) {
      const line = ++this.#lines;
      let value: unknown;
      try {
        value = JSON.parse(lines[index] as string);
      } catch {
        if (index < lastLine) this.#corrupt(line, "is not valid JSON");
        // Maybe a torn tail: the end or the next line says.
        this.#unparsable = {
          line,
          start: blockStart + block.lastIndexOf(NEWLINE, block.byteLength - 2) + 1,
        };
        break;
      }
      if (line === 1) {
        this.#header = checkHeader(value, this.#path, this.#id);
        continue;
      }
      records.push(checkRecord(value, this.#path, line, ++this.#seq));
    }
    return records;
  }

  /**
   * Ends the log: what is left after the last newline, and an unparsable last line, are its
   * torn tail.
   *
   * @returns Where the log ends, or `undefined` when not even its header line is complete
   */
  end(): LogEnd | undefined {
    if (this.#header === undefined) return undefined;
    return {
      header: this.#header,
      seq: this.#seq,
      cleanLength: this.#unparsable?.start ?? this.#complete,
      length: this.#length,
    };
  }

  #corrupt(line: number, detail: string): never {
    throw new CorruptSessionLogError(this.#path, line, detail);
  }
}

function checkHeader(value: unknown, path: string, id: string): SessionHeader {
  if (!isRecord(value)) throw new CorruptSessionLogError(path, 1, "is not a header object");
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
  if (!isRecord(value) || typeof value.type !== "string" || typeof value.time !== "string") {
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
      if (isRecord(part) && part.type === "image" && typeof part.sha256 === "string") {
        attachments.add(part.sha256);
      }
    }
  }
}
