import assert from "node:assert/strict";
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  ndJsonStream,
  type NdJsonStreamOptions,
} from "../../src/transport/nd_json_stream.ts";
import type { AnyMessage } from "../../src/transport/acp.ts";
import { pollUntil, settle } from "../_helpers/wait.ts";

const encoder = new TextEncoder();

/** A byte stream that yields each chunk in turn (strings are UTF-8 encoded). */
function input(chunks: ReadonlyArray<string | Uint8Array>): ReadableStream<Uint8Array> {
  const queue = chunks.map((chunk) => typeof chunk === "string" ? encoder.encode(chunk) : chunk);
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = queue.shift();
      if (next === undefined) controller.close();
      else controller.enqueue(next);
    },
  });
}

/** Splits `text`'s UTF-8 bytes into chunks of `size` bytes. */
function byteChunks(text: string, size: number): Uint8Array[] {
  const bytes = encoder.encode(text);
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.slice(at, at + size));
  return out;
}

interface Collector {
  readonly writable: WritableStream<Uint8Array>;
  readonly chunks: Uint8Array[];
  text(): string;
  lines(): unknown[];
  closed: boolean;
}

/** An output byte stream that keeps everything written to it. */
function collector(): Collector {
  const chunks: Uint8Array[] = [];
  const result: Collector = {
    chunks,
    writable: new WritableStream<Uint8Array>({
      write(chunk) {
        chunks.push(chunk.slice());
      },
      close() {
        result.closed = true;
      },
    }),
    text() {
      const total = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
      const all = new Uint8Array(total);
      let at = 0;
      for (const chunk of chunks) {
        all.set(chunk, at);
        at += chunk.length;
      }
      return new TextDecoder().decode(all);
    },
    lines() {
      const text = result.text();
      assert.ok(text === "" || text.endsWith("\n"), "output must end with a newline");
      return text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
    },
    closed: false,
  };
  return result;
}

/** Runs a stream over `chunks`, reads every message and waits for all writes. */
async function run(
  chunks: ReadonlyArray<string | Uint8Array>,
  options: NdJsonStreamOptions = {},
): Promise<{ messages: AnyMessage[]; output: unknown[]; invalid: string[] }> {
  const out = collector();
  const invalid: string[] = [];
  const stream = ndJsonStream(out.writable, input(chunks), {
    ...options,
    onInvalid: (reason) => invalid.push(reason),
  });
  const messages: AnyMessage[] = [];
  for await (const message of stream.readable) messages.push(message);
  await stream.drained();
  return { messages, output: out.lines(), invalid };
}

function request(id: number | string, method = "ping", params: unknown = {}): AnyMessage {
  return { jsonrpc: "2.0", id, method, params } as AnyMessage;
}

function notification(text: string): AnyMessage {
  return { jsonrpc: "2.0", method: "session/update", params: { text } } as AnyMessage;
}

function idOf(message: AnyMessage | undefined): unknown {
  return (message as { id?: unknown } | undefined)?.id;
}

function line(message: unknown): string {
  return JSON.stringify(message) + "\n";
}

function errorLine(id: number | string | null, code: number, message: string): unknown {
  return { jsonrpc: "2.0", id, error: { code, message } };
}

const INVALID_REQUEST =
  'Invalid request: expected a JSON-RPC 2.0 object with "jsonrpc": "2.0" and a method or an id';

Deno.test("ndJsonStream() delivers one message per line, several per chunk", async () => {
  const { messages, output } = await run([line(request(1)) + line(request(2)) + line(request(3))]);
  assert.deepEqual(messages, [request(1), request(2), request(3)]);
  assert.deepEqual(output, []);
});

