import { NodeHost } from "../../src/host/node_host.ts";
import { HostWorkspace } from "../../src/tools/host_workspace.ts";
import assert from "node:assert/strict";
import type { AuthorizeRequest } from "../../src/permission/authorization.ts";
import {
  type RetryPolicy,
  runTurn,
  TOOL_PARALLELISM,
  TurnError,
  type TurnOptions,
  type TurnSettings,
} from "../../src/agent/run_turn.ts";
import type { TurnEvent } from "../../src/agent/turn_event.ts";
import {
  type LlmEvent,
  type LlmMessage,
  type LlmProvider,
  type LlmRequest,
  type LlmStreamOptions,
  ProviderError,
} from "../../src/llm/provider.ts";
import type { ToolEffect } from "../../src/permission/policy.ts";
import type { Tool, ToolContext, ToolKind, ToolResult } from "../../src/tools/tool.ts";
import type { RelayedElicitation } from "../../src/tools/elicitation.ts";
import { ToolSet } from "../../src/tools/tool_set.ts";
import { updatePlanTool } from "../../src/tools/update_plan.ts";
import { abortListened } from "../_helpers/wait.ts";

/** One model step of the fake: fixed events, or a function of the request and signal. */
type FakeStep =
  | readonly LlmEvent[]
  | ((request: LlmRequest, signal: AbortSignal) => AsyncIterable<LlmEvent>);

/** A provider that replays steps and records what it was asked. */
class FakeProvider implements LlmProvider {
  readonly id: string;
  readonly requests: LlmRequest[] = [];
  readonly #steps: FakeStep[];

  constructor(steps: FakeStep[], id = "fake") {
    this.#steps = steps;
    this.id = id;
  }

  async *stream(request: LlmRequest, options: LlmStreamOptions): AsyncIterable<LlmEvent> {
    // Snapshot: the loop keeps appending to the history array it passed.
    this.requests.push({ ...request, messages: [...request.messages] });
    const step = this.#steps.shift();
    assert.ok(step, "the fake provider ran out of steps");
    if (typeof step === "function") {
      yield* step(request, options.signal);
      return;
    }
    for (const event of step) yield event;
  }
}

interface FakeToolCall {
  readonly input: unknown;
  readonly context: ToolContext;
}

/** A tool whose behaviour the test decides; records its calls. */
function fakeTool(
  run: (input: unknown, context: ToolContext) => Promise<ToolResult> = () =>
    Promise.resolve({ content: "file body", isError: false }),
  name = "read_file",
): Tool & { calls: FakeToolCall[] } {
  const calls: FakeToolCall[] = [];
  return {
    calls,
    name,
    description: "Reads a file",
    inputSchema: { type: "object", properties: { path: { type: "string" } } },
    kind: "read",
    effect: "read",
    title(input: unknown): string {
      return `Read ${(input as { path: string }).path}`;
    },
    execute(input: unknown, context: ToolContext): Promise<ToolResult> {
      calls.push({ input, context });
      return run(input, context);
    },
  };
}

/** The event with its random message ids replaced, for comparisons. */
function withoutMessageIds(event: TurnEvent): unknown {
  if (event.type === "message" || event.type === "thought") return { ...event, messageId: "-" };
  if (event.type === "history") {
    const { messageId: _message, thoughtId: _thought, ...rest } = event;
    return rest;
  }
  return event;
}

const USER: LlmMessage = { role: "user", content: [{ type: "text", text: "hi" }] };

function text(value: string): LlmEvent {
  return { type: "text-delta", text: value };
}

function reasoning(value: string): LlmEvent {
  return { type: "reasoning-delta", text: value };
}

function toolCall(id: string, name: string, args: string): LlmEvent {
  return { type: "tool-call", call: { id, name, arguments: args } };
}

function finish(reason: Extract<LlmEvent, { type: "finish" }>["reason"]): LlmEvent {
  return { type: "finish", reason };
}

interface Turn {
  readonly events: TurnEvent[];
  readonly options: TurnOptions;
}

/** A turn's own options, and the shared ones a test sets (they go into the turn's services). */
type TurnOverrides = Partial<Omit<TurnOptions, "services">> & Partial<TurnSettings> & {
  readonly retry?: RetryPolicy;
};

function turnOptions(
  provider: LlmProvider,
  { maxSteps = 10, stream = false, retry, ...overrides }: TurnOverrides = {},
): Turn {
  const events: TurnEvent[] = [];
  const options: TurnOptions = {
    services: {
      settings: { maxSteps, stream },
      files: new HostWorkspace(new NodeHost({})),
      ...(retry ? { retry } : {}),
    },
    sessionId: "session-1",
    provider,
    model: "model-x",
    system: "be brief",
    history: [USER],
    tools: [],
    cwd: "/work",
    roots: ["/work"],
    workspace: new HostWorkspace(new NodeHost({})),
    signal: new AbortController().signal,
    emit: (event) => {
      events.push(event);
    },
    ...overrides,
  };
  return { events, options };
}

function ofType<T extends TurnEvent["type"]>(
  events: readonly TurnEvent[],
  type: T,
): Array<Extract<TurnEvent, { type: T }>> {
  return events.filter((event): event is Extract<TurnEvent, { type: T }> => event.type === type);
}

Deno.test("runTurn() in committed mode records the step, then emits the thought and the message", async () => {
  const provider = new FakeProvider([[
    reasoning("think "),
    reasoning("hard"),
    text("Hello"),
    text(""),
    text(", world"),
    { type: "usage", usage: { input: 5, output: 3 } },
    finish("stop"),
  ]]);
  const { events, options } = turnOptions(provider);
  assert.equal(await runTurn(options), "end_turn");
  assert.deepEqual(events.map((event) => event.type), ["history", "thought", "message", "usage"]);
  const [thought] = ofType(events, "thought");
  const [message] = ofType(events, "message");
  assert.equal(thought?.text, "think hard");
  assert.equal(message?.text, "Hello, world");
  assert.notEqual(thought?.messageId, message?.messageId);
  assert.deepEqual(ofType(events, "history")[0]?.message, {
    role: "assistant",
    text: "Hello, world",
    reasoning: "think hard",
  });
  assert.deepEqual(ofType(events, "usage")[0]?.usage, { input: 5, output: 3 });
});

Deno.test("runTurn() sends the request the provider needs", async () => {
  const provider = new FakeProvider([[finish("stop")]]);
  const tool = fakeTool();
  const { options } = turnOptions(provider, { tools: [tool], reasoningEffort: "high" });
  await runTurn(options);
  assert.deepEqual(provider.requests, [{
    sessionId: "session-1",
    roots: ["/work"],
    model: "model-x",
    system: "be brief",
    messages: [USER],
    tools: [{ name: "read_file", description: "Reads a file", inputSchema: tool.inputSchema }],
    reasoningEffort: "high",
  }]);
  const plain = new FakeProvider([[finish("stop")]]);
  await runTurn(turnOptions(plain).options);
  assert.equal("reasoningEffort" in (plain.requests[0] ?? {}), false);
});

Deno.test("runTurn() does not emit empty thoughts or messages in committed mode", async () => {
  const provider = new FakeProvider([[text(""), finish("stop")]]);
  const { events, options } = turnOptions(provider);
  assert.equal(await runTurn(options), "end_turn");
  assert.deepEqual(events, [{ type: "history", message: { role: "assistant", text: "" } }]);
});

Deno.test("runTurn() gives each step new message ids", async () => {
  const provider = new FakeProvider([
    [
      reasoning("r1"),
      text("t1"),
      toolCall("c1", "read_file", '{"path":"a"}'),
      finish("tool-calls"),
    ],
    [reasoning("r2"), text("t2"), finish("stop")],
  ]);
  const { events, options } = turnOptions(provider, { tools: [fakeTool()] });
  assert.equal(await runTurn(options), "end_turn");
  const ids = [...ofType(events, "thought"), ...ofType(events, "message")].map((e) => e.messageId);
  assert.equal(ids.length, 4);
  assert.equal(new Set(ids).size, 4, "thought and message ids must all differ");
});

