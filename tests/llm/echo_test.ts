import assert from "node:assert/strict";
import { EchoProvider } from "../../src/llm/echo.ts";
import type { LlmEvent, LlmMessage, LlmRequest } from "../../src/llm/provider.ts";

function requestWith(messages: readonly LlmMessage[], system = ""): LlmRequest {
  return { sessionId: "s", model: "echo", system, messages, tools: [] };
}

function user(text: string): LlmMessage {
  return { role: "user", content: [{ type: "text", text }] };
}

async function collect(
  request: LlmRequest,
  signal: AbortSignal = new AbortController().signal,
): Promise<LlmEvent[]> {
  const events: LlmEvent[] = [];
  for await (const event of new EchoProvider().stream(request, { signal })) events.push(event);
  return events;
}

function texts(events: readonly LlmEvent[], type: "text-delta" | "reasoning-delta"): string[] {
  return events.flatMap((event) => event.type === type ? [event.text] : []);
}

Deno.test("EchoProvider.id is echo", () => {
  assert.equal(new EchoProvider().id, "echo");
});

Deno.test("EchoProvider.stream() streams one thought, the echo, usage and stop", async () => {
  const events = await collect(requestWith([user("hi")]));
  assert.deepEqual(events.map((event) => event.type), [
    "reasoning-delta",
    "text-delta",
    "usage",
    "finish",
  ]);
  assert.deepEqual(texts(events, "reasoning-delta"), [
    "The user sent 2 characters; echoing them back.",
  ]);
  assert.deepEqual(texts(events, "text-delta"), ["Echo: hi"]);
  assert.deepEqual(events.at(-1), { type: "finish", reason: "stop" });
});

Deno.test("EchoProvider.stream() splits a long answer into deltas of at most 64 characters", async () => {
  const prompt = "abcdefghij".repeat(20);
  const events = await collect(requestWith([user(prompt)]));
  const deltas = texts(events, "text-delta");
  assert.equal(deltas.join(""), `Echo: ${prompt}`);
  assert.ok(deltas.length > 1);
  assert.deepEqual(deltas.map((delta) => delta.length), [64, 64, 64, 14]);
  assert.equal(texts(events, "reasoning-delta").length, 1);
});

Deno.test("EchoProvider.stream() echoes the last user message", async () => {
  const events = await collect(requestWith([
    user("first"),
    { role: "assistant", text: "Echo: first" },
    { role: "user", content: [{ type: "text", text: "sec" }, { type: "text", text: "ond" }] },
    { role: "assistant", text: "thinking", toolCalls: [{ id: "c", name: "t", arguments: "{}" }] },
    { role: "tool", toolCallId: "c", name: "t", content: "result", isError: false },
  ]));
  assert.equal(texts(events, "text-delta").join(""), "Echo: second");
});

Deno.test("EchoProvider.stream() renders image parts as [image <mime>]", async () => {
  const events = await collect(requestWith([{
    role: "user",
    content: [
      { type: "text", text: "look: " },
      { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
    ],
  }]));
  assert.equal(texts(events, "text-delta").join(""), "Echo: look: [image image/png]");
});

Deno.test("EchoProvider.stream() answers `Echo: ` when there is no user message", async () => {
  const events = await collect(requestWith([]));
  assert.deepEqual(texts(events, "text-delta"), ["Echo: "]);
  assert.deepEqual(events.at(-1), { type: "finish", reason: "stop" });
});

Deno.test("EchoProvider.stream() estimates usage at four characters per token", async () => {
  const events = await collect(requestWith([user("12345678")], "system!!"));
  const usage = events.find((event) => event.type === "usage");
  assert.ok(usage?.type === "usage");
  // input: ceil(8/4) for the system prompt + ceil(8/4) for the message; output: "Echo: 12345678".
  assert.deepEqual(usage.usage, { input: 4, output: Math.ceil(14 / 4) });
});

Deno.test("EchoProvider.stream() estimates usage from the request alone", async () => {
  const provider = new EchoProvider();
  const signal = new AbortController().signal;
  const inputOf = async (messages: readonly LlmMessage[]): Promise<number | undefined> => {
    for await (const event of provider.stream(requestWith(messages), { signal })) {
      if (event.type === "usage") return event.usage.input;
    }
    return undefined;
  };
  const shared = user("hi");
  const long = user("x".repeat(400));
  assert.equal(await inputOf([shared]), 1);
  // The same message object in another (longer) history must not reuse the earlier total.
  assert.equal(await inputOf([long, shared]), 100 + 1);
  assert.equal(await inputOf([shared]), 1);
});

Deno.test("EchoProvider.stream() ends with aborted when the signal is already aborted", async () => {
  const controller = new AbortController();
  controller.abort();
  assert.deepEqual(await collect(requestWith([user("hi")]), controller.signal), [
    { type: "finish", reason: "aborted" },
  ]);
});

Deno.test("EchoProvider.stream() stops the answer with aborted when aborted mid-stream", async () => {
  const controller = new AbortController();
  const events: LlmEvent[] = [];
  const request = requestWith([user("x".repeat(200))]);
  for await (const event of new EchoProvider().stream(request, { signal: controller.signal })) {
    events.push(event);
    if (event.type === "text-delta") controller.abort();
  }
  assert.deepEqual(events.map((event) => event.type), [
    "reasoning-delta",
    "text-delta",
    "finish",
  ]);
  assert.deepEqual(events.at(-1), { type: "finish", reason: "aborted" });
});

Deno.test("EchoProvider.stream() never splits a surrogate pair between deltas", async () => {
  // "Echo: " is 6 characters, so the emoji straddles the 64-character boundary.
  const prompt = "a".repeat(57) + "😀" + "b".repeat(10);
  const deltas = texts(await collect(requestWith([user(prompt)])), "text-delta");
  assert.equal(deltas.join(""), `Echo: ${prompt}`);
  for (const delta of deltas) {
    assert.ok(delta.length <= 64);
    assert.ok(delta.isWellFormed(), `delta ${JSON.stringify(delta)} has a lone surrogate`);
  }
});