Deno.test("ndJsonStream() reassembles messages split across chunks", async () => {
  const text = line(request(1, "a", { x: "y".repeat(40) })) + line(request(2, "b"));
  for (const size of [1, 2, 3, 7, 16]) {
    const { messages, output } = await run(byteChunks(text, size));
    assert.deepEqual(
      messages,
      [request(1, "a", { x: "y".repeat(40) }), request(2, "b")],
      `chunk size ${size}`,
    );
    assert.deepEqual(output, []);
  }
});

Deno.test("ndJsonStream() accepts the other message shapes", async () => {
  const notification = { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "s" } };
  const result = { jsonrpc: "2.0", id: 7, result: { ok: true } };
  const error = { jsonrpc: "2.0", id: "x", error: { code: -1, message: "no" } };
  const { messages, output } = await run([line(notification), line(result), line(error)]);
  assert.deepEqual(messages, [notification, result, error]);
  assert.deepEqual(output, []);
});

Deno.test("ndJsonStream() decodes multi-byte UTF-8 split across chunk boundaries", async () => {
  const params = { text: "héllo wörld 🌍 日本語 ✓" };
  const text = line(request(1, "say", params));
  for (const size of [1, 2, 3, 5]) {
    const { messages, output } = await run(byteChunks(text, size));
    assert.deepEqual(messages, [request(1, "say", params)], `chunk size ${size}`);
    assert.deepEqual(output, []);
  }
});

Deno.test("ndJsonStream() tolerates CRLF line endings", async () => {
  const text = JSON.stringify(request(1)) + "\r\n" + JSON.stringify(request(2)) + "\r\n";
  const { messages, output } = await run(byteChunks(text, 5));
  assert.deepEqual(messages, [request(1), request(2)]);
  assert.deepEqual(output, []);
});

Deno.test("ndJsonStream() skips blank and whitespace-only lines without answering", async () => {
  const { messages, output, invalid } = await run([
    "\n\n",
    "   \n\t\n\r\n",
    line(request(1)),
    "\n",
  ]);
  assert.deepEqual(messages, [request(1)]);
  assert.deepEqual(output, []);
  assert.deepEqual(invalid, []);
});

Deno.test("ndJsonStream() delivers a final line that has no trailing newline", async () => {
  const { messages } = await run([line(request(1)), JSON.stringify(request(2))]);
  assert.deepEqual(messages, [request(1), request(2)]);
  const split = await run(byteChunks(JSON.stringify(request(3)), 4));
  assert.deepEqual(split.messages, [request(3)]);
});

Deno.test("ndJsonStream() answers invalid JSON with -32700 and id null, then continues", async () => {
  const { messages, output, invalid } = await run([
    '{"jsonrpc":"2.0","id":1,"method":\n',
    line(request(2)),
    "not json at all\n",
    line(request(3)),
  ]);
  assert.deepEqual(messages, [request(2), request(3)]);
  const parseError = errorLine(null, -32700, "Parse error: the line is not valid JSON");
  assert.deepEqual(output, [parseError, parseError]);
  assert.equal(invalid.length, 2);
});

Deno.test("ndJsonStream() answers a JSON array with -32600 saying batches are unsupported", async () => {
  const { messages, output } = await run([
    line([request(1), request(2)]),
    line(request(3)),
  ]);
  assert.deepEqual(messages, [request(3)]);
  assert.deepEqual(output, [
    errorLine(null, -32600, "Invalid request: JSON-RPC batches are not supported"),
  ]);
  assert.match(JSON.stringify(output), /batches/);
});