Deno.test("runTurn() in stream mode emits each delta with the step's message id", async () => {
  const provider = new FakeProvider([[
    reasoning("a"),
    reasoning(""),
    reasoning("b"),
    text("x"),
    text(""),
    text("y"),
    text("z"),
    finish("stop"),
  ]]);
  const { events, options } = turnOptions(provider, { stream: true });
  assert.equal(await runTurn(options), "end_turn");
  assert.deepEqual(events.map((event) => event.type), [
    "thought",
    "thought",
    "message",
    "message",
    "message",
    "history",
  ]);
  const thoughts = ofType(events, "thought");
  const messages = ofType(events, "message");
  assert.deepEqual(thoughts.map((event) => event.text), ["a", "b"]);
  assert.deepEqual(messages.map((event) => event.text), ["x", "y", "z"]);
  assert.equal(new Set(thoughts.map((event) => event.messageId)).size, 1);
  assert.equal(new Set(messages.map((event) => event.messageId)).size, 1);
  assert.notEqual(thoughts[0]?.messageId, messages[0]?.messageId);
  assert.deepEqual(ofType(events, "history")[0]?.message, {
    role: "assistant",
    text: "xyz",
    reasoning: "ab",
  });
});

Deno.test("runTurn() keeps provider state on the assistant history message", async () => {
  const provider = new FakeProvider([[
    text("ok"),
    { type: "provider-state", state: { signature: "sig" } },
    finish("stop"),
  ]]);
  const { events, options } = turnOptions(provider);
  await runTurn(options);
  assert.deepEqual(ofType(events, "history")[0]?.message, {
    role: "assistant",
    text: "ok",
    providerState: { signature: "sig" },
    provider: "fake",
  });
});

Deno.test("runTurn() runs a tool call and feeds its result to the next step", async () => {
  const provider = new FakeProvider([
    [text("Reading"), toolCall("c1", "read_file", '{"path":"a.txt"}'), finish("tool-calls")],
    [text("Done"), finish("stop")],
  ]);
  const tool = fakeTool();
  const controller = new AbortController();
  const { events, options } = turnOptions(provider, {
    tools: [tool],
    roots: ["/work", "/extra"],
    signal: controller.signal,
  });
  assert.equal(await runTurn(options), "end_turn");
  const assistant: LlmMessage = {
    role: "assistant",
    text: "Reading",
    toolCalls: [{ id: "c1", name: "read_file", arguments: '{"path":"a.txt"}' }],
  };
  const toolMessage: LlmMessage = {
    role: "tool",
    toolCallId: "c1",
    name: "read_file",
    content: "file body",
    isError: false,
  };
  const withoutIds = events.map(withoutMessageIds);
  assert.deepEqual(withoutIds, [
    { type: "history", message: assistant },
    { type: "message", messageId: "-", text: "Reading" },
    {
      type: "tool-call",
      toolCallId: "c1",
      name: "read_file",
      title: "Read a.txt",
      kind: "read",
      rawInput: { path: "a.txt" },
      locations: [],
    },
    { type: "tool-call-update", toolCallId: "c1", status: "in_progress" },
    { type: "tool-call-update", toolCallId: "c1", status: "completed", text: "file body" },
    { type: "history", message: toolMessage },
    { type: "history", message: { role: "assistant", text: "Done" } },
    { type: "message", messageId: "-", text: "Done" },
  ]);
  assert.equal(tool.calls.length, 1);
  assert.deepEqual(tool.calls[0]?.input, { path: "a.txt" });
  assert.equal(tool.calls[0]?.context.sessionId, "session-1");
  assert.deepEqual(tool.calls[0]?.context.roots, ["/work", "/extra"]);
  assert.equal(tool.calls[0]?.context.signal, controller.signal);
  assert.deepEqual(provider.requests[1]?.messages, [USER, assistant, toolMessage]);
});

Deno.test("runTurn() announces every tool call of a step in order before any of them runs", async () => {
  const provider = new FakeProvider([
    [
      toolCall("c1", "read_file", '{"path":"a"}'),
      toolCall("c2", "read_file", '{"path":"b"}'),
      toolCall("c3", "read_file", '{"path":"c"}'),
      finish("tool-calls"),
    ],
    [finish("stop")],
  ]);
  const seenAtStart: string[][] = [];
  const events: TurnEvent[] = [];
  const tool = fakeTool((input) => {
    seenAtStart.push(ofType(events, "tool-call").map((event) => event.toolCallId));
    return Promise.resolve({
      content: `body of ${(input as { path: string }).path}`,
      isError: false,
    });
  });
  const { options } = turnOptions(provider, {
    tools: [tool],
    emit: (event) => {
      events.push(event);
    },
  });
  assert.equal(await runTurn(options), "end_turn");
  assert.deepEqual(seenAtStart, [["c1", "c2", "c3"], ["c1", "c2", "c3"], ["c1", "c2", "c3"]]);
  const toolEvents = events.filter((event) =>
    event.type === "tool-call" || event.type === "tool-call-update"
  );
  assert.deepEqual(
    toolEvents.slice(0, 3).map((event) => [event.type, event.toolCallId]),
    [["tool-call", "c1"], ["tool-call", "c2"], ["tool-call", "c3"]],
  );
  // Each call gets in_progress then completed with its own result.
  for (const [id, body] of [["c1", "body of a"], ["c2", "body of b"], ["c3", "body of c"]]) {
    assert.deepEqual(
      ofType(events, "tool-call-update").filter((event) => event.toolCallId === id)
        .map((event) => [event.status, event.text]),
      [["in_progress", undefined], ["completed", body]],
      id,
    );
  }
  assert.deepEqual(
    provider.requests[1]?.messages.slice(2).map((m) => m.role === "tool" && m.content),
    ["body of a", "body of b", "body of c"],
  );
});

Deno.test("runTurn() continues after tool calls even when the step finished with stop", async () => {
  const provider = new FakeProvider([
    [toolCall("c1", "read_file", '{"path":"a"}'), finish("stop")],
    [text("after"), finish("stop")],
  ]);
  const { options } = turnOptions(provider, { tools: [fakeTool()] });
  assert.equal(await runTurn(options), "end_turn");
  assert.equal(provider.requests.length, 2);
});

Deno.test("runTurn() reports a tool's error result as failed", async () => {
  const provider = new FakeProvider([
    [toolCall("c1", "read_file", '{"path":"missing"}'), finish("tool-calls")],
    [finish("stop")],
  ]);
  const tool = fakeTool(() => Promise.resolve({ content: "No such file", isError: true }));
  const { events, options } = turnOptions(provider, { tools: [tool] });
  assert.equal(await runTurn(options), "end_turn");
  assert.deepEqual(ofType(events, "tool-call-update").at(-1), {
    type: "tool-call-update",
    toolCallId: "c1",
    status: "failed",
    text: "No such file",
  });
  assert.deepEqual(provider.requests[1]?.messages.at(-1), {
    role: "tool",
    toolCallId: "c1",
    name: "read_file",
    content: "No such file",
    isError: true,
  });
});

