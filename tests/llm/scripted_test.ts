import assert from "node:assert/strict";
import { parseScript, ScriptedProvider, type ScriptStep } from "../../src/llm/scripted.ts";
import {
  type LlmEvent,
  type LlmMessage,
  type LlmRequest,
  ProviderError,
} from "../../src/llm/provider.ts";
import { abortListened } from "../_helpers/wait.ts";

const USER: LlmMessage = { role: "user", content: [{ type: "text", text: "go" }] };
const ASSISTANT: LlmMessage = { role: "assistant", text: "earlier" };

function requestFor(sessionId: string, messages: readonly LlmMessage[] = [USER]): LlmRequest {
  return { sessionId, model: "scripted", system: "", messages, tools: [] };
}

async function collect(
  provider: ScriptedProvider,
  request: LlmRequest,
  signal: AbortSignal = new AbortController().signal,
): Promise<LlmEvent[]> {
  const events: LlmEvent[] = [];
  for await (const event of provider.stream(request, { signal })) events.push(event);
  return events;
}

function provider(steps: ScriptStep[]): ScriptedProvider {
  return new ScriptedProvider({ steps });
}

/** The text of a session's next step, from its text deltas. */
async function nextText(scripted: ScriptedProvider, request: LlmRequest): Promise<string> {
  return (await collect(scripted, request))
    .map((event) => event.type === "text-delta" ? event.text : "")
    .join("");
}

function finishOf(events: readonly LlmEvent[]): Extract<LlmEvent, { type: "finish" }> {
  const last = events.at(-1);
  assert.ok(last?.type === "finish", "the stream must end with finish");
  assert.equal(events.filter((event) => event.type === "finish").length, 1);
  return last;
}

// parseScript

Deno.test("parseScript() accepts an array of steps", () => {
  const steps = [{ text: "a" }, { thought: ["x", "y"], toolCalls: [{ name: "t" }] }];
  assert.deepEqual(parseScript(steps), { steps });
});

Deno.test("parseScript() accepts an object with steps", () => {
  const steps = [{ text: "a", usage: { input: 1, output: 2 } }];
  assert.deepEqual(parseScript({ steps }), { steps });
  assert.deepEqual(parseScript({ steps: [] }), { steps: [] });
});

Deno.test("parseScript() accepts every step field", () => {
  const step = {
    thought: "t",
    text: ["a", "b"],
    toolCalls: [
      { id: "c1", name: "read", arguments: { path: "x" } },
      { name: "raw", arguments: "{not json" },
    ],
    usage: { input: 1, output: 2, cacheRead: 3, cacheWrite: 4, reasoning: 5 },
    delayMs: 0,
    chunkDelayMs: 1,
    finish: "refusal",
    error: {
      message: "boom",
      kind: "rate-limit",
      status: 429,
      retryable: true,
      retryAfterMs: 10,
    },
  };
  assert.deepEqual(parseScript([step]), { steps: [step] });
});

Deno.test("parseScript() rejects shapes that are neither an array nor {steps}", () => {
  for (const json of [null, 5, "steps", {}, { step: [] }, { steps: {} }]) {
    assert.throws(() => parseScript(json), (error: unknown) => {
      assert.ok(error instanceof TypeError);
      assert.match(error.message, /^Cannot parse script: /);
      return true;
    }, JSON.stringify(json));
  }
});

Deno.test("parseScript() rejects unknown keys naming the key and its path", () => {
  assert.throws(() => parseScript([{ text: "a", bogus: 1 }]), /Cannot parse script: 0: .*"bogus"/);
  assert.throws(
    () => parseScript({ steps: [{ toolCalls: [{ name: "t", args: {} }] }] }),
    /steps\.0\.toolCalls\.0: .*"args"/,
  );
  assert.throws(() => parseScript({ steps: [], extra: 1 }), /"extra"/);
  assert.throws(
    () => parseScript([{}, { usage: { input: 1, output: 1, total: 2 } }]),
    /1\.usage: .*"total"/,
  );
});