Deno.test("ndJsonStream() answers non-JSON-RPC values with -32600 and their id", async () => {
  const { messages, output } = await run([
    line({ id: 5, method: "no-version" }),
    line({ jsonrpc: "1.0", id: "v1", method: "old" }),
    line({ jsonrpc: "2.0", id: 6, method: 42 }),
    // Not shaped like an answer (no result, no error, no "jsonrpc": "2.0"): answered.
    line({ hello: "world", id: 7 }),
    line({ hello: "world" }),
    "42\n",
    '"text"\n',
    "null\n",
    line(request(9)),
  ]);
  assert.deepEqual(messages, [request(9)]);
  assert.deepEqual(output, [
    errorLine(5, -32600, INVALID_REQUEST),
    errorLine("v1", -32600, INVALID_REQUEST),
    errorLine(6, -32600, INVALID_REQUEST),
    errorLine(7, -32600, INVALID_REQUEST),
    errorLine(null, -32600, INVALID_REQUEST),
    errorLine(null, -32600, INVALID_REQUEST),
    errorLine(null, -32600, INVALID_REQUEST),
    errorLine(null, -32600, INVALID_REQUEST),
  ]);
});

const INVALID_ANSWER =
  'Invalid answer: expected a JSON-RPC 2.0 object with "jsonrpc": "2.0", an id and either a result or an error';

Deno.test("ndJsonStream() turns a malformed answer into an error answer for its id, unanswered", async () => {
  const { messages, output, invalid } = await run([
    line({ jsonrpc: "2.0", id: 8 }),
    line({ id: 0, result: { outcome: { outcome: "selected", optionId: "allow_once" } } }),
    line({ jsonrpc: "1.0", id: "s", result: {} }),
    line(request(9)),
  ]);
  assert.deepEqual(messages, [
    errorLine(8, -32600, INVALID_ANSWER),
    errorLine(0, -32600, INVALID_ANSWER),
    errorLine("s", -32600, INVALID_ANSWER),
    request(9),
  ]);
  // Nothing answers an answer.
  assert.deepEqual(output, []);
  assert.equal(invalid.length, 3);
});

Deno.test("ndJsonStream() fails the request an unparseable answer names, and answers -32700", async () => {
  const { messages, output } = await run([
    '{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}\n',
    '{"jsonrpc":"2.0","id":"q","result":\n',
    // A request cut short, an id inside a value, an unsafe id: not taken for an answer.
    '{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{\n',
    '{"jsonrpc":"2.0","result":{"id":4},\n',
    '{"jsonrpc":"2.0","id":1e400,"result":\n',
    line(request(9)),
  ]);
  assert.deepEqual(messages, [
    errorLine(0, -32700, "Parse error: the answer is not valid JSON"),
    errorLine("q", -32700, "Parse error: the answer is not valid JSON"),
    request(9),
  ]);
  assert.deepEqual(
    output,
    Array(5).fill(errorLine(null, -32700, "Parse error: the line is not valid JSON")),
  );
});

Deno.test("ndJsonStream() answers an oversized line with -32600 and the sniffed id, then continues", async () => {
  const big = line(request(42, "big", { pad: "a".repeat(200) }));
  const { messages, output, invalid } = await run([big, line(request(43))], {
    maxMessageBytes: 64,
  });
  assert.deepEqual(messages, [request(43)]);
  assert.deepEqual(output, [
    errorLine(42, -32600, "Invalid request: message exceeds 64 bytes"),
  ]);
  assert.deepEqual(invalid, ["Invalid request: message exceeds 64 bytes"]);
});

Deno.test("ndJsonStream() sniffs a string id from an oversized line split across chunks", async () => {
  const big = line(request('req-"7"', "big", { pad: "é".repeat(300) }));
  const { messages, output } = await run(
    [...byteChunks(big, 10), line(request(1))],
    { maxMessageBytes: 100 },
  );
  assert.deepEqual(messages, [request(1)]);
  assert.deepEqual(output, [
    errorLine('req-"7"', -32600, "Invalid request: message exceeds 100 bytes"),
  ]);
});

Deno.test("ndJsonStream() answers an oversized line with id null when no id is in its start", async () => {
  const noId = line({ jsonrpc: "2.0", method: "note", params: { pad: "b".repeat(500) } });
  const lateId = '{"jsonrpc":"2.0","method":"x","params":{"pad":"' + "c".repeat(400) +
    '"},"id":9}\n';
  const { messages, output } = await run([noId, lateId, line(request(2))], {
    maxMessageBytes: 64,
  });
  assert.deepEqual(messages, [request(2)]);
  assert.deepEqual(output, [
    errorLine(null, -32600, "Invalid request: message exceeds 64 bytes"),
    errorLine(null, -32600, "Invalid request: message exceeds 64 bytes"),
  ]);
});