Deno.test("runTurn() emits a tool's plan right after its call's final update, and no plan for a failure", async () => {
  const plan = '{"entries":[{"content":"Fix it","status":"in_progress"}]}';
  const provider = new FakeProvider([
    [
      toolCall("p1", "update_plan", plan),
      toolCall("p2", "update_plan", '{"entries":[{"content":"Fix it","status":"done"}]}'),
      finish("tool-calls"),
    ],
    [finish("stop")],
  ]);
  const { events, options } = turnOptions(provider, { tools: [updatePlanTool] });
  assert.equal(await runTurn(options), "end_turn");
  const ends = events.flatMap((event): unknown[] => {
    if (event.type === "plan") return [event];
    if (event.type !== "tool-call-update" || event.status === "in_progress") return [];
    return [[event.toolCallId, event.status]];
  });
  assert.deepEqual(ends, [
    ["p1", "completed"],
    {
      type: "plan",
      entries: [{ content: "Fix it", status: "in_progress", priority: "medium" }],
    },
    ["p2", "failed"],
  ]);
  // The model sees the call and its short result in the history, as for any tool.
  assert.deepEqual(provider.requests[1]?.messages.at(-2), {
    role: "tool",
    toolCallId: "p1",
    name: "update_plan",
    content: "Plan updated: 1 entry (0 completed, 1 in progress, 0 pending).",
    isError: false,
  });
});

Deno.test("runTurn() turns a throwing tool into a failed result", async () => {
  const provider = new FakeProvider([
    [toolCall("c1", "read_file", '{"path":"a"}'), finish("tool-calls")],
    [text("recovered"), finish("stop")],
  ]);
  const tool = fakeTool(() => Promise.reject(new Error("disk on fire")));
  const { events, options } = turnOptions(provider, { tools: [tool] });
  assert.equal(await runTurn(options), "end_turn");
  const updates = ofType(events, "tool-call-update");
  assert.deepEqual(updates.map((event) => event.status), ["in_progress", "failed"]);
  assert.match(updates[1]?.text ?? "", /disk on fire/);
  const fed = provider.requests[1]?.messages.at(-1);
  assert.ok(fed?.role === "tool");
  assert.equal(fed.isError, true);
  assert.match(fed.content, /disk on fire/);
});

Deno.test("runTurn() answers an unknown tool with a failed result and continues", async () => {
  const provider = new FakeProvider([
    [toolCall("c1", "nope", '{"x":1}'), finish("tool-calls")],
    [text("sorry"), finish("stop")],
  ]);
  const tool = fakeTool();
  const { events, options } = turnOptions(provider, { tools: [tool] });
  assert.equal(await runTurn(options), "end_turn");
  assert.deepEqual(ofType(events, "tool-call"), [{
    type: "tool-call",
    toolCallId: "c1",
    name: "nope",
    title: "nope",
    kind: "other",
    rawInput: { x: 1 },
    locations: [],
  }]);
  assert.deepEqual(ofType(events, "tool-call-update"), [{
    type: "tool-call-update",
    toolCallId: "c1",
    status: "failed",
    text: 'Unknown tool "nope"',
  }]);
  assert.equal(tool.calls.length, 0);
  assert.deepEqual(provider.requests[1]?.messages.at(-1), {
    role: "tool",
    toolCallId: "c1",
    name: "nope",
    content: 'Unknown tool "nope"',
    isError: true,
  });
  assert.equal(ofType(events, "message").at(-1)?.text, "sorry");
});

