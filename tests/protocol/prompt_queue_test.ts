/**
 * Queued prompts: a prompt while one runs waits and runs after it, in order; `session/cancel`
 * ends the running one and every queued one; `$/cancel_request` drops one queued prompt; the
 * queue has a limit; a mode change between two queued prompts applies to the second.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Frame } from "../_helpers/acp_client.ts";
import { RpcError } from "../_helpers/acp_client.ts";
import { type MemoryServer, type StartOptions, startServer } from "../_helpers/server.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";

/** A gate the test opens: the first permission request waits for it. */
interface Held {
  readonly asked: string[];
  open(): void;
}

/**
 * Starts a scripted server whose first permission request is answered only once the test opens
 * the gate (the turn holding it runs until then); later ones are allowed at once.
 */
async function start(
  script: unknown[],
  options: StartOptions = {},
): Promise<{ server: MemoryServer; sessionId: string; held: Held; cwd: string; dirs: TempDirs }> {
  const dirs = new TempDirs("acp-harness-queue-");
  const cwd = await dirs.make();
  const server = startServer({
    ...options,
    script,
    config: { model: "scripted", ...options.config },
  });
  let open = (): void => {};
  const gate = new Promise<void>((resolve) => open = resolve);
  const asked: string[] = [];
  server.client.handlers.set("session/request_permission", async (params) => {
    const { toolCall } = params as { toolCall: { toolCallId: string } };
    asked.push(toolCall.toolCallId);
    if (asked.length === 1) await gate;
    return { outcome: { outcome: "selected", optionId: "allow_once" } };
  });
  await server.client.initialize();
  const sessionId = await server.client.newSession(cwd);
  return { server, sessionId, held: { asked, open }, cwd, dirs };
}

const write = (id: string, path: string) => ({
  toolCalls: [{ id, name: "write_file", arguments: { path, content: id } }],
});

function promptFrame(server: MemoryServer, sessionId: string, text: string) {
  return server.client.nextRequest("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text }],
  });
}

function stopReason(frame: Frame | undefined): unknown {
  return (frame?.result as { stopReason?: string } | undefined)?.stopReason ??
    (frame?.error as { message?: string } | undefined)?.message;
}

/** The texts of the agent's messages, in order. */
function agentTexts(server: MemoryServer, sessionId: string): string[] {
  return server.client.updates(sessionId)
    .filter(({ update }) => update.sessionUpdate === "agent_message_chunk")
    .map(({ update }) => (update.content as { text: string }).text);
}

Deno.test("initialize advertises prompt queueing and steering in the peers' shapes", async () => {
  for (const promptQueue of [8, 0]) {
    const server = startServer({ config: { promptQueue } });
    const result = await server.client.initialize();
    const capabilities = result.agentCapabilities as { _meta?: unknown };
    assert.deepEqual(
      capabilities._meta,
      {
        ...(promptQueue > 0 ? { claudeCode: { promptQueueing: true } } : {}),
        "acp-harness": { observe: { maxObservers: 8 } },
      },
    );
    const meta = result._meta as Record<string, Record<string, unknown>>;
    assert.deepEqual(meta.steering, { supported: true });
    assert.equal(meta["acp-harness"]?.promptQueue, promptQueue);
    assert.deepEqual(server.client.problems, []);
    await server.disconnect();
  }
});

Deno.test("two prompts written together both answer end_turn, in order", async () => {
  const { server, sessionId, dirs } = await start([{ text: "one" }, { text: "two" }]);
  await using _dirs = dirs;
  const first = promptFrame(server, sessionId, "first");
  const second = promptFrame(server, sessionId, "second");
  await server.client.sendRaw(first.frame);
  await server.client.sendRaw(second.frame);
  const [a, b] = [await server.client.response(first.id), await server.client.response(second.id)];
  assert.deepEqual([stopReason(a), stopReason(b)], ["end_turn", "end_turn"]);
  assert.ok(server.client.responseIndex(first.id) < server.client.responseIndex(second.id));
  assert.deepEqual(agentTexts(server, sessionId), ["one", "two"]);
  // The second turn's updates come after the first's answer.
  const answered = server.client.responseIndex(first.id);
  const two = server.client.frames.findIndex((frame) =>
    ((frame.params as { update?: { content?: { text?: string } } })?.update?.content?.text) ===
      "two"
  );
  assert.ok(two > answered, "the second turn's message follows the first's answer");
  assert.deepEqual(server.client.problems, []);
  await server.disconnect();
});

