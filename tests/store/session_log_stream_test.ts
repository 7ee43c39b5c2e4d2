import assert from "node:assert/strict";
import { parseSessionLog, SessionLogParser } from "../../src/store/_session_log.ts";
import { BATCH_BYTES, FIRST_READ_BYTES, READ_BYTES } from "../../src/store/_log_reader.ts";
import type { JsonlSessionStore } from "../../src/store/jsonl_session_store.ts";
import { loadRecordStream } from "../../src/store/record_stream.ts";
import type {
  SessionRecordStream,
  StoredEvent,
  StoredRecord,
} from "../../src/store/session_store.ts";
import { CorruptSessionLogError } from "../../src/store/store_errors.ts";
import { header, sessionId, type TempStore, tempStore, warned } from "./_helpers.ts";

/** Events whose log is `count` lines of a few hundred bytes each. */
function events(count: number): StoredEvent[] {
  return Array.from({ length: count }, (_, index): StoredEvent => ({
    type: "assistant",
    messageId: `m${index}`,
    text: `answer ${index} ${"é—x".repeat(index % 7)} ${"words ".repeat(40 + (index % 13))}`,
  }));
}

/** Appends `count` events in a few appends. */
async function fill(temp: TempStore, id: string, count: number): Promise<void> {
  const all = events(count);
  for (let start = 0; start < all.length; start += 500) {
    await temp.store.append(id, all.slice(start, start + 500), { sync: false });
  }
}

/** Reads every batch of a stream. */
async function drain(stream: SessionRecordStream): Promise<StoredRecord[][]> {
  const batches: StoredRecord[][] = [];
  for await (const batch of stream.batches) batches.push([...batch]);
  return batches;
}

/** A created session of `count` events, closed to this process (as another process sees it). */
async function session(count: number): Promise<{ temp: TempStore; id: string; path: string }> {
  const temp = await tempStore();
  const id = sessionId(1);
  await temp.store.create(header(id, temp.host));
  await fill(temp, id, count);
  return { temp, id, path: `${temp.dir}/sessions/${id}.jsonl` };
}

Deno.test("JsonlSessionStore.loadStream(): a log of many reads streams whole, in order, in batches", async () => {
  const { temp, id, path } = await session(8_000);
  await using _ = temp;
  const size = (await Deno.stat(path)).size;
  assert.ok(size > FIRST_READ_BYTES + 2 * READ_BYTES, `the log (${size} bytes) spans reads`);
  const reader = temp.open();
  const stream = await reader.loadStream(id);
  assert.ok(stream);
  assert.deepEqual(stream.header, header(id, temp.host));
  const batches = await drain(stream);
  assert.ok(batches.length >= size / BATCH_BYTES, `${batches.length} batches`);
  const streamed = batches.flat();
  assert.deepEqual(streamed, (await reader.load(id))?.records);
  assert.deepEqual(streamed.map((record) => record.seq), events(8_000).map((_, i) => i + 1));
  assert.deepEqual(temp.warnings, []);
});

Deno.test("JsonlSessionStore.loadStream(): a torn tail is ignored, and cut under the lease once read", async () => {
  const { temp, id, path } = await session(3_000);
  await using _ = temp;
  await Deno.writeTextFile(path, '{"type":"assistant","text":"cut o', { append: true });
  const torn = (await Deno.stat(path)).size;

  const reader = temp.open();
  const records = (await drain((await reader.loadStream(id))!)).flat();
  assert.equal(records.length, 3_000);
  assert.ok(warned(temp, "torn tail"));
  assert.equal((await Deno.stat(path)).size, torn, "without the lease nothing is written");

  const lease = await reader.acquire(id);
  const stream = (await reader.loadStream(id))!;
  const iterator = stream.batches[Symbol.asyncIterator]();
  assert.equal((await iterator.next()).done, false);
  assert.equal((await Deno.stat(path)).size, torn, "cut only once the log is read");
  while (!(await iterator.next()).done);
  assert.ok((await Deno.stat(path)).size < torn);
  await reader.append(id, [{ type: "turn_start" }], { sync: true });
  temp.warnings.length = 0;
  const last = (await temp.open().load(id))?.records.at(-1);
  assert.deepEqual([last?.type, last?.seq], ["turn_start", 3_001]);
  assert.deepEqual(temp.warnings, []);
  await lease.release();
});