Deno.test("runTurn() answers malformed JSON arguments with a failed result and continues", async () => {
  const provider = new FakeProvider([
    [toolCall("c1", "read_file", '{"path": "a'), finish("tool-calls")],
    [text("retrying"), finish("stop")],
  ]);
  const tool = fakeTool();
  const { events, options } = turnOptions(provider, { tools: [tool] });
  assert.equal(await runTurn(options), "end_turn");
  const [announced] = ofType(events, "tool-call");
  assert.equal(announced?.rawInput, '{"path": "a');
  assert.equal(announced?.kind, "read");
  const updates = ofType(events, "tool-call-update");
  assert.deepEqual(updates.map((event) => event.status), ["failed"]);
  assert.match(updates[0]?.text ?? "", /not valid JSON/);
  assert.equal(tool.calls.length, 0, "the tool must not run on malformed arguments");
  const fed = provider.requests[1]?.messages.at(-1);
  assert.ok(fed?.role === "tool");
  assert.equal(fed.isError, true);
  assert.match(fed.content, /not valid JSON: \{"path": "a/);
});

Deno.test("runTurn() treats empty arguments as an empty object", async () => {
  const provider = new FakeProvider([
    [toolCall("c1", "read_file", "  "), finish("tool-calls")],
    [finish("stop")],
  ]);
  const tool = fakeTool();
  tool.title = () => "Read everything";
  const { events, options } = turnOptions(provider, { tools: [tool] });
  await runTurn(options);
  assert.deepEqual(tool.calls[0]?.input, {});
  assert.deepEqual(ofType(events, "tool-call")[0]?.rawInput, {});
});

Deno.test("runTurn() falls back to the tool name when title() throws", async () => {
  const provider = new FakeProvider([
    [toolCall("c1", "read_file", "{}"), finish("tool-calls")],
    [finish("stop")],
  ]);
  const tool = fakeTool();
  tool.title = () => {
    throw new Error("no path");
  };
  const { events, options } = turnOptions(provider, { tools: [tool] });
  await runTurn(options);
  assert.equal(ofType(events, "tool-call")[0]?.title, "read_file");
  assert.equal(ofType(events, "tool-call-update").at(-1)?.status, "completed");
});

Deno.test("runTurn() stops with max_turn_requests after maxSteps model requests", async () => {
  const looping = (): LlmEvent[] => [toolCall("c", "read_file", "{}"), finish("tool-calls")];
  const provider = new FakeProvider([looping(), looping(), looping(), looping()]);
  const tool = fakeTool();
  const { options } = turnOptions(provider, { tools: [tool], maxSteps: 2 });
  assert.equal(await runTurn(options), "max_turn_requests");
  assert.equal(provider.requests.length, 2);
  assert.equal(tool.calls.length, 2, "the last step's tool calls still run");

  const idle = new FakeProvider([]);
  assert.equal(await runTurn(turnOptions(idle, { maxSteps: 0 }).options), "max_turn_requests");
  assert.equal(idle.requests.length, 0);
});

Deno.test("runTurn() maps max-tokens to max_tokens and refusal to refusal", async () => {
  const cut = new FakeProvider([[text("trunc"), finish("max-tokens")]]);
  const cutTurn = turnOptions(cut);
  assert.equal(await runTurn(cutTurn.options), "max_tokens");
  assert.equal(ofType(cutTurn.events, "message")[0]?.text, "trunc");

  const refused = new FakeProvider([[text("I can't"), finish("refusal")]]);
  assert.equal(await runTurn(turnOptions(refused).options), "refusal");
});

Deno.test("runTurn() stops with max_tokens after running a truncated step's tool calls", async () => {
  const provider = new FakeProvider([[toolCall("c1", "read_file", "{}"), finish("max-tokens")]]);
  const tool = fakeTool();
  const { options } = turnOptions(provider, { tools: [tool] });
  assert.equal(await runTurn(options), "max_tokens");
  assert.equal(tool.calls.length, 1);
  assert.equal(provider.requests.length, 1);
});

Deno.test("runTurn() rejects with TurnError naming provider and model on a provider error", async () => {
  const error = new ProviderError("quota exhausted", { kind: "quota", retryable: false });
  const provider = new FakeProvider([
    [text("first"), toolCall("c1", "read_file", "{}"), finish("tool-calls")],
    [reasoning("hmm"), text("partial"), { type: "usage", usage: { input: 1, output: 1 } }, {
      type: "finish",
      reason: "error",
      error,
    }],
  ]);
  const { events, options } = turnOptions(provider, { tools: [fakeTool()] });
  await assert.rejects(runTurn(options), (thrown: unknown) => {
    assert.ok(thrown instanceof TurnError);
    assert.equal(thrown.name, "TurnError");
    assert.match(thrown.message, /fake\/model-x/);
    assert.match(thrown.message, /quota exhausted/);
    assert.equal(thrown.providerError, error);
    assert.equal(thrown.cause, error);
    return true;
  });
  // Everything after the first step's tool result belongs to the failed step: nothing of it.
  const last = events.at(-1);
  assert.ok(last?.type === "history" && last.message.role === "tool");
  assert.deepEqual(ofType(events, "message").map((event) => event.text), ["first"]);
  assert.deepEqual(ofType(events, "thought"), []);
  assert.deepEqual(ofType(events, "usage"), []);
});

Deno.test("runTurn() rejects with TurnError when the stream ends without finish", async () => {
  const provider = new FakeProvider([[text("dangling")]]);
  const { events, options } = turnOptions(provider);
  await assert.rejects(runTurn(options), (thrown: unknown) => {
    assert.ok(thrown instanceof TurnError);
    assert.match(thrown.message, /fake\/model-x/);
    assert.equal(thrown.providerError, undefined);
    return true;
  });
  assert.deepEqual(events, []);
});

Deno.test("runTurn() returns cancelled without a model request when already aborted", async () => {
  const controller = new AbortController();
  controller.abort();
  const provider = new FakeProvider([]);
  const { events, options } = turnOptions(provider, { signal: controller.signal });
  assert.equal(await runTurn(options), "cancelled");
  assert.equal(provider.requests.length, 0);
  assert.deepEqual(events, []);
});

Deno.test("runTurn() returns cancelled when the model step ends aborted", async () => {
  const controller = new AbortController();
  const provider = new FakeProvider([
    async function* (_request, signal) {
      yield text("part");
      controller.abort();
      yield signal.aborted ? finish("aborted") : finish("stop");
    },
  ]);
  const { events, options } = turnOptions(provider, { signal: controller.signal });
  assert.equal(await runTurn(options), "cancelled");
  assert.deepEqual(events, [], "nothing of an aborted step is committed");
});

Deno.test("runTurn() returns cancelled, not an error, when a failure follows the abort", async () => {
  const controller = new AbortController();
  const provider = new FakeProvider([
    async function* () {
      controller.abort();
      yield {
        type: "finish",
        reason: "error",
        error: new ProviderError("socket closed", { kind: "transport", retryable: true }),
      } satisfies LlmEvent;
    },
  ]);
  const { options } = turnOptions(provider, { signal: controller.signal });
  assert.equal(await runTurn(options), "cancelled");
});

Deno.test("runTurn() returns cancelled when the stream ends early after an abort", async () => {
  const controller = new AbortController();
  const provider = new FakeProvider([
    async function* () {
      yield text("x");
      controller.abort();
    },
  ]);
  const { options } = turnOptions(provider, { signal: controller.signal, stream: true });
  assert.equal(await runTurn(options), "cancelled");
});

Deno.test("runTurn() stops relaying deltas once aborted in stream mode", async () => {
  const controller = new AbortController();
  const provider = new FakeProvider([[
    text("a"),
    { type: "usage", usage: { input: 0, output: 0 } },
    text("b"),
    finish("aborted"),
  ]]);
  const events: TurnEvent[] = [];
  const { options } = turnOptions(provider, {
    signal: controller.signal,
    stream: true,
    emit: (event) => {
      events.push(event);
      if (event.type === "message") controller.abort();
    },
  });
  assert.equal(await runTurn(options), "cancelled");
  assert.deepEqual(events.map((event) => event.type === "message" && event.text), ["a"]);
});

Deno.test("runTurn() passes the abort to a running tool and then returns cancelled", async () => {
  const controller = new AbortController();
  const provider = new FakeProvider([
    [toolCall("c1", "slow", "{}"), toolCall("c2", "slow", "{}"), finish("tool-calls")],
    [text("never"), finish("stop")],
  ]);
  const tool = fakeTool(async (_input, context) => {
    controller.abort();
    assert.equal(context.signal.aborted, true);
    await Promise.resolve();
    return { content: "stopped", isError: true };
  }, "slow");
  const { events, options } = turnOptions(provider, { tools: [tool], signal: controller.signal });
  assert.equal(await runTurn(options), "cancelled");
  assert.equal(provider.requests.length, 1, "no model request after the abort");
  assert.equal(tool.calls.length, 1, "no further tool runs after the abort");
  // Every announced tool call still gets a final update (in completion order: c2 never starts,
  // so it may finish first).
  assert.deepEqual(
    ofType(events, "tool-call-update").filter((event) => event.status !== "in_progress")
      .map((event) => [event.toolCallId, event.status]).sort(),
    [["c1", "failed"], ["c2", "failed"]],
  );
  assert.deepEqual(
    ofType(events, "tool-call-update").find((event) => event.toolCallId === "c2")?.text,
    "Tool call cancelled",
  );
  // The results still reach the history in call order.
  assert.deepEqual(
    options.history.filter((message) => message.role === "tool").map((m) => m.toolCallId),
    ["c1", "c2"],
  );
});

Deno.test("runTurn() waits on the emitter's backpressure before relaying the next delta", async () => {
  const provider = new FakeProvider([[reasoning("r"), text("t"), finish("stop")]]);
  let pending = false;
  const order: string[] = [];
  const { options } = turnOptions(provider, {
    stream: true,
    emit: (event) => {
      if (event.type === "thought" || event.type === "message") {
        assert.equal(pending, false, "a delta was relayed while the client was behind");
        pending = true;
        order.push(event.type);
        return new Promise<void>((resolve) =>
          setTimeout(() => {
            pending = false;
            resolve();
          }, 1)
        );
      }
      order.push(event.type);
      return undefined;
    },
  });
  assert.equal(await runTurn(options), "end_turn");
  assert.deepEqual(order, ["thought", "message", "history"]);
});

// Tool locations

Deno.test("runTurn() announces a tool call with the locations the tool reports", async () => {
  const provider = new FakeProvider([
    [toolCall("c1", "read_file", '{"path":"a.txt"}'), finish("tool-calls")],
    [finish("stop")],
  ]);
  const tool = fakeTool();
  const seen: Array<[unknown, string]> = [];
  const withLocations: Tool = {
    ...tool,
    locations(input: unknown, cwd: string) {
      seen.push([input, cwd]);
      return [{ path: `${cwd}/${(input as { path: string }).path}`, line: 3 }];
    },
  };
  const { events, options } = turnOptions(provider, { tools: [withLocations] });
  assert.equal(await runTurn(options), "end_turn");
  assert.deepEqual(seen, [[{ path: "a.txt" }, "/work"]]);
  assert.deepEqual(ofType(events, "tool-call")[0]?.locations, [{ path: "/work/a.txt", line: 3 }]);
});

Deno.test("runTurn() announces no locations when locations() throws", async () => {
  const provider = new FakeProvider([
    [toolCall("c1", "read_file", '{"path":"a.txt"}'), finish("tool-calls")],
    [finish("stop")],
  ]);
  const tool: Tool = {
    ...fakeTool(),
    locations(): never {
      throw new Error("bad input");
    },
  };
  const { events, options } = turnOptions(provider, { tools: [tool] });
  assert.equal(await runTurn(options), "end_turn");
  const [announced] = ofType(events, "tool-call");
  assert.equal(announced?.title, "Read a.txt");
  assert.deepEqual(announced?.locations, []);
  assert.equal(ofType(events, "tool-call-update").at(-1)?.status, "completed");
});

// Retries

function failure(
  message: string,
  options: { readonly retryable: boolean; readonly retryAfterMs?: number },
): Extract<LlmEvent, { type: "finish" }> {
  return {
    type: "finish",
    reason: "error",
    error: new ProviderError(message, {
      kind: options.retryable ? "server" : "bad-request",
      ...options,
    }),
  };
}

/** Runs `fn` with Math.random() fixed, so the retry jitter is known. */
async function withRandom<T>(value: number, fn: () => Promise<T>): Promise<T> {
  const original = Math.random;
  Math.random = () => value;
  try {
    return await fn();
  } finally {
    Math.random = original;
  }
}

Deno.test("runTurn() retries a retryable provider error with doubling backoff", async () => {
  const provider = new FakeProvider([
    [text("lost"), failure("overloaded", { retryable: true })],
    [failure("still overloaded", { retryable: true })],
    [text("ok"), finish("stop")],
  ]);
  const retries: Array<[string, number, number]> = [];
  const { events, options } = turnOptions(provider, {
    retry: { attempts: 3, baseDelayMs: 2, maxDelayMs: 100 },
    onRetry: (error, attempt, delayMs) => retries.push([error.message, attempt, delayMs]),
  });
  // Math.random() = 0.5 means no jitter.
  assert.equal(await withRandom(0.5, () => runTurn(options)), "end_turn");
  assert.equal(provider.requests.length, 3);
  assert.deepEqual(retries, [["overloaded", 1, 2], ["still overloaded", 2, 4]]);
  for (const request of provider.requests) assert.deepEqual(request.messages, [USER]);
  assert.deepEqual(ofType(events, "message").map((event) => event.text), ["ok"]);
});

Deno.test("runTurn() caps the backoff at maxDelayMs", async () => {
  const provider = new FakeProvider([
    [failure("a", { retryable: true })],
    [failure("b", { retryable: true })],
    [failure("c", { retryable: true })],
    [finish("stop")],
  ]);
  const delays: number[] = [];
  const { options } = turnOptions(provider, {
    retry: { attempts: 4, baseDelayMs: 2, maxDelayMs: 3 },
    onRetry: (_error, _attempt, delayMs) => delays.push(delayMs),
  });
  assert.equal(await withRandom(0.5, () => runTurn(options)), "end_turn");
  assert.deepEqual(delays, [2, 3, 3]);
});

Deno.test("runTurn() jitters the backoff by at most 25%", async () => {
  for (const random of [0, 0.25, 0.75, 0.9999]) {
    const provider = new FakeProvider([[failure("x", { retryable: true })], [finish("stop")]]);
    const delays: number[] = [];
    const { options } = turnOptions(provider, {
      retry: { attempts: 2, baseDelayMs: 8, maxDelayMs: 1000 },
      onRetry: (_error, _attempt, delayMs) => delays.push(delayMs),
    });
    assert.equal(await withRandom(random, () => runTurn(options)), "end_turn");
    assert.equal(delays.length, 1);
    const [delay = NaN] = delays;
    assert.ok(delay >= 6 && delay <= 10, `delay ${delay} for random ${random}`);
  }
});

Deno.test("runTurn() never waits longer than maxDelayMs between attempts", async () => {
  // RetryPolicy.maxDelayMs is documented as the longest wait between attempts.
  const provider = new FakeProvider([
    [failure("a", { retryable: true })],
    [failure("b", { retryable: true })],
    [finish("stop")],
  ]);
  const delays: number[] = [];
  const { options } = turnOptions(provider, {
    retry: { attempts: 3, baseDelayMs: 8, maxDelayMs: 8 },
    onRetry: (_error, _attempt, delayMs) => delays.push(delayMs),
  });
  assert.equal(await withRandom(0.9999, () => runTurn(options)), "end_turn");
  assert.equal(delays.length, 2);
  for (const delay of delays) assert.ok(delay <= 8, `waited ${delay} ms with maxDelayMs 8`);
});

Deno.test("runTurn() honours retryAfterMs, even beyond maxDelayMs", async () => {
  const provider = new FakeProvider([
    [failure("slow down", { retryable: true, retryAfterMs: 30 })],
    [text("ok"), finish("stop")],
  ]);
  const retries: Array<[number, number]> = [];
  const { options } = turnOptions(provider, {
    retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 5 },
    onRetry: (_error, attempt, delayMs) => retries.push([attempt, delayMs]),
  });
  const started = performance.now();
  assert.equal(await runTurn(options), "end_turn");
  const elapsed = performance.now() - started;
  assert.deepEqual(retries, [[1, 30]]);
  assert.ok(elapsed >= 25, `retried after ${elapsed} ms, before the requested 30 ms`);
  assert.equal(provider.requests.length, 2);
});

Deno.test("runTurn() passes the error, attempt number and delay to onRetry", async () => {
  const first = failure("first", { retryable: true });
  const provider = new FakeProvider([[first], [finish("stop")]]);
  const calls: Array<[unknown, number, number]> = [];
  const { options } = turnOptions(provider, {
    retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
    onRetry: (error, attempt, delayMs) => calls.push([error, attempt, delayMs]),
  });
  assert.equal(await withRandom(0.5, () => runTurn(options)), "end_turn");
  assert.equal(calls.length, 1);
  assert.equal(calls[0]?.[0], first.error);
  assert.equal(calls[0]?.[1], 1);
  assert.equal(calls[0]?.[2], 1);
});

Deno.test("runTurn() does not retry a non-retryable provider error", async () => {
  const provider = new FakeProvider([[failure("bad request", { retryable: false })]]);
  let retried = 0;
  const { options } = turnOptions(provider, {
    retry: { attempts: 4, baseDelayMs: 1, maxDelayMs: 1 },
    onRetry: () => retried++,
  });
  await assert.rejects(runTurn(options), (thrown: unknown) => {
    assert.ok(thrown instanceof TurnError);
    assert.match(thrown.message, /bad request/);
    assert.doesNotMatch(thrown.message, /attempts/);
    return true;
  });
  assert.equal(provider.requests.length, 1);
  assert.equal(retried, 0);
});

Deno.test("runTurn() does not retry a finish error without a ProviderError", async () => {
  const provider = new FakeProvider([[{ type: "finish", reason: "error" }]]);
  const { options } = turnOptions(provider, {
    retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 1 },
  });
  await assert.rejects(runTurn(options), (thrown: unknown) => {
    assert.ok(thrown instanceof TurnError);
    assert.match(thrown.message, /fake\/model-x/);
    assert.match(thrown.message, /unknown error/);
    assert.equal(thrown.providerError, undefined);
    return true;
  });
  assert.equal(provider.requests.length, 1);
});

