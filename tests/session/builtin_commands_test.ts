/**
 * The built-in slash commands through the `Session` facade: what each does, what it records and
 * replays, what the client is offered, and that an unknown `/word` is ordinary text.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ConfigValueError } from "../../src/session/session.ts";
import { SessionRestorer } from "../../src/session/restore.ts";
import { MemoryAttachmentStore } from "../../src/store/memory_attachment_store.ts";
import { nullLogger } from "../../src/log/logger.ts";
import { assertValid, harness, INFO, kinds, long, OTHER } from "./_session_harness.ts";

function replies(updates: readonly { sessionUpdate: string }[]): string[] {
  return updates.flatMap((update) => {
    const chunk = update as { sessionUpdate: string; content?: { type: string; text?: string } };
    return chunk.sessionUpdate === "agent_message_chunk" && chunk.content?.type === "text"
      ? [chunk.content.text ?? ""]
      : [];
  });
}

Deno.test("the client is offered the built-in commands and the MCP prompts", async () => {
  const h = await harness({
    commands: {
      list: () => [{ name: "mcp__docs__greet", description: "Greets", hint: "name" }],
      expand: () => Promise.resolve([{ type: "text", text: "Greet" }]),
    },
  });
  h.session.announceCommands();
  await h.session.close();
  const offered = h.updates.find((update) => update.sessionUpdate === "available_commands_update");
  assert.ok(offered?.sessionUpdate === "available_commands_update");
  assert.deepEqual(offered.availableCommands.map((command) => command.name), [
    "compact",
    "model",
    "mode",
    "clear",
    "mcp__docs__greet",
  ]);
  assertValid(h.updates);
});

Deno.test("/model switches the model from the next prompt on; alone it lists them", async () => {
  const h = await harness();
  assert.equal(await h.prompt("/model"), "end_turn");
  assert.match(replies(h.updates).at(-1)!, /\* fake\/model: Fake model\n {2}fake\/other: Other/);
  assert.equal(await h.prompt("/model fake/other"), "end_turn");
  assert.ok(kinds(h.updates).includes("config_option_update"));
  assert.match(replies(h.updates).at(-1)!, /Model set to Other model \(fake\/other\)/);
  assert.equal(h.session.currentModel()?.id, OTHER.id);
  await assert.rejects(h.prompt("/model nope/none"), ConfigValueError);
  assert.equal(h.session.currentModel()?.id, OTHER.id);
  assert.equal(h.provider.turns.length, 0, "no command reached the model");
  const records = await h.records();
  assert.deepEqual(
    records.filter((event) => event.type === "command").map((event) =>
      event.type === "command" ? event.text : ""
    ),
    ["/model", "/model fake/other"],
  );
  assert.ok(records.some((event) => event.type === "config" && event.model === OTHER.id));
  assertValid(h.updates);
  await h.session.close();
});

Deno.test("/mode switches the permission mode; a bad one is refused naming the choices", async () => {
  const h = await harness();
  assert.equal(await h.prompt("/mode"), "end_turn");
  assert.match(replies(h.updates).at(-1)!, /Permission mode: ask\. Modes: ask, auto, read-only/);
  assert.equal(await h.prompt("/mode auto"), "end_turn");
  assert.equal(h.session.modes().currentModeId, "auto");
  assert.ok(kinds(h.updates).includes("current_mode_update"));
  await assert.rejects(h.prompt("/mode yolo"), (error: unknown) => {
    assert.ok(error instanceof ConfigValueError);
    assert.match(error.message, /ask.*auto.*read-only/);
    return true;
  });
  assertValid(h.updates);
  await h.session.close();
});

Deno.test("/clear starts the model afresh; the log keeps the past and a restart sees the clear", async () => {
  const h = await harness();
  await h.prompt("remember the number 42");
  assert.equal(await h.prompt("/clear"), "end_turn");
  await h.prompt("what was the number?");
  assert.deepEqual(h.provider.turns.at(-1)!.messages, [
    { role: "user", content: [{ type: "text", text: "what was the number?" }] },
  ]);
  const usage = h.updates.filter((update) => update.sessionUpdate === "usage_update");
  assert.ok(usage.length > 0, "the context size after the clear is reported");
  await h.session.close();
  const restored = await h.restored();
  assert.deepEqual(restored.history.map((message) => message.role), ["user", "assistant"]);
  assertValid(h.updates);
});

Deno.test("/compact summarizes now; on an empty session there is nothing to compact", async () => {
  const empty = await harness();
  assert.equal(await empty.prompt("/compact"), "end_turn");
  assert.equal(replies(empty.updates).at(-1), "Nothing to compact yet.");
  assert.equal(empty.provider.summaries.length, 0);
  await empty.session.close();

  const h = await harness({ notices: { compaction: true, notices: false } });
  await h.prompt(long("turn 1"));
  await h.prompt("turn 2");
  assert.equal(await h.prompt("/compact"), "end_turn");
  assert.equal(h.provider.summaries.length, 1);
  const record = (await h.records()).find((event) => event.type === "compaction");
  assert.equal(record?.type === "compaction" ? record.reason : "", "command");
  await h.prompt("go on");
  const sent = h.provider.turns.at(-1)!.messages;
  // The long first prompt became the summary; the recent steps that fit a fifth of the window
  // stay verbatim, then the new prompt.
  assert.equal(sent.length, 5);
  const first = sent[0]!;
  assert.ok(first.role === "user" && first.content[0]?.type === "text");
  assert.match(first.content[0].text, /^\[Summary of the earlier conversation/);
  assert.ok(
    !sent.some((message) =>
      message.role === "user" && JSON.stringify(message).includes("turn 1: lorem")
    ),
  );
  assertValid(h.updates);
  await h.session.close();

  // On load, the command and the compaction are shown again.
  const restorer = new SessionRestorer({
    attachments: new MemoryAttachmentStore(),
    logger: nullLogger,
    sessionId: "s1",
    replay: true,
    notices: { compaction: true, notices: false },
  });
  const updates = await restorer.add((await h.store.load("s1"))!.records);
  const compact = updates.findIndex((update) =>
    update.sessionUpdate === "user_message_chunk" && update.content.type === "text" &&
    update.content.text === "/compact"
  );
  assert.ok(compact > 0);
  assert.equal(updates[compact + 1]?.sessionUpdate, "compaction_update");
  assertValid(updates);
});

Deno.test("an unknown /word and a path are ordinary text for the model", async () => {
  const h = await harness();
  assert.equal(await h.prompt("/frobnicate the widget"), "end_turn");
  assert.equal(await h.prompt("/etc/hosts looks odd"), "end_turn");
  assert.deepEqual(
    h.provider.turns.map((request) => {
      const last = request.messages.at(-1);
      return last?.role === "user" && last.content[0]?.type === "text" ? last.content[0].text : "";
    }),
    ["/frobnicate the widget", "/etc/hosts looks odd"],
  );
  assert.equal(h.session.currentModel()?.id, INFO.id);
  await h.session.close();
});
