import assert from "node:assert/strict";
import {
  AnthropicMessagesProvider,
  buildAnthropicMessagesBody,
} from "../../src/llm/anthropic_messages.ts";
import type { LlmEvent, LlmMessage, LlmRequest, LlmToolCall } from "../../src/llm/provider.ts";
import {
  type FakeLlmServer,
  jsonResponse,
  sse,
  type SseItem,
  startFakeLlmServer,
  trackBodyReads,
} from "../_helpers/fake_llm_server.ts";

const KEY = "sk-ant-test-key-0123456789";
const NEVER = new AbortController().signal;
const USER: LlmMessage = { role: "user", content: [{ type: "text", text: "hi" }] };

function provider(
  server: FakeLlmServer,
  extra: Partial<
    { anthropicVersion: string; headers: Record<string, string>; fetch: typeof fetch }
  > = {},
): AnthropicMessagesProvider {
  return new AnthropicMessagesProvider({
    id: "anthropic",
    baseUrl: server.url,
    apiKey: KEY,
    ...extra,
  });
}

function request(overrides: Partial<LlmRequest> = {}): LlmRequest {
  return { sessionId: "s", model: "m", system: "sys", messages: [USER], tools: [], ...overrides };
}

async function collect(
  source: AnthropicMessagesProvider,
  req: LlmRequest = request(),
  signal: AbortSignal = NEVER,
): Promise<LlmEvent[]> {
  const events: LlmEvent[] = [];
  for await (const event of source.stream(req, { signal })) events.push(event);
  return events;
}

// Wire events, as the API sends them (`event:` name plus a `type` in the data).

function event(type: string, payload: Record<string, unknown> = {}): SseItem {
  return { event: type, data: { type, ...payload } };
}

function messageStart(usage: Record<string, unknown> = { input_tokens: 10, output_tokens: 1 }) {
  return event("message_start", {
    message: {
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "m",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage,
    },
  });
}

function blockStart(index: number, block: Record<string, unknown>): SseItem {
  return event("content_block_start", { index, content_block: block });
}

function blockDelta(index: number, delta: Record<string, unknown>): SseItem {
  return event("content_block_delta", { index, delta });
}

function blockStop(index: number): SseItem {
  return event("content_block_stop", { index });
}

function messageDelta(stopReason: string, usage: Record<string, unknown> = { output_tokens: 5 }) {
  return event("message_delta", {
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage,
  });
}

const MESSAGE_STOP = event("message_stop");
const PING = event("ping");

/** A whole text answer. */
function textStream(text: string, stopReason = "end_turn"): SseItem[] {
  return [
    messageStart(),
    blockStart(0, { type: "text", text: "" }),
    blockDelta(0, { type: "text_delta", text }),
    blockStop(0),
    messageDelta(stopReason),
    MESSAGE_STOP,
  ];
}

function finishOf(events: readonly LlmEvent[]): Extract<LlmEvent, { type: "finish" }> {
  const last = events.at(-1);
  assert.ok(last?.type === "finish", `ends with finish: ${JSON.stringify(events)}`);
  assert.equal(events.filter((item) => item.type === "finish").length, 1);
  return last;
}

function textOf(events: readonly LlmEvent[], type: "text-delta" | "reasoning-delta"): string {
  return events.map((item) => item.type === type ? item.text : "").join("");
}

function callsOf(events: readonly LlmEvent[]): LlmToolCall[] {
  return events.flatMap((item) => item.type === "tool-call" ? [item.call] : []);
}

function stateOf(events: readonly LlmEvent[]): unknown {
  const states = events.filter((item) => item.type === "provider-state");
  assert.equal(states.length, 1, "one provider-state event");
  return states[0]?.type === "provider-state" ? states[0].state : undefined;
}

function bodyOf(server: FakeLlmServer, index = 0): Record<string, unknown> {
  const body = server.requests[index]?.body;
  assert.ok(typeof body === "object" && body !== null, "request body is JSON");
  return body as Record<string, unknown>;
}

// Request