Deno.test("runTurn() gives up after retry.attempts and says how many attempts it made", async () => {
  const last = failure("third", { retryable: true });
  const provider = new FakeProvider([
    [failure("first", { retryable: true })],
    [failure("second", { retryable: true })],
    [last],
    [text("never"), finish("stop")],
  ]);
  const attempts: number[] = [];
  const { events, options } = turnOptions(provider, {
    retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 1 },
    onRetry: (_error, attempt) => attempts.push(attempt),
  });
  await assert.rejects(runTurn(options), (thrown: unknown) => {
    assert.ok(thrown instanceof TurnError);
    assert.match(thrown.message, /fake\/model-x/);
    assert.match(thrown.message, /after 3 attempts/);
    assert.match(thrown.message, /third/);
    assert.equal(thrown.providerError, last.error);
    return true;
  });
  assert.equal(provider.requests.length, 3);
  assert.deepEqual(attempts, [1, 2]);
  assert.deepEqual(events, []);
});

Deno.test("runTurn() uses the default retry policy when none is given", async () => {
  // Default base delay: 500 ms ±25% before the second attempt. The onRetry hook aborts, so the
  // test does not wait for it.
  const provider = new FakeProvider([[failure("once", { retryable: true })], [finish("stop")]]);
  const controller = new AbortController();
  const delays: number[] = [];
  const { options } = turnOptions(provider, {
    signal: controller.signal,
    onRetry: (_error, _attempt, delayMs) => {
      delays.push(delayMs);
      controller.abort();
    },
  });
  assert.equal(await runTurn(options), "cancelled");
  assert.equal(delays.length, 1);
  const [delay = NaN] = delays;
  assert.ok(delay >= 375 && delay <= 625, `default first backoff was ${delay} ms`);
  assert.equal(provider.requests.length, 1);
});

