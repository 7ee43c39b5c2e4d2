import assert from "node:assert/strict";
import { startServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { withoutSpend } from "../_helpers/acp_schema.ts";

/** Frames for `sessionId` received after the response with `id`. */
function framesAfterResponse(
  frames: ReadonlyArray<Record<string, unknown>>,
  id: number,
  sessionId: string,
): Array<Record<string, unknown>> {
  const at = frames.findIndex((frame) => frame.id === id && !("method" in frame));
  assert.ok(at !== -1, `no response with id ${id}`);
  return frames.slice(at + 1).filter((frame) =>
    frame.method === "session/update" &&
    (frame.params as { sessionId: string }).sessionId === sessionId
  );
}

Deno.test("session/cancel mid-turn resolves cancelled and nothing of the turn follows", async () => {
  const { client, disconnect } = startServer({
    config: { model: "scripted", stream: true },
    script: [
      { text: ["first ", "second ", "third"], chunkDelayMs: 30 },
      { text: "after" },
    ],
  });
  await using workspace = await tempDir("acp-harness-cancel-");
  await client.initialize();
  const sessionId = await client.newSession(workspace.path);
  const id = client.nextId;
  const prompt = client.prompt(sessionId, "go");
  await client.waitFor(() =>
    client.updates(sessionId).some(({ update }) => update.sessionUpdate === "agent_message_chunk")
  );
  await client.notify("session/cancel", { sessionId });
  assert.equal(await prompt, "cancelled");
  assert.equal(await client.prompt(sessionId, "again"), "end_turn");
  // disconnect() drains the session: whatever the cancelled turn still sent has arrived.
  await disconnect();
  const followUp = client.updates(sessionId).find(({ update }) =>
    (update.content as { text?: string } | undefined)?.text === "after"
  )?.update.messageId;
  assert.ok(followUp, "the follow-up prompt answered");
  const late = framesAfterResponse(client.frames, id, sessionId).filter((frame) =>
    (frame.params as { update: { messageId?: string } }).update.messageId !== followUp
  );
  assert.deepEqual(late, []);
  const chunks = client.updates(sessionId).filter(({ update }) =>
    update.sessionUpdate === "agent_message_chunk" && update.messageId !== followUp
  );
  assert.ok(chunks.length >= 1 && chunks.length < 3, `got ${chunks.length} chunks`);
  assert.deepEqual(client.problems, []);
});

Deno.test("$/cancel_request on the prompt resolves cancelled, not an error", async () => {
  const { client, disconnect } = startServer({
    config: { model: "scripted" },
    script: [{ delayMs: 5_000, text: "never" }, { text: "ok" }],
  });
  await using workspace = await tempDir("acp-harness-cancel-");
  await client.initialize();
  const sessionId = await client.newSession(workspace.path);
  const id = client.nextId;
  const prompt = client.requestRaw("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "slow" }],
  });
  await client.waitForUpdate(sessionId, "session_info_update");
  await client.notify("$/cancel_request", { requestId: id });
  const response = await prompt;
  assert.deepEqual(withoutSpend(response.result), { stopReason: "cancelled" });
  assert.equal(await client.prompt(sessionId, "next"), "end_turn");
  assert.deepEqual(client.problems, []);
  await disconnect();
});

Deno.test("a cancel for an unknown or idle session is harmless to the next prompt", async () => {
  const { client, disconnect } = startServer();
  await using workspace = await tempDir("acp-harness-cancel-");
  await client.initialize();
  const sessionId = await client.newSession(workspace.path);
  await client.notify("session/cancel", { sessionId: "unknown" });
  await client.notify("session/cancel", { sessionId });
  assert.equal(await client.prompt(sessionId, "hello"), "end_turn");
  assert.deepEqual(client.problems, []);
  await disconnect();
});

