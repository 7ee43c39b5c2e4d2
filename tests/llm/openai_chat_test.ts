import assert from "node:assert/strict";
import { buildOpenAiChatBody, OpenAiChatProvider } from "../../src/llm/openai_chat.ts";
import type { LlmEvent, LlmMessage, LlmRequest, LlmToolCall } from "../../src/llm/provider.ts";
import {
  type FakeLlmServer,
  jsonResponse,
  sse,
  type SseItem,
  startFakeLlmServer,
} from "../_helpers/fake_llm_server.ts";

const KEY = "sk-test-key-0123456789";
const NEVER = new AbortController().signal;
const USER: LlmMessage = { role: "user", content: [{ type: "text", text: "hi" }] };

function provider(server: FakeLlmServer, extra: Partial<{
  maxTokensField: "max_tokens" | "max_completion_tokens";
  headers: Record<string, string>;
}> = {}): OpenAiChatProvider {
  return new OpenAiChatProvider({
    id: "test",
    baseUrl: `${server.url}/v1/`,
    apiKey: KEY,
    ...extra,
  });
}

function request(overrides: Partial<LlmRequest> = {}): LlmRequest {
  return { sessionId: "s", model: "m", system: "sys", messages: [USER], tools: [], ...overrides };
}

async function collect(
  source: OpenAiChatProvider,
  req: LlmRequest = request(),
  signal: AbortSignal = NEVER,
): Promise<LlmEvent[]> {
  const events: LlmEvent[] = [];
  for await (const event of source.stream(req, { signal })) events.push(event);
  return events;
}

/** A chunk with one choice. */
function chunk(delta: Record<string, unknown>, finish: string | null = null): SseItem {
  return {
    data: {
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      created: 1,
      model: "m",
      choices: [{ index: 0, delta, finish_reason: finish }],
      usage: null,
    },
  };
}

/** The usage-only final chunk (`choices: []`). */
function usageChunk(usage: Record<string, unknown>): SseItem {
  return { data: { id: "chatcmpl-1", object: "chat.completion.chunk", choices: [], usage } };
}

const DONE: SseItem = { data: "[DONE]" };

function finishOf(events: readonly LlmEvent[]): Extract<LlmEvent, { type: "finish" }> {
  const last = events.at(-1);
  assert.ok(last?.type === "finish", `ends with finish: ${JSON.stringify(events)}`);
  assert.equal(events.filter((event) => event.type === "finish").length, 1);
  return last;
}

function textOf(events: readonly LlmEvent[], type: "text-delta" | "reasoning-delta"): string {
  return events.map((event) => event.type === type ? event.text : "").join("");
}

function callsOf(events: readonly LlmEvent[]): LlmToolCall[] {
  return events.flatMap((event) => event.type === "tool-call" ? [event.call] : []);
}

function bodyOf(server: FakeLlmServer, index = 0): Record<string, unknown> {
  const body = server.requests[index]?.body;
  assert.ok(typeof body === "object" && body !== null, "request body is JSON");
  return body as Record<string, unknown>;
}

// Request

Deno.test("OpenAiChatProvider posts the streaming body with auth and custom headers", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([chunk({ content: "ok" }, "stop"), DONE]));
  const tools = [{
    name: "read_file",
    description: "Read a file",
    inputSchema: { type: "object", properties: { path: { type: "string" } } },
  }];
  await collect(
    provider(server, { headers: { "x-title": "acp-harness" } }),
    request({ tools, reasoningEffort: "high", maxOutputTokens: 1000 }),
  );
  const captured = server.requests[0];
  assert.equal(captured?.method, "POST");
  assert.equal(captured?.path, "/v1/chat/completions");
  assert.equal(captured?.headers.authorization, `Bearer ${KEY}`);
  assert.equal(captured?.headers["content-type"], "application/json");
  assert.equal(captured?.headers.accept, "text/event-stream");
  assert.equal(captured?.headers["x-title"], "acp-harness");
  assert.deepEqual(captured?.body, {
    model: "m",
    messages: [{ role: "system", content: "sys" }, { role: "user", content: "hi" }],
    stream: true,
    stream_options: { include_usage: true },
    tools: [{
      type: "function",
      function: {
        name: "read_file",
        description: "Read a file",
        parameters: { type: "object", properties: { path: { type: "string" } } },
      },
    }],
    reasoning_effort: "high",
    max_tokens: 1000,
  });
});

