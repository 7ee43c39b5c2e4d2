/**
 * Queued and steered prompts end to end over stdio ACP on every runtime: two prompts written
 * together both answer `end_turn`, in order; a cancel with one queued ends both `cancelled`; a
 * message steered into a running turn reaches it, and a new process replays it from the JSONL
 * store as a user message where it joined. Every frame is checked against the ACP schema.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

/** A server on `runtime` with the scripted model over a JSONL store in `dir`. */
function spawn(runtime: Runtime, dir: string, cwd: string, script: string): StdioAgent {
  const agent = spawnAgent(runtime.command, [
    ...runtime.args,
    "--data-dir",
    join(dir, "data"),
    "--model",
    "scripted",
    "--script",
    script,
  ], { cwd });
  return agent;
}

async function stop(agent: StdioAgent): Promise<void> {
  if (agent.child.exitCode === null && agent.child.signalCode === null) agent.end();
  await agent.exited;
}

function promptFrame(agent: StdioAgent, sessionId: string, text: string) {
  return agent.client.nextRequest("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text }],
  });
}

function stopReason(frame: { result?: unknown } | undefined): unknown {
  return (frame?.result as { stopReason?: string } | undefined)?.stopReason;
}

/** User and agent messages and finished tool calls, as `kind:text`. */
function story(agent: StdioAgent, sessionId: string, from = 0): string[] {
  const lines: string[] = [];
  for (const { update } of agent.client.updates(sessionId).slice(from)) {
    const text = (update.content as { text?: string } | undefined)?.text;
    if (update.sessionUpdate === "user_message_chunk") lines.push(`user:${text}`);
    if (update.sessionUpdate === "agent_message_chunk") lines.push(`agent:${text}`);
    if (update.sessionUpdate === "tool_call_update" && update.status === "completed") {
      lines.push(`tool:${update.toolCallId}`);
    }
  }
  return lines;
}

async function queueAndSteer(runtime: Runtime): Promise<void> {
  await using dir = await tempDir("acp-harness-queue-e2e-");
  const cwd = join(dir.path, "ws");
  await mkdir(cwd);
  const script = join(dir.path, "script.json");
  const write = (id: string) => ({
    toolCalls: [{ id, name: "write_file", arguments: { path: `${id}.txt`, content: id } }],
  });
  await writeFile(
    script,
    JSON.stringify([{ text: "one" }, { text: "two" }, write("w1"), { text: "done" }, write("w2")]),
  );
  const agent = spawn(runtime, dir.path, cwd, script);
  try {
    // The first permission request waits for the test: its turn runs until then.
    let open = (): void => {};
    const gate = new Promise<void>((resolve) => open = resolve);
    let asked = 0;
    agent.client.handlers.set("session/request_permission", async () => {
      if (++asked === 1) await gate;
      return { outcome: { outcome: "selected", optionId: "allow_once" } };
    });
    const init = await agent.client.initialize();
    assert.deepEqual((init._meta as Record<string, unknown>).steering, { supported: true });
    const sessionId = await agent.client.newSession(cwd);

    // Two prompts in one write: both end_turn, in order.
    const first = promptFrame(agent, sessionId, "first");
    const second = promptFrame(agent, sessionId, "second");
    await agent.writeRaw(JSON.stringify(first.frame) + "\n" + JSON.stringify(second.frame) + "\n");
    assert.equal(stopReason(await agent.client.response(first.id)), "end_turn", runtime.name);
    assert.equal(stopReason(await agent.client.response(second.id)), "end_turn", runtime.name);
    assert.ok(agent.client.responseIndex(first.id) < agent.client.responseIndex(second.id));
    assert.deepEqual(story(agent, sessionId), ["agent:one", "agent:two"]);

    // A running turn (held on its permission request) takes a steered message at its next step.
    const turn = agent.client.prompt(sessionId, "write a");
    await agent.client.waitUntil(() => asked === 1);
    const steered = await agent.client.request("_session/steering", {
      sessionId,
      prompt: [{ type: "text", text: "and say done" }],
    });
    assert.deepEqual(steered, { outcome: "injected" }, runtime.name);
    open();
    assert.equal(await turn, "end_turn", runtime.name);
    assert.deepEqual(story(agent, sessionId).slice(2), [
      "tool:w1",
      "user:and say done",
      "agent:done",
    ]);

    // A cancel with one queued ends both cancelled (the running one waits on its permission
    // request, which is never answered).
    asked = 0;
    agent.client.handlers.set("session/request_permission", () => {
      asked++;
      return new Promise(() => {});
    });
    const running = promptFrame(agent, sessionId, "third");
    const queued = promptFrame(agent, sessionId, "fourth");
    await agent.client.sendRaw(running.frame);
    await agent.client.waitUntil(() => asked === 1);
    await agent.client.sendRaw(queued.frame);
    await agent.client.notify("session/cancel", { sessionId });
    const answers = [
      await agent.client.response(running.id),
      await agent.client.response(queued.id),
    ];
    assert.deepEqual(answers.map(stopReason), ["cancelled", "cancelled"], runtime.name);
    assert.deepEqual(agent.client.problems, [], runtime.name);
    await stop(agent);

    // A new process replays the steered message from the log where it joined.
    const again = spawn(runtime, dir.path, cwd, script);
    try {
      await again.client.initialize();
      await again.client.request("session/load", { sessionId, cwd, mcpServers: [] });
      const replayed = story(again, sessionId);
      assert.deepEqual(replayed.slice(0, 8), [
        "user:first",
        "agent:one",
        "user:second",
        "agent:two",
        "user:write a",
        "tool:w1",
        "user:and say done",
        "agent:done",
      ], runtime.name);
      assert.deepEqual(again.client.problems, [], runtime.name);
    } finally {
      await stop(again);
    }
  } finally {
    if (agent.child.exitCode === null && agent.child.signalCode === null) {
      agent.child.kill("SIGKILL");
    }
    await agent.exited;
  }
}

for (const runtime of RUNTIMES) {
  Deno.test(`queued prompts run in order, a cancel ends the queue, steering reaches the turn (${runtime.name})`, async () => {
    await queueAndSteer(runtime);
  });
}
