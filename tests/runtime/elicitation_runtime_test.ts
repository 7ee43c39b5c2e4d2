/**
 * Elicitation over real stdio agent processes on Deno, Node.js and Bun, with the real
 * `@modelcontextprotocol/server-everything`: its question reaches a client that shows forms and
 * the tool's result shows the answer; a client that declines and one without the capability make
 * the server get a decline; `ask_user` asks the client; a URL question and its
 * `elicitation/complete` (the fake server) reach a client that takes URLs. Every frame the agents
 * send is checked against the ACP schema.
 *
 * Each test runs the three runtimes at once, one agent each, and names the runtime in failures.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type Frame, spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { everythingStdio, fakeStdio, killProcessesWithMarker } from "../_helpers/mcp_servers.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";

/** Runs `check` for every runtime at once; fails with every runtime's failure, named. */
async function onEveryRuntime(check: (runtime: Runtime) => Promise<void>): Promise<void> {
  const outcomes = await Promise.allSettled(RUNTIMES.map((runtime) => check(runtime)));
  const failures = outcomes.flatMap((outcome, index) =>
    outcome.status === "rejected"
      ? [`${RUNTIMES[index]?.name}: ${String(outcome.reason?.stack ?? outcome.reason)}`]
      : []
  );
  assert.deepEqual(failures, [], failures.join("\n\n"));
}

const TRIGGER = "mcp__everything__trigger-elicitation-request";

/** An agent on `runtime` with the scripted model playing `script`, in `auto` mode. */
async function startAgent(
  runtime: Runtime,
  base: string,
  script: unknown,
): Promise<{ agent: StdioAgent; cwd: string }> {
  const cwd = join(base, "ws");
  await mkdir(cwd);
  const scriptFile = join(base, "script.json");
  await writeFile(scriptFile, JSON.stringify(script));
  const agent = spawnAgent(runtime.command, [
    ...runtime.args,
    "--model",
    "scripted",
    "--script",
    scriptFile,
    "--mode",
    "auto",
    "--data-dir",
    join(base, "data"),
  ], { cwd, env: { ...Deno.env.toObject(), ACP_HARNESS_HOME: join(base, "home") } });
  return { agent, cwd };
}

/** Ends the agent (stdin EOF) and whatever carries the marker. */
async function stop(agent: StdioAgent, marker: string): Promise<void> {
  agent.end();
  const exit = await agent.exited;
  assert.deepEqual(await killProcessesWithMarker(marker), [], "no MCP server is left");
  assert.equal(exit.code, 0, agent.stderr());
}

/** The text of the last update of tool call `id`. */
function resultText(agent: StdioAgent, sessionId: string, id: string): string {
  const last = agent.client.updates(sessionId).map(({ update }) => update)
    .filter((update) => update.toolCallId === id).at(-1);
  assert.ok(last, `updates of tool call ${id}`);
  const content = (last.content ?? []) as Array<{ content?: { text?: string } }>;
  return content.map((item) => item.content?.text ?? "").join("\n");
}

/** The requests of `method` the client got. */
function requestsOf(agent: StdioAgent, method: string): Frame[] {
  return agent.client.frames.filter((frame) => frame.method === method);
}