Deno.test("parseScript() names the path of an out-of-range value", () => {
  assert.throws(
    () => parseScript({ steps: [{ toolCalls: [{ name: "" }] }] }),
    /Cannot parse script: steps\.0\.toolCalls\.0\.name: /,
  );
  assert.throws(
    () => parseScript([{}, { usage: { input: -1, output: 0 } }]),
    /Cannot parse script: 1\.usage\.input: /,
  );
  assert.throws(() => parseScript([{ delayMs: -5 }]), /Cannot parse script: 0\.delayMs: /);
});

Deno.test("parseScript() names the path of a value of the wrong type", () => {
  const cases: ReadonlyArray<readonly [unknown, string]> = [
    [[{ text: 5 }], "0.text"],
    [[{}, { thought: ["a", 1] }], "1.thought"],
    [[{ finish: "error" }], "0.finish"],
    [[{ error: {} }], "0.error.message"],
    [{ steps: [{ toolCalls: "read" }] }, "steps.0.toolCalls"],
    [[{ toolCalls: [{ name: "t", arguments: 3 }] }], "0.toolCalls.0.arguments"],
  ];
  for (const [json, path] of cases) {
    assert.throws(() => parseScript(json), (error: unknown) => {
      assert.ok(error instanceof TypeError);
      assert.ok(
        error.message.startsWith(`Cannot parse script: ${path}`),
        `for ${
          JSON.stringify(json)
        } expected the message to name "${path}", got "${error.message}"`,
      );
      return true;
    });
  }
});

// ScriptedProvider

Deno.test("ScriptedProvider.id is scripted", () => {
  assert.equal(provider([]).id, "scripted");
});

Deno.test("ScriptedProvider.stream() replays text as one delta and finishes with stop", async () => {
  const events = await collect(provider([{ text: "hello" }]), requestFor("s"));
  assert.deepEqual(events, [
    { type: "text-delta", text: "hello" },
    { type: "finish", reason: "stop" },
  ]);
});

Deno.test("ScriptedProvider.stream() turns thought and text arrays into separate deltas", async () => {
  const events = await collect(
    provider([{ thought: ["th", "ink"], text: ["a", "b", "c"] }]),
    requestFor("s"),
  );
  assert.deepEqual(events, [
    { type: "reasoning-delta", text: "th" },
    { type: "reasoning-delta", text: "ink" },
    { type: "text-delta", text: "a" },
    { type: "text-delta", text: "b" },
    { type: "text-delta", text: "c" },
    { type: "finish", reason: "stop" },
  ]);
});

Deno.test("ScriptedProvider.stream() skips an empty text and thought", async () => {
  const events = await collect(provider([{ thought: "", text: "" }]), requestFor("s"));
  assert.deepEqual(events, [{ type: "finish", reason: "stop" }]);
});

Deno.test("ScriptedProvider.stream() consumes steps in order within a session", async () => {
  const scripted = provider([{ text: "one" }, { text: "two" }, { text: "three" }]);
  assert.equal(await nextText(scripted, requestFor("s")), "one");
  assert.equal(await nextText(scripted, requestFor("s")), "two");
  assert.equal(await nextText(scripted, requestFor("s")), "three");
});

Deno.test("ScriptedProvider.stream() keeps an independent cursor per session", async () => {
  const scripted = provider([{ text: "one" }, { text: "two" }]);
  assert.equal(await nextText(scripted, requestFor("a")), "one");
  assert.equal(await nextText(scripted, requestFor("b")), "one");
  assert.equal(await nextText(scripted, requestFor("a")), "two");
  assert.equal(await nextText(scripted, requestFor("b")), "two");
});

Deno.test("ScriptedProvider.stream() starts at the number of assistant messages in history", async () => {
  const scripted = provider([{ text: "one" }, { text: "two" }, { text: "three" }, {
    text: "four",
  }]);
  const history: LlmMessage[] = [
    USER,
    ASSISTANT,
    { role: "tool", toolCallId: "c", name: "t", content: "ok", isError: false },
    ASSISTANT,
    USER,
  ];
  assert.equal(await nextText(scripted, requestFor("restored", history)), "three");
  // Once started, the session's cursor no longer depends on the history it sends.
  assert.equal(await nextText(scripted, requestFor("restored", [USER])), "four");
  assert.equal(await nextText(scripted, requestFor("fresh", [USER])), "one");
});

