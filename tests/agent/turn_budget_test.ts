import assert from "node:assert/strict";
import { runTurn, type TurnOptions } from "../../src/agent/run_turn.ts";
import { TurnBudget } from "../../src/agent/turn_budget.ts";
import type { TurnEvent } from "../../src/agent/turn_event.ts";
import { NodeHost } from "../../src/host/node_host.ts";
import type { LlmEvent, LlmProvider, LlmRequest } from "../../src/llm/provider.ts";
import { HostWorkspace } from "../../src/tools/host_workspace.ts";
import type { Tool, ToolResult } from "../../src/tools/tool.ts";

/** A provider that replays steps and counts its requests. */
class StepsProvider implements LlmProvider {
  readonly id = "fake";
  readonly requests: LlmRequest[] = [];
  readonly #steps: LlmEvent[][];

  constructor(steps: LlmEvent[][]) {
    this.#steps = steps;
  }

  async *stream(request: LlmRequest): AsyncIterable<LlmEvent> {
    this.requests.push(request);
    const step = this.#steps.shift();
    assert.ok(step, "the provider ran out of steps");
    for (const event of step) yield event;
  }
}

function calls(...ids: string[]): LlmEvent[] {
  return [
    ...ids.map((id): LlmEvent => ({
      type: "tool-call",
      call: { id, name: "read_file", arguments: "{}" },
    })),
    { type: "finish", reason: "tool-calls" },
  ];
}

const ANSWER: LlmEvent[] = [{ type: "text-delta", text: "done" }, {
  type: "finish",
  reason: "stop",
}];

function countingTool(): Tool & { runs: number } {
  const tool = {
    runs: 0,
    name: "read_file",
    description: "Reads",
    inputSchema: { type: "object" },
    kind: "read" as const,
    effect: "read" as const,
    title: (): string => "Read",
    execute(): Promise<ToolResult> {
      tool.runs++;
      return Promise.resolve({ content: "body", isError: false });
    },
  };
  return tool;
}

function turn(provider: LlmProvider, tool: Tool, budget?: TurnBudget): {
  options: TurnOptions;
  events: TurnEvent[];
} {
  const events: TurnEvent[] = [];
  const host = new HostWorkspace(new NodeHost({}));
  return {
    events,
    options: {
      services: { settings: { maxSteps: 10, stream: false }, files: host },
      sessionId: "s",
      provider,
      model: "m",
      system: "",
      history: [{ role: "user", content: [{ type: "text", text: "go" }] }],
      tools: [tool],
      cwd: "/work",
      roots: ["/work"],
      workspace: host,
      signal: new AbortController().signal,
      emit: (event) => {
        events.push(event);
      },
      ...(budget ? { budget } : {}),
    },
  };
}

Deno.test("TurnBudget counts model requests and tool calls up to their limits", () => {
  const budget = new TurnBudget({ limits: { maxSteps: 2, maxToolCalls: 2 } });
  assert.equal(budget.beforeRequest(), undefined);
  assert.equal(budget.beforeToolCall(), undefined);
  assert.equal(budget.beforeToolCall(), undefined);
  assert.equal(budget.beforeRequest(), undefined);
  const stop = budget.beforeToolCall();
  assert.equal(stop?.stopReason, "max_turn_requests");
  assert.equal(stop?.limit, "maxToolCalls");
  assert.match(stop?.message ?? "", /maxToolCalls \(2 tool calls per turn\); spent 2/);
  assert.equal(budget.beforeRequest(), stop, "the first stop is kept");
  assert.equal(budget.steps, 2);
  assert.equal(budget.toolCalls, 2);
});

Deno.test("TurnBudget stops at the session's tokens (max_tokens) and cost, at or past the limit", () => {
  let spend = { tokens: 999, cost: 0 };
  const tokens = new TurnBudget({ limits: { maxSessionTokens: 1000 }, spend: () => spend });
  assert.equal(tokens.beforeRequest(), undefined, "999 of 1,000: one more request");
  spend = { tokens: 1000, cost: 0 };
  const stop = tokens.beforeRequest();
  assert.equal(stop?.stopReason, "max_tokens");
  assert.match(stop?.message ?? "", /maxSessionTokens \(1000 tokens per session\); spent 1000/);

  spend = { tokens: 0, cost: 0.0099 };
  const cost = new TurnBudget({ limits: { maxSessionCostUsd: 0.01 }, spend: () => spend });
  assert.equal(cost.beforeRequest(), undefined);
  spend = { tokens: 0, cost: 0.01 };
  assert.equal(cost.beforeRequest()?.limit, "maxSessionCost");
  assert.equal(cost.stopped?.stopReason, "max_turn_requests");
});

Deno.test("TurnBudget fails closed under a cost limit when the model has no price", () => {
  const budget = new TurnBudget({ limits: { maxSessionCostUsd: 5 }, priced: false });
  const stop = budget.beforeRequest();
  assert.equal(stop?.stopReason, "max_turn_requests");
  assert.match(stop?.message ?? "", /no price/);
  assert.equal(new TurnBudget({ limits: {}, priced: false }).beforeRequest(), undefined);
});

