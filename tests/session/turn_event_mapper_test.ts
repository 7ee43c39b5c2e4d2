/**
 * The mapping from turn events to the client's updates and the log's records.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { TurnEvent } from "../../src/agent/turn_event.ts";
import { Conversation } from "../../src/session/conversation.ts";
import type { SessionOutput } from "../../src/session/outbox.ts";
import { TurnEventMapper } from "../../src/session/turn_event_mapper.ts";
import { UsageMeter } from "../../src/session/usage_meter.ts";
import { captureLogger, modelInfo } from "./_fakes.ts";

/** An output that writes down every call in one list. */
function output(): {
  output: SessionOutput;
  calls: string[];
  records: unknown[];
  updates: unknown[];
} {
  const calls: string[] = [];
  const records: unknown[] = [];
  const updates: unknown[] = [];
  return {
    calls,
    records,
    updates,
    output: {
      record(events, commit, when = "soon") {
        records.push(...events);
        calls.push(
          `record ${events.map((e) => e.type).join(",")} ${when}${commit ? " commit" : ""}`,
        );
      },
      send(update) {
        calls.push(`send ${update.sessionUpdate}`);
        updates.push(update);
        return undefined;
      },
      flush() {
        calls.push("flush");
      },
    },
  };
}

function mapper() {
  const out = output();
  const { logger, lines } = captureLogger();
  let clock = 1000;
  const conversation = new Conversation();
  const events = new TurnEventMapper({
    sessionId: "s1",
    output: out.output,
    conversation,
    usage: new UsageMeter(),
    logger,
    now: () => clock,
  });
  return { ...out, lines, events, conversation, tick: (ms: number) => clock += ms };
}

const model = modelInfo({ contextWindow: 1000 });

Deno.test("TurnEventMapper.apply() sends text as chunks and records nothing for them", () => {
  const { events, calls } = mapper();
  events.apply({ type: "thought", messageId: "t", text: "hmm" }, model);
  events.apply({ type: "message", messageId: "m", text: "hi" }, model);
  assert.deepEqual(calls, ["send agent_thought_chunk", "send agent_message_chunk"]);
});

Deno.test("TurnEventMapper.apply() holds a committed assistant message for the next write", () => {
  const { events, calls, records, conversation } = mapper();
  const event: TurnEvent = {
    type: "history",
    messageId: "m",
    message: { role: "assistant", text: "hi", providerState: { s: 1 }, provider: "other" },
  };
  assert.equal(events.apply(event, model), undefined);
  assert.deepEqual(calls, ["record assistant later commit"]);
  assert.deepEqual(records[0], {
    type: "assistant",
    text: "hi",
    messageId: "m",
    providerState: { s: 1 },
    provider: "other",
  });
  assert.equal(conversation.hasForeignState("fake"), true);
  assert.equal(conversation.hasForeignState("other"), false);
  events.apply({ type: "history", message: { role: "user", content: [] } }, model);
  assert.equal(calls.length, 1, "only assistant messages are recorded from history");
});

Deno.test("TurnEventMapper.apply() records a tool call as announced and as finished", () => {
  const { events, calls, records, lines, tick } = mapper();
  events.apply({
    type: "tool-call",
    toolCallId: "c1",
    name: "read_file",
    title: "Read a.txt",
    kind: "read",
    rawInput: { path: "a.txt" },
    locations: [{ path: "/w/a.txt" }],
  }, model);
  events.apply({ type: "tool-call-update", toolCallId: "c1", status: "in_progress" }, model);
  tick(42);
  events.apply(
    { type: "tool-call-update", toolCallId: "c1", status: "failed", text: "no such file" },
    model,
  );
  assert.deepEqual(calls, [
    "record tool_call soon",
    "send tool_call",
    "flush",
    "send tool_call_update",
    "record tool_result soon commit",
    "send tool_call_update",
  ]);
  assert.deepEqual(records[1], {
    type: "tool_result",
    toolCallId: "c1",
    name: "read_file",
    content: "no such file",
    isError: true,
  });
  assert.ok(
    lines.some((line) =>
      line.startsWith("acp-harness debug: tool call ") && line.includes('"tool":"read_file"')
    ),
  );
  const ended = lines.find((line) => line.startsWith("acp-harness info: tool call ended"));
  assert.match(ended ?? "", /"toolCallId":"c1","tool":"read_file","status":"failed","ms":42/);
});

Deno.test("TurnEventMapper.apply() holds usage for the next write and sends a usage_update", () => {
  const { events, calls } = mapper();
  events.apply({ type: "usage", usage: { input: 3, output: 4 } }, model);
  events.apply({ type: "usage", usage: { input: 3, output: 4 } }, modelInfo());
  assert.deepEqual(calls, ["record usage later", "send usage_update", "record usage later"]);
});

Deno.test("TurnEventMapper.apply() records a plan and sends the whole list as a plan update", () => {
  const { events, calls, records, updates } = mapper();
  const entries = [
    { content: "Fix it", status: "in_progress", priority: "high" },
    { content: "Test it", status: "pending", priority: "medium" },
  ] as const;
  assert.equal(events.apply({ type: "plan", entries }, model), undefined);
  assert.deepEqual(calls, ["record plan soon", "send plan"]);
  assert.deepEqual(records, [{ type: "plan", entries }]);
  assert.deepEqual(updates, [{ sessionUpdate: "plan", entries }]);
});
