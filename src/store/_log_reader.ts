/**
 * A session log read a piece at a time, for `JsonlSessionStore.loadStream`: the records of each
 * piece go to the caller before the next piece is parsed (the next one is read meanwhile).
 *
 * @module
 */
import type { HostFiles } from "../host/host.ts";
import { isNotFound } from "./_common.ts";
import { collectFacts, type LogEnd, type LogSummary, SessionLogParser } from "./_session_log.ts";
import type { SessionHeader, SessionRecordStream, StoredRecord } from "./session_store.ts";

/** Bytes of the first read: the header and the first records, out quickly. */
export const FIRST_READ_BYTES = 64 * 1024;
/** Bytes of every later read. */
export const READ_BYTES = 1024 * 1024;
/** Bytes parsed into one batch: a read is handed on in pieces of this size. */
export const BATCH_BYTES = 128 * 1024;

/** A log opened by {@link openLogReader}, its header read. */
export interface LogReader {
  readonly header: SessionHeader;
  /**
   * The records, in batches as they are read (the first ones were read with the header); throws
   * a `CorruptSessionLogError` when it reaches a bad line. Iterate once.
   *
   * @param signal Checked between reads
   */
  batches(signal?: AbortSignal): AsyncGenerator<StoredRecord[], void, undefined>;
  /** Where the log ended and what the index needs of it; once `batches` is done. */
  end(): { readonly end: LogEnd; readonly summary: LogSummary };
}

/**
 * Opens a log and reads up to its header.
 *
 * @param files Reads the file
 * @param path The log
 * @param id The session id its name says
 * @returns The reader; `undefined` when there is no log; the bytes read when they do not hold a
 *   whole header (a crash during create)
 * @throws {CorruptSessionLogError} A bad header, or a bad line right after it
 */
export async function openLogReader(
  files: Pick<HostFiles, "readFileRange">,
  path: string,
  id: string,
): Promise<LogReader | number | undefined> {
  const parser = new SessionLogParser(path, id);
  let offset = 0;
  let eof = false;
  const read = async (size: number): Promise<Uint8Array> => {
    const bytes = await files.readFileRange(path, offset, offset + size);
    offset += bytes.byteLength;
    if (bytes.byteLength < size) eof = true;
    return bytes;
  };
  let first: StoredRecord[] = [];
  try {
    while (parser.header === undefined && !eof) {
      first = parser.push(await read(offset === 0 ? FIRST_READ_BYTES : READ_BYTES));
    }
  } catch (error) {
    if (offset === 0 && isNotFound(error)) return undefined;
    throw error;
  }
  const header = parser.header;
  if (header === undefined) return offset;
  const attachments = new Set<string>();
  let title: string | undefined;
  let lastTime: string | undefined;
  const facts = (records: readonly StoredRecord[]): void => {
    for (const record of records) collectFacts(record, attachments, (text) => title = text);
    lastTime = records.at(-1)?.time ?? lastTime;
  };
  return {
    header,
    async *batches(signal) {
      // One read ahead: the next piece is read while the caller handles this one.
      let next = eof ? undefined : read(READ_BYTES);
      next?.catch(() => {});
      if (first.length > 0) {
        facts(first);
        const records = first;
        first = [];
        yield records;
      }
      while (next !== undefined) {
        const bytes = await next;
        signal?.throwIfAborted();
        next = eof ? undefined : read(READ_BYTES);
        next?.catch(() => {});
        for (let start = 0; start < bytes.byteLength; start += BATCH_BYTES) {
          const records = parser.push(bytes.subarray(start, start + BATCH_BYTES));
          if (records.length === 0) continue;
          facts(records);
          yield records;
        }
      }
    },
    end() {
      const end = parser.end() as LogEnd;
      const updatedAt = lastTime ?? header.createdAt;
      return {
        end,
        summary: title === undefined
          ? { updatedAt, attachments }
          : { updatedAt, title, attachments },
      };
    },
  };
}

/** What {@link recordStream} needs besides the reader. */
export interface RecordStreamOptions {
  /** Ends the caller's hold on the log; called once, however the stream ends. */
  readonly release: () => void;
  /** Runs after the last batch is read, before the iteration ends (not when it stops early). */
  readonly finish: (end: LogEnd, summary: LogSummary) => Promise<void>;
  /** Checked between reads. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * A {@link SessionRecordStream} over a reader: iterating runs `finish` after the last batch, and
 * `release` when the iteration ends or stops, or on `close`.
 *
 * @param reader The opened log
 * @param options Release, finish, signal
 * @returns The stream
 */
export function recordStream(reader: LogReader, options: RecordStreamOptions): SessionRecordStream {
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    options.release();
  };
  let started = false;
  async function* batches(): AsyncGenerator<StoredRecord[], void, undefined> {
    try {
      if (released) throw new Error("Cannot read session records: the stream is closed");
      yield* reader.batches(options.signal);
      const { end, summary } = reader.end();
      await options.finish(end, summary);
    } finally {
      release();
    }
  }
  const iterator = batches();
  return {
    header: reader.header,
    batches: {
      [Symbol.asyncIterator]() {
        if (started) throw new Error("Cannot read session records twice");
        started = true;
        return iterator;
      },
    },
    async close() {
      if (started) await iterator.return(undefined);
      release();
    },
  };
}
