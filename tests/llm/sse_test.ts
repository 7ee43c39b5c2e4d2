import assert from "node:assert/strict";
import { SseDecoder, type SseEvent } from "../../src/llm/sse.ts";

/** Feeds text chunks, as they would arrive from a text decoder, to one decoder. */
function parse(chunks: readonly string[]): SseEvent[] {
  const decoder = new SseDecoder();
  return chunks.flatMap((chunk) => decoder.decode(chunk));
}

/** Every way of splitting `text` into two chunks gives `expected`. */
function assertAllSplits(text: string, expected: readonly SseEvent[]): void {
  for (let at = 0; at <= text.length; at++) {
    assert.deepEqual(
      parse([text.slice(0, at), text.slice(at)]),
      expected,
      `split at ${at}: ${JSON.stringify([text.slice(0, at), text.slice(at)])}`,
    );
  }
}

Deno.test("SseDecoder parses data-only events (OpenAI style)", () => {
  const events = parse(['data: {"a":1}\n\n', "data: [DONE]\n\n"]);
  assert.deepEqual(events, [
    { event: "message", data: '{"a":1}' },
    { event: "message", data: "[DONE]" },
  ]);
});

Deno.test("SseDecoder reads event names (Anthropic style)", () => {
  const events = parse([
    'event: message_start\ndata: {"type":"message_start"}\n\n',
    'event: ping\ndata: {"type": "ping"}\n\n',
  ]);
  assert.deepEqual(events, [
    { event: "message_start", data: '{"type":"message_start"}' },
    { event: "ping", data: '{"type": "ping"}' },
  ]);
});

Deno.test("SseDecoder joins multi-line data with \\n", () => {
  assert.deepEqual(parse(["data: a\ndata: b\ndata:\ndata: c\n\n"]), [
    { event: "message", data: "a\nb\n\nc" },
  ]);
});

Deno.test("SseDecoder accepts CRLF, CR and LF line endings, mixed", () => {
  const expected = [{ event: "e", data: "1\n2" }, { event: "message", data: "3" }];
  assert.deepEqual(parse(["event: e\r\ndata: 1\rdata: 2\n\r\ndata: 3\r\r"]), expected);
});

Deno.test("SseDecoder handles every chunk boundary, CRLF split included", () => {
  assertAllSplits("event: e\r\ndata: x\r\n\r\ndata: y\r\n\r\n", [
    { event: "e", data: "x" },
    { event: "message", data: "y" },
  ]);
  assertAllSplits("data: a\r\rdata: b\n\n", [
    { event: "message", data: "a" },
    { event: "message", data: "b" },
  ]);
});

Deno.test("SseDecoder skips comment lines such as keep-alives", () => {
  const events = parse([
    ": OPENROUTER PROCESSING\n\n",
    ":keep-alive\r\n\r\n",
    "data: 1\n: inside an event\ndata: 2\n\n",
  ]);
  assert.deepEqual(events, [{ event: "message", data: "1\n2" }]);
});

Deno.test("SseDecoder dispatches nothing for an event without data", () => {
  assert.deepEqual(parse(["\n\n\nevent: lonely\n\nretry: 10\n\ndata: x\n\n"]), [
    { event: "message", data: "x" },
  ]);
});

Deno.test("SseDecoder strips one space after the colon only", () => {
  assert.deepEqual(parse(["data:x\n\ndata:  y\n\ndata\n\n"]), [
    { event: "message", data: "x" },
    { event: "message", data: " y" },
    { event: "message", data: "" },
  ]);
});

Deno.test("SseDecoder keeps the last id for later events and ignores ids with NUL", () => {
  assert.deepEqual(parse(["id: 1\ndata: a\n\ndata: b\n\nid: 2\0\ndata: c\n\n"]), [
    { event: "message", data: "a", id: "1" },
    { event: "message", data: "b", id: "1" },
    { event: "message", data: "c", id: "1" },
  ]);
});

Deno.test("SseDecoder resets the event name after each dispatch", () => {
  assert.deepEqual(parse(["event: a\ndata: 1\n\ndata: 2\n\n"]), [
    { event: "a", data: "1" },
    { event: "message", data: "2" },
  ]);
});

Deno.test("SseDecoder ignores unknown fields", () => {
  assert.deepEqual(parse(["foo: bar\nretry: 100\ndata: x\n\n"]), [
    { event: "message", data: "x" },
  ]);
});

Deno.test("SseDecoder never dispatches an event the stream leaves incomplete", () => {
  assert.deepEqual(parse(["data: complete\n\ndata: cut"]), [
    { event: "message", data: "complete" },
  ]);
  assert.deepEqual(parse(["data: complete\n\ndata: no blank line\n"]), [
    { event: "message", data: "complete" },
  ]);
});

Deno.test("SseDecoder stays linear on long bodies of LF-only lines", () => {
  const line = `data: ${"x".repeat(100)}\n\n`;
  const events = parse([line.repeat(20_000)]);
  assert.equal(events.length, 20_000);
});

Deno.test("SseDecoder.feed() calls back per event and stops when the listener returns false", () => {
  const seen: string[] = [];
  const decoder = new SseDecoder();
  const text = "id: 7\ndata: 1\n\nevent: e\ndata: 2\n\ndata: 3\n\n";
  const finished = decoder.feed(text, (data, event, id) => {
    seen.push(`${event}:${data}:${id}`);
    return data !== "2";
  });
  assert.equal(finished, false);
  assert.deepEqual(seen, ["message:1:7", "e:2:7"]);
  assert.equal(new SseDecoder().feed("data: x\n\n", () => {}), true);
});
