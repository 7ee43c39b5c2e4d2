/**
 * Plans end to end on every runtime: a scripted model calls `update_plan` twice, the client gets
 * two `plan` updates with the whole lists (valid against the ACP schema), and `session/load` in a
 * new server process replays them in order.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

type Update = Record<string, unknown>;

const FIRST = [
  { content: "Read the failing test", status: "in_progress", priority: "high" },
  { content: "Fix the parser", status: "pending", priority: "medium" },
  { content: "Run the suite", status: "pending", priority: "low" },
];
const SECOND = [
  { content: "Read the failing test", status: "completed", priority: "high" },
  { content: "Fix the parser", status: "in_progress", priority: "medium" },
  { content: "Run the suite", status: "pending", priority: "low" },
];

/** The model: a plan (the priority of the second entry left to its default), a new plan, an answer. */
const SCRIPT = [
  {
    toolCalls: [{
      id: "p1",
      name: "update_plan",
      arguments: {
        entries: FIRST.map(({ priority, ...entry }) =>
          priority === "medium" ? entry : { ...entry, priority }
        ),
      },
    }],
  },
  { toolCalls: [{ id: "p2", name: "update_plan", arguments: { entries: SECOND } }] },
  { text: "Halfway there." },
];

/** The updates about the plan and its tool calls' announcements and ends, in order. */
function planActivity(updates: readonly Update[]): unknown[] {
  return updates.flatMap((update): unknown[] => {
    if (update.sessionUpdate === "plan") return [update];
    if (update.sessionUpdate === "tool_call") return [`tool_call ${update.toolCallId}`];
    if (update.sessionUpdate === "tool_call_update" && update.status !== "in_progress") {
      return [`${update.status} ${update.toolCallId}`];
    }
    return [];
  });
}

const EXPECTED = [
  "tool_call p1",
  "completed p1",
  { sessionUpdate: "plan", entries: FIRST },
  "tool_call p2",
  "completed p2",
  { sessionUpdate: "plan", entries: SECOND },
];

async function stop(agent: StdioAgent): Promise<void> {
  agent.end();
  await agent.exited;
}

async function planAndReload(runtime: Runtime): Promise<void> {
  await using dir = await tempDir("acp-harness-plan-");
  const cwd = join(dir.path, "ws");
  const dataDir = join(dir.path, "data");
  await mkdir(cwd);
  const script = join(dir.path, "script.json");
  await writeFile(script, JSON.stringify(SCRIPT));
  const started: StdioAgent[] = [];
  const server = (): StdioAgent => {
    const agent = spawnAgent(runtime.command, [
      ...runtime.args,
      "--data-dir",
      dataDir,
      "--model",
      "scripted",
      "--script",
      script,
    ], { cwd });
    started.push(agent);
    return agent;
  };
  try {
    const first = server();
    await first.client.initialize();
    const sessionId = await first.client.newSession(cwd);
    assert.equal(await first.client.prompt(sessionId, "Fix the build"), "end_turn");
    const live = first.client.updates(sessionId).map(({ update }) => update);
    assert.deepEqual(planActivity(live), EXPECTED, runtime.name);
    // It changes nothing, so it never asks, even in the default ask mode.
    assert.ok(!first.client.frames.some((frame) => frame.method === "session/request_permission"));
    const call = live.find((update) => update.sessionUpdate === "tool_call");
    assert.equal(call?.kind, "think", runtime.name);
    assert.equal(call?.title, "Update plan (3 entries)", runtime.name);
    const result = live.find((update) =>
      update.sessionUpdate === "tool_call_update" && update.status === "completed"
    );
    assert.deepEqual(result?.content, [{
      type: "content",
      content: {
        type: "text",
        text: "Plan updated: 3 entries (0 completed, 1 in progress, 2 pending).",
      },
    }]);
    assert.deepEqual(first.client.problems, [], runtime.name);
    assert.deepEqual(first.impure, [], runtime.name);
    await stop(first);

    const second = server();
    await second.client.initialize();
    await second.client.request("session/load", { sessionId, cwd, mcpServers: [] });
    const replayed = second.client.updates(sessionId).map(({ update }) => update);
    assert.deepEqual(planActivity(replayed), EXPECTED, runtime.name);
    assert.deepEqual(second.client.problems, [], runtime.name);
    assert.deepEqual(second.impure, [], runtime.name);
    await stop(second);
  } finally {
    for (const agent of started) {
      if (agent.child.exitCode === null && agent.child.signalCode === null) {
        agent.child.kill("SIGKILL");
      }
      await agent.exited;
    }
  }
}

for (const runtime of RUNTIMES) {
  Deno.test(`update_plan sends two plan updates and session/load replays them in order (${runtime.name})`, async () => {
    await planAndReload(runtime);
  });
}