Deno.test("OpenAiChatProvider omits optional fields and can use max_completion_tokens", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(
    sse([chunk({ content: "ok" }, "stop"), DONE]),
    sse([chunk({ content: "ok" }, "stop"), DONE]),
  );
  await collect(provider(server), request({ system: "" }));
  assert.deepEqual(bodyOf(server), {
    model: "m",
    messages: [{ role: "user", content: "hi" }],
    stream: true,
    stream_options: { include_usage: true },
  });
  await collect(
    provider(server, { maxTokensField: "max_completion_tokens" }),
    request({ maxOutputTokens: 5 }),
  );
  assert.equal(bodyOf(server, 1).max_completion_tokens, 5);
  assert.equal(bodyOf(server, 1).max_tokens, undefined);
});

Deno.test("OpenAiChatProvider sends no authorization without an API key", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([chunk({ content: "ok" }, "stop"), DONE]));
  const local = new OpenAiChatProvider({ id: "ollama", baseUrl: `${server.url}/v1` });
  await collect(local);
  assert.equal(server.requests[0]?.headers.authorization, undefined);
});

Deno.test("buildOpenAiChatBody() maps images to image_url data URLs", () => {
  const body = buildOpenAiChatBody(request({
    messages: [{
      role: "user",
      content: [
        { type: "text", text: "What is this?" },
        { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
      ],
    }],
  }));
  assert.deepEqual((body.messages as unknown[])[1], {
    role: "user",
    content: [
      { type: "text", text: "What is this?" },
      { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
    ],
  });
});

Deno.test("buildOpenAiChatBody() maps assistant tool calls and tool results", () => {
  const body = buildOpenAiChatBody(request({
    messages: [
      USER,
      {
        role: "assistant",
        text: "",
        toolCalls: [{ id: "call_1", name: "read", arguments: '{"path":"a"}' }],
      },
      { role: "tool", toolCallId: "call_1", name: "read", content: "data", isError: false },
      { role: "assistant", text: "done" },
    ],
  }));
  assert.deepEqual((body.messages as unknown[]).slice(2), [
    {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "call_1",
        type: "function",
        function: { name: "read", arguments: '{"path":"a"}' },
      }],
    },
    { role: "tool", tool_call_id: "call_1", content: "data" },
    { role: "assistant", content: "done" },
  ]);
});

Deno.test("buildOpenAiChatBody() ignores another provider's state", () => {
  const body = buildOpenAiChatBody(request({
    messages: [USER, {
      role: "assistant",
      text: "x",
      providerState: { content: [{ type: "thinking", thinking: "t", signature: "s" }] },
    }],
  }));
  assert.deepEqual((body.messages as unknown[])[2], { role: "assistant", content: "x" });
});

// Stream

Deno.test("OpenAiChatProvider streams text deltas and the usage-only final chunk", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    chunk({ role: "assistant", content: "" }),
    chunk({ content: "Hel" }),
    chunk({ content: "lo" }),
    chunk({}, "stop"),
    usageChunk({
      prompt_tokens: 900,
      completion_tokens: 40,
      total_tokens: 940,
      prompt_tokens_details: { cached_tokens: 512 },
      completion_tokens_details: { reasoning_tokens: 7 },
    }),
    DONE,
  ]));
  const events = await collect(provider(server));
  assert.deepEqual(events, [
    { type: "text-delta", text: "Hel" },
    { type: "text-delta", text: "lo" },
    { type: "usage", usage: { input: 900, output: 40, cacheRead: 512, reasoning: 7 } },
    { type: "finish", reason: "stop" },
  ]);
});

Deno.test("OpenAiChatProvider reads DeepSeek cache hits and keeps the last non-null usage", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    {
      data: {
        choices: [{ index: 0, delta: { content: "a" } }],
        usage: { prompt_tokens: 1, completion_tokens: 1 },
      },
    },
    chunk({}, "stop"),
    usageChunk({
      prompt_tokens: 100,
      completion_tokens: 20,
      prompt_cache_hit_tokens: 64,
      prompt_cache_miss_tokens: 36,
    }),
    DONE,
  ]));
  const events = await collect(provider(server));
  const usage = events.find((event) => event.type === "usage");
  assert.deepEqual(usage, { type: "usage", usage: { input: 100, output: 20, cacheRead: 64 } });
});

