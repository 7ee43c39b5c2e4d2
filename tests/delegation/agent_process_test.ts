/**
 * An agent's process: its depth in the environment, and the three stop tiers (stdin EOF,
 * SIGTERM, SIGKILL), each reached only when the one before did not end it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { AgentProcess } from "../../src/delegation/agent_process.ts";
import { NodeHost } from "../../src/host/node_host.ts";
import process from "node:process";
import { pollUntil } from "../_helpers/wait.ts";

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

Deno.test("AgentProcess.start() gives the agent the allow-list, what inheritEnv names and its env, no secret", async () => {
  const host = new NodeHost({
    PATH: process.env.PATH,
    HOME: "/home/me",
    LC_CTYPE: "C.UTF-8",
    OPENAI_API_KEY: "sk-openai-secret",
    ANTHROPIC_API_KEY: "sk-ant-secret",
    ACP_HARNESS_TOKEN: "token",
    ACP_HARNESS_HTTP: "true",
    TEAM_A: "a",
    TEAM_B: "b",
    OTHER: "other",
  });
  const agent = await AgentProcess.start({
    processes: host,
    agent: {
      command: "sh",
      args: ["-c", "env | sort | tr '\\n' ' '; echo; cat >/dev/null"],
      env: { DECLARED: "yes", HOME: "/declared/home" },
      inheritEnv: ["ANTHROPIC_API_KEY", "TEAM_*"],
      description: "a shell",
    },
    cwd: Deno.cwd(),
    depth: 1,
    grace: GRACE,
  });
  const names = new Map(
    (await firstLine(agent)).trim().split(" ").map((pair) => {
      const at = pair.indexOf("=");
      return [pair.slice(0, at), pair.slice(at + 1)] as const;
    }),
  );
  await agent.stop();
  assert.equal(names.get("HOME"), "/declared/home", "the declared env wins");
  assert.equal(names.get("DECLARED"), "yes");
  assert.equal(names.get("LC_CTYPE"), "C.UTF-8");
  assert.equal(names.get("ANTHROPIC_API_KEY"), "sk-ant-secret", "inheritEnv passes it");
  assert.equal(names.get("TEAM_A"), "a");
  assert.equal(names.get("TEAM_B"), "b");
  assert.equal(names.get("ACP_HARNESS_DELEGATION_DEPTH"), "1");
  for (const name of ["OPENAI_API_KEY", "ACP_HARNESS_TOKEN", "ACP_HARNESS_HTTP", "OTHER"]) {
    assert.equal(names.get(name), undefined, name);
  }
});

Deno.test("AgentProcess tells whether its stderr was longer than the tail it keeps", async () => {
  const quiet = await start('echo "short" >&2; echo ready; cat >/dev/null');
  assert.equal(await firstLine(quiet), "ready");
  await quiet.stop();
  assert.equal(quiet.stderrTruncated, false);
  const loud = await start("head -c 40000 /dev/zero | tr '\\0' x >&2; echo ready; cat >/dev/null");
  assert.equal(await firstLine(loud), "ready");
  await loud.stop();
  // The tail reads stderr on its own: its last chunks may still be on their way.
  await pollUntil(() => loud.stderrTruncated, { what: "the tail to have read past 16 K" });
  assert.equal(loud.stderrTail.length, 16 * 1024);
});
