/**
 * Budgets end to end over stdio ACP on every runtime: `--max-tool-calls 1` with a script of
 * three tool calls runs exactly one and ends `max_turn_requests`; `--max-session-tokens 1000`
 * makes no model request once 1,000 tokens are spent and ends `max_tokens`, in the same process
 * and in a new one that loads the session from the JSONL store. On Node, with the fake provider:
 * a cost budget is kept from the provider's usage and prices, and an unpriced model cannot run
 * under one.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { startFakeLlmServer } from "../_helpers/fake_llm_server.ts";
import { openAiTurn } from "../_helpers/llm_fixtures.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

type Update = Record<string, unknown>;

/** Starts servers in one directory and kills what still runs at the end. */
class Servers implements AsyncDisposable {
  readonly #started: StdioAgent[] = [];
  readonly #runtime: Runtime;
  readonly cwd: string;

  constructor(runtime: Runtime, cwd: string) {
    this.#runtime = runtime;
    this.cwd = cwd;
  }

  async start(
    flags: readonly string[],
    env?: Record<string, string>,
    capabilities?: Record<string, unknown>,
  ): Promise<StdioAgent> {
    const agent = spawnAgent(this.#runtime.command, [...this.#runtime.args, ...flags], {
      cwd: this.cwd,
      ...(env ? { env: { ...Deno.env.toObject(), ...env } } : {}),
    });
    this.#started.push(agent);
    await agent.client.initialize(capabilities);
    return agent;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    for (const agent of this.#started) {
      if (agent.child.exitCode === null && agent.child.signalCode === null) {
        agent.child.kill("SIGKILL");
      }
      await agent.exited;
    }
  }
}

async function stop(agent: StdioAgent): Promise<void> {
  agent.end();
  await agent.exited;
}

function texts(updates: readonly Update[]): string[] {
  return updates.filter((update) => update.sessionUpdate === "agent_message_chunk")
    .map((update) => (update.content as { text: string }).text);
}

function updatesOf(agent: StdioAgent, sessionId: string, from = 0): Update[] {
  return agent.client.updates(sessionId).slice(from).map(({ update }) => update);
}

interface BudgetAnswer {
  readonly stopReason: string;
  readonly budget?: {
    readonly limits: Record<string, number>;
    readonly spent: Record<string, number>;
    readonly reached?: string;
  };
}

/** Prompts and returns the stop reason and the answer's `_meta["acp-harness"].budget`. */
async function promptWithBudget(
  agent: StdioAgent,
  sessionId: string,
  text: string,
): Promise<BudgetAnswer> {
  const answer = await agent.client.request<{ stopReason: string; _meta?: Update }>(
    "session/prompt",
    { sessionId, prompt: [{ type: "text", text }] },
  );
  const own = answer._meta?.["acp-harness"] as { budget?: BudgetAnswer["budget"] } | undefined;
  return { stopReason: answer.stopReason, ...(own?.budget ? { budget: own.budget } : {}) };
}

