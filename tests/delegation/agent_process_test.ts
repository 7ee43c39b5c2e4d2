/**
 * An agent's process: its depth in the environment, and the three stop tiers (stdin EOF,
 * SIGTERM, SIGKILL), each reached only when the one before did not end it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { AgentProcess } from "../../src/delegation/agent_process.ts";
import { NodeHost } from "../../src/host/node_host.ts";

const GRACE = { eofMs: 300, termMs: 300 };

/** Starts `script` under `sh` as an agent at depth 3, in this directory. */
function start(script: string): Promise<AgentProcess> {
  return AgentProcess.start({
    processes: new NodeHost(),
    agent: { command: "sh", args: ["-c", script], description: "a shell" },
    cwd: Deno.cwd(),
    depth: 3,
    grace: GRACE,
  });
}

/** Reads the agent's output up to its first line (the script is ready then); keeps reading after. */
async function firstLine(agent: AgentProcess): Promise<string> {
  const reader = agent.output.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  void (async () => {
    while (!(await reader.read()).done) { /* drained */ }
  })();
  return text.split("\n")[0] as string;
}

Deno.test("AgentProcess.start() tells the agent its depth and stop() ends it by stdin EOF first", async () => {
  const agent = await start('echo "depth $ACP_HARNESS_DELEGATION_DEPTH"; cat >/dev/null');
  assert.equal(await firstLine(agent), "depth 3");
  assert.deepEqual(await agent.stop(), { code: 0, signal: null });
  assert.deepEqual(agent.exit, { code: 0, signal: null });
});

Deno.test("AgentProcess.stop() sends SIGTERM to an agent that ignores the end of its input", async () => {
  const agent = await start("echo ready; exec sleep 300");
  assert.equal(await firstLine(agent), "ready");
  assert.deepEqual(await agent.stop(), { code: null, signal: "SIGTERM" });
});

Deno.test("AgentProcess.stop() sends SIGKILL to an agent that ignores SIGTERM too", async () => {
  const agent = await start('trap "" TERM; echo ready; exec sleep 300');
  assert.equal(await firstLine(agent), "ready");
  const [first, second] = await Promise.all([agent.stop(), agent.stop()]);
  assert.deepEqual(first, { code: null, signal: "SIGKILL" });
  assert.equal(second, first, "concurrent stops share one");
});

Deno.test("AgentProcess keeps the tail of the agent's stderr", async () => {
  const agent = await start('echo "something broke" >&2; echo ready; cat >/dev/null');
  assert.equal(await firstLine(agent), "ready");
  await agent.stop();
  assert.match(agent.stderrTail, /something broke/);
});

Deno.test("AgentProcess.start() rejects when the program does not exist", async () => {
  await assert.rejects(
    AgentProcess.start({
      processes: new NodeHost(),
      agent: { command: "/nonexistent/agent", description: "missing" },
      cwd: Deno.cwd(),
      depth: 1,
    }),
  );
});