Deno.test("OpenAiChatProvider joins tool-call fragments by index", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    chunk({ content: "Reading both." }),
    chunk({
      tool_calls: [{
        index: 0,
        id: "call_a",
        type: "function",
        function: { name: "read", arguments: "" },
      }],
    }),
    chunk({
      tool_calls: [{
        index: 1,
        id: "call_b",
        type: "function",
        function: { name: "list", arguments: '{"pa' },
      }],
    }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"path":' } }] }),
    chunk({ tool_calls: [{ index: 1, function: { arguments: 'th":"."}' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '"a.txt"}' } }] }),
    chunk({}, "tool_calls"),
    DONE,
  ]));
  const events = await collect(provider(server));
  assert.deepEqual(callsOf(events), [
    { id: "call_a", name: "read", arguments: '{"path":"a.txt"}' },
    { id: "call_b", name: "list", arguments: '{"path":"."}' },
  ]);
  assert.equal(finishOf(events).reason, "tool-calls");
  // Calls are emitted after every delta.
  assert.equal(events.findIndex((event) => event.type === "tool-call"), 1);
});

Deno.test("OpenAiChatProvider treats tool calls as authoritative over finish_reason stop", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    // Ollama-style: the whole call in one delta.
    chunk({
      tool_calls: [{
        index: 0,
        id: "call_x",
        function: { name: "run", arguments: '{"cmd":"ls"}' },
      }],
    }),
    chunk({}, "stop"),
    DONE,
  ]));
  const events = await collect(provider(server));
  assert.deepEqual(callsOf(events), [{ id: "call_x", name: "run", arguments: '{"cmd":"ls"}' }]);
  assert.equal(finishOf(events).reason, "tool-calls");
});

Deno.test("OpenAiChatProvider generates an id for a tool call without one", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    chunk({ tool_calls: [{ index: 0, function: { name: "run", arguments: "{}" } }] }),
    chunk({}, "tool_calls"),
    DONE,
  ]));
  const [call] = callsOf(await collect(provider(server)));
  assert.match(call?.id ?? "", /^call_[0-9a-f-]{36}$/);
});

Deno.test("OpenAiChatProvider streams reasoning_content as reasoning and keeps it as state", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    chunk({ role: "assistant", reasoning_content: "" }),
    chunk({ reasoning_content: "Think" }),
    chunk({ reasoning_content: "ing." }),
    chunk({ content: "Answer" }),
    chunk({}, "stop"),
    DONE,
  ]));
  const events = await collect(provider(server));
  assert.deepEqual(events, [
    { type: "reasoning-delta", text: "Think" },
    { type: "reasoning-delta", text: "ing." },
    { type: "text-delta", text: "Answer" },
    { type: "provider-state", state: { reasoningContent: "Thinking." } },
    { type: "finish", reason: "stop" },
  ]);
});

Deno.test("OpenAiChatProvider reads the reasoning field (vLLM, OpenRouter)", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    chunk({ reasoning: "Plan" }),
    chunk({ reasoning: " more" }),
    chunk({ content: "Done" }, "stop"),
    DONE,
  ]));
  const events = await collect(provider(server));
  assert.equal(textOf(events, "reasoning-delta"), "Plan more");
  assert.equal(textOf(events, "text-delta"), "Done");
  assert.ok(events.some((event) =>
    event.type === "provider-state" &&
    JSON.stringify(event.state) === JSON.stringify({ reasoningContent: "Plan more" })
  ));
});