Deno.test("ScriptedProvider.stream() numbers tool calls call_<step>_<n> unless given an id", async () => {
  const scripted = provider([
    { text: "first" },
    {
      toolCalls: [
        { name: "read", arguments: { path: "a.txt", n: 1 } },
        { id: "mine", name: "write", arguments: '{"path": "b"' },
        { name: "list" },
      ],
    },
  ]);
  await collect(scripted, requestFor("s"));
  const events = await collect(scripted, requestFor("s"));
  assert.deepEqual(events, [
    {
      type: "tool-call",
      call: { id: "call_2_1", name: "read", arguments: '{"path":"a.txt","n":1}' },
    },
    { type: "tool-call", call: { id: "mine", name: "write", arguments: '{"path": "b"' } },
    { type: "tool-call", call: { id: "call_2_3", name: "list", arguments: "{}" } },
    { type: "finish", reason: "tool-calls" },
  ]);
});

Deno.test("ScriptedProvider.stream() reports usage before finishing", async () => {
  const events = await collect(
    provider([
      { text: "x", usage: { input: 10, output: 3 } },
      { usage: { input: 1, output: 2, cacheRead: 3, cacheWrite: 4, reasoning: 5 } },
    ]),
    requestFor("s"),
  );
  assert.deepEqual(events.slice(1), [
    { type: "usage", usage: { input: 10, output: 3 } },
    { type: "finish", reason: "stop" },
  ]);
  const usage = events[1];
  assert.ok(usage?.type === "usage");
  assert.deepEqual(Object.keys(usage.usage), ["input", "output"], "no undefined optional keys");
});

Deno.test("ScriptedProvider.stream() reports every usage field when given", async () => {
  const scripted = provider([
    {},
    { usage: { input: 1, output: 2, cacheRead: 3, cacheWrite: 4, reasoning: 5 } },
  ]);
  await collect(scripted, requestFor("s"));
  assert.deepEqual(await collect(scripted, requestFor("s")), [
    {
      type: "usage",
      usage: { input: 1, output: 2, cacheRead: 3, cacheWrite: 4, reasoning: 5 },
    },
    { type: "finish", reason: "stop" },
  ]);
});

Deno.test("ScriptedProvider.stream() uses an explicit finish reason", async () => {
  const scripted = provider([
    { text: "cut", finish: "max-tokens" },
    { text: "no", finish: "refusal" },
    { toolCalls: [{ name: "t" }], finish: "stop" },
    { finish: "tool-calls" },
  ]);
  const reasons: string[] = [];
  for (let step = 0; step < 4; step++) {
    reasons.push(finishOf(await collect(scripted, requestFor("s"))).reason);
  }
  assert.deepEqual(reasons, ["max-tokens", "refusal", "stop", "tool-calls"]);
});

Deno.test("ScriptedProvider.stream() ends an error step with a ProviderError after its deltas", async () => {
  const scripted = provider([{
    text: "partial",
    usage: { input: 1, output: 1 },
    error: {
      message: "slow down",
      kind: "rate-limit",
      status: 429,
      retryable: true,
      retryAfterMs: 5,
    },
  }]);
  const events = await collect(scripted, requestFor("s"));
  assert.deepEqual(events.slice(0, 2), [
    { type: "text-delta", text: "partial" },
    { type: "usage", usage: { input: 1, output: 1 } },
  ]);
  const finish = finishOf(events);
  assert.equal(finish.reason, "error");
  assert.ok(finish.error instanceof ProviderError);
  assert.equal(finish.error.message, "slow down");
  assert.equal(finish.error.kind, "rate-limit");
  assert.equal(finish.error.status, 429);
  assert.equal(finish.error.retryable, true);
  assert.equal(finish.error.retryAfterMs, 5);
});