Deno.test("AnthropicMessagesProvider posts /v1/messages with its headers and body", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse(textStream("ok")));
  const tools = [{
    name: "read_file",
    description: "Read a file",
    inputSchema: { type: "object", properties: { path: { type: "string" } } },
  }];
  await collect(provider(server, { headers: { "anthropic-beta": "x-1" } }), request({ tools }));
  const captured = server.requests[0];
  assert.equal(captured?.path, "/v1/messages");
  assert.equal(captured?.headers["x-api-key"], KEY);
  assert.equal(captured?.headers["anthropic-version"], "2023-06-01");
  assert.equal(captured?.headers["anthropic-beta"], "x-1");
  assert.equal(captured?.headers["content-type"], "application/json");
  assert.equal(captured?.headers.authorization, undefined);
  assert.deepEqual(captured?.body, {
    model: "m",
    max_tokens: 8192,
    stream: true,
    system: "sys",
    messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
    tools: [{
      name: "read_file",
      description: "Read a file",
      input_schema: { type: "object", properties: { path: { type: "string" } } },
    }],
  });
});

Deno.test("AnthropicMessagesProvider uses the configured version and maxOutputTokens", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse(textStream("ok")));
  await collect(
    new AnthropicMessagesProvider({
      id: "deepseek-anthropic",
      baseUrl: `${server.url}/anthropic/`,
      anthropicVersion: "2024-01-01",
    }),
    request({ system: "", maxOutputTokens: 100 }),
  );
  const captured = server.requests[0];
  assert.equal(captured?.path, "/anthropic/v1/messages");
  assert.equal(captured?.headers["anthropic-version"], "2024-01-01");
  assert.equal(captured?.headers["x-api-key"], undefined);
  assert.equal(bodyOf(server).max_tokens, 100);
  assert.equal("system" in bodyOf(server), false);
  assert.equal("tools" in bodyOf(server), false);
});

Deno.test("buildAnthropicMessagesBody() maps reasoning effort to a thinking budget", () => {
  const cases: ReadonlyArray<readonly [string, number | undefined, number]> = [
    ["low", 2048, 2048 + 8192],
    ["medium", 8192, 8192 + 8192],
    ["high", 24576, 24576 + 8192],
    ["none", undefined, 8192],
    ["unknown", undefined, 8192],
  ];
  for (const [effort, budget, maxTokens] of cases) {
    const body = buildAnthropicMessagesBody(request({ reasoningEffort: effort }));
    assert.deepEqual(
      body.thinking,
      budget === undefined ? undefined : { type: "enabled", budget_tokens: budget },
      effort,
    );
    assert.equal(body.max_tokens, maxTokens, effort);
  }
});

Deno.test("buildAnthropicMessagesBody() keeps the thinking budget below maxOutputTokens", () => {
  const capped = buildAnthropicMessagesBody(
    request({ reasoningEffort: "high", maxOutputTokens: 16000 }),
  );
  assert.equal(capped.max_tokens, 16000);
  assert.deepEqual(capped.thinking, { type: "enabled", budget_tokens: 15999 });
  const tooSmall = buildAnthropicMessagesBody(
    request({ reasoningEffort: "low", maxOutputTokens: 1000 }),
  );
  assert.equal(tooSmall.max_tokens, 1000);
  assert.equal(tooSmall.thinking, undefined);
});

Deno.test("buildAnthropicMessagesBody() alternates roles and groups tool results", () => {
  const body = buildAnthropicMessagesBody(request({
    messages: [
      USER,
      {
        role: "assistant",
        text: "Reading both.",
        toolCalls: [
          { id: "toolu_1", name: "read", arguments: '{"path":"a"}' },
          { id: "toolu_2", name: "read", arguments: "" },
        ],
      },
      { role: "tool", toolCallId: "toolu_1", name: "read", content: "A", isError: false },
      { role: "tool", toolCallId: "toolu_2", name: "read", content: "no such file", isError: true },
      { role: "user", content: [{ type: "text", text: "and now?" }] },
    ],
  }));
  assert.deepEqual(body.messages, [
    { role: "user", content: [{ type: "text", text: "hi" }] },
    {
      role: "assistant",
      content: [
        { type: "text", text: "Reading both." },
        { type: "tool_use", id: "toolu_1", name: "read", input: { path: "a" } },
        { type: "tool_use", id: "toolu_2", name: "read", input: {} },
      ],
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "toolu_1", content: "A", is_error: false },
        { type: "tool_result", tool_use_id: "toolu_2", content: "no such file", is_error: true },
        { type: "text", text: "and now?" },
      ],
    },
  ]);
});