Deno.test("OpenAiChatProvider sends DeepSeek reasoning_content back on the next request", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(
    sse([
      chunk({ reasoning_content: "I should read a." }),
      chunk({
        tool_calls: [{
          index: 0,
          id: "call_1",
          function: { name: "read", arguments: '{"p":"a"}' },
        }],
      }),
      chunk({}, "tool_calls"),
      usageChunk({ prompt_tokens: 10, completion_tokens: 5 }),
      DONE,
    ]),
    sse([chunk({ content: "It says hi." }, "stop"), DONE]),
  );
  const deepseek = provider(server);
  const first = await collect(deepseek);
  const state = first.find((event) => event.type === "provider-state");
  assert.ok(state?.type === "provider-state");
  // What the agent loop commits for the step, then the tool result.
  const history: LlmMessage[] = [
    USER,
    {
      role: "assistant",
      text: textOf(first, "text-delta"),
      reasoning: textOf(first, "reasoning-delta"),
      toolCalls: callsOf(first),
      providerState: state.state,
    },
    { role: "tool", toolCallId: "call_1", name: "read", content: "hi", isError: false },
  ];
  await collect(deepseek, request({ messages: history }));
  assert.deepEqual(bodyOf(server, 1).messages, [
    { role: "system", content: "sys" },
    { role: "user", content: "hi" },
    {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "call_1",
        type: "function",
        function: { name: "read", arguments: '{"p":"a"}' },
      }],
      reasoning_content: "I should read a.",
    },
    { role: "tool", tool_call_id: "call_1", content: "hi" },
  ]);
});

Deno.test("OpenAiChatProvider skips keep-alive comments and accepts CRLF", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    { raw: ": OPENROUTER PROCESSING\r\n\r\n" },
    { raw: 'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\r\n\r\n' },
    { raw: ": keep-alive\n\n" },
    { raw: 'data: {"choices":[{"index":0,"delta":{"content":"b"},' },
    { raw: '"finish_reason":"stop"}]}\r\n\r\ndata: [DONE]\r\n\r\n' },
  ]));
  const events = await collect(provider(server));
  assert.deepEqual(events, [
    { type: "text-delta", text: "a" },
    { type: "text-delta", text: "b" },
    { type: "finish", reason: "stop" },
  ]);
});

Deno.test("OpenAiChatProvider ends with the error of a mid-stream error payload", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    chunk({ content: "partial" }),
    {
      data: {
        error: { code: 502, message: "Provider returned error" },
        choices: [{ index: 0, delta: { content: "" }, finish_reason: "error" }],
      },
    },
    DONE,
  ]));
  const events = await collect(provider(server));
  assert.equal(textOf(events, "text-delta"), "partial");
  const finish = finishOf(events);
  assert.equal(finish.reason, "error");
  assert.equal(finish.error?.kind, "server");
  assert.equal(finish.error?.retryable, true);
  assert.equal(finish.error?.message, "Stream error: Provider returned error");
});

Deno.test("OpenAiChatProvider classifies a mid-stream error by its code", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    { data: { error: { message: "Rate limit exceeded", type: "rate_limit_exceeded" } } },
  ]));
  const finish = finishOf(await collect(provider(server)));
  assert.equal(finish.error?.kind, "rate-limit");
  assert.equal(finish.error?.retryable, true);
});

Deno.test("OpenAiChatProvider maps finish reasons", async () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["stop", "stop"],
    ["length", "max-tokens"],
    ["tool_calls", "tool-calls"],
    ["function_call", "tool-calls"],
    ["content_filter", "refusal"],
    ["eos", "stop"],
  ];
  await using server = await startFakeLlmServer();
  for (const [wire] of cases) server.enqueue(sse([chunk({ content: "x" }, wire), DONE]));
  for (const [wire, reason] of cases) {
    assert.equal(finishOf(await collect(provider(server))).reason, reason, wire);
  }
});

Deno.test("OpenAiChatProvider streams a refusal as text and finishes with refusal", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([chunk({ refusal: "I can't help with that." }), chunk({}, "stop"), DONE]));
  const events = await collect(provider(server));
  assert.equal(textOf(events, "text-delta"), "I can't help with that.");
  assert.equal(finishOf(events).reason, "refusal");
});

Deno.test("OpenAiChatProvider fails a stream that ends without [DONE] or finish_reason", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([chunk({ content: "cut" })]));
  const events = await collect(provider(server));
  const finish = finishOf(events);
  assert.equal(finish.reason, "error");
  assert.equal(finish.error?.kind, "transport");
  assert.equal(finish.error?.retryable, true);
  assert.equal(events.some((event) => event.type === "tool-call"), false);
});

Deno.test("OpenAiChatProvider accepts a finish_reason without [DONE]", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([chunk({ content: "ok" }, "stop")]));
  assert.equal(finishOf(await collect(provider(server))).reason, "stop");
});

Deno.test("OpenAiChatProvider fails with transport when the connection drops mid-body", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([chunk({ content: "a" })], { end: "destroy" }));
  const finish = finishOf(await collect(provider(server)));
  assert.equal(finish.reason, "error");
  assert.equal(finish.error?.kind, "transport");
  assert.equal(finish.error?.retryable, true);
});

