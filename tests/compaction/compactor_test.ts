/**
 * Context accounting and compaction through the `Session` facade, with a provider that tells the
 * summary request from the turn's and a real in-memory store: the threshold, the provider's
 * context error, cancel during compaction, what each kind of client is shown, and a session
 * restored from its log continuing from the compacted history.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type LlmMessage, type LlmRequest, ProviderError } from "../../src/llm/provider.ts";
import type { CompactionNotices } from "../../src/compaction/compactor.ts";
import { estimateMessageTokens, estimateTextTokens } from "../../src/compaction/context_meter.ts";
import { SUMMARY_HEADING } from "../../src/compaction/history_compaction.ts";
import type { RestoredSession } from "../../src/session/restore.ts";
import type { StoredEvent } from "../../src/store/session_store.ts";
import { assertValid, harness, kinds, long, WINDOW } from "../session/_session_harness.ts";
import { modelInfo } from "../session/_fakes.ts";

/** The estimated tokens of a request as the meter counts it (no provider usage in these runs). */
function requestTokens(request: LlmRequest): number {
  return estimateTextTokens(request.system) +
    request.messages.reduce((sum, message) => sum + estimateMessageTokens(message), 0);
}

Deno.test("a long session compacts once at the threshold; the next request is below it and starts with the summary", async () => {
  const h = await harness();
  for (let turn = 1; turn <= 6; turn++) {
    assert.equal(await h.prompt(long(`turn ${turn}`)), "end_turn");
  }
  assert.equal(h.provider.summaries.length, 1, "one compaction");
  const limit = WINDOW * 0.8;
  const sizes = h.provider.turns.map(requestTokens);
  const compactedAt = h.provider.turns.findIndex((request) => {
    const first = request.messages[0];
    return first?.role === "user" && first.content[0]?.type === "text" &&
      first.content[0].text.startsWith(SUMMARY_HEADING);
  });
  assert.equal(compactedAt, 3, "the fourth request carries the summary");
  for (const [index, size] of sizes.entries()) assert.ok(size < limit, `request ${index}: ${size}`);
  const first = h.provider.turns[3]!.messages[0]!;
  assert.ok(
    first.role === "user" && first.content[0]?.type === "text" &&
      first.content[0].text.includes(h.provider.summary as string),
  );
  // The latest prompt stays verbatim after the summary.
  assert.deepEqual(h.provider.turns[3]!.messages.at(-1), {
    role: "user",
    content: [{ type: "text", text: long("turn 4") }],
  });
  // The summarizer saw the earlier turns as a transcript, not the latest prompt.
  const transcript = h.provider.summaries[0]!.messages[0]!;
  assert.ok(transcript.role === "user" && transcript.content[0]?.type === "text");
  assert.match(transcript.content[0].text, /## User\nturn 1: lorem/);
  assert.doesNotMatch(transcript.content[0].text, /turn 4: lorem/);
  assert.deepEqual(h.provider.summaries[0]!.tools, []);

  const compactions = (await h.records()).filter((event) => event.type === "compaction");
  assert.equal(compactions.length, 1);
  const record = compactions[0] as Extract<StoredEvent, { type: "compaction" }>;
  assert.equal(record.reason, "threshold");
  assert.equal(record.replaced, 6);
  assert.ok(record.tokensAfter < record.tokensBefore / 2, JSON.stringify(record));
  // The client without compaction or notices is told in a short agent message, then the usage.
  const told = h.updates.find((update) =>
    update.sessionUpdate === "agent_message_chunk" &&
    update.content.type === "text" && update.content.text.startsWith("Context compacted")
  );
  assert.ok(told, "an agent message tells of the compaction");
  const usage = h.updates.filter((update) => update.sessionUpdate === "usage_update");
  assert.ok(
    usage.some((update) =>
      update.sessionUpdate === "usage_update" && update.used === record.tokensAfter
    ),
    "a usage update reports the context after the compaction",
  );
  assertValid(h.updates);
  await h.session.close();
});

Deno.test("a session restored from the log continues from the compacted history", async () => {
  const first = await harness();
  for (let turn = 1; turn <= 4; turn++) await first.prompt(long(`turn ${turn}`));
  assert.equal(first.provider.summaries.length, 1);
  await first.session.close();
  const restored = await first.restored();
  // What the last request sent, and its answer: the live history at the end.
  const last = first.provider.turns.at(-1)!;
  assert.deepEqual(restored.history.slice(0, -1), last.messages);
  assert.equal(restored.history[0]?.role, "user");

  const snapshot = [...restored.history];
  const second = await harness({ store: first.store, restored });
  assert.equal(await second.prompt("and now?"), "end_turn");
  assert.deepEqual(second.provider.turns[0]!.messages, [
    ...snapshot,
    { role: "user", content: [{ type: "text", text: "and now?" }] },
  ]);
  assert.equal(second.provider.summaries.length, 0, "no second compaction");
  await second.session.close();
});

Deno.test("a context-too-long error compacts once and sends the request again", async () => {
  // No window known: only the provider's error sets compaction off.
  const info = modelInfo();
  const h = await harness({ info });
  await h.prompt(long("turn 1"));
  await h.prompt(long("turn 2"));
  h.provider.answers.push(
    new ProviderError("prompt is too long", { kind: "context-overflow", retryable: false }),
    "fine now",
  );
  assert.equal(await h.prompt(long("turn 3")), "end_turn");
  assert.equal(h.provider.summaries.length, 1);
  const retried = h.provider.turns.at(-1)!;
  assert.ok(retried.messages.length < h.provider.turns.at(-2)!.messages.length);
  const record = (await h.records()).find((event) => event.type === "compaction");
  assert.equal((record as { reason?: string } | undefined)?.reason, "overflow");
  // A second context error in the same step fails the turn with it.
  h.provider.answers.push(
    new ProviderError("prompt is too long", { kind: "context-overflow", retryable: false }),
    new ProviderError("prompt is too long", { kind: "context-overflow", retryable: false }),
  );
  await assert.rejects(h.prompt(long("turn 4")), /prompt is too long/);
  assert.equal(h.provider.summaries.length, 2);
  await h.session.close();
});

Deno.test("a context-too-long error with nothing to compact fails the turn", async () => {
  const h = await harness({ info: modelInfo() });
  h.provider.answers.push(
    new ProviderError("prompt is too long", { kind: "context-overflow", retryable: false }),
  );
  await assert.rejects(h.prompt("hello"), /prompt is too long/);
  assert.equal(h.provider.summaries.length, 0);
  await h.session.close();
});

Deno.test("cancel during compaction: the prompt is cancelled and the history stays as it was", async () => {
  const h = await harness({ notices: { compaction: true, notices: false } });
  for (let turn = 1; turn <= 3; turn++) await h.prompt(long(`turn ${turn}`));
  h.provider.holdSummary = true;
  h.provider.onSummary = () => h.session.cancel();
  assert.equal(await h.prompt(long("turn 4")), "cancelled");
  assert.equal(h.provider.summaries.length, 1);
  assert.ok(!(await h.records()).some((event) => event.type === "compaction"));
  const statuses = h.updates.filter((update) => update.sessionUpdate === "compaction_update")
    .map((update) => update.sessionUpdate === "compaction_update" ? update.status : "");
  assert.deepEqual(statuses, ["in_progress", "cancelled"]);
  // The history is whole: three turns and the cancelled prompt, none of it replaced.
  const restored = await h.restored();
  assert.equal(restored.history.length, 7);
  assert.deepEqual(restored.history.slice(0, 5), h.provider.turns.at(-1)!.messages);
  assert.deepEqual(restored.history[6], {
    role: "user",
    content: [{ type: "text", text: long("turn 4") }],
  });
  assertValid(h.updates);
  await h.session.close();
});

Deno.test("what each kind of client is shown of a compaction", async () => {
  const cases: Array<[CompactionNotices, string[]]> = [
    [{ compaction: true, notices: true }, [
      "compaction_update",
      "compaction_summary_chunk",
      "compaction_summary_chunk",
      "compaction_update",
      "usage_update",
    ]],
    [{ compaction: false, notices: true }, ["notice", "usage_update"]],
    [{ compaction: false, notices: false }, ["agent_message_chunk", "usage_update"]],
  ];
  for (const [notices, expected] of cases) {
    const h = await harness({ notices });
    for (let turn = 1; turn <= 3; turn++) await h.prompt(long(`turn ${turn}`));
    const from = h.updates.length;
    await h.prompt(long("turn 4"));
    const shown = kinds(h.updates.slice(from)).filter((kind) =>
      kind !== "agent_message_chunk" || !notices.compaction
    );
    // The turn's own answer follows the compaction.
    assert.deepEqual(shown.slice(0, expected.length), expected, JSON.stringify(notices));
    if (notices.compaction) {
      const done = h.updates.findLast((update) => update.sessionUpdate === "compaction_update");
      assert.ok(done?.sessionUpdate === "compaction_update" && done.status === "completed");
      assert.deepEqual(done.summary, [{ type: "text", text: h.provider.summary as string }]);
    }
    assertValid(h.updates);
    await h.session.close();
  }
});

Deno.test("a failed summary leaves the history as it was and the turn goes on", async () => {
  const h = await harness({ notices: { compaction: false, notices: true } });
  for (let turn = 1; turn <= 3; turn++) await h.prompt(long(`turn ${turn}`));
  h.provider.summary = new ProviderError("overloaded", { kind: "server", retryable: true });
  assert.equal(await h.prompt(long("turn 4")), "end_turn");
  const notice = h.updates.find((update) => update.sessionUpdate === "notice");
  assert.ok(notice?.sessionUpdate === "notice" && notice.severity === "warning");
  assert.match(String(notice.description), /overloaded/);
  assert.equal(h.provider.turns.at(-1)!.messages.length, 7, "nothing was replaced");
  assert.ok(!(await h.records()).some((event) => event.type === "compaction"));
  assertValid(h.updates);
  await h.session.close();
});

Deno.test("old long tool results are pruned first, without a summary, when that is enough", async () => {
  // A restored history with a long old tool result: pruning it alone brings the context down.
  const big = "x".repeat(14_000);
  const history: LlmMessage[] = [
    { role: "user", content: [{ type: "text", text: "read it" }] },
    { role: "assistant", text: "", toolCalls: [{ id: "r1", name: "read_file", arguments: "{}" }] },
    { role: "tool", toolCallId: "r1", name: "read_file", content: big, isError: false },
    { role: "assistant", text: "It is long." },
  ];
  const restored: RestoredSession = { history, grants: new Map(), cost: 0, repair: [] };
  const h = await harness({ restored });
  assert.equal(await h.prompt("what now?"), "end_turn");
  assert.equal(h.provider.summaries.length, 0, "no summary request");
  const sent = h.provider.turns[0]!.messages;
  assert.equal(sent.length, 5);
  const pruned = sent[2]!;
  assert.ok(pruned.role === "tool");
  assert.match(
    pruned.content,
    /^\[Pruned when the context was compacted: the read_file result of 14000 characters/,
  );
  const record = (await h.records()).find((event) => event.type === "compaction");
  assert.deepEqual((record as { pruned?: readonly string[] }).pruned, ["r1"]);
  assert.equal((record as { summary?: string }).summary, undefined);
  await h.session.close();
});

Deno.test("the context meter counts from the provider's usage and estimates what follows", async () => {
  const { ContextMeter } = await import("../../src/compaction/context_meter.ts");
  const meter = new ContextMeter();
  const reply: LlmMessage = { role: "assistant", text: "ok" };
  const result: LlmMessage = {
    role: "tool",
    toolCallId: "c1",
    name: "read_file",
    content: "y".repeat(400),
    isError: false,
  };
  const history: LlmMessage[] = [{ role: "user", content: [{ type: "text", text: "hi" }] }, reply];
  assert.equal(meter.measure({ system: "s".repeat(40), tools: [], history }), 10 + 5 + 5);
  meter.reported(reply, { input: 1_000, output: 50 });
  history.push(result);
  assert.equal(meter.measure({ system: "", tools: [], history }), 1_050 + 4 + 100);
  meter.reset();
  assert.equal(meter.measure({ system: "", tools: [], history }), 5 + 5 + 104);
});