Deno.test("cancellation races before, during and after the model step (200 iterations)", async () => {
  const steps = Array.from({ length: 200 }, (_, index) => ({
    thought: "thinking",
    text: ["a", "b", "c"],
    chunkDelayMs: index % 3 === 1 ? 1 : 0,
  }));
  const { client, disconnect } = startServer({
    config: { model: "scripted", stream: true },
    script: steps,
  });
  await using workspace = await tempDir("acp-harness-cancel-");
  await client.initialize();
  const sessionId = await client.newSession(workspace.path);
  const outcomes = new Map<string, number>();
  const responseIds: number[] = [];
  const thoughts = (): number =>
    client.updates(sessionId).filter(({ update }) => update.sessionUpdate === "agent_thought_chunk")
      .length;
  for (let index = 0; index < 200; index++) {
    const id = client.nextId;
    const thoughtsBefore = thoughts();
    const prompt = client.prompt(sessionId, `race ${index}`);
    const phase = index % 3;
    if (phase === 0) {
      await client.notify("session/cancel", { sessionId });
    } else if (phase === 1) {
      // Cancel once this prompt's model step is running.
      await client.waitFor(() => thoughts() > thoughtsBefore);
      await client.notify("session/cancel", { sessionId });
    }
    const stopReason = await prompt;
    if (phase === 2) {
      await client.notify("session/cancel", { sessionId });
      assert.equal(stopReason, "end_turn");
    }
    assert.ok(stopReason === "cancelled" || stopReason === "end_turn", stopReason);
    outcomes.set(stopReason, (outcomes.get(stopReason) ?? 0) + 1);
    responseIds.push(id);
  }
  // Every update of a turn comes before its response: message ids never straddle a response,
  // and nothing at all follows the last one (disconnect() drains every turn).
  await disconnect();
  let segment = new Set<string>();
  let previous = new Set<string>();
  for (const frame of client.frames) {
    if (responseIds.includes(frame.id as number) && !("method" in frame)) {
      previous = segment;
      segment = new Set();
      continue;
    }
    const messageId = (frame.params as { update?: { messageId?: string } } | undefined)?.update
      ?.messageId;
    if (!messageId) continue;
    assert.ok(!previous.has(messageId), `message ${messageId} continued after its response`);
    segment.add(messageId);
  }
  assert.equal(segment.size, 0, "updates arrived after the last response");
  assert.ok((outcomes.get("cancelled") ?? 0) >= 60, JSON.stringify([...outcomes]));
  assert.ok((outcomes.get("end_turn") ?? 0) >= 60, JSON.stringify([...outcomes]));
  assert.deepEqual(client.problems, []);
});

Deno.test("many sessions run at once; a cancel in one never touches another", async () => {
  const count = 20;
  const { client, disconnect } = startServer({
    config: { model: "scripted" },
    script: [{ delayMs: 40, text: "done" }],
  });
  await using workspace = await tempDir("acp-harness-cancel-");
  await client.initialize();
  const ids: string[] = [];
  for (let index = 0; index < count; index++) ids.push(await client.newSession(workspace.path));
  const prompts = ids.map((id) => client.prompt(id, `session ${id}`));
  await client.notify("session/cancel", { sessionId: ids[3] });
  const results = await Promise.all(prompts);
  results.forEach((stopReason, index) =>
    assert.equal(stopReason, index === 3 ? "cancelled" : "end_turn", `session ${index}`)
  );
  for (const [index, id] of ids.entries()) {
    const messages = client.updates(id).filter(({ update }) =>
      update.sessionUpdate === "agent_message_chunk"
    );
    assert.equal(messages.length, index === 3 ? 0 : 1);
  }
  assert.deepEqual(client.problems, []);
  await disconnect();
});

Deno.test("disconnect mid-turn settles every turn and leaves no timer behind", async () => {
  const { client, connection, disconnect } = startServer({
    config: { model: "scripted" },
    script: [{ delayMs: 60_000, text: "never" }],
  });
  await using workspace = await tempDir("acp-harness-cancel-");
  await client.initialize();
  const sessions = [
    await client.newSession(workspace.path),
    await client.newSession(workspace.path),
  ];
  for (const id of sessions) void client.prompt(id, "hang").catch(() => {});
  for (const id of sessions) await client.waitForUpdate(id, "session_info_update");
  await disconnect();
  await connection.closed;
  // Deno's op and resource sanitizers fail this test if the 60 s delay timer survived.
});

Deno.test("close() cancels running turns and answers them before the connection ends", async () => {
  const { client, connection } = startServer({
    config: { model: "scripted" },
    script: [{ delayMs: 60_000, text: "never" }],
  });
  await using workspace = await tempDir("acp-harness-cancel-");
  await client.initialize();
  const sessionId = await client.newSession(workspace.path);
  const prompt = client.prompt(sessionId, "hang");
  await client.waitForUpdate(sessionId, "session_info_update");
  await connection.close();
  assert.equal(await prompt, "cancelled");
});