Deno.test("buildAnthropicMessagesBody() maps images to base64 sources", () => {
  const body = buildAnthropicMessagesBody(request({
    messages: [{
      role: "user",
      content: [
        { type: "text", text: "What is this?" },
        { type: "image", mimeType: "image/webp", data: "UklGRg==" },
      ],
    }],
  }));
  assert.deepEqual(body.messages, [{
    role: "user",
    content: [
      { type: "text", text: "What is this?" },
      { type: "image", source: { type: "base64", media_type: "image/webp", data: "UklGRg==" } },
    ],
  }]);
});

Deno.test("buildAnthropicMessagesBody() drops empty text and empty assistant messages", () => {
  const body = buildAnthropicMessagesBody(request({
    messages: [
      { role: "user", content: [{ type: "text", text: "" }, { type: "text", text: "a" }] },
      { role: "assistant", text: "" },
      { role: "user", content: [{ type: "text", text: "b" }] },
    ],
  }));
  assert.deepEqual(body.messages, [{
    role: "user",
    content: [{ type: "text", text: "a" }, { type: "text", text: "b" }],
  }]);
});

Deno.test("buildAnthropicMessagesBody() ignores another provider's state", () => {
  const body = buildAnthropicMessagesBody(request({
    messages: [USER, { role: "assistant", text: "x", providerState: { reasoningContent: "r" } }],
  }));
  assert.deepEqual((body.messages as unknown[])[1], {
    role: "assistant",
    content: [{ type: "text", text: "x" }],
  });
});

// Stream

Deno.test("AnthropicMessagesProvider streams text, ignores ping, and sums usage with cache fields", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    messageStart({
      input_tokens: 100,
      cache_creation_input_tokens: 20,
      cache_read_input_tokens: 300,
      output_tokens: 1,
    }),
    blockStart(0, { type: "text", text: "" }),
    PING,
    blockDelta(0, { type: "text_delta", text: "Hel" }),
    blockDelta(0, { type: "text_delta", text: "lo" }),
    blockStop(0),
    messageDelta("end_turn", { output_tokens: 15 }),
    MESSAGE_STOP,
  ]));
  const events = await collect(provider(server));
  assert.deepEqual(events, [
    { type: "text-delta", text: "Hel" },
    { type: "text-delta", text: "lo" },
    { type: "provider-state", state: { content: [{ type: "text", text: "Hello" }] } },
    {
      type: "usage",
      usage: { input: 420, output: 15, cacheRead: 300, cacheWrite: 20 },
    },
    { type: "finish", reason: "stop" },
  ]);
});

Deno.test("AnthropicMessagesProvider takes the cumulative output tokens of the last message_delta", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    messageStart({ input_tokens: 5, output_tokens: 1 }),
    blockStart(0, { type: "text", text: "" }),
    blockDelta(0, { type: "text_delta", text: "a" }),
    blockStop(0),
    event("message_delta", { delta: {}, usage: { output_tokens: 10 } }),
    messageDelta("end_turn", { output_tokens: 12, input_tokens: null }),
    MESSAGE_STOP,
  ]));
  const usage = (await collect(provider(server))).find((item) => item.type === "usage");
  assert.deepEqual(usage, { type: "usage", usage: { input: 5, output: 12 } });
});

