/**
 * `AnthropicMessagesProvider` against the fake LLM server: the provider contract with the
 * `/v1/messages` wire format, then what only this wire format does.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  AnthropicMessagesProvider,
  buildAnthropicMessagesBody,
} from "../../src/llm/anthropic_messages.ts";
import type { LlmEvent, LlmMessage } from "../../src/llm/provider.ts";
import {
  type FakeLlmServer,
  jsonResponse,
  sse,
  type SseItem,
  startFakeLlmServer,
  trackBodyReads,
} from "../_helpers/fake_llm_server.ts";
import {
  bodyOf,
  collect,
  providerContract,
  type ProviderWire,
  request,
  USER,
} from "./_provider_contract.ts";

const KEY = "sk-ant-test-key-0123456789";

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

/** A thinking block with its signature, as streamed and as sent back. */
const THINKING = {
  type: "thinking",
  thinking: "I need the file.",
  signature: "WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve/op91XWHOEBLLqIOMfFG/UvLEczmEsUjavL",
};

/** The `/v1/messages` wire format, for the provider contract. */
const ANTHROPIC_MESSAGES_WIRE: ProviderWire = {
  name: "AnthropicMessagesProvider",
  key: KEY,
  baseUrl: (url) => url,
  path: "/v1/messages",
  make: (options) => new AnthropicMessagesProvider({ id: "anthropic", ...options }),
  credentials: (key) => ({ "x-api-key": key }),
  wireHeaders: { "anthropic-version": "2023-06-01" },
  foreignCredentials: ["authorization"],
  extraHeaders: { "anthropic-beta": "x-1" },

  opening: (text) => [
    messageStart(),
    blockStart(0, { type: "text", text: "" }),
    blockDelta(0, { type: "text_delta", text }),
  ],
  delta: (text) => blockDelta(0, { type: "text_delta", text }),
  closing: (reason = "end_turn") => [blockStop(0), messageDelta(reason), MESSAGE_STOP],
  answer: (text, reason) => textStream(text, reason),

  // Pings ignored; the input counts cache reads and writes.
  textWithUsage: {
    items: [
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
    ],
    events: [
      { type: "text-delta", text: "Hel" },
      { type: "text-delta", text: "lo" },
      { type: "provider-state", state: { content: [{ type: "text", text: "Hello" }] } },
      {
        type: "usage",
        usage: { input: 420, output: 15, cacheRead: 300, cacheWrite: 20 },
      },
      { type: "finish", reason: "stop" },
    ],
  },

  // input_json_delta joined per block; each call emitted when its block stops.
  toolCalls: {
    items: [
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
    ],
    calls: [
      { id: "toolu_a", name: "read", arguments: '{"path": "a.txt"}' },
      { id: "toolu_b", name: "list", arguments: "{}" },
    ],
    state: {
      content: [
        { type: "text", text: "Reading." },
        { type: "tool_use", id: "toolu_a", name: "read", input: { path: "a.txt" } },
        { type: "tool_use", id: "toolu_b", name: "list", input: {} },
      ],
    },
  },

  // Thinking, with its signature and a redacted block kept.
  reasoning: {
    items: [
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
    ],
    reasoning: "Let me think.",
    text: "Answer.",
    state: {
      content: [
        { type: "thinking", thinking: "Let me think.", signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3h" },
        { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix" },
        { type: "text", text: "Answer." },
      ],
    },
  },

  // Thinking blocks go back unchanged.
  stateRoundTrip: {
    first: [
      messageStart(),
      blockStart(0, { type: "thinking", thinking: "", signature: "" }),
      blockDelta(0, { type: "thinking_delta", thinking: THINKING.thinking }),
      blockDelta(0, { type: "signature_delta", signature: THINKING.signature }),
      blockStop(0),
      blockStart(1, { type: "redacted_thinking", data: "opaque==" }),
      blockStop(1),
      blockStart(2, { type: "tool_use", id: "toolu_1", name: "read", input: {} }),
      blockDelta(2, { type: "input_json_delta", partial_json: '{"path":"a"}' }),
      blockStop(2),
      messageDelta("tool_use"),
      MESSAGE_STOP,
    ],
    request: { reasoningEffort: "low" },
    result: { role: "tool", toolCallId: "toolu_1", name: "read", content: "hi", isError: false },
    secondBody: {
      thinking: { type: "enabled", budget_tokens: 2048 },
      messages: [
        { role: "user", content: [{ type: "text", text: "hi" }] },
        {
          role: "assistant",
          content: [
            THINKING,
            { type: "redacted_thinking", data: "opaque==" },
            { type: "tool_use", id: "toolu_1", name: "read", input: { path: "a" } },
          ],
        },
        {
          role: "user",
          content: [{
            type: "tool_result",
            tool_use_id: "toolu_1",
            content: "hi",
            is_error: false,
          }],
        },
      ],
    },
  },

  finishReasons: [
    ["end_turn", "stop"],
    ["stop_sequence", "stop"],
    ["max_tokens", "max-tokens"],
    ["model_context_window_exceeded", "max-tokens"],
    ["tool_use", "tool-calls"],
    ["refusal", "refusal"],
    ["pause_turn", "stop"],
  ],

  streamErrors: [
    {
      items: [
        messageStart(),
        blockStart(0, { type: "text", text: "" }),
        blockDelta(0, { type: "text_delta", text: "partial" }),
        event("error", { error: { type: "overloaded_error", message: "Overloaded" } }),
      ],
      text: "partial",
      kind: "server",
      retryable: true,
      message: "Stream error (overloaded_error): Overloaded",
    },
    {
      items: [event("error", { error: { type: "rate_limit_error", message: "Slow down" } })],
      kind: "rate-limit",
      retryable: true,
    },
    {
      items: [event("error", { error: { type: "invalid_request_error", message: "Bad" } })],
      kind: "bad-request",
      retryable: false,
    },
  ],

  // Before message_stop, with a tool call half streamed.
  truncated: [
    messageStart(),
    blockStart(0, { type: "tool_use", id: "toolu_1", name: "read", input: {} }),
    blockDelta(0, { type: "input_json_delta", partial_json: '{"pa' }),
  ],
  dropped: [messageStart(), PING],
  malformed: {
    items: [{ event: "message_start", data: "{not json" }],
    message: /^Cannot parse stream event: \{not json/,
  },

  unauthorized: {
    response: jsonResponse(401, {
      type: "error",
      error: { type: "authentication_error", message: `invalid x-api-key ${KEY}` },
    }),
    message: "HTTP 401: invalid x-api-key [redacted]",
  },
  rateLimited: {
    response: jsonResponse(
      429,
      { type: "error", error: { type: "rate_limit_error", message: "Too many" } },
      { "retry-after": "12" },
    ),
    retryAfterMs: 12_000,
  },
  // 529: overloaded.
  serverError: {
    response: jsonResponse(529, {
      type: "error",
      error: { type: "overloaded_error", message: "Overloaded" },
    }),
    message: "HTTP 529: Overloaded",
  },
  contextOverflow: {
    response: jsonResponse(400, {
      type: "error",
      error: {
        type: "invalid_request_error",
        message: "prompt is too long: 250000 tokens > 200000 maximum",
      },
    }),
  },
};

providerContract(ANTHROPIC_MESSAGES_WIRE);

// Request

Deno.test("AnthropicMessagesProvider posts its body with the tools", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse(textStream("ok")));
  const tools = [{
    name: "read_file",
    description: "Read a file",
    inputSchema: { type: "object", properties: { path: { type: "string" } } },
  }];
  await collect(provider(server), request({ tools }));
  assert.deepEqual(bodyOf(server), {
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

// Abort

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