Deno.test("ndJsonStream() answers an oversized final line without a newline", async () => {
  const { messages, output } = await run(
    [line(request(1)), JSON.stringify(request(3, "big", { pad: "d".repeat(100) }))],
    { maxMessageBytes: 60 },
  );
  assert.deepEqual(messages, [request(1)]);
  assert.deepEqual(output, [errorLine(3, -32600, "Invalid request: message exceeds 60 bytes")]);
});

Deno.test("ndJsonStream() delivers a line of exactly maxMessageBytes bytes", async () => {
  const base = JSON.stringify(request(1, "m", { pad: "" }));
  const exact = JSON.stringify(request(1, "m", { pad: "e".repeat(80 - base.length) }));
  assert.equal(encoder.encode(exact).length, 80);
  const { messages, output } = await run(byteChunks(exact + "\n", 7), { maxMessageBytes: 80 });
  assert.equal(messages.length, 1);
  assert.deepEqual(output, []);
  const over = await run([exact.replace('"e', '"ee') + "\n"], { maxMessageBytes: 80 });
  assert.deepEqual(over.messages, []);
  assert.deepEqual(over.output, [
    errorLine(1, -32600, "Invalid request: message exceeds 80 bytes"),
  ]);
});

Deno.test("ndJsonStream() does not count a CRLF terminator against maxMessageBytes", async () => {
  const exact = JSON.stringify(request(1, "m"));
  const maxMessageBytes = encoder.encode(exact).length;
  const { messages, output } = await run([exact + "\r\n"], { maxMessageBytes });
  assert.deepEqual(output, [], "a message of exactly maxMessageBytes was rejected");
  assert.deepEqual(messages, [request(1, "m")]);
});

Deno.test("ndJsonStream() defaults maxMessageBytes to 32 MiB", () => {
  assert.equal(DEFAULT_MAX_MESSAGE_BYTES, 32 * 1024 * 1024);
});

Deno.test("ndJsonStream() reads input only when a message is asked for", async () => {
  let ended = 0;
  const out = collector();
  const stream = ndJsonStream(out.writable, input([line(request(1)) + line(request(2))]), {
    onInputEnd: () => {
      ended++;
      return Promise.resolve();
    },
  });
  const reader = stream.readable.getReader();
  assert.deepEqual(await reader.read(), { done: false, value: request(1) });
  assert.deepEqual(await reader.read(), { done: false, value: request(2) });
  assert.equal(ended, 0, "onInputEnd ran before every message was read");
  assert.deepEqual(await reader.read(), { done: true, value: undefined });
  assert.equal(ended, 1);
  reader.releaseLock();
});

Deno.test("ndJsonStream() messages reads what readable would, without the stream", async () => {
  for (
    const chunks of [
      [line(request(1)) + "not json\n" + line(request(2))],
      // The last message has no newline: it is delivered when the input ends.
      [line(request(1)), JSON.stringify(request(2))],
    ]
  ) {
    let ended = 0;
    const out = collector();
    const stream = ndJsonStream(out.writable, input(chunks), {
      onInputEnd: () => {
        ended++;
        return Promise.resolve();
      },
    });
    assert.deepEqual(await stream.messages.read(), request(1));
    assert.deepEqual(await stream.messages.read(), request(2));
    assert.equal(ended, 0, "onInputEnd ran before every message was read");
    assert.equal(await stream.messages.read(), undefined);
    assert.equal(await stream.messages.read(), undefined);
    assert.equal(ended, 1, "onInputEnd runs once");
    await stream.messages.cancel("done");
    await stream.drained();
    const invalid = chunks.length === 1
      ? [errorLine(null, -32700, "Parse error: the line is not valid JSON")]
      : [];
    assert.deepEqual(out.lines(), invalid);
  }
});