Deno.test("runTurn() in committed mode emits nothing of a failed attempt", async () => {
  const tool = fakeTool();
  const provider = new FakeProvider([
    [
      reasoning("lost thought"),
      text("lost text"),
      toolCall("c1", "read_file", "{}"),
      { type: "provider-state", state: "lost" },
      { type: "usage", usage: { input: 9, output: 9 } },
      failure("dropped", { retryable: true }),
    ],
    [text("kept"), finish("stop")],
  ]);
  const { events, options } = turnOptions(provider, {
    tools: [tool],
    retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
  });
  assert.equal(await runTurn(options), "end_turn");
  const withoutIds = events.map(withoutMessageIds);
  assert.deepEqual(withoutIds, [
    { type: "history", message: { role: "assistant", text: "kept" } },
    { type: "message", messageId: "-", text: "kept" },
  ]);
  assert.equal(tool.calls.length, 0, "a failed attempt's tool calls never run");
  assert.deepEqual(options.history, [USER, { role: "assistant", text: "kept" }]);
  assert.deepEqual(provider.requests[1]?.messages, [USER]);
});

Deno.test("runTurn() in stream mode keeps a failed attempt out of the history", async () => {
  const provider = new FakeProvider([
    [text("lost"), failure("dropped", { retryable: true })],
    [text("kept"), finish("stop")],
  ]);
  const { events, options } = turnOptions(provider, {
    stream: true,
    retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
  });
  assert.equal(await runTurn(options), "end_turn");
  assert.deepEqual(ofType(events, "history").map((event) => event.message), [
    { role: "assistant", text: "kept" },
  ]);
  assert.deepEqual(provider.requests[1]?.messages, [USER]);
});

Deno.test("runTurn() returns cancelled when aborted during the backoff, leaving no timer", async () => {
  const controller = new AbortController();
  // A Retry-After of an hour is capped at 60 s; the abort must end the wait long before that.
  const provider = new FakeProvider([
    [failure("busy", { retryable: true, retryAfterMs: 3_600_000 })],
    [text("never"), finish("stop")],
  ]);
  let delay: number | undefined;
  const { events, options } = turnOptions(provider, {
    signal: controller.signal,
    retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 1 },
    onRetry: (_error, _attempt, delayMs) => {
      delay = delayMs;
      // Abort once the backoff that follows has started waiting on the signal.
      void abortListened(controller.signal).then(() => controller.abort());
    },
  });
  const started = performance.now();
  assert.equal(await runTurn(options), "cancelled");
  assert.ok(performance.now() - started < 5_000, "the backoff was not cut short");
  assert.equal(delay, 60_000);
  assert.equal(provider.requests.length, 1);
  assert.deepEqual(events, []);
  // Deno's op sanitizer fails this test if the 60 s backoff timer is still pending.
});

// Authorization

function effectTool(
  name: string,
  effect: ToolEffect,
  kind: ToolKind,
  run?: (input: unknown, context: ToolContext) => Promise<ToolResult>,
): Tool & { calls: FakeToolCall[] } {
  const tool = fakeTool(run, name);
  return Object.assign(tool, { effect, kind, title: () => `${name} call` });
}

Deno.test("runTurn() does not run a tool call that authorize denies", async () => {
  const provider = new FakeProvider([
    [toolCall("c1", "write_file", '{"path":"a"}'), finish("tool-calls")],
    [text("understood"), finish("stop")],
  ]);
  const tool = effectTool("write_file", "write", "edit");
  const { events, options } = turnOptions(provider, {
    tools: [tool],
    authorize: () => Promise.resolve({ allowed: false, reason: "The user refused write_file." }),
  });
  assert.equal(await runTurn(options), "end_turn");
  assert.equal(tool.calls.length, 0);
  assert.deepEqual(ofType(events, "tool-call-update"), [{
    type: "tool-call-update",
    toolCallId: "c1",
    status: "failed",
    text: "The user refused write_file.",
    denied: { reason: "The user refused write_file." },
  }]);
  assert.deepEqual(provider.requests[1]?.messages.at(-1), {
    role: "tool",
    toolCallId: "c1",
    name: "write_file",
    content: "The user refused write_file.",
    isError: true,
  });
});

Deno.test("runTurn() runs a tool call that authorize allows", async () => {
  const provider = new FakeProvider([
    [toolCall("c1", "write_file", '{"path":"a"}'), finish("tool-calls")],
    [finish("stop")],
  ]);
  const tool = effectTool(
    "write_file",
    "write",
    "edit",
    () => Promise.resolve({ content: "written", isError: false }),
  );
  const { events, options } = turnOptions(provider, {
    tools: [tool],
    authorize: () => Promise.resolve({ allowed: true }),
  });
  assert.equal(await runTurn(options), "end_turn");
  assert.equal(tool.calls.length, 1);
  assert.deepEqual(
    ofType(events, "tool-call-update").map((event) => [event.status, event.text]),
    [["in_progress", undefined], ["completed", "written"]],
  );
});

Deno.test("runTurn() asks authorize with the call's id, title, input, locations and signal", async () => {
  const provider = new FakeProvider([
    [toolCall("c7", "read_file", '{"path":"a.txt"}'), finish("tool-calls")],
    [finish("stop")],
  ]);
  const tool: Tool = {
    ...fakeTool(),
    locations: (input: unknown, cwd: string) => [
      { path: `${cwd}/${(input as { path: string }).path}` },
    ],
  };
  const controller = new AbortController();
  const requests: AuthorizeRequest[] = [];
  const events: TurnEvent[] = [];
  let announcedBefore = false;
  const { options } = turnOptions(provider, {
    tools: [tool],
    signal: controller.signal,
    emit: (event) => {
      events.push(event);
    },
    authorize: (request) => {
      requests.push(request);
      announcedBefore = ofType(events, "tool-call").some((event) => event.toolCallId === "c7");
      return Promise.resolve({ allowed: true });
    },
  });
  assert.equal(await runTurn(options), "end_turn");
  assert.equal(requests.length, 1);
  const [request] = requests;
  assert.ok(request);
  assert.equal(request.tool, tool);
  assert.equal(request.toolCallId, "c7");
  assert.equal(request.title, "Read a.txt");
  assert.deepEqual(request.rawInput, { path: "a.txt" });
  assert.deepEqual(request.locations, [{ path: "/work/a.txt" }]);
  assert.equal(request.signal.aborted, false);
  controller.abort();
  assert.equal(request.signal.aborted, true, "authorize's signal follows the turn's");
  assert.ok(announcedBefore, "the call is announced before authorize is asked");
});

Deno.test("runTurn() does not ask authorize for unknown tools or malformed arguments", async () => {
  const provider = new FakeProvider([
    [toolCall("c1", "nope", "{}"), toolCall("c2", "read_file", "{bad"), finish("tool-calls")],
    [finish("stop")],
  ]);
  let asked = 0;
  const { events, options } = turnOptions(provider, {
    tools: [fakeTool()],
    authorize: () => {
      asked++;
      return Promise.resolve({ allowed: true });
    },
  });
  assert.equal(await runTurn(options), "end_turn");
  assert.equal(asked, 0);
  assert.deepEqual(ofType(events, "tool-call-update").map((event) => event.status), [
    "failed",
    "failed",
  ]);
});