Deno.test("OpenAiChatProvider fails on a chunk that is not JSON", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([{ data: "{not json" }, DONE]));
  const finish = finishOf(await collect(provider(server)));
  assert.equal(finish.error?.kind, "server");
  assert.equal(finish.error?.retryable, false);
  assert.match(finish.error?.message ?? "", /^Cannot parse stream chunk: \{not json/);
});

// HTTP failures

Deno.test("OpenAiChatProvider maps a 429 with Retry-After", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(jsonResponse(429, {
    error: {
      message: "Rate limit reached for requests",
      type: "requests",
      code: "rate_limit_exceeded",
    },
  }, { "retry-after": "7" }));
  const finish = finishOf(await collect(provider(server)));
  assert.equal(finish.reason, "error");
  assert.equal(finish.error?.message, "HTTP 429: Rate limit reached for requests");
  assert.equal(finish.error?.kind, "rate-limit");
  assert.equal(finish.error?.retryAfterMs, 7000);
});

Deno.test("OpenAiChatProvider maps a 401 without revealing the key", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(jsonResponse(401, {
    error: { message: `Incorrect API key provided: ${KEY}`, code: "invalid_api_key" },
  }));
  const finish = finishOf(await collect(provider(server)));
  assert.equal(finish.error?.kind, "auth");
  assert.equal(finish.error?.retryable, false);
  assert.equal(finish.error?.message, "HTTP 401: Incorrect API key provided: [redacted]");
});

Deno.test("OpenAiChatProvider maps a context overflow and a 500", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(
    jsonResponse(400, {
      error: {
        message: "This model's maximum context length is 8192 tokens.",
        code: "context_length_exceeded",
      },
    }),
    jsonResponse(500, { error: { message: "The server had an error" } }),
  );
  const overflow = finishOf(await collect(provider(server)));
  assert.equal(overflow.error?.kind, "context-overflow");
  const server500 = finishOf(await collect(provider(server)));
  assert.equal(server500.error?.kind, "server");
  assert.equal(server500.error?.retryable, true);
});

Deno.test("OpenAiChatProvider maps an unreachable server to transport", async () => {
  const server = await startFakeLlmServer();
  const unreachable = provider(server);
  await server.close();
  const finish = finishOf(await collect(unreachable));
  assert.equal(finish.error?.kind, "transport");
  assert.equal(finish.error?.retryable, true);
  assert.ok(!finish.error?.message.includes(KEY));
});

// Abort

Deno.test("OpenAiChatProvider ends aborted mid-stream and the server sees the socket close", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    chunk({ content: "first" }),
    { ...chunk({ content: "never" }), delayMs: 5000 },
    DONE,
  ]));
  const controller = new AbortController();
  const events: LlmEvent[] = [];
  for await (const event of provider(server).stream(request(), { signal: controller.signal })) {
    events.push(event);
    if (event.type === "text-delta") controller.abort();
  }
  assert.deepEqual(events, [
    { type: "text-delta", text: "first" },
    { type: "finish", reason: "aborted" },
  ]);
  await server.waitForCutOff(1);
  assert.equal(server.responsesCutOff, 1);
  await server.waitForConnectionsClosed(1);
});

Deno.test("OpenAiChatProvider ends aborted while waiting for the next chunk", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([chunk({ content: "a" })], { end: "hold" }));
  const controller = new AbortController();
  const events: LlmEvent[] = [];
  let firstEvent!: () => void;
  const gotFirst = new Promise<void>((resolve) => firstEvent = resolve);
  const done = (async () => {
    for await (const event of provider(server).stream(request(), { signal: controller.signal })) {
      events.push(event);
      firstEvent();
    }
  })();
  // The first chunk is in; the server holds the rest, so the stream is waiting for more.
  await gotFirst;
  controller.abort();
  await done;
  assert.deepEqual(events.at(-1), { type: "finish", reason: "aborted" });
  await server.waitForCutOff(1);
});

Deno.test("OpenAiChatProvider ends aborted without a request when already aborted", async () => {
  await using server = await startFakeLlmServer();
  const events = await collect(provider(server), request(), AbortSignal.abort());
  assert.deepEqual(events, [{ type: "finish", reason: "aborted" }]);
  assert.equal(server.requests.length, 0);
});