Deno.test("ndJsonStream() messages.cancel() cancels the input", async () => {
  let cancelled: unknown;
  const stream = ndJsonStream(
    collector().writable,
    new ReadableStream<Uint8Array>({
      cancel(reason) {
        cancelled = reason;
      },
    }),
  );
  await stream.messages.cancel("closed");
  assert.equal(cancelled, "closed");
});

Deno.test("ndJsonStream() writeMessage() keeps its place among the writable's writes", async () => {
  const out = collector();
  const stream = ndJsonStream(out.writable, input([]));
  const writer = stream.writable.getWriter();
  const sent = [1, 2, 3, 4, 5].map((n) => notification(String(n)));
  await writer.write(sent[0]!);
  assert.equal(stream.writeMessage(sent[1]!), undefined, "no push back for a small message");
  await writer.write(sent[2]!);
  stream.writeMessage(sent[3]!);
  stream.writeMessage(sent[4]!);
  await stream.drained();
  assert.deepEqual(out.lines(), sent);
  await writer.close();
});

Deno.test("ndJsonStream() awaits onInputEnd before closing the readable", async () => {
  const log: string[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  let reachedEnd!: () => void;
  const endStarted = new Promise<void>((resolve) => reachedEnd = resolve);
  const out = collector();
  const stream = ndJsonStream(out.writable, input([line(request(1)), line(request(2))]), {
    onInputEnd: async () => {
      log.push("end");
      reachedEnd();
      await released;
      log.push("end done");
    },
  });
  const writer = stream.writable.getWriter();
  const reader = stream.readable.getReader();
  log.push(`read ${JSON.stringify(idOf((await reader.read()).value))}`);
  log.push(`read ${JSON.stringify(idOf((await reader.read()).value))}`);
  const last = reader.read().then((result) => {
    log.push(`done ${result.done}`);
  });
  // The pull reached onInputEnd; the read must still be pending.
  await endStarted;
  await settle();
  assert.deepEqual(log, ["read 1", "read 2", "end"]);
  // Answers written while onInputEnd runs still reach the output.
  await writer.write({ jsonrpc: "2.0", id: 2, result: {} } as AnyMessage);
  release();
  await last;
  assert.deepEqual(log, ["read 1", "read 2", "end", "end done", "done true"]);
  await writer.close();
  assert.deepEqual(out.lines(), [{ jsonrpc: "2.0", id: 2, result: {} }]);
  assert.equal(out.closed, true);
});

Deno.test("ndJsonStream() writes one compact JSON text per line, in order", async () => {
  const out = collector();
  const stream = ndJsonStream(out.writable, input([]));
  const writer = stream.writable.getWriter();
  const sent: unknown[] = [
    { jsonrpc: "2.0", id: 1, result: { text: "multi\nline ünïcode 🌍" } },
    { jsonrpc: "2.0", method: "session/update", params: { n: 2 } },
    { jsonrpc: "2.0", id: "3", error: { code: -32601, message: "nope" } },
  ];
  for (const message of sent) await writer.write(message as AnyMessage);
  await writer.close();
  assert.equal(out.text(), sent.map((message) => JSON.stringify(message) + "\n").join(""));
  assert.deepEqual(out.lines(), sent);
  assert.equal(out.closed, true);
  for await (const _ of stream.readable) assert.fail("no input expected");
});

/** An output whose writes complete only when the test releases them, one at a time. */
function gatedOutput(): {
  writable: WritableStream<Uint8Array>;
  written: string[];
  /** Resolves with the release of the next write the output receives (in order). */
  nextWrite(): Promise<() => void>;
} {
  const written: string[] = [];
  const arrived: Array<() => void> = [];
  const waiting: Array<(release: () => void) => void> = [];
  const decoder = new TextDecoder();
  const writable = new WritableStream<Uint8Array>({
    write(chunk) {
      return new Promise<void>((resolve) => {
        const release = (): void => {
          written.push(decoder.decode(chunk));
          resolve();
        };
        const waiter = waiting.shift();
        if (waiter) waiter(release);
        else arrived.push(release);
      });
    },
  });
  const nextWrite = (): Promise<() => void> => {
    const release = arrived.shift();
    if (release) return Promise.resolve(release);
    return new Promise((resolve) => waiting.push(resolve));
  };
  return { writable, written, nextWrite };
}

/** Releases gated writes, each as it reaches the output, until `done()` says all are written. */
async function releaseAll(
  output: ReturnType<typeof gatedOutput>,
  done: () => boolean,
): Promise<void> {
  while (!done()) (await output.nextWrite())();
}

Deno.test("ndJsonStream() drained() waits for an accepted write to reach the output", async () => {
  const output = gatedOutput();
  const stream = ndJsonStream(output.writable, input([]));
  const writer = stream.writable.getWriter();
  await writer.write(request(1));
  let writtenWhenDrained: string | undefined;
  const done = stream.drained().then(() => writtenWhenDrained = output.written.join(""));
  const release = await output.nextWrite();
  await settle();
  assert.equal(writtenWhenDrained, undefined, "drained() resolved before the output took it");
  release();
  await releaseAll(output, () => output.written.length > 0);
  await done;
  assert.equal(writtenWhenDrained, line(request(1)));
  await writer.close();
  for await (const _ of stream.readable) assert.fail("no input expected");
});

Deno.test("ndJsonStream() drained() waits for every write made so far, even queued ones", async () => {
  const output = gatedOutput();
  const stream = ndJsonStream(output.writable, input([]));
  const writer = stream.writable.getWriter();
  const expected = line(request(1)) + line(request(2));
  void writer.write(request(1));
  void writer.write(request(2));
  let writtenWhenDrained: string | undefined;
  const done = stream.drained().then(() => writtenWhenDrained = output.written.join(""));
  await releaseAll(output, () => output.written.join("") === expected);
  await done;
  assert.equal(
    writtenWhenDrained,
    expected,
    "drained() resolved before the second message reached the output",
  );
  await writer.close();
  for await (const _ of stream.readable) assert.fail("no input expected");
});

Deno.test("ndJsonStream() orders error answers with other writes", async () => {
  const out = collector();
  const stream = ndJsonStream(out.writable, input(["garbage\n", line(request(1))]));
  const writer = stream.writable.getWriter();
  const reader = stream.readable.getReader();
  const first = await reader.read();
  assert.deepEqual(first.value, request(1));
  await writer.write({ jsonrpc: "2.0", id: 1, result: null } as AnyMessage);
  await stream.drained();
  assert.deepEqual(out.lines(), [
    errorLine(null, -32700, "Parse error: the line is not valid JSON"),
    { jsonrpc: "2.0", id: 1, result: null },
  ]);
  assert.equal((await reader.read()).done, true);
  await writer.close();
});

Deno.test("ndJsonStream() echoes request ids a number cannot hold exactly as they were written", async () => {
  const big = "123456789012345678901234567890";
  const out = collector();
  const stream = ndJsonStream(
    out.writable,
    input([
      `{"jsonrpc":"2.0","id":${big},"method":"a","params":{"id":1}}\n`,
      `{"jsonrpc":"2.0","params":{"nested":{"id":5}},"id":  1.5,"method":"b"}\n`,
      `{"jsonrpc":"2.0","id":9007199254740993,"method":"c"}\n`,
      `{"jsonrpc":"2.0","id":7,"method":"d"}\n`,
    ]),
  );
  const reader = stream.readable.getReader();
  const writer = stream.writable.getWriter();
  const ids: unknown[] = [];
  for (let index = 0; index < 4; index++) {
    const { value } = await reader.read();
    const id = (value as { id: string | number }).id;
    ids.push(id);
    await writer.write({ jsonrpc: "2.0", id, result: { id } } as AnyMessage);
  }
  assert.equal(ids[3], 7);
  await writer.close();
  const lines = out.text().trim().split("\n");
  assert.equal(lines[0]?.startsWith(`{"jsonrpc":"2.0","id":${big},`), true, lines[0]);
  assert.equal(lines[1]?.startsWith(`{"jsonrpc":"2.0","id":1.5,`), true, lines[1]);
  assert.equal(lines[2]?.startsWith(`{"jsonrpc":"2.0","id":9007199254740993,`), true, lines[2]);
  assert.equal(lines[3], `{"jsonrpc":"2.0","id":7,"result":{"id":7}}`);
});

Deno.test("ndJsonStream() echoes the exact id of an oversized request", async () => {
  const big = "123456789012345678901234567890";
  const out = collector();
  const stream = ndJsonStream(
    out.writable,
    input([`{"jsonrpc":"2.0","id":${big},"method":"a","params":"${"x".repeat(200)}"}\n`]),
    { maxMessageBytes: 100 },
  );
  const reader = stream.readable.getReader();
  assert.equal((await reader.read()).done, true);
  await stream.drained();
  assert.match(out.text(), new RegExp(`^\\{"jsonrpc":"2.0","id":${big},"error":\\{"code":-32600`));
});

Deno.test("ndJsonStream() with a defer writes a message at once and those sent meanwhile in one write after it", async () => {
  const out = collector();
  const tasks: Array<() => void> = [];
  const stream = ndJsonStream(out.writable, input([]), { defer: (task) => tasks.push(task) });
  const writer = stream.writable.getWriter();
  const sent = [request(1), request(2), request(3)];
  for (const message of sent) void writer.write(message);
  await stream.drained();
  assert.equal(tasks.length, 0, "nothing waits for the defer");
  assert.equal(out.chunks.length, 2, "the first message (a streamed delta), then the other two");
  assert.deepEqual(out.lines(), sent);
  await writer.close();
  for await (const _ of stream.readable) assert.fail("no input expected");
});

Deno.test("ndJsonStream() with a defer holds what the task that delivered a message sends until its answer", async () => {
  const out = collector();
  const tasks: Array<() => void> = [];
  const stream = ndJsonStream(out.writable, input([line(request(1))]), {
    defer: (task) => tasks.push(task),
  });
  const reader = stream.readable.getReader();
  const writer = stream.writable.getWriter();
  assert.deepEqual((await reader.read()).value, request(1));
  // A prompt's updates: held.
  const updates = [notification("a"), notification("b")];
  for (const message of updates) void writer.write(message);
  await settle();
  assert.equal(out.chunks.length, 0, "nothing is written before the answer or the task");
  assert.equal(tasks.length, 1, "one write scheduled");
  // Its answer: written at once, with them, without waiting for the task.
  const answer = { jsonrpc: "2.0", id: 1, result: null } as AnyMessage;
  void writer.write(answer);
  await settle();
  assert.equal(out.chunks.length, 1, "one write for the answer and its updates");
  assert.deepEqual(out.lines(), [...updates, answer]);
  // What the task sends after the answer waits for the task.
  const after = notification("after the answer");
  void writer.write(after);
  await settle();
  assert.equal(out.chunks.length, 1);
  tasks[0]?.();
  await stream.drained();
  assert.equal(out.chunks.length, 2);
  assert.deepEqual(out.lines(), [...updates, answer, after]);
  assert.equal((await reader.read()).done, true);
  await writer.close();
});

Deno.test("ndJsonStream() with a defer holds a followed answer for the task's one write", async () => {
  const out = collector();
  const tasks: Array<() => void> = [];
  const stream = ndJsonStream(out.writable, input([line(request(1))]), {
    defer: (task) => tasks.push(task),
  });
  assert.deepEqual(await stream.messages.read(), request(1));
  // A session/new answer, then the session's commands.
  const answer = { jsonrpc: "2.0", id: 1, result: { sessionId: "s" } } as AnyMessage;
  assert.equal(stream.writeMessage(answer, { followed: true }), undefined);
  const commands = notification("commands");
  stream.writeMessage(commands);
  await settle();
  assert.equal(out.chunks.length, 0, "the answer waits for what follows it");
  tasks[0]?.();
  await stream.drained();
  assert.equal(out.chunks.length, 1, "one write");
  assert.deepEqual(out.lines(), [answer, commands]);
});

Deno.test("ndJsonStream() writeFrames() writes framed bytes in order with the messages around them", async () => {
  const out = collector();
  const stream = ndJsonStream(out.writable, input([]));
  const writer = stream.writable.getWriter();
  // A burst: messages past the first few wait for the deferred flush; frames must not pass them.
  // (Like writeMany's, they may pass messages still queued in the writable.)
  const before = Array.from({ length: 12 }, (_, index) => request(index));
  const sent = stream.writeMany(before);
  const frames = [request(100), request(101)];
  const framed = stream.writeFrames(encoder.encode(frames.map(line).join("")));
  const more = stream.writeFrames(encoder.encode(line(request(102))));
  void stream.writeMany([request(103)]);
  await writer.write(request(104));
  await Promise.all([sent, framed, more]);
  await stream.drained();
  assert.deepEqual(out.lines(), [...before, ...frames, request(102), request(103), request(104)]);
  await writer.close();
  for await (const _ of stream.readable) assert.fail("no input expected");
});

/** An output whose writes wait until `release()`: a client that does not read. */
function stuckOutput(): { writable: WritableStream<Uint8Array>; bytes(): number; release(): void } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  let bytes = 0;
  return {
    writable: new WritableStream<Uint8Array>({
      async write(chunk) {
        await released;
        bytes += chunk.byteLength;
      },
    }),
    bytes: () => bytes,
    release,
  };
}

