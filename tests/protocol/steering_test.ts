/**
 * `_session/steering`: a message sent into the running turn reaches its model at the next step,
 * is recorded and replayed as a user message; with no turn running it runs as a prompt (or, when
 * asked, is handed back); what a turn ends without taking runs next.
 *
 * @module
 */
import assert from "node:assert/strict";
import { RpcError } from "../_helpers/acp_client.ts";
import { type MemoryServer, type StartOptions, startServer } from "../_helpers/server.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";

interface Started {
  readonly server: MemoryServer;
  readonly sessionId: string;
  readonly cwd: string;
  readonly dirs: TempDirs;
  /** The tool calls permission was asked for. */
  readonly asked: string[];
  /** Answers the first permission request (it waits until then). */
  open(): void;
}

/** A scripted server whose first permission request waits for the test. */
async function start(script: unknown[], options: StartOptions = {}): Promise<Started> {
  const dirs = new TempDirs("acp-harness-steer-");
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
    asked.push((params as { toolCall: { toolCallId: string } }).toolCall.toolCallId);
    if (asked.length === 1) await gate;
    return { outcome: { outcome: "selected", optionId: "allow_once" } };
  });
  await server.client.initialize();
  const sessionId = await server.client.newSession(cwd);
  return { server, sessionId, cwd, dirs, asked, open };
}

const write = (id: string) => ({
  toolCalls: [{ id, name: "write_file", arguments: { path: `${id}.txt`, content: id } }],
});

function steer(server: MemoryServer, sessionId: string, text: string, meta?: unknown) {
  return server.client.request<{ outcome: string; reason?: string }>("_session/steering", {
    sessionId,
    prompt: [{ type: "text", text }],
    ...(meta === undefined ? {} : { _meta: meta }),
  });
}

/** The session's updates as `kind:text` (user and agent messages) and `tool:id:status`. */
function story(server: MemoryServer, sessionId: string): string[] {
  const lines: string[] = [];
  for (const { update } of server.client.updates(sessionId)) {
    const text = (update.content as { text?: string } | undefined)?.text;
    if (update.sessionUpdate === "user_message_chunk") lines.push(`user:${text}`);
    if (update.sessionUpdate === "agent_message_chunk") lines.push(`agent:${text}`);
    if (update.sessionUpdate === "tool_call_update" && update.status === "completed") {
      lines.push(`tool:${update.toolCallId}`);
    }
  }
  return lines;
}

Deno.test("a steered message reaches the running turn's next step and is replayed where it joined", async () => {
  const { server, sessionId, cwd, dirs, asked, open } = await start([write("w1"), {
    text: "done",
  }]);
  await using _dirs = dirs;
  const turn = server.client.prompt(sessionId, "write w1");
  await server.client.waitUntil(() => asked.length === 1);
  assert.deepEqual(await steer(server, sessionId, "and use tabs"), { outcome: "injected" });
  open();
  assert.equal(await turn, "end_turn");
  const live = story(server, sessionId);
  assert.deepEqual(live, ["tool:w1", "user:and use tabs", "agent:done"]);
  // Recorded: a load replays it in the same place, after the prompt.
  await server.client.request("session/close", { sessionId });
  const before = server.client.updates(sessionId).length;
  await server.client.request("session/load", { sessionId, cwd, mcpServers: [] });
  const replayed = story(server, sessionId).slice(live.length);
  assert.ok(server.client.updates(sessionId).length > before);
  assert.deepEqual(replayed, ["user:write w1", "tool:w1", "user:and use tabs", "agent:done"]);
  assert.deepEqual(server.client.problems, []);
  await server.disconnect();
});

Deno.test("two steered messages are taken at the next step, in the order sent", async () => {
  const { server, sessionId, dirs, asked, open } = await start([write("w1"), {
    text: "first answer",
  }]);
  await using _dirs = dirs;
  const turn = server.client.prompt(sessionId, "go");
  await server.client.waitUntil(() => asked.length === 1);
  assert.equal((await steer(server, sessionId, "one")).outcome, "injected");
  assert.equal((await steer(server, sessionId, "two")).outcome, "injected");
  open();
  assert.equal(await turn, "end_turn");
  assert.deepEqual(story(server, sessionId), [
    "tool:w1",
    "user:one",
    "user:two",
    "agent:first answer",
  ]);
  assert.deepEqual(server.client.problems, []);
  await server.disconnect();
});