Deno.test("JsonlSessionStore.loadStream(): a corrupt middle line fails like load, after the batches before it", async () => {
  const { temp, id, path } = await session(4_000);
  await using _ = temp;
  const lines = (await Deno.readTextFile(path)).split("\n");
  lines[3_000] = "{not json";
  await Deno.writeTextFile(path, lines.join("\n"));
  const reader = temp.open();
  const expected = await reader.load(id).then(() => undefined, (error: unknown) => error);
  assert.ok(expected instanceof CorruptSessionLogError && expected.line === 3_001);

  const lease = await reader.acquire(id);
  const stream = (await reader.loadStream(id))!;
  const read: StoredRecord[] = [];
  await assert.rejects(
    (async () => {
      for await (const batch of stream.batches) read.push(...batch);
    })(),
    (error: unknown) =>
      error instanceof CorruptSessionLogError && error.message === expected.message,
  );
  assert.ok(read.length > 0, "the batches before the bad line's were given");
  assert.ok(read.length <= 2_999);
  assert.deepEqual(read.map((record) => record.seq), read.map((_, i) => i + 1));
  // The session is free again: another operation on it runs.
  await assert.rejects(reader.load(id), CorruptSessionLogError);
  await lease.release();
});

Deno.test("JsonlSessionStore.loadStream(): close() before the end lets the next operation run", async () => {
  const { temp, id } = await session(3_000);
  await using _ = temp;
  const lease = await temp.store.acquire(id);
  const unread = (await temp.store.loadStream(id))!;
  await unread.close();
  const stopped = (await temp.store.loadStream(id))!;
  for await (const _batch of stopped.batches) break;
  await stopped.close();
  await temp.store.append(id, [{ type: "turn_start" }], { sync: true });
  assert.equal((await temp.store.load(id))?.records.length, 3_001);
  await lease.release();
});

Deno.test("JsonlSessionStore.loadStream(): no log, a log torn in its header, a bad header", async () => {
  await using temp = await tempStore();
  const id = sessionId(1);
  assert.equal(await temp.store.loadStream(id), undefined);
  assert.equal(await temp.store.loadStream("../escape"), undefined);
  await Deno.mkdir(`${temp.dir}/sessions`, { recursive: true });
  const path = `${temp.dir}/sessions/${id}.jsonl`;
  await Deno.writeTextFile(path, '{"version":1,"id":"00');
  assert.equal(await temp.store.loadStream(id), undefined);
  assert.ok(warned(temp, "without a complete header"));
  await Deno.writeTextFile(path, JSON.stringify(header(sessionId(2), temp.host)) + "\n");
  await assert.rejects(temp.store.loadStream(id), /line 1 names session/);
  // The failed open let go of the session.
  await Deno.writeTextFile(path, JSON.stringify(header(id, temp.host)) + "\n");
  assert.deepEqual(await drain((await temp.store.loadStream(id))!), []);
});

Deno.test("loadRecordStream(): uses loadStream when the store has it, else load", async () => {
  const { temp, id } = await session(10);
  await using _ = temp;
  const store: JsonlSessionStore = temp.store;
  const streamed = (await drain((await loadRecordStream(store, id))!)).flat();
  const withoutStream = { load: store.load.bind(store) } as unknown as JsonlSessionStore;
  const loaded = await drain((await loadRecordStream(withoutStream, id))!);
  assert.equal(loaded.length, 1);
  assert.deepEqual(loaded[0], streamed);
  assert.equal(await loadRecordStream(withoutStream, sessionId(9)), undefined);
});