Deno.test("runTurn() does not run a tool when the turn is cancelled while authorizing", async () => {
  const controller = new AbortController();
  const provider = new FakeProvider([
    [toolCall("c1", "write_file", "{}"), finish("tool-calls")],
    [text("never"), finish("stop")],
  ]);
  const tool = effectTool("write_file", "write", "edit");
  const { events, options } = turnOptions(provider, {
    tools: [tool],
    signal: controller.signal,
    authorize: () => {
      controller.abort();
      return Promise.resolve({ allowed: true });
    },
  });
  assert.equal(await runTurn(options), "cancelled");
  assert.equal(tool.calls.length, 0);
  assert.deepEqual(ofType(events, "tool-call-update"), [{
    type: "tool-call-update",
    toolCallId: "c1",
    status: "failed",
    text: "Tool call cancelled",
  }]);
  assert.equal(provider.requests.length, 1);
});

// Parallelism

/**
 * Tool calls that run until the test lets them finish, recording which calls were running when
 * each one started: the tests decide the order of events instead of racing timers.
 */
class Gates {
  /** Call ids in the order they started. */
  readonly started: string[] = [];
  /** Call ids in the order they finished. */
  readonly finished: string[] = [];
  /** For each call, the calls that were running when it started. */
  readonly runningAtStart = new Map<string, string[]>();
  /** The most calls running at once. */
  max = 0;
  readonly #release = new Map<string, () => void>();
  readonly #waiters = new Set<() => void>();

  /** A tool whose calls (input `{id}`) wait here until {@link finish} lets them end. */
  tool(name: string, effect: ToolEffect): Tool {
    return effectTool(name, effect, effect === "read" ? "read" : "edit", async (input) => {
      const { id } = input as { id: string };
      this.runningAtStart.set(id, [...this.#release.keys()]);
      this.started.push(id);
      await new Promise<void>((resolve) => {
        this.#release.set(id, resolve);
        this.max = Math.max(this.max, this.#release.size);
        this.#wake();
      });
      this.finished.push(id);
      this.#wake();
      return { content: `done ${id}`, isError: false };
    });
  }

  /** Resolves once every one of `ids` has started and is waiting to finish. */
  waitStarted(...ids: string[]): Promise<void> {
    return this.#until(() => ids.every((id) => this.#release.has(id)), `${ids} to start`);
  }

  /** Lets `id` finish once it has started; resolves when it has finished. */
  async finish(id: string): Promise<void> {
    await this.waitStarted(id);
    const release = this.#release.get(id) as () => void;
    this.#release.delete(id);
    release();
    await this.#until(() => this.finished.includes(id), `${id} to finish`);
  }

  #wake(): void {
    for (const wake of this.#waiters) wake();
  }

  #until(done: () => boolean, what: string): Promise<void> {
    if (done()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!done()) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`Timed out waiting for ${what}; started ${this.started}`));
      }, 5_000);
      this.#waiters.add(check);
    });
  }
}

function gatedCall(name: string, id: string): LlmEvent {
  return toolCall(id, name, JSON.stringify({ id }));
}

Deno.test("runTurn() runs up to TOOL_PARALLELISM read calls at once", async () => {
  const gates = new Gates();
  const count = TOOL_PARALLELISM + 2;
  const ids = Array.from({ length: count }, (_, index) => `r${index + 1}`);
  const provider = new FakeProvider([
    [...ids.map((id) => gatedCall("read_file", id)), finish("tool-calls")],
    [finish("stop")],
  ]);
  const { options } = turnOptions(provider, { tools: [gates.tool("read_file", "read")] });
  const turn = runTurn(options);
  await gates.waitStarted(...ids.slice(0, TOOL_PARALLELISM));
  for (const id of ids) await gates.finish(id);
  assert.equal(await turn, "end_turn");
  assert.equal(gates.max, TOOL_PARALLELISM);
  assert.deepEqual(gates.started, ids, "calls start in call order");
  assert.equal(gates.finished.length, count);
});

Deno.test("runTurn() runs an edit or a command alone, after every call before it", async () => {
  const gates = new Gates();
  const ids = ["w1", "x1", "r1", "r2", "w2", "r3", "x2"];
  const tools = { w: "write_file", x: "run_command", r: "read_file" } as const;
  const provider = new FakeProvider([
    [
      ...ids.map((id) => gatedCall(tools[id[0] as keyof typeof tools], id)),
      finish("tool-calls"),
    ],
    [finish("stop")],
  ]);
  const { options } = turnOptions(provider, {
    tools: [
      gates.tool("write_file", "write"),
      gates.tool("run_command", "execute"),
      gates.tool("read_file", "read"),
    ],
  });
  const turn = runTurn(options);
  await gates.finish("w1");
  await gates.finish("x1");
  await gates.waitStarted("r1", "r2");
  for (const id of ["r1", "r2", "w2", "r3", "x2"]) await gates.finish(id);
  assert.equal(await turn, "end_turn");
  assert.deepEqual(gates.started, ids, "every call started in call order");
  assert.deepEqual(
    Object.fromEntries(gates.runningAtStart),
    { w1: [], x1: [], r1: [], r2: ["r1"], w2: [], r3: [], x2: [] },
    "an edit or command waits for every call before it and runs alone; adjacent reads overlap",
  );
  assert.deepEqual(
    options.history.filter((m) => m.role === "tool").map((m) => m.toolCallId),
    ids,
  );
});

Deno.test("runTurn() appends tool results in call order whatever order they finish in", async () => {
  const gates = new Gates();
  const provider = new FakeProvider([
    [
      gatedCall("read_file", "c1"),
      gatedCall("read_file", "c2"),
      gatedCall("read_file", "c3"),
      finish("tool-calls"),
    ],
    [finish("stop")],
  ]);
  const { events, options } = turnOptions(provider, {
    tools: [gates.tool("read_file", "read")],
  });
  const turn = runTurn(options);
  await gates.waitStarted("c1", "c2", "c3");
  for (const id of ["c2", "c3", "c1"]) await gates.finish(id);
  assert.equal(await turn, "end_turn");
  assert.deepEqual(gates.finished, ["c2", "c3", "c1"]);
  assert.deepEqual(
    ofType(events, "tool-call-update").filter((event) => event.status === "completed")
      .map((event) => event.toolCallId),
    ["c2", "c3", "c1"],
  );
  const toolHistory = ofType(events, "history").map((event) => event.message)
    .filter((message) => message.role === "tool");
  assert.deepEqual(toolHistory.map((message) => message.toolCallId), ["c1", "c2", "c3"]);
  assert.deepEqual(
    provider.requests[1]?.messages.slice(2).map((m) => m.role === "tool" && m.content),
    ["done c1", "done c2", "done c3"],
  );
});

// Provider state

Deno.test("runTurn() sends provider state back only to the provider that produced it", async () => {
  const call = { id: "c1", name: "read_file", arguments: "{}" };
  const alpha = new FakeProvider([
    [
      text("a1"),
      { type: "provider-state", state: { signature: "A" } },
      toolCall(call.id, call.name, call.arguments),
      finish("tool-calls"),
    ],
    [text("a2"), finish("stop")],
  ], "alpha");
  const history: LlmMessage[] = [USER];
  const tools = [fakeTool()];
  assert.equal(await runTurn(turnOptions(alpha, { history, tools }).options), "end_turn");
  const stateful: LlmMessage = {
    role: "assistant",
    text: "a1",
    toolCalls: [call],
    providerState: { signature: "A" },
    provider: "alpha",
  };
  assert.deepEqual(history[1], stateful);
  // The same provider gets its state back within the turn.
  assert.deepEqual(alpha.requests[1]?.messages[1], stateful);

  const next: LlmMessage = { role: "user", content: [{ type: "text", text: "again" }] };
  history.push(next);
  const beta = new FakeProvider([[finish("stop")]], "beta");
  assert.equal(await runTurn(turnOptions(beta, { history, tools }).options), "end_turn");
  const sent = beta.requests[0]?.messages;
  assert.equal(sent?.length, 5);
  assert.deepEqual(sent?.[1], { role: "assistant", text: "a1", toolCalls: [call] });
  assert.deepEqual(sent?.slice(2), history.slice(2, 5));
  assert.deepEqual(history[1], stateful, "the session history keeps the state");

  history.push(next);
  const alphaAgain = new FakeProvider([[finish("stop")]], "alpha");
  assert.equal(await runTurn(turnOptions(alphaAgain, { history, tools }).options), "end_turn");
  assert.deepEqual(alphaAgain.requests[0]?.messages[1], stateful);
});

