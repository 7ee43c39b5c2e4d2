import assert from "node:assert/strict";
import { type SseEvent, sseEvents, SseParserStream } from "../../src/llm/sse.ts";

/** Parses text chunks as they would arrive from a decoder. */
function parse(chunks: readonly string[]): Promise<SseEvent[]> {
  return Array.fromAsync(ReadableStream.from(chunks).pipeThrough(new SseParserStream()));
}

/** Parses byte chunks through the full decoder. */
function parseBytes(chunks: readonly Uint8Array[]): Promise<SseEvent[]> {
  return Array.fromAsync(sseEvents(ReadableStream.from(chunks)));
}

/** Every way of splitting `text` into two chunks gives `expected`. */
async function assertAllSplits(text: string, expected: readonly SseEvent[]): Promise<void> {
  for (let at = 0; at <= text.length; at++) {
    assert.deepEqual(
      await parse([text.slice(0, at), text.slice(at)]),
      expected,
      `split at ${at}: ${JSON.stringify([text.slice(0, at), text.slice(at)])}`,
    );
  }
}

Deno.test("SseParserStream parses data-only events (OpenAI style)", async () => {
  const events = await parse(['data: {"a":1}\n\n', "data: [DONE]\n\n"]);
  assert.deepEqual(events, [
    { event: "message", data: '{"a":1}' },
    { event: "message", data: "[DONE]" },
  ]);
});

Deno.test("SseParserStream reads event names (Anthropic style)", async () => {
  const events = await parse([
    'event: message_start\ndata: {"type":"message_start"}\n\n',
    'event: ping\ndata: {"type": "ping"}\n\n',
  ]);
  assert.deepEqual(events, [
    { event: "message_start", data: '{"type":"message_start"}' },
    { event: "ping", data: '{"type": "ping"}' },
  ]);
});

Deno.test("SseParserStream joins multi-line data with \\n", async () => {
  assert.deepEqual(await parse(["data: a\ndata: b\ndata:\ndata: c\n\n"]), [
    { event: "message", data: "a\nb\n\nc" },
  ]);
});

Deno.test("SseParserStream accepts CRLF, CR and LF line endings, mixed", async () => {
  const expected = [{ event: "e", data: "1\n2" }, { event: "message", data: "3" }];
  assert.deepEqual(await parse(["event: e\r\ndata: 1\rdata: 2\n\r\ndata: 3\r\r"]), expected);
});

Deno.test("SseParserStream handles every chunk boundary, CRLF split included", async () => {
  await assertAllSplits("event: e\r\ndata: x\r\n\r\ndata: y\r\n\r\n", [
    { event: "e", data: "x" },
    { event: "message", data: "y" },
  ]);
  await assertAllSplits("data: a\r\rdata: b\n\n", [
    { event: "message", data: "a" },
    { event: "message", data: "b" },
  ]);
});

Deno.test("SseParserStream skips comment lines such as keep-alives", async () => {
  const events = await parse([
    ": OPENROUTER PROCESSING\n\n",
    ":keep-alive\r\n\r\n",
    "data: 1\n: inside an event\ndata: 2\n\n",
  ]);
  assert.deepEqual(events, [{ event: "message", data: "1\n2" }]);
});

Deno.test("SseParserStream dispatches nothing for an event without data", async () => {
  assert.deepEqual(await parse(["\n\n\nevent: lonely\n\nretry: 10\n\ndata: x\n\n"]), [
    { event: "message", data: "x" },
  ]);
});

Deno.test("SseParserStream strips one space after the colon only", async () => {
  assert.deepEqual(await parse(["data:x\n\ndata:  y\n\ndata\n\n"]), [
    { event: "message", data: "x" },
    { event: "message", data: " y" },
    { event: "message", data: "" },
  ]);
});

Deno.test("SseParserStream keeps the last id for later events and ignores ids with NUL", async () => {
  assert.deepEqual(await parse(["id: 1\ndata: a\n\ndata: b\n\nid: 2\0\ndata: c\n\n"]), [
    { event: "message", data: "a", id: "1" },
    { event: "message", data: "b", id: "1" },
    { event: "message", data: "c", id: "1" },
  ]);
});

Deno.test("SseParserStream resets the event name after each dispatch", async () => {
  assert.deepEqual(await parse(["event: a\ndata: 1\n\ndata: 2\n\n"]), [
    { event: "a", data: "1" },
    { event: "message", data: "2" },
  ]);
});

Deno.test("SseParserStream ignores unknown fields", async () => {
  assert.deepEqual(await parse(["foo: bar\nretry: 100\ndata: x\n\n"]), [
    { event: "message", data: "x" },
  ]);
});

Deno.test("SseParserStream discards an incomplete event at the end of the stream", async () => {
  assert.deepEqual(await parse(["data: complete\n\ndata: cut"]), [
    { event: "message", data: "complete" },
  ]);
  assert.deepEqual(await parse(["data: complete\n\ndata: no blank line\n"]), [
    { event: "message", data: "complete" },
  ]);
});

Deno.test("sseEvents() decodes UTF-8 split inside a character and strips a BOM", async () => {
  const bytes = new TextEncoder().encode("\uFEFFdata: héllo 😀\n\n");
  for (let at = 0; at <= bytes.length; at++) {
    assert.deepEqual(await parseBytes([bytes.slice(0, at), bytes.slice(at)]), [
      { event: "message", data: "héllo 😀" },
    ]);
  }
});

Deno.test("sseEvents() parses a body delivered one byte at a time", async () => {
  const text = 'event: content_block_delta\r\ndata: {"text":"ü"}\r\n\r\n: ping\r\n\r\n';
  const bytes = new TextEncoder().encode(text);
  const events = await parseBytes([...bytes].map((byte) => Uint8Array.of(byte)));
  assert.deepEqual(events, [{ event: "content_block_delta", data: '{"text":"ü"}' }]);
});

Deno.test("sseEvents() stays linear on long bodies of LF-only lines", async () => {
  const line = `data: ${"x".repeat(100)}\n\n`;
  const events = await parse([line.repeat(20_000)]);
  assert.equal(events.length, 20_000);
});