Deno.test("AnthropicMessagesProvider streams thinking as reasoning and keeps signatures", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    messageStart(),
    blockStart(0, { type: "thinking", thinking: "", signature: "" }),
    blockDelta(0, { type: "thinking_delta", thinking: "Let me " }),
    blockDelta(0, { type: "thinking_delta", thinking: "think." }),
    blockDelta(0, { type: "signature_delta", signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3h" }),
    blockStop(0),
    blockStart(1, { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix" }),
    blockStop(1),
    blockStart(2, { type: "text", text: "" }),
    blockDelta(2, { type: "text_delta", text: "Answer." }),
    blockStop(2),
    messageDelta("end_turn"),
    MESSAGE_STOP,
  ]));
  const events = await collect(provider(server));
  assert.equal(textOf(events, "reasoning-delta"), "Let me think.");
  assert.equal(textOf(events, "text-delta"), "Answer.");
  assert.deepEqual(stateOf(events), {
    content: [
      { type: "thinking", thinking: "Let me think.", signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3h" },
      { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix" },
      { type: "text", text: "Answer." },
    ],
  });
});

Deno.test("AnthropicMessagesProvider joins input_json_delta per block into tool calls", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    messageStart(),
    blockStart(0, { type: "text", text: "" }),
    blockDelta(0, { type: "text_delta", text: "Reading." }),
    blockStop(0),
    blockStart(1, { type: "tool_use", id: "toolu_a", name: "read", input: {} }),
    blockDelta(1, { type: "input_json_delta", partial_json: "" }),
    blockDelta(1, { type: "input_json_delta", partial_json: '{"path": "a' }),
    blockDelta(1, { type: "input_json_delta", partial_json: '.txt"}' }),
    blockStop(1),
    blockStart(2, { type: "tool_use", id: "toolu_b", name: "list", input: {} }),
    blockStop(2),
    messageDelta("tool_use"),
    MESSAGE_STOP,
  ]));
  const events = await collect(provider(server));
  assert.deepEqual(callsOf(events), [
    { id: "toolu_a", name: "read", arguments: '{"path": "a.txt"}' },
    { id: "toolu_b", name: "list", arguments: "{}" },
  ]);
  // Each call is emitted when its block stops.
  assert.equal(events.findIndex((item) => item.type === "tool-call"), 1);
  assert.equal(finishOf(events).reason, "tool-calls");
  assert.deepEqual(stateOf(events), {
    content: [
      { type: "text", text: "Reading." },
      { type: "tool_use", id: "toolu_a", name: "read", input: { path: "a.txt" } },
      { type: "tool_use", id: "toolu_b", name: "list", input: {} },
    ],
  });
});

Deno.test("AnthropicMessagesProvider echoes thinking blocks back unchanged on the next request", async () => {
  await using server = await startFakeLlmServer();
  const thinking = {
    type: "thinking",
    thinking: "I need the file.",
    signature: "WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve/op91XWHOEBLLqIOMfFG/UvLEczmEsUjavL",
  };
  server.enqueue(
    sse([
      messageStart(),
      blockStart(0, { type: "thinking", thinking: "", signature: "" }),
      blockDelta(0, { type: "thinking_delta", thinking: thinking.thinking }),
      blockDelta(0, { type: "signature_delta", signature: thinking.signature }),
      blockStop(0),
      blockStart(1, { type: "redacted_thinking", data: "opaque==" }),
      blockStop(1),
      blockStart(2, { type: "tool_use", id: "toolu_1", name: "read", input: {} }),
      blockDelta(2, { type: "input_json_delta", partial_json: '{"path":"a"}' }),
      blockStop(2),
      messageDelta("tool_use"),
      MESSAGE_STOP,
    ]),
    sse(textStream("It says hi.")),
  );
  const claude = provider(server);
  const first = await collect(claude, request({ reasoningEffort: "low" }));
  // What the agent loop commits for the step, then the tool result.
  const history: LlmMessage[] = [
    USER,
    {
      role: "assistant",
      text: textOf(first, "text-delta"),
      reasoning: textOf(first, "reasoning-delta"),
      toolCalls: callsOf(first),
      providerState: stateOf(first),
    },
    { role: "tool", toolCallId: "toolu_1", name: "read", content: "hi", isError: false },
  ];
  await collect(claude, request({ messages: history, reasoningEffort: "low" }));
  const second = bodyOf(server, 1);
  assert.deepEqual(second.thinking, { type: "enabled", budget_tokens: 2048 });
  assert.deepEqual(second.messages, [
    { role: "user", content: [{ type: "text", text: "hi" }] },
    {
      role: "assistant",
      content: [
        thinking,
        { type: "redacted_thinking", data: "opaque==" },
        { type: "tool_use", id: "toolu_1", name: "read", input: { path: "a" } },
      ],
    },
    {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "hi", is_error: false }],
    },
  ]);
});

Deno.test("AnthropicMessagesProvider maps stop reasons", async () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["end_turn", "stop"],
    ["stop_sequence", "stop"],
    ["max_tokens", "max-tokens"],
    ["model_context_window_exceeded", "max-tokens"],
    ["tool_use", "tool-calls"],
    ["refusal", "refusal"],
    ["pause_turn", "stop"],
  ];
  await using server = await startFakeLlmServer();
  for (const [wire] of cases) server.enqueue(sse(textStream("x", wire)));
  for (const [wire, reason] of cases) {
    assert.equal(finishOf(await collect(provider(server))).reason, reason, wire);
  }
});

