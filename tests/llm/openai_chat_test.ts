/**
 * `OpenAiChatProvider` against the fake LLM server: the provider contract with the
 * `/chat/completions` wire format, then what only this wire format does.
 *
 * @module
 */
import assert from "node:assert/strict";
import { buildOpenAiChatBody, OpenAiChatProvider } from "../../src/llm/openai_chat.ts";
import type { LlmMessage } from "../../src/llm/provider.ts";
import {
  type FakeLlmServer,
  jsonResponse,
  sse,
  type SseItem,
  startFakeLlmServer,
} from "../_helpers/fake_llm_server.ts";
import {
  bodyOf,
  callsOf,
  collect,
  finishOf,
  providerContract,
  type ProviderWire,
  request,
  textOf,
  USER,
} from "./_provider_contract.ts";

const KEY = "sk-test-key-0123456789";

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

/** The `/chat/completions` wire format, for the provider contract. */
const OPENAI_CHAT_WIRE: ProviderWire = {
  name: "OpenAiChatProvider",
  key: KEY,
  baseUrl: (url) => `${url}/v1/`,
  path: "/v1/chat/completions",
  make: (options) => new OpenAiChatProvider({ id: "test", ...options }),
  credentials: (key) => ({ authorization: `Bearer ${key}` }),
  wireHeaders: {},
  foreignCredentials: ["x-api-key"],
  extraHeaders: { "x-title": "acp-harness" },

  opening: (text) => [chunk({ content: text })],
  delta: (text) => chunk({ content: text }),
  closing: (reason = "stop") => [chunk({}, reason), DONE],
  answer: (text, reason = "stop") => [chunk({ content: text }, reason), DONE],

  textWithUsage: {
    items: [
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
    ],
    events: [
      { type: "text-delta", text: "Hel" },
      { type: "text-delta", text: "lo" },
      { type: "usage", usage: { input: 900, output: 40, cacheRead: 512, reasoning: 7 } },
      { type: "finish", reason: "stop" },
    ],
  },

  // Fragments joined by index.
  toolCalls: {
    items: [
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
    ],
    calls: [
      { id: "call_a", name: "read", arguments: '{"path":"a.txt"}' },
      { id: "call_b", name: "list", arguments: '{"path":"."}' },
    ],
  },

  // `reasoning_content` (DeepSeek), kept to be sent back.
  reasoning: {
    items: [
      chunk({ role: "assistant", reasoning_content: "" }),
      chunk({ reasoning_content: "Think" }),
      chunk({ reasoning_content: "ing." }),
      chunk({ content: "Answer" }),
      chunk({}, "stop"),
      DONE,
    ],
    events: [
      { type: "reasoning-delta", text: "Think" },
      { type: "reasoning-delta", text: "ing." },
      { type: "text-delta", text: "Answer" },
      { type: "provider-state", state: { reasoningContent: "Thinking." } },
      { type: "finish", reason: "stop" },
    ],
    reasoning: "Thinking.",
    text: "Answer",
    state: { reasoningContent: "Thinking." },
  },

  // DeepSeek wants its reasoning_content back on a tool-call turn.
  stateRoundTrip: {
    first: [
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
    ],
    request: {},
    result: { role: "tool", toolCallId: "call_1", name: "read", content: "hi", isError: false },
    secondBody: {
      messages: [
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
      ],
    },
  },

  finishReasons: [
    ["stop", "stop"],
    ["length", "max-tokens"],
    ["tool_calls", "tool-calls"],
    ["function_call", "tool-calls"],
    ["content_filter", "refusal"],
    ["eos", "stop"],
  ],

  streamErrors: [
    {
      items: [
        chunk({ content: "partial" }),
        {
          data: {
            error: { code: 502, message: "Provider returned error" },
            choices: [{ index: 0, delta: { content: "" }, finish_reason: "error" }],
          },
        },
        DONE,
      ],
      text: "partial",
      kind: "server",
      retryable: true,
      message: "Stream error: Provider returned error",
    },
    // Classified by its code.
    {
      items: [{ data: { error: { message: "Rate limit exceeded", type: "rate_limit_exceeded" } } }],
      kind: "rate-limit",
      retryable: true,
    },
  ],

  // Neither [DONE] nor a finish_reason.
  truncated: [chunk({ content: "cut" })],
  dropped: [chunk({ content: "a" })],
  malformed: {
    items: [{ data: "{not json" }, DONE],
    message: /^Cannot parse stream chunk: \{not json/,
  },

  unauthorized: {
    response: jsonResponse(401, {
      error: { message: `Incorrect API key provided: ${KEY}`, code: "invalid_api_key" },
    }),
    message: "HTTP 401: Incorrect API key provided: [redacted]",
  },
  rateLimited: {
    response: jsonResponse(429, {
      error: {
        message: "Rate limit reached for requests",
        type: "requests",
        code: "rate_limit_exceeded",
      },
    }, { "retry-after": "7" }),
    message: "HTTP 429: Rate limit reached for requests",
    retryAfterMs: 7000,
  },
  serverError: {
    response: jsonResponse(500, { error: { message: "The server had an error" } }),
  },
  contextOverflow: {
    response: jsonResponse(400, {
      error: {
        message: "This model's maximum context length is 8192 tokens.",
        code: "context_length_exceeded",
      },
    }),
  },
};

providerContract(OPENAI_CHAT_WIRE);

// Request

Deno.test("OpenAiChatProvider posts the streaming body with tools, reasoning effort and max tokens", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([chunk({ content: "ok" }, "stop"), DONE]));
  const tools = [{
    name: "read_file",
    description: "Read a file",
    inputSchema: { type: "object", properties: { path: { type: "string" } } },
  }];
  await collect(
    provider(server),
    request({ tools, reasoningEffort: "high", maxOutputTokens: 1000 }),
  );
  assert.deepEqual(bodyOf(server), {
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

Deno.test("OpenAiChatProvider streams a refusal as text and finishes with refusal", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([chunk({ refusal: "I can't help with that." }), chunk({}, "stop"), DONE]));
  const events = await collect(provider(server));
  assert.equal(textOf(events, "text-delta"), "I can't help with that.");
  assert.equal(finishOf(events).reason, "refusal");
});

Deno.test("OpenAiChatProvider accepts a finish_reason without [DONE]", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([chunk({ content: "ok" }, "stop")]));
  assert.equal(finishOf(await collect(provider(server))).reason, "stop");
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