Deno.test("SessionLogParser: any split into pieces gives what parseSessionLog gives", () => {
  const encoder = new TextEncoder();
  const head = JSON.stringify({
    version: 1,
    id: "s1",
    cwd: "/w",
    additionalDirectories: [],
    createdAt: "2025-01-01T00:00:00.000Z",
  });
  const line = (seq: number, text: string): string =>
    JSON.stringify({ type: "assistant", text, seq, time: "t" });
  const logs = [
    "",
    head,
    `${head}\n`,
    `\uFEFF${head}\n${line(1, "a")}\n`,
    `${head}\n${line(1, "日本語 ✓ é")}\n${line(2, "b")}\n`,
    `${head}\n${line(1, "a")}\n{"type":"assis`,
    `${head}\n${line(1, "a")}\n{"type":"assis\u0000\n`,
    `${head}\n${line(1, "a")}\r\n${line(2, "b")}\r\n`,
    `{"version":1,"id":"s\n`,
    `{"version":1,"id":"s\n${line(1, "a")}\n`,
    `${head}\n{not json\n${line(2, "b")}\n`,
    `${head}\n${line(1, "a")}\n${line(3, "c")}\n`,
    `${head}\n\n${line(1, "a")}\n`,
  ];
  for (const text of logs) {
    const bytes = encoder.encode(text);
    let whole: unknown;
    try {
      whole = parseSessionLog(bytes, "/d/s1.jsonl", "s1");
    } catch (error) {
      whole = (error as Error).message;
    }
    for (const size of [1, 2, 3, 5, 8, 13, 64, bytes.byteLength + 1]) {
      const parser = new SessionLogParser("/d/s1.jsonl", "s1");
      let pieces: unknown;
      try {
        const records: StoredRecord[] = [];
        for (let start = 0; start < bytes.byteLength; start += size) {
          const piece = bytes.slice(start, start + size);
          records.push(...parser.push(piece));
          piece.fill(0x20); // pieces are not kept
        }
        const end = parser.end();
        pieces = end && {
          header: end.header,
          records,
          cleanLength: end.cleanLength,
          length: end.length,
        };
      } catch (error) {
        pieces = (error as Error).message;
      }
      assert.deepEqual(pieces, whole, `${JSON.stringify(text)} in pieces of ${size}`);
    }
  }
});

Deno.test("SessionLogParser: a block of many 32 KiB pieces decodes every line whole, long lines and a byte order mark too", () => {
  const head = {
    version: 1,
    id: "s1",
    cwd: "/w",
    additionalDirectories: [],
    createdAt: "2025-01-01T00:00:00.000Z",
  };
  // Lines of every length around the pieces' edges, multi-byte characters at them, and lines
  // longer than a piece (one of 100 KiB).
  const records = Array.from({ length: 400 }, (_, index) => ({
    type: "assistant",
    text: index === 123 ? "∑".repeat(35_000) : `${index} ${"日本語 ✓ é ".repeat(index % 50)}`,
    seq: index + 1,
    time: "t",
  }));
  const lines = [JSON.stringify(head), ...records.map((record) => JSON.stringify(record))];
  const text = `\uFEFF${lines.join("\n")}\n{"type":"assis`;
  const bytes = new TextEncoder().encode(text);
  assert.ok(bytes.byteLength > 8 * 32 * 1024, `${bytes.byteLength} bytes`);
  const parsed = parseSessionLog(bytes, "/d/s1.jsonl", "s1");
  assert.deepEqual(parsed?.header, head);
  assert.deepEqual(parsed?.records, records);
  assert.equal(parsed?.cleanLength, bytes.byteLength - '{"type":"assis'.length);
  // A byte order mark is dropped at the start only: in a later line it is a character of its own.
  const later = new TextEncoder().encode(
    `${text.slice(1, -14)}\uFEFF${JSON.stringify(records[0])}\n${JSON.stringify(records[1])}\n`,
  );
  assert.throws(
    () => parseSessionLog(later, "/d/s1.jsonl", "s1"),
    (error: unknown) => error instanceof CorruptSessionLogError && /line 402/.test(error.message),
  );
});