async function toolCallBudget(runtime: Runtime): Promise<void> {
  await using dir = await tempDir("acp-harness-budget-");
  const cwd = join(dir.path, "ws");
  await mkdir(cwd);
  const script = join(dir.path, "script.json");
  const entries = [{ content: "Step", status: "pending" }];
  await writeFile(
    script,
    JSON.stringify([
      {
        toolCalls: ["p1", "p2", "p3"].map((id) => ({
          id,
          name: "update_plan",
          arguments: { entries },
        })),
      },
      { text: "not reached" },
    ]),
  );
  await using servers = new Servers(runtime, cwd);
  const agent = await servers.start([
    "--store",
    "memory:",
    "--model",
    "scripted",
    "--script",
    script,
    "--max-tool-calls",
    "1",
  ]);
  const sessionId = await agent.client.newSession(cwd);
  const answer = await promptWithBudget(agent, sessionId, "Plan");
  assert.equal(answer.stopReason, "max_turn_requests", runtime.name);
  assert.deepEqual(answer.budget, {
    limits: { maxSteps: 50, maxToolCalls: 1 },
    spent: {
      steps: 1,
      toolCalls: 1,
      durationMs: answer.budget?.spent.durationMs,
      sessionTokens: 0,
      sessionCostUsd: 0,
    },
    reached: "maxToolCalls",
  }, runtime.name);
  const updates = updatesOf(agent, sessionId);
  const ends = updates.filter((update) =>
    update.sessionUpdate === "tool_call_update" && update.status !== "in_progress"
  ).map((update) => `${update.toolCallId} ${update.status}`);
  assert.deepEqual(ends.sort(), ["p1 completed", "p2 failed", "p3 failed"], runtime.name);
  assert.equal(updates.filter((update) => update.sessionUpdate === "plan").length, 1);
  const said = texts(updates);
  assert.equal(said.length, 1, runtime.name);
  assert.match(said[0] ?? "", /Budget reached: maxToolCalls \(1 tool call per turn\); spent 1/);
  assert.deepEqual(agent.client.problems, [], runtime.name);
  await stop(agent);
}

async function tokenBudget(runtime: Runtime): Promise<void> {
  await using dir = await tempDir("acp-harness-budget-");
  const cwd = join(dir.path, "ws");
  await mkdir(cwd);
  const script = join(dir.path, "script.json");
  await writeFile(
    script,
    JSON.stringify([
      { text: "first answer", usage: { input: 600, output: 400 } },
      { text: "never sent" },
    ]),
  );
  const flags = [
    "--data-dir",
    join(dir.path, "data"),
    "--model",
    "scripted",
    "--script",
    script,
    "--max-session-tokens",
    "1000",
  ];
  await using servers = new Servers(runtime, cwd);
  const first = await servers.start(flags);
  const sessionId = await first.client.newSession(cwd);
  assert.equal(await first.client.prompt(sessionId, "One"), "end_turn", runtime.name);
  const before = first.client.updates(sessionId).length;
  // 1,000 tokens spent: the next prompt makes no request (the script's second step stays unsent).
  const two = await promptWithBudget(first, sessionId, "Two");
  assert.equal(two.stopReason, "max_tokens", runtime.name);
  assert.equal(two.budget?.reached, "maxSessionTokens");
  assert.equal(two.budget?.limits.maxSessionTokens, 1000);
  assert.equal(two.budget?.spent.sessionTokens, 1000);
  assert.equal(two.budget?.spent.steps, 0, "no model request");
  const refused = texts(updatesOf(first, sessionId, before));
  assert.equal(refused.length, 1, runtime.name);
  assert.match(refused[0] ?? "", /maxSessionTokens \(1000 tokens per session\); spent 1000/);
  await stop(first);

  // A new process loads the session: the spend is restored and the next prompt refused at once
  // (its script would answer "first answer" again).
  const second = await servers.start(flags);
  await second.client.request("session/load", { sessionId, cwd, mcpServers: [] });
  const replayed = texts(updatesOf(second, sessionId));
  assert.deepEqual(replayed.slice(0, 1), ["first answer"], runtime.name);
  assert.match(replayed[1] ?? "", /maxSessionTokens/, "the budget's message is replayed");
  const loaded = second.client.updates(sessionId).length;
  assert.equal(await second.client.prompt(sessionId, "Three"), "max_tokens", runtime.name);
  const after = texts(updatesOf(second, sessionId, loaded));
  assert.equal(after.length, 1, runtime.name);
  assert.match(after[0] ?? "", /spent 1000/);
  assert.deepEqual(second.client.problems, [], runtime.name);
  await stop(second);
}

for (const runtime of RUNTIMES) {
  Deno.test(`--max-tool-calls 1 with three scripted tool calls runs one and ends max_turn_requests (${runtime.name})`, async () => {
    await toolCallBudget(runtime);
  });
  Deno.test(`--max-session-tokens 1000 ends max_tokens once spent, after a restart too (${runtime.name})`, async () => {
    await tokenBudget(runtime);
  });
}