Deno.test("AnthropicMessagesProvider ends with the error of an error event", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(
    sse([
      messageStart(),
      blockStart(0, { type: "text", text: "" }),
      blockDelta(0, { type: "text_delta", text: "partial" }),
      event("error", { error: { type: "overloaded_error", message: "Overloaded" } }),
    ]),
    sse([event("error", { error: { type: "rate_limit_error", message: "Slow down" } })]),
    sse([event("error", { error: { type: "invalid_request_error", message: "Bad" } })]),
  );
  const overloaded = await collect(provider(server));
  assert.equal(textOf(overloaded, "text-delta"), "partial");
  const finish = finishOf(overloaded);
  assert.equal(finish.reason, "error");
  assert.equal(finish.error?.kind, "server");
  assert.equal(finish.error?.retryable, true);
  assert.equal(finish.error?.message, "Stream error (overloaded_error): Overloaded");
  assert.equal(finishOf(await collect(provider(server))).error?.kind, "rate-limit");
  const bad = finishOf(await collect(provider(server)));
  assert.equal(bad.error?.kind, "bad-request");
  assert.equal(bad.error?.retryable, false);
});

Deno.test("AnthropicMessagesProvider fails a stream that ends before message_stop", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    messageStart(),
    blockStart(0, { type: "tool_use", id: "toolu_1", name: "read", input: {} }),
    blockDelta(0, { type: "input_json_delta", partial_json: '{"pa' }),
  ]));
  const events = await collect(provider(server));
  const finish = finishOf(events);
  assert.equal(finish.reason, "error");
  assert.equal(finish.error?.kind, "transport");
  assert.equal(finish.error?.retryable, true);
  assert.deepEqual(callsOf(events), []);
});

Deno.test("AnthropicMessagesProvider fails with transport when the connection drops", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([messageStart(), PING], { end: "destroy" }));
  const finish = finishOf(await collect(provider(server)));
  assert.equal(finish.error?.kind, "transport");
  assert.equal(finish.error?.retryable, true);
});

// HTTP failures

Deno.test("AnthropicMessagesProvider maps 529 overloaded, 429 and 401 responses", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(
    jsonResponse(529, {
      type: "error",
      error: { type: "overloaded_error", message: "Overloaded" },
    }),
    jsonResponse(
      429,
      { type: "error", error: { type: "rate_limit_error", message: "Too many" } },
      { "retry-after": "12" },
    ),
    jsonResponse(401, {
      type: "error",
      error: { type: "authentication_error", message: `invalid x-api-key ${KEY}` },
    }),
    jsonResponse(400, {
      type: "error",
      error: {
        type: "invalid_request_error",
        message: "prompt is too long: 250000 tokens > 200000 maximum",
      },
    }),
  );
  const overloaded = finishOf(await collect(provider(server)));
  assert.equal(overloaded.error?.message, "HTTP 529: Overloaded");
  assert.equal(overloaded.error?.kind, "server");
  assert.equal(overloaded.error?.retryable, true);
  const limited = finishOf(await collect(provider(server)));
  assert.equal(limited.error?.kind, "rate-limit");
  assert.equal(limited.error?.retryAfterMs, 12_000);
  const auth = finishOf(await collect(provider(server)));
  assert.equal(auth.error?.kind, "auth");
  assert.equal(auth.error?.message, "HTTP 401: invalid x-api-key [redacted]");
  const overflow = finishOf(await collect(provider(server)));
  assert.equal(overflow.error?.kind, "context-overflow");
});

// Abort

Deno.test("AnthropicMessagesProvider ends aborted mid-stream and the server sees the socket close", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    messageStart(),
    blockStart(0, { type: "text", text: "" }),
    blockDelta(0, { type: "text_delta", text: "first" }),
    { ...blockDelta(0, { type: "text_delta", text: "never" }), delayMs: 5000 },
    blockStop(0),
    messageDelta("end_turn"),
    MESSAGE_STOP,
  ]));
  const controller = new AbortController();
  const events: LlmEvent[] = [];
  for await (const item of provider(server).stream(request(), { signal: controller.signal })) {
    events.push(item);
    if (item.type === "text-delta") controller.abort();
  }
  assert.deepEqual(events, [
    { type: "text-delta", text: "first" },
    { type: "finish", reason: "aborted" },
  ]);
  await server.waitForCutOff(1);
  assert.equal(server.responsesCutOff, 1);
  await server.waitForConnectionsClosed(1);
});

