/**
 * The turn's usage where clients read it, end to end against the fake providers (the OpenAI case
 * on Deno, Node and Bun, the others on Node): the
 * `session/prompt` response's `usage` (ACP, unstable), cached and reasoning tokens included, and
 * the `usage_update` a resumed session gets (the spend so far).
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../_helpers/fake_llm_server.ts";
import { anthropicTurn, openAiTurn } from "../_helpers/llm_fixtures.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { withoutBudget } from "../_helpers/acp_schema.ts";

const NODE = RUNTIMES.find((runtime) => runtime.name === "node") as Runtime;

/** A workspace, a config naming the fake provider, and a way to start servers on them. */
async function setUp(api: "openai-chat" | "anthropic-messages", runtime: Runtime = NODE) {
  const dir = await tempDir("acp-harness-usage-");
  const server = await startFakeLlmServer();
  const cwd = join(dir.path, "ws");
  await mkdir(cwd);
  const configFile = join(dir.path, "config.json");
  await writeFile(
    configFile,
    JSON.stringify({
      providers: {
        fake: {
          api,
          baseUrl: api === "openai-chat" ? `${server.url}/v1` : server.url,
          apiKeyEnv: "FAKE_API_KEY",
        },
      },
      models: { "fake/coder": { contextWindow: 32_000, pricing: { input: 1, output: 2 } } },
    }),
  );
  const agents: StdioAgent[] = [];
  const spawn = async (): Promise<StdioAgent> => {
    const agent = spawnAgent(runtime.command, [
      ...runtime.args,
      "--config",
      configFile,
      "--model",
      "fake/coder",
      "--mode",
      "auto",
    ], {
      cwd,
      env: { ...Deno.env.toObject(), FAKE_API_KEY: "sk-test", ACP_HARNESS_HOME: join(cwd, ".h") },
    });
    agents.push(agent);
    await agent.client.initialize();
    return agent;
  };
  return {
    cwd,
    server,
    spawn,
    async [Symbol.asyncDispose](): Promise<void> {
      for (const agent of agents) {
        if (agent.child.exitCode === null && agent.child.signalCode === null) agent.end();
        await agent.exited;
      }
      await (server as FakeLlmServer).close();
      await dir[Symbol.asyncDispose]();
    },
  };
}

for (const runtime of RUNTIMES) {
  Deno.test(`the prompt response carries the turn's usage, summed over its requests (OpenAI, ${runtime.name})`, async () => {
    await using env = await setUp("openai-chat", runtime);
    const agent = await env.spawn();
    const sessionId = await agent.client.newSession(env.cwd);
    await writeFile(join(env.cwd, "a.txt"), "alpha\n");
    env.server.enqueue(
      openAiTurn({
        toolCalls: [{ id: "r1", name: "read_file", arguments: { path: "a.txt" } }],
        usage: { prompt: 1000, completion: 50, cached: 600, reasoning: 20 },
      }),
      openAiTurn({ text: ["alpha"], usage: { prompt: 1200, completion: 10, cached: 1000 } }),
    );
    const frame = await agent.client.requestRaw("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "read a.txt" }],
    });
    assert.ok(frame.result, JSON.stringify(frame));
    const budget = (frame.result as { _meta: Record<string, { budget: { spent: object } }> })
      ._meta["acp-harness"]?.budget;
    assert.deepEqual(
      { ...budget?.spent, durationMs: 0 },
      { steps: 2, toolCalls: 1, durationMs: 0, sessionTokens: 2260, sessionCostUsd: 0.00232 },
    );
    assert.deepEqual(withoutBudget(frame.result), {
      stopReason: "end_turn",
      usage: {
        totalTokens: 2260,
        inputTokens: 2200,
        outputTokens: 60,
        thoughtTokens: 20,
        cachedReadTokens: 1600,
      },
    });
    // The next turn counts afresh.
    env.server.enqueue(openAiTurn({ text: ["ok"], usage: { prompt: 30, completion: 3 } }));
    const next = await agent.client.requestRaw("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "again" }],
    });
    assert.deepEqual(withoutBudget(next.result), {
      stopReason: "end_turn",
      usage: { totalTokens: 33, inputTokens: 30, outputTokens: 3 },
    });
    assert.deepEqual(agent.client.problems, []);
  });
}

Deno.test("the prompt response's usage has Anthropic's cached input", async () => {
  await using env = await setUp("anthropic-messages");
  const agent = await env.spawn();
  const sessionId = await agent.client.newSession(env.cwd);
  env.server.enqueue(anthropicTurn({ text: "hello" }));
  const frame = await agent.client.requestRaw("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "hi" }],
  });
  const result = frame.result as { stopReason: string; usage?: Record<string, number> };
  assert.equal(result.stopReason, "end_turn");
  assert.equal(result.usage?.cachedReadTokens, 20);
  assert.equal(result.usage?.outputTokens, 30);
  assert.equal(result.usage?.totalTokens, result.usage!.inputTokens! + 30);
  assert.deepEqual(agent.client.problems, []);
});

Deno.test("a resumed session is told its spend so far in a usage_update, after the answer", async () => {
  await using env = await setUp("openai-chat");
  const first = await env.spawn();
  const sessionId = await first.client.newSession(env.cwd);
  env.server.enqueue(openAiTurn({ text: ["one"], usage: { prompt: 1000, completion: 100 } }));
  assert.equal(await first.client.prompt(sessionId, "go"), "end_turn");
  first.end();
  await first.exited;
  const second = await env.spawn();
  const frame = await second.client.requestRaw("session/resume", {
    sessionId,
    cwd: env.cwd,
    mcpServers: [],
  });
  assert.ok("result" in frame, JSON.stringify(frame));
  const usage = await waitForUsage(second, sessionId);
  assert.deepEqual(usage, {
    sessionUpdate: "usage_update",
    used: 1100,
    size: 32_000,
    // 1000 in at $1/M + 100 out at $2/M.
    cost: { amount: 0.0012, currency: "USD" },
  });
  assert.deepEqual(second.client.problems, []);
});

/** The session's first `usage_update`, once it arrives (it follows the answer). */
async function waitForUsage(agent: StdioAgent, sessionId: string): Promise<unknown> {
  await agent.client.waitForUpdate(sessionId, "usage_update");
  return agent.client.updates(sessionId).map(({ update }) => update)
    .find((update) => update.sessionUpdate === "usage_update");
}