Deno.test("ScriptedProvider.stream() defaults an error step to a non-retryable server error", async () => {
  const scripted = provider([{ error: { message: "down" } }, { text: "after" }]);
  const finish = finishOf(await collect(scripted, requestFor("s")));
  assert.equal(finish.reason, "error");
  assert.ok(finish.error instanceof ProviderError);
  assert.equal(finish.error.kind, "server");
  assert.equal(finish.error.retryable, false);
  assert.equal(finish.error.status, undefined);
  assert.equal(finish.error.retryAfterMs, undefined);
  // A failed step still counts.
  assert.equal(await nextText(scripted, requestFor("s")), "after");
});

Deno.test("ScriptedProvider.stream() fails with a non-retryable error when the script runs out", async () => {
  const scripted = provider([{ text: "only" }]);
  await collect(scripted, requestFor("s"));
  const events = await collect(scripted, requestFor("s"));
  assert.equal(events.length, 1);
  const finish = finishOf(events);
  assert.equal(finish.reason, "error");
  assert.ok(finish.error instanceof ProviderError);
  assert.equal(finish.error.kind, "script");
  assert.equal(finish.error.retryable, false);
  assert.match(finish.error.message, /script has no step 2 \(it has 1\)/);
  const empty = finishOf(await collect(provider([]), requestFor("t")));
  assert.match(empty.error?.message ?? "", /script has no step 1 \(it has 0\)/);
});

Deno.test("ScriptedProvider.stream() ends with aborted when the signal is already aborted", async () => {
  const controller = new AbortController();
  controller.abort();
  const events = await collect(
    provider([{ text: "x", toolCalls: [{ name: "t" }] }]),
    requestFor("s"),
    controller.signal,
  );
  assert.deepEqual(events, [{ type: "finish", reason: "aborted" }]);
});

Deno.test("ScriptedProvider.stream() ends promptly with aborted when aborted during delayMs", async () => {
  const controller = new AbortController();
  const scripted = provider([{ delayMs: 60_000, text: "late" }]);
  const started = performance.now();
  const delaying = abortListened(controller.signal);
  const pending = collect(scripted, requestFor("s"), controller.signal);
  await delaying;
  controller.abort();
  const events = await pending;
  assert.deepEqual(events, [{ type: "finish", reason: "aborted" }]);
  assert.ok(performance.now() - started < 5_000, "abort did not end the delay promptly");
  // The op sanitizer fails this test if the 60 s timer were left behind.
});

Deno.test("ScriptedProvider.stream() stops its deltas when aborted during chunkDelayMs", async () => {
  const controller = new AbortController();
  const scripted = provider([{
    text: ["a", "b", "c", "d"],
    chunkDelayMs: 20,
    toolCalls: [{ name: "t" }],
  }]);
  const events: LlmEvent[] = [];
  for await (const event of scripted.stream(requestFor("s"), { signal: controller.signal })) {
    events.push(event);
    if (event.type === "text-delta" && event.text === "b") controller.abort();
  }
  assert.deepEqual(events, [
    { type: "text-delta", text: "a" },
    { type: "text-delta", text: "b" },
    { type: "finish", reason: "aborted" },
  ]);
});

Deno.test("ScriptedProvider.stream() waits delayMs before the first event", async () => {
  const started = performance.now();
  const events = await collect(provider([{ delayMs: 30, text: "x" }]), requestFor("s"));
  assert.ok(performance.now() - started >= 25);
  assert.equal(finishOf(events).reason, "stop");
});

Deno.test("parseScript() names the file and the path of the bad field when given the file", () => {
  assert.throws(
    () => parseScript([{ text: "ok" }, { toolCalls: [{ name: "" }] }], "/work/demo.json"),
    (error: unknown) => {
      assert.ok(error instanceof TypeError);
      assert.match(
        error.message,
        /^Cannot parse script "\/work\/demo\.json": 1\.toolCalls\.0\.name: /,
      );
      return true;
    },
  );
});