Deno.test("runTurn() does not wait for a stalled client once the turn is cancelled", async () => {
  const provider = new FakeProvider([[text("a"), text("b"), finish("stop")]]);
  const controller = new AbortController();
  const { options } = turnOptions(provider, {
    stream: true,
    signal: controller.signal,
    // A client that never catches up: every delta applies backpressure forever.
    emit: (event) => {
      if (event.type === "message") {
        controller.abort();
        return new Promise<void>(() => {});
      }
      return undefined;
    },
  });
  assert.equal(await runTurn(options), "cancelled");
});

Deno.test("runTurn() carries a tool result's images and links to the events, the history and the next request", async () => {
  const provider = new FakeProvider([
    [toolCall("c1", "mcp__browser__screenshot", "{}"), finish("tool-calls")],
    [text("A login page."), finish("stop")],
  ]);
  const parts = [
    { type: "text", text: "Took it" },
    { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
    { type: "resource_link", uri: "file:///tmp/page.html", name: "page.html" },
  ] as const;
  const content = "Took it\n[image: image/png]\n[resource: page.html file:///tmp/page.html]";
  const screenshot = fakeTool(
    () => Promise.resolve({ content, parts, isError: false }),
    "mcp__browser__screenshot",
  );
  const { events, options } = turnOptions(provider, {
    tools: ToolSet.of([screenshot]),
    imageInput: false,
  });
  assert.equal(await runTurn(options), "end_turn");
  assert.deepEqual(ofType(events, "tool-call-update").at(-1), {
    type: "tool-call-update",
    toolCallId: "c1",
    status: "completed",
    text: content,
    parts,
  });
  const toolMessage: LlmMessage = {
    role: "tool",
    toolCallId: "c1",
    name: "mcp__browser__screenshot",
    content,
    parts,
    isError: false,
  };
  assert.deepEqual(options.history.at(-2), toolMessage);
  assert.deepEqual(provider.requests[1]?.messages.at(-1), toolMessage);
  assert.equal(provider.requests[0]?.imageInput, false);
});

Deno.test("runTurn() finds tools in a ToolSet by exact name only", async () => {
  const provider = new FakeProvider([
    [
      toolCall("c1", "Read_File", '{"path":"a"}'),
      toolCall("c2", "read_file", '{"path":"b"}'),
      finish("tool-calls"),
    ],
    [finish("stop")],
  ]);
  const tool = fakeTool();
  const tools = ToolSet.of([tool]);
  tools.add({ id: "mcp:other", tools: [fakeTool(undefined, "read_file")] });
  const { events, options } = turnOptions(provider, { tools });
  assert.equal(await runTurn(options), "end_turn");
  assert.deepEqual(provider.requests[0]?.tools.map((spec) => spec.name), ["read_file"]);
  assert.deepEqual(
    ofType(events, "tool-call-update").filter((event) => event.status !== "in_progress")
      .map((event) => [event.toolCallId, event.status, event.text]),
    [["c1", "failed", 'Unknown tool "Read_File"'], ["c2", "completed", "file body"]],
  );
  assert.equal(tool.calls.length, 1);
});

Deno.test("runTurn() gives tools an elicit that asks under the call's id, and none without an asker", async () => {
  const relayed: RelayedElicitation[] = [];
  let late: ToolContext["elicit"];
  const tool = fakeTool(async (_input, context) => {
    late = context.elicit;
    const answer = await context.elicit?.({
      mode: "form",
      message: "Name?",
      requestedSchema: { type: "object", properties: {} },
    });
    return { content: JSON.stringify(answer), isError: false };
  });
  const provider = new FakeProvider([
    [toolCall("call-1", "read_file", '{"path":"a"}'), finish("tool-calls")],
    [text("done"), finish("stop")],
  ]);
  const { events, options } = turnOptions(provider, {
    tools: [tool],
    elicit: (request) => {
      relayed.push(request);
      return Promise.resolve({ action: "decline" });
    },
  });
  await runTurn(options);
  assert.equal(relayed.length, 1);
  assert.equal(relayed[0]?.tool, "read_file");
  assert.equal(relayed[0]?.toolCallId, "call-1");
  assert.equal(relayed[0]?.signal, options.signal);
  assert.equal(
    ofType(events, "tool-call-update").find((event) => event.status === "completed")?.text,
    '{"action":"decline"}',
  );
  // A call that has ended asks nothing.
  assert.deepEqual(
    await late?.({
      mode: "form",
      message: "?",
      requestedSchema: { type: "object", properties: {} },
    }),
    { action: "cancel" },
  );
  assert.equal(relayed.length, 1);
  const without = fakeTool();
  const again = turnOptions(
    new FakeProvider([
      [toolCall("call-2", "read_file", '{"path":"a"}'), finish("tool-calls")],
      [text("done"), finish("stop")],
    ]),
    { tools: [without] },
  );
  await runTurn(again.options);
  assert.equal(without.calls[0]?.context.elicit, undefined, "nobody can answer: no elicit");
});

/** A steering inbox for a turn: {@link push} a message; the turn takes it at its next step. */
class FakeSteering {
  readonly #waiting: LlmMessage[] = [];
  taken = 0;
  get pending(): boolean {
    return this.#waiting.length > 0;
  }
  push(text: string): void {
    this.#waiting.push({ role: "user", content: [{ type: "text", text }] });
  }
  take(): readonly LlmMessage[] {
    this.taken++;
    return this.#waiting.splice(0);
  }
}

Deno.test("runTurn() takes a message steered in during the model's answer at one more step", async () => {
  const steering = new FakeSteering();
  const provider = new FakeProvider([
    // The message arrives while the model writes what would have been its last answer.
    async function* () {
      steering.push("use tabs");
      yield text("done");
      yield finish("stop");
    },
    [text("done, with tabs"), finish("stop")],
  ]);
  const { events, options } = turnOptions(provider, { steering });
  assert.equal(await runTurn(options), "end_turn");
  assert.equal(provider.requests.length, 2);
  assert.deepEqual(provider.requests[1]?.messages.slice(-2), [
    { role: "assistant", text: "done" },
    { role: "user", content: [{ type: "text", text: "use tabs" }] },
  ]);
  // The taken message is in the history, announced as a history event, before the next answer.
  const history = ofType(events, "history").map((event) => event.message.role);
  assert.deepEqual(history, ["assistant", "user", "assistant"]);
  assert.deepEqual(ofType(events, "message").map((event) => event.text), [
    "done",
    "done, with tabs",
  ]);
});

Deno.test("runTurn() leaves a steered message waiting when a limit ends the turn first", async () => {
  const steering = new FakeSteering();
  const provider = new FakeProvider([
    async function* () {
      steering.push("later");
      yield toolCall("c1", "read_file", '{"path":"a"}');
      yield finish("tool-calls");
    },
  ]);
  const { options } = turnOptions(provider, { steering, tools: [fakeTool()], maxSteps: 1 });
  assert.equal(await runTurn(options), "max_turn_requests");
  assert.equal(steering.pending, true, "the caller gets it back");
  assert.equal(provider.requests.length, 1);
});