Deno.test("with no turn running a steered message runs as a prompt, or is handed back when asked", async () => {
  const { server, sessionId, dirs } = await start([{ text: "from the steer" }]);
  await using _dirs = dirs;
  assert.deepEqual(
    await steer(server, sessionId, "hello", { steering: { idleBehavior: "promptRequired" } }),
    { outcome: "promptRequired", reason: "noRunningTurn" },
  );
  assert.deepEqual(story(server, sessionId), [], "nothing ran");
  assert.deepEqual(await steer(server, sessionId, "hello"), { outcome: "startedNewTurn" });
  await server.client.waitUntil(() => story(server, sessionId).includes("agent:from the steer"));
  // The turn ended: the session takes a prompt again.
  await server.client.waitUntil(() =>
    server.logs.some((line) => /prompt ended .*"stopReason":"end_turn"/.test(line))
  );
  assert.deepEqual(server.client.problems, []);
  await server.disconnect();
});

Deno.test("what a turn's budget ends it without taking runs as the next prompt", async () => {
  const { server, sessionId, dirs, asked, open } = await start(
    [write("w1"), { text: "after the budget" }],
    { config: { maxSteps: 1 } },
  );
  await using _dirs = dirs;
  const turn = server.client.prompt(sessionId, "go");
  await server.client.waitUntil(() => asked.length === 1);
  assert.equal((await steer(server, sessionId, "then this")).outcome, "injected");
  open();
  assert.equal(await turn, "max_turn_requests");
  await server.client.waitUntil(() => story(server, sessionId).includes("agent:after the budget"));
  assert.deepEqual(server.client.problems, []);
  await server.disconnect();
});

Deno.test("_session/steering names a bad field, an unknown session, and a full queue", async () => {
  const { server, sessionId, dirs, asked, open } = await start(
    [write("w1"), { text: "done" }],
    { config: { promptQueue: 0 } },
  );
  await using _dirs = dirs;
  const expect = async (params: unknown, code: number, pattern: RegExp) => {
    await assert.rejects(server.client.request("_session/steering", params), (error: unknown) => {
      assert.ok(error instanceof RpcError);
      assert.equal(error.code, code, error.message);
      assert.match(error.message, pattern);
      return true;
    });
  };
  await expect({ sessionId }, -32602, /prompt: expected an array of content blocks/);
  await expect({ prompt: [] }, -32602, /sessionId: expected a non-empty string/);
  await expect({ sessionId, prompt: [7] }, -32602, /prompt\[0\]: expected a content block/);
  await expect(
    { sessionId, prompt: [], _meta: { steering: { idleBehavior: "later" } } },
    -32602,
    /_meta\.steering\.idleBehavior: expected "promptRequired" or "startTurn"/,
  );
  await expect({ sessionId: "nope", prompt: [] }, -32002, /not found/i);
  await expect(
    { sessionId, prompt: [{ type: "audio", data: "", mimeType: "audio/wav" }] },
    -32602,
    /audio/,
  );
  // With no queue, steering a running turn still works.
  const turn = server.client.prompt(sessionId, "go");
  await server.client.waitUntil(() => asked.length === 1);
  assert.equal((await steer(server, sessionId, "fine")).outcome, "injected");
  open();
  assert.equal(await turn, "end_turn");
  assert.deepEqual(server.client.problems, []);
  await server.disconnect();
});

Deno.test("a steered slash command left over runs as plain text, not as the command", async () => {
  const { server, sessionId, dirs, asked, open } = await start(
    [write("w1"), { text: "took it as text" }],
    { config: { maxSteps: 1 } },
  );
  await using _dirs = dirs;
  const turn = server.client.prompt(sessionId, "go");
  await server.client.waitUntil(() => asked.length === 1);
  assert.equal((await steer(server, sessionId, "/clear")).outcome, "injected");
  open();
  assert.equal(await turn, "max_turn_requests");
  await server.client.waitUntil(() => story(server, sessionId).includes("agent:took it as text"));
  assert.deepEqual(server.client.problems, []);
  await server.disconnect();
});

Deno.test("at most 16 steered messages wait for a turn's next step", async () => {
  const { server, sessionId, dirs, asked, open } = await start([write("w1"), { text: "done" }]);
  await using _dirs = dirs;
  const turn = server.client.prompt(sessionId, "go");
  await server.client.waitUntil(() => asked.length === 1);
  for (let n = 0; n < 16; n++) {
    assert.equal((await steer(server, sessionId, `m${n}`)).outcome, "injected");
  }
  await assert.rejects(steer(server, sessionId, "one too many"), (error: unknown) => {
    assert.ok(error instanceof RpcError);
    assert.equal(error.code, -32602);
    assert.match(error.message, /16 steered messages already wait for the turn's next step/);
    return true;
  });
  open();
  assert.equal(await turn, "end_turn");
  const users = story(server, sessionId).filter((line) => line.startsWith("user:"));
  assert.equal(users.length, 16);
  assert.deepEqual(server.client.problems, []);
  await server.disconnect();
});