Deno.test("TurnBudget stops a turn whose time is up, before the next request or tool call", () => {
  let now = 1_000;
  const budget = new TurnBudget({ limits: { turnTimeoutMs: 500 }, now: () => now });
  now = 1_499;
  assert.equal(budget.beforeRequest(), undefined);
  now = 1_500;
  assert.equal(budget.beforeToolCall()?.limit, "turnTimeout");
  assert.match(budget.stopped?.message ?? "", /0\.5 s per turn/);
});

Deno.test("TurnBudget tells the time left, expires on its timer, and keeps its first stop", () => {
  let now = 1_000;
  const budget = new TurnBudget({ limits: { turnTimeoutMs: 500 }, now: () => now });
  assert.equal(budget.remainingMs(), 500);
  now = 1_200;
  assert.equal(budget.remainingMs(), 300);
  now = 1_700;
  assert.equal(budget.remainingMs(), 0, "never below 0");
  const stop = budget.expire();
  assert.equal(stop.limit, "turnTimeout");
  assert.equal(stop.stopReason, "max_turn_requests");
  assert.match(stop.message, /turnTimeout \(0\.5 s per turn\); spent 0\.7 s/);
  assert.equal(budget.expire(), stop);
  assert.equal(new TurnBudget({ limits: {} }).remainingMs(), undefined);
  // A turn already stopped by another limit keeps that one.
  const other = new TurnBudget({ limits: { maxToolCalls: 1, turnTimeoutMs: 10 } });
  other.beforeToolCall();
  assert.equal(other.beforeToolCall()?.limit, "maxToolCalls");
  assert.equal(other.expire().limit, "maxToolCalls");
});

Deno.test("TurnBudget.report() gives the limits in the flags' units, the spend, and what ended the turn", () => {
  let now = 0;
  const budget = new TurnBudget({
    limits: { maxSteps: 3, turnTimeoutMs: 1_500, maxSessionTokens: 100, maxSessionCostUsd: 0.5 },
    spend: () => ({ tokens: 120, cost: 0.25 }),
    now: () => now,
  });
  now = 40;
  assert.equal(budget.beforeRequest()?.limit, "maxSessionTokens");
  assert.deepEqual(budget.report(), {
    limits: { maxSteps: 3, turnTimeout: 1.5, maxSessionTokens: 100, maxSessionCost: 0.5 },
    spent: { steps: 0, toolCalls: 0, durationMs: 40, sessionTokens: 120, sessionCostUsd: 0.25 },
    reached: "maxSessionTokens",
  });
});

Deno.test("runTurn() with maxToolCalls 1 and three calls runs exactly one and ends max_turn_requests", async () => {
  const provider = new StepsProvider([calls("a", "b", "c"), ANSWER]);
  const tool = countingTool();
  const { options, events } = turn(provider, tool, new TurnBudget({ limits: { maxToolCalls: 1 } }));
  assert.equal(await runTurn(options), "max_turn_requests");
  assert.equal(tool.runs, 1);
  assert.equal(provider.requests.length, 1, "no request after the budget stopped the turn");
  const ends = events.flatMap((event) =>
    event.type === "tool-call-update" && event.status !== "in_progress"
      ? [`${event.toolCallId} ${event.status}`]
      : []
  );
  // Reads run at once: the refused calls may end first.
  assert.deepEqual(ends.sort(), ["a completed", "b failed", "c failed"]);
  // Every call has its result in the history, so the conversation stays valid for the next turn.
  assert.deepEqual(options.history.filter((m) => m.role === "tool").length, 3);
});

Deno.test("runTurn() with maxToolCalls 3 over three steps runs the third call and stops at the fourth", async () => {
  const provider = new StepsProvider([calls("a"), calls("b", "c"), calls("d"), ANSWER]);
  const tool = countingTool();
  const { options } = turn(provider, tool, new TurnBudget({ limits: { maxToolCalls: 3 } }));
  assert.equal(await runTurn(options), "max_turn_requests");
  assert.equal(tool.runs, 3);
  assert.equal(provider.requests.length, 3);

  const exact = new StepsProvider([calls("a"), calls("b", "c"), ANSWER]);
  const { options: enough } = turn(
    exact,
    countingTool(),
    new TurnBudget({
      limits: { maxToolCalls: 3 },
    }),
  );
  assert.equal(await runTurn(enough), "end_turn", "three calls within a limit of three");
});

Deno.test("runTurn() makes no model request once the session's tokens are spent", async () => {
  const provider = new StepsProvider([ANSWER]);
  const budget = new TurnBudget({
    limits: { maxSessionTokens: 1000 },
    spend: () => ({ tokens: 1000, cost: 0 }),
  });
  const { options } = turn(provider, countingTool(), budget);
  assert.equal(await runTurn(options), "max_tokens");
  assert.equal(provider.requests.length, 0);
});