Deno.test("elicitation: server-everything's question reaches a client that accepts, and one that declines, on deno, node and bun", async () => {
  await using dirs = new TempDirs("acp-harness-elicitation-runtime-");
  await onEveryRuntime(async (runtime) => {
    const base = await dirs.make();
    const marker = crypto.randomUUID();
    const { agent, cwd } = await startAgent(runtime, base, [
      { toolCalls: [{ id: "accept", name: TRIGGER, arguments: {} }] },
      { text: "accepted" },
      { toolCalls: [{ id: "decline", name: TRIGGER, arguments: {} }] },
      { text: "declined" },
      {
        toolCalls: [{
          id: "ask",
          name: "ask_user",
          arguments: { question: `Runtime?`, options: ["deno", "node", "bun"] },
        }],
      },
      { text: "asked" },
      {
        toolCalls: [{
          id: "url",
          name: "mcp__fake__elicit",
          arguments: {
            mode: "url",
            url: "https://login.example.test/start",
            elicitationId: `flow-${runtime.name}`,
            complete: true,
          },
        }],
      },
      { text: "url done" },
    ]);
    try {
      let answer: unknown = {};
      agent.client.handlers.set("elicitation/create", () => answer);
      await agent.client.initialize({ elicitation: { form: {}, url: {} } });
      const sessionId = await agent.client.newSession(cwd, {
        mcpServers: [
          {
            name: "everything",
            ...everythingStdio(),
            env: [{ name: "ACP_HARNESS_PROBE", value: marker }],
          },
          { name: "fake", ...fakeStdio("--elicit", `--marker=${marker}`), env: [] },
        ],
      });
      answer = { action: "accept", content: { name: `Ada on ${runtime.name}`, check: true } };
      assert.equal(await agent.client.prompt(sessionId, "accept"), "end_turn");
      const accepted = resultText(agent, sessionId, "accept");
      assert.match(accepted, /User provided the requested information/);
      assert.match(accepted, new RegExp(`- Name: Ada on ${runtime.name}`));

      answer = { action: "decline" };
      assert.equal(await agent.client.prompt(sessionId, "decline"), "end_turn");
      assert.match(
        resultText(agent, sessionId, "decline"),
        /User declined to provide the requested information/,
      );

      answer = { action: "accept", content: { answer: runtime.name } };
      assert.equal(await agent.client.prompt(sessionId, "ask"), "end_turn");
      assert.equal(resultText(agent, sessionId, "ask"), `The user answered: "${runtime.name}"`);

      answer = { action: "accept" };
      assert.equal(await agent.client.prompt(sessionId, "url"), "end_turn");
      assert.deepEqual(JSON.parse(resultText(agent, sessionId, "url")), { action: "accept" });
      await agent.client.waitFor((frames) =>
        frames.some((frame) => frame.method === "elicitation/complete")
      );
      assert.deepEqual(
        requestsOf(agent, "elicitation/complete").map((frame) => frame.params),
        [{ elicitationId: `flow-${runtime.name}` }],
      );

      const asked = requestsOf(agent, "elicitation/create").map((frame) =>
        frame.params as { mode: string; toolCallId: string; sessionId: string }
      );
      assert.deepEqual(
        asked.map(({ mode, toolCallId, sessionId: id }) => ({ mode, toolCallId, id })),
        [
          { mode: "form", toolCallId: "accept", id: sessionId },
          { mode: "form", toolCallId: "decline", id: sessionId },
          { mode: "form", toolCallId: "ask", id: sessionId },
          { mode: "url", toolCallId: "url", id: sessionId },
        ],
      );
      assert.deepEqual(agent.client.problems, []);
      assert.deepEqual(agent.impure, [], "stdout carries frames only");
    } finally {
      await stop(agent, marker);
    }
  });
});

Deno.test("elicitation: without the client's capability server-everything gets a decline on deno, node and bun", async () => {
  await using dirs = new TempDirs("acp-harness-elicitation-runtime-");
  await onEveryRuntime(async (runtime) => {
    const base = await dirs.make();
    const marker = crypto.randomUUID();
    const { agent, cwd } = await startAgent(runtime, base, [
      { toolCalls: [{ id: "t1", name: TRIGGER, arguments: {} }] },
      { text: "declined" },
    ]);
    try {
      await agent.client.initialize();
      const sessionId = await agent.client.newSession(cwd, {
        mcpServers: [{
          name: "everything",
          ...everythingStdio(),
          env: [{ name: "ACP_HARNESS_PROBE", value: marker }],
        }],
      });
      assert.equal(await agent.client.prompt(sessionId, "trigger"), "end_turn");
      assert.match(
        resultText(agent, sessionId, "t1"),
        /User declined to provide the requested information/,
      );
      assert.deepEqual(requestsOf(agent, "elicitation/create"), []);
      assert.deepEqual(agent.client.problems, []);
    } finally {
      await stop(agent, marker);
    }
  });
});