Deno.test("AnthropicMessagesProvider ends aborted while a tool call is streaming", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([
    messageStart(),
    blockStart(0, { type: "tool_use", id: "toolu_1", name: "read", input: {} }),
    blockDelta(0, { type: "input_json_delta", partial_json: '{"pa' }),
  ], { end: "hold" }));
  const controller = new AbortController();
  const events: LlmEvent[] = [];
  const reads = trackBodyReads("input_json_delta");
  const done = (async () => {
    const streaming = provider(server, { fetch: reads.fetch });
    for await (const item of streaming.stream(request(), { signal: controller.signal })) {
      events.push(item);
    }
  })();
  // The provider has decoded the partial tool input and is waiting for the next chunk.
  await reads.past;
  controller.abort();
  await done;
  assert.deepEqual(events, [{ type: "finish", reason: "aborted" }]);
  await server.waitForCutOff(1);
});

/** A tool result with a screenshot, a resource link and text, as an MCP tool returns it. */
const RICH_RESULT: LlmMessage = {
  role: "tool",
  toolCallId: "toolu_1",
  name: "mcp__browser__screenshot",
  content: "Took it\n[image: image/png]\n[resource: page.html file:///tmp/page.html (text/html)]",
  parts: [
    { type: "text", text: "Took it" },
    { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
    {
      type: "resource_link",
      uri: "file:///tmp/page.html",
      name: "page.html",
      mimeType: "text/html",
    },
  ],
  isError: false,
};

const RICH_HISTORY: readonly LlmMessage[] = [
  USER,
  {
    role: "assistant",
    text: "",
    toolCalls: [{ id: "toolu_1", name: "mcp__browser__screenshot", arguments: "{}" }],
  },
  RICH_RESULT,
];

Deno.test("AnthropicMessagesProvider sends a tool result's image as an image block", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse(textStream("A login page.")));
  await collect(provider(server), request({ messages: RICH_HISTORY }));
  assert.deepEqual(bodyOf(server).messages, [
    { role: "user", content: [{ type: "text", text: "hi" }] },
    {
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_1", name: "mcp__browser__screenshot", input: {} }],
    },
    {
      role: "user",
      content: [{
        type: "tool_result",
        tool_use_id: "toolu_1",
        content: [
          { type: "text", text: "Took it" },
          {
            type: "image",
            source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" },
          },
          { type: "text", text: "[resource: page.html file:///tmp/page.html (text/html)]" },
        ],
        is_error: false,
      }],
    },
  ]);
});

Deno.test("buildAnthropicMessagesBody() sends placeholders for images the model cannot take", () => {
  const svg: LlmMessage = {
    role: "tool",
    toolCallId: "toolu_1",
    name: "draw",
    content: "[image: image/svg+xml]",
    parts: [{ type: "image", mimeType: "image/svg+xml", data: "PHN2Zy8+" }],
    isError: false,
  };
  const resultOf = (body: Record<string, unknown>): unknown =>
    (body.messages as { content: unknown[] }[])[2]?.content[0];
  assert.deepEqual(
    resultOf(buildAnthropicMessagesBody(request({ messages: [...RICH_HISTORY.slice(0, 2), svg] }))),
    {
      type: "tool_result",
      tool_use_id: "toolu_1",
      content: [{ type: "text", text: "[image: image/svg+xml]" }],
      is_error: false,
    },
  );
  const noImages = buildAnthropicMessagesBody(
    request({ messages: RICH_HISTORY, imageInput: false }),
  );
  assert.deepEqual(resultOf(noImages), {
    type: "tool_result",
    tool_use_id: "toolu_1",
    content: [
      { type: "text", text: "Took it" },
      { type: "text", text: "[image: image/png]" },
      { type: "text", text: "[resource: page.html file:///tmp/page.html (text/html)]" },
    ],
    is_error: false,
  });
});
