import assert from "node:assert/strict";
import { runTurn, TurnError, type TurnOptions } from "../../src/agent/run_turn.ts";
import type { TurnEvent } from "../../src/agent/turn_event.ts";
import {
  type LlmEvent,
  type LlmMessage,
  type LlmProvider,
  type LlmRequest,
  type LlmStreamOptions,
  ProviderError,
} from "../../src/llm/provider.ts";
import type { Tool, ToolContext, ToolResult } from "../../src/tools/tool.ts";

/** One model step of the fake: fixed events, or a function of the request and signal. */
type FakeStep =
  | readonly LlmEvent[]
  | ((request: LlmRequest, signal: AbortSignal) => AsyncIterable<LlmEvent>);

/** A provider that replays steps and records what it was asked. */
class FakeProvider implements LlmProvider {
  readonly id: string = "fake";
  readonly requests: LlmRequest[] = [];
  readonly #steps: FakeStep[];

  constructor(steps: FakeStep[]) {
    this.#steps = steps;
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
    title(input: unknown): string {
      return `Read ${(input as { path: string }).path}`;
    },
    execute(input: unknown, context: ToolContext): Promise<ToolResult> {
      calls.push({ input, context });
      return run(input, context);
    },
  };
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

function turnOptions(
  provider: LlmProvider,
  overrides: Partial<TurnOptions> = {},
): Turn {
  const events: TurnEvent[] = [];
  const options: TurnOptions = {
    sessionId: "session-1",
    provider,
    model: "model-x",
    system: "be brief",
    history: [USER],
    tools: [],
    roots: ["/work"],
    maxSteps: 10,
    stream: false,
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

Deno.test("runTurn() in committed mode emits the thought then the message once per step", async () => {
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
  assert.deepEqual(events.map((event) => event.type), ["thought", "message", "history", "usage"]);
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
  const withoutIds = events.map((event) =>
    event.type === "message" || event.type === "thought" ? { ...event, messageId: "-" } : event
  );
  assert.deepEqual(withoutIds, [
    { type: "message", messageId: "-", text: "Reading" },
    { type: "history", message: assistant },
    {
      type: "tool-call",
      toolCallId: "c1",
      name: "read_file",
      title: "Read a.txt",
      kind: "read",
      rawInput: { path: "a.txt" },
    },
    { type: "tool-call-update", toolCallId: "c1", status: "in_progress" },
    { type: "tool-call-update", toolCallId: "c1", status: "completed", text: "file body" },
    { type: "history", message: toolMessage },
    { type: "message", messageId: "-", text: "Done" },
    { type: "history", message: { role: "assistant", text: "Done" } },
  ]);
  assert.equal(tool.calls.length, 1);
  assert.deepEqual(tool.calls[0]?.input, { path: "a.txt" });
  assert.equal(tool.calls[0]?.context.sessionId, "session-1");
  assert.deepEqual(tool.calls[0]?.context.roots, ["/work", "/extra"]);
  assert.equal(tool.calls[0]?.context.signal, controller.signal);
  assert.deepEqual(provider.requests[1]?.messages, [USER, assistant, toolMessage]);
});

Deno.test("runTurn() runs several tool calls of one step in order", async () => {
  const provider = new FakeProvider([
    [
      toolCall("c1", "read_file", '{"path":"a"}'),
      toolCall("c2", "read_file", '{"path":"b"}'),
      finish("tool-calls"),
    ],
    [finish("stop")],
  ]);
  const tool = fakeTool((input) =>
    Promise.resolve({ content: `body of ${(input as { path: string }).path}`, isError: false })
  );
  const { events, options } = turnOptions(provider, { tools: [tool] });
  assert.equal(await runTurn(options), "end_turn");
  assert.deepEqual(
    ofType(events, "tool-call-update").map((event) => [event.toolCallId, event.status, event.text]),
    [
      ["c1", "in_progress", undefined],
      ["c1", "completed", "body of a"],
      ["c2", "in_progress", undefined],
      ["c2", "completed", "body of b"],
    ],
  );
  assert.deepEqual(provider.requests[1]?.messages.slice(2).map((m) => m.role), ["tool", "tool"]);
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
  // Every announced tool call still gets a final update.
  assert.deepEqual(
    ofType(events, "tool-call-update").filter((event) => event.status !== "in_progress")
      .map((event) => [event.toolCallId, event.status]),
    [["c1", "failed"], ["c2", "failed"]],
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