Deno.test("--max-session-cost is kept from the provider's usage, and an unpriced model cannot run under it", async () => {
  const node = RUNTIMES.find((runtime) => runtime.name === "node") as Runtime;
  await using dir = await tempDir("acp-harness-budget-");
  await using server = await startFakeLlmServer();
  const cwd = join(dir.path, "ws");
  await mkdir(cwd);
  const config = join(dir.path, "config.json");
  await writeFile(
    config,
    JSON.stringify({
      providers: { fake: { api: "openai-chat", baseUrl: `${server.url}/v1`, apiKeyEnv: "K" } },
      // $1 per million input tokens, $2 per million output tokens.
      models: {
        "fake/priced": { contextWindow: 32_000, pricing: { input: 1, output: 2 } },
        "fake/unpriced": { contextWindow: 32_000 },
      },
    }),
  );
  await using servers = new Servers(node, cwd);
  const agent = await servers.start(
    [
      "--store",
      "memory:",
      "--config",
      config,
      "--model",
      "fake/priced",
      "--max-session-cost",
      "0.001",
    ],
    { K: "sk-test" },
  );
  const sessionId = await agent.client.newSession(cwd);
  // 600 input and 200 output tokens: $0.0006 + $0.0004, the whole budget.
  server.enqueue(openAiTurn({ text: ["Priced."], usage: { prompt: 600, completion: 200 } }));
  assert.equal(await agent.client.prompt(sessionId, "One"), "end_turn");
  assert.equal(server.requests.length, 1);
  const before = agent.client.updates(sessionId).length;
  assert.equal(await agent.client.prompt(sessionId, "Two"), "max_turn_requests");
  assert.equal(server.requests.length, 1, "no request once the cost is spent");
  assert.match(
    texts(updatesOf(agent, sessionId, before))[0] ?? "",
    /maxSessionCost.*spent \$0\.001/,
  );

  assert.deepEqual(agent.client.problems, []);
  await stop(agent);

  // An unpriced model under a cost budget: said at the session's start, and no request is made.
  const other = await servers.start(
    [
      "--store",
      "memory:",
      "--config",
      config,
      "--model",
      "fake/unpriced",
      "--max-session-cost",
      "1",
    ],
    { K: "sk-test" },
    { session: { notices: {} } },
  );
  const unpriced = await other.client.newSession(cwd);
  await other.client.waitForUpdate(unpriced, "notice");
  const notice = updatesOf(other, unpriced).find((update) => update.sessionUpdate === "notice");
  assert.match(String(notice?.title), /no price/);
  assert.equal(await other.client.prompt(unpriced, "Go"), "max_turn_requests");
  assert.equal(server.requests.length, 1, "an unpriced model makes no request");
  assert.match(texts(updatesOf(other, unpriced))[0] ?? "", /no price/);
  assert.deepEqual(other.client.problems, []);
  await stop(other);
});