Deno.test("ndJsonStream() makes the writer wait once a megabyte of answers is not read", async () => {
  const output = stuckOutput();
  const stream = ndJsonStream(output.writable, input([]), { defer: (flush) => setTimeout(flush) });
  const result = { items: "x".repeat(1_000) };
  let waited: Promise<void> | undefined;
  let sent = 0;
  // Each answer goes out in a write of its own: none of them is written.
  while (waited === undefined && sent < 5_000) {
    waited = stream.writeMessage({ jsonrpc: "2.0", id: sent++, result } as AnyMessage);
  }
  assert.ok(waited, "the writer was never asked to wait");
  // About 1,050 bytes each.
  assert.ok(sent > 900 && sent < 1_100, `asked to wait after ${sent} answers`);
  output.release();
  await waited;
  await stream.drained();
});

Deno.test("ndJsonStream() reads no more input while its error answers are not read", async () => {
  const output = stuckOutput();
  let pulls = 0;
  // Endless garbage: every line is answered -32700.
  const garbage = encoder.encode("not json\n".repeat(1_000));
  const endless = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulls++;
      controller.enqueue(garbage);
    },
  }, { highWaterMark: 0 });
  const stream = ndJsonStream(output.writable, endless, {
    defer: (flush) => setTimeout(flush),
    onInvalid: () => {},
  });
  void stream.messages.read();
  // About 100 bytes of answer per line: a megabyte after 11 chunks.
  await pollUntil(() => pulls >= 5, { what: "the input read" });
  for (let turn = 0; turn < 50; turn++) await settle();
  assert.ok(pulls < 20, `read ${pulls} chunks with nothing written`);
  await stream.messages.cancel();
  output.release();
});