Deno.test("session/cancel with one prompt queued ends both cancelled, the queued one unrecorded", async () => {
  const { server, sessionId, held, dirs, cwd } = await start([
    write("w1", "a.txt"),
    { text: "never" },
  ]);
  await using _dirs = dirs;
  const first = promptFrame(server, sessionId, "first");
  const second = promptFrame(server, sessionId, "second");
  await server.client.sendRaw(first.frame);
  await server.client.waitUntil(() => held.asked.length === 1);
  await server.client.sendRaw(second.frame);
  await server.client.notify("session/cancel", { sessionId });
  const answers = [await server.client.response(first.id), await server.client.response(second.id)];
  assert.deepEqual(answers.map(stopReason), ["cancelled", "cancelled"]);
  held.open();
  // The log has the first prompt only: replayed on load, one user message.
  await server.client.request("session/close", { sessionId });
  await server.client.request("session/load", { sessionId, cwd, mcpServers: [] });
  const users = server.client.updates(sessionId)
    .filter(({ update }) => update.sessionUpdate === "user_message_chunk")
    .map(({ update }) => (update.content as { text: string }).text);
  assert.deepEqual(users, ["first"]);
  assert.deepEqual(server.client.problems, []);
  await server.disconnect();
});

Deno.test("past --prompt-queue a prompt gets -32602 naming the limit; 0 refuses as before", async () => {
  for (const promptQueue of [1, 0]) {
    const { server, sessionId, held, dirs } = await start(
      [write("w1", "a.txt"), { text: "one" }, { text: "two" }],
      { config: { promptQueue } },
    );
    await using _dirs = dirs;
    const first = server.client.prompt(sessionId, "first");
    await server.client.waitUntil(() => held.asked.length === 1);
    const queued = promptQueue > 0 ? server.client.prompt(sessionId, "second") : undefined;
    await assert.rejects(server.client.prompt(sessionId, "third"), (error: unknown) => {
      assert.ok(error instanceof RpcError);
      assert.equal(error.code, -32602);
      assert.match(
        error.message,
        promptQueue > 0
          ? /already has 1 prompts queued behind the running one \(the limit: --prompt-queue 1\)/
          : /a prompt is already in flight/,
      );
      return true;
    });
    held.open();
    assert.equal(await first, "end_turn");
    if (queued) assert.equal(await queued, "end_turn");
    assert.deepEqual(server.client.problems, []);
    await server.disconnect();
  }
});

Deno.test("$/cancel_request of a queued prompt drops just that one", async () => {
  const { server, sessionId, held, dirs } = await start([
    write("w1", "a.txt"),
    { text: "one" },
    { text: "three" },
  ]);
  await using _dirs = dirs;
  const first = promptFrame(server, sessionId, "first");
  const second = promptFrame(server, sessionId, "second");
  const third = promptFrame(server, sessionId, "third");
  await server.client.sendRaw(first.frame);
  await server.client.waitUntil(() => held.asked.length === 1);
  await server.client.sendRaw(second.frame);
  await server.client.sendRaw(third.frame);
  await server.client.notify("$/cancel_request", { requestId: second.id });
  assert.equal(stopReason(await server.client.response(second.id)), "cancelled");
  held.open();
  assert.equal(stopReason(await server.client.response(first.id)), "end_turn");
  assert.equal(stopReason(await server.client.response(third.id)), "end_turn");
  assert.deepEqual(agentTexts(server, sessionId), ["one", "three"]);
  assert.deepEqual(server.client.problems, []);
  await server.disconnect();
});

Deno.test("a mode change sent between two queued prompts applies to the second", async () => {
  const { server, sessionId, held, dirs } = await start([
    write("w1", "a.txt"),
    { text: "one" },
    write("w2", "b.txt"),
    { text: "two" },
    write("w3", "c.txt"),
    { text: "three" },
  ]);
  await using _dirs = dirs;
  const first = promptFrame(server, sessionId, "first");
  const second = promptFrame(server, sessionId, "second");
  const mode = server.client.nextRequest("session/set_mode", { sessionId, modeId: "auto" });
  const third = promptFrame(server, sessionId, "third");
  await server.client.sendRaw(first.frame);
  await server.client.waitUntil(() => held.asked.length === 1);
  for (const { frame } of [second, mode, third]) await server.client.sendRaw(frame);
  assert.ok(await server.client.response(mode.id));
  held.open();
  for (const { id } of [first, second, third]) {
    assert.equal(stopReason(await server.client.response(id)), "end_turn");
  }
  // The first two ran in `ask` (and asked); the third, sent after the change, in `auto`.
  assert.deepEqual(held.asked, ["w1", "w2"]);
  assert.deepEqual(server.client.problems, []);
  await server.disconnect();
});