Deno.test("a client lowers a budget for its session on session/new, kept after a restart, and cannot raise one (-32602)", async () => {
  const node = RUNTIMES.find((runtime) => runtime.name === "node") as Runtime;
  await using dir = await tempDir("acp-harness-budget-");
  const cwd = join(dir.path, "ws");
  await mkdir(cwd);
  const script = join(dir.path, "script.json");
  const call = (id: string): unknown => ({
    toolCalls: [{
      id,
      name: "update_plan",
      arguments: { entries: [{ content: "x", status: "pending" }] },
    }],
  });
  await writeFile(
    script,
    JSON.stringify([call("a"), call("b"), call("c"), call("d"), { text: "not reached" }]),
  );
  await using servers = new Servers(node, cwd);
  const flags = [
    "--data-dir",
    join(dir.path, "data"),
    "--model",
    "scripted",
    "--script",
    script,
    "--max-tool-calls",
    "5",
  ];
  const agent = await servers.start(flags);
  await assert.rejects(
    agent.client.newSession(cwd, { _meta: { "acp-harness": { budgets: { maxToolCalls: 6 } } } }),
    (error: Error & { code?: number }) =>
      error.code === -32602 && /budgets\.maxToolCalls: 6 is above the server's limit of 5/.test(
        error.message,
      ),
  );
  const sessionId = await agent.client.newSession(cwd, {
    _meta: { "acp-harness": { budgets: { maxToolCalls: 1 } } },
  });
  assert.equal(await agent.client.prompt(sessionId, "Plan"), "max_turn_requests");
  const ends = updatesOf(agent, sessionId).filter((update) =>
    update.sessionUpdate === "tool_call_update" && update.status !== "in_progress"
  ).map((update) => `${update.toolCallId} ${update.status}`);
  assert.deepEqual(ends, ["a completed", "b failed"], "the second step's call is not run");
  assert.match(texts(updatesOf(agent, sessionId)).at(-1) ?? "", /maxToolCalls \(1 tool call/);
  assert.deepEqual(agent.client.problems, []);
  await stop(agent);

  // The session's limit is in its log: a new process that loads it without _meta keeps it (the
  // server's 5 would let the script's next two calls run and end the turn; the script goes on
  // from the session's history).
  const second = await servers.start(flags);
  await second.client.request("session/load", { sessionId, cwd, mcpServers: [] });
  const loaded = second.client.updates(sessionId).length;
  assert.equal(await second.client.prompt(sessionId, "Again"), "max_turn_requests");
  const again = updatesOf(second, sessionId, loaded).filter((update) =>
    update.sessionUpdate === "tool_call_update" && update.status !== "in_progress"
  ).map((update) => `${update.toolCallId} ${update.status}`);
  assert.deepEqual(again, ["c completed", "d failed"]);
  await stop(second);
});

Deno.test("--turn-timeout 1: a model request and a command running past the turn's second are cut short", async () => {
  const deno = RUNTIMES.find((runtime) => runtime.name === "deno") as Runtime;
  await using dir = await tempDir("acp-harness-budget-");
  const cwd = join(dir.path, "ws");
  await mkdir(cwd);
  const script = join(dir.path, "script.json");
  await writeFile(
    script,
    JSON.stringify([
      // The model takes a minute: the turn's second ends it first.
      { delayMs: 60_000, text: "not reached" },
      // Then a command that takes a minute.
      { toolCalls: [{ id: "slow", name: "run_command", arguments: { command: "sleep 60" } }] },
      { text: "not reached either" },
    ]),
  );
  await using servers = new Servers(deno, cwd);
  const agent = await servers.start([
    "--store",
    "memory:",
    "--model",
    "scripted",
    "--script",
    script,
    "--mode",
    "auto",
    "--turn-timeout",
    "1",
  ]);
  const sessionId = await agent.client.newSession(cwd);
  const first = await agent.client.request<{ stopReason: string; _meta?: Update }>(
    "session/prompt",
    { sessionId, prompt: [{ type: "text", text: "Think long" }] },
  );
  assert.equal(first.stopReason, "max_turn_requests");
  const budget = (first._meta?.["acp-harness"] as Update | undefined)?.budget as Update;
  assert.equal(budget.reached, "turnTimeout");
  assert.deepEqual(budget.limits, { maxSteps: 50, turnTimeout: 1 });
  assert.match(texts(updatesOf(agent, sessionId)).at(-1) ?? "", /turnTimeout \(1 s per turn\)/);

  const before = agent.client.updates(sessionId).length;
  assert.equal(await agent.client.prompt(sessionId, "Run it"), "max_turn_requests");
  const updates = updatesOf(agent, sessionId, before);
  const ended = updates.find((update) =>
    update.sessionUpdate === "tool_call_update" && update.toolCallId === "slow" &&
    update.status !== "in_progress"
  );
  assert.equal(ended?.status, "failed", "the command was cancelled");
  assert.match(texts(updates).at(-1) ?? "", /Budget reached: turnTimeout/);
  assert.ok(!texts(updates).some((text) => text.includes("not reached")));
  assert.deepEqual(agent.client.problems, []);
  await stop(agent);
});