Deno.test("OpenAiChatProvider closes the connection when the consumer stops early", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([chunk({ content: "a" }), chunk({ content: "b" })], { end: "hold" }));
  for await (const event of provider(server).stream(request(), { signal: NEVER })) {
    assert.equal(event.type, "text-delta");
    break;
  }
  await server.waitForCutOff(1);
});

Deno.test("OpenAiChatProvider works with an injected fetch that ignores the signal", async () => {
  const controller = new AbortController();
  const encoder = new TextEncoder();
  let cancelled = false;
  const fake: typeof fetch = () =>
    Promise.resolve(
      new Response(
        new ReadableStream<Uint8Array>({
          start(stream) {
            stream.enqueue(encoder.encode('data: {"choices":[{"delta":{"content":"x"}}]}\n\n'));
          },
          cancel() {
            cancelled = true;
          },
        }),
        { headers: { "content-type": "text/event-stream" } },
      ),
    );
  const local = new OpenAiChatProvider({ id: "t", baseUrl: "http://127.0.0.1:9", fetch: fake });
  const events: LlmEvent[] = [];
  for await (const event of local.stream(request(), { signal: controller.signal })) {
    events.push(event);
    controller.abort();
  }
  assert.deepEqual(events, [
    { type: "text-delta", text: "x" },
    { type: "finish", reason: "aborted" },
  ]);
  assert.ok(cancelled);
});

/** A tool result with a screenshot, a resource link and text, as an MCP tool returns it. */
const RICH_RESULT: LlmMessage = {
  role: "tool",
  toolCallId: "call_1",
  name: "mcp__browser__screenshot",
  content: "Took it\n[image: image/png]\n[resource: page.html file:///tmp/page.html]",
  parts: [
    { type: "text", text: "Took it" },
    { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
    { type: "resource_link", uri: "file:///tmp/page.html", name: "page.html" },
  ],
  isError: false,
};

const RICH_HISTORY: readonly LlmMessage[] = [
  USER,
  {
    role: "assistant",
    text: "",
    toolCalls: [
      { id: "call_1", name: "mcp__browser__screenshot", arguments: "{}" },
      { id: "call_2", name: "read", arguments: "{}" },
    ],
  },
  RICH_RESULT,
  { role: "tool", toolCallId: "call_2", name: "read", content: "text", isError: false },
];

const ASSISTANT_WIRE = {
  role: "assistant",
  content: null,
  "tool_calls": [
    {
      id: "call_1",
      type: "function",
      function: { name: "mcp__browser__screenshot", arguments: "{}" },
    },
    { id: "call_2", type: "function", function: { name: "read", arguments: "{}" } },
  ],
};

Deno.test("OpenAiChatProvider sends a tool result's text, then its images in a user message", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([chunk({ content: "A login page." }, "stop")]));
  await collect(provider(server), request({ messages: RICH_HISTORY }));
  assert.deepEqual(bodyOf(server).messages, [
    { role: "system", content: "sys" },
    { role: "user", content: "hi" },
    ASSISTANT_WIRE,
    {
      role: "tool",
      tool_call_id: "call_1",
      content: "Took it\n[image: image/png]\n[resource: page.html file:///tmp/page.html]",
    },
    // The images wait for the end of the run of tool messages.
    { role: "tool", tool_call_id: "call_2", content: "text" },
    {
      role: "user",
      content: [
        {
          type: "text",
          text: "The images of the result of tool call call_1 (mcp__browser__screenshot):",
        },
        { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
      ],
    },
  ]);
});

Deno.test("buildOpenAiChatBody() puts tool-result images before the next message, and none for text-only models", () => {
  const next: LlmMessage = { role: "assistant", text: "Seen." };
  const body = buildOpenAiChatBody(request({ messages: [...RICH_HISTORY.slice(0, 3), next] }));
  assert.deepEqual(
    (body.messages as { role: string }[]).map((message) => message.role),
    ["system", "user", "assistant", "tool", "user", "assistant"],
  );
  const textOnly = buildOpenAiChatBody(request({ messages: RICH_HISTORY, imageInput: false }));
  assert.deepEqual(
    (textOnly.messages as { role: string }[]).map((message) => message.role),
    ["system", "user", "assistant", "tool", "tool"],
  );
});
