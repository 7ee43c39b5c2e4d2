/**
 * The two phases on the fake OpenAI-compatible model (`tests/_helpers/fake_llm_server.ts`):
 *
 * - LLM turn: one `session/prompt` whose model streams many text deltas and `read_file` calls,
 *   then a short answer, against a minimal fetch + SSE client in this process that reads the
 *   same two responses;
 * - LLM breakdown: the measurements of `bench/llm_breakdown.ts` on agents started here.
 *
 * @module
 */
import {
  type FakeLlmServer,
  serializeSseItem,
  type SseResponse,
  startFakeLlmServer,
} from "../tests/_helpers/fake_llm_server.ts";
import { openAiTurn } from "../tests/_helpers/llm_fixtures.ts";
import { agentCommand, AgentProcess, finish, killAllChildren, prompt } from "./agent_process.ts";
import {
  BREAKDOWN_FILE,
  breakdownCounts,
  type FakeModel,
  measureFirstUpdate,
  measureTurnCpu,
  oneWrite,
} from "./llm_breakdown.ts";
import { LLM_CONFIG_FILE, LLM_HOME } from "./paths.ts";
import type { BenchRun, Pair, RuntimeResult } from "./results.ts";
import { INITIALIZE_PARAMS } from "./rpc_client.ts";
import { orderFor, type Runtime } from "./settings.ts";
import { median } from "./stats.ts";
import { makeTempDir, removeTempDir } from "../tests/_helpers/temp_dir.ts";

/** The LLM-turn workload: step 1 streams this many text deltas and `read_file` calls. */
export const LLM_TURN = { deltas: 5_000, toolCalls: 20 } as const;

/** The file every `read_file` call of the LLM turn reads, relative to the session's cwd. */
const LLM_TURN_FILE = BREAKDOWN_FILE;
const LLM_TURN_PROMPT = `Read ${LLM_TURN_FILE} ${LLM_TURN.toolCalls} times.`;
const LLM_TURN_ANSWER = "Done.";

/** Step 1 (deltas and tool calls) and step 2 (the answer), each one SSE write. */
const LLM_TURN_RESPONSES: readonly [SseResponse, SseResponse] = [
  oneWrite(openAiTurn({
    text: Array.from({ length: LLM_TURN.deltas }, (_, i) => `w${i} `),
    toolCalls: Array.from({ length: LLM_TURN.toolCalls }, (_, i) => ({
      id: `call_${i}`,
      name: "read_file",
      arguments: { path: LLM_TURN_FILE },
    })),
  })),
  oneWrite(openAiTurn({ text: [LLM_TURN_ANSWER] })),
];

/** The size of the LLM turn's step-1 response (bytes), for the report. */
export function llmTurnStepBytes(): number {
  const response = LLM_TURN_RESPONSES[0];
  return new TextEncoder().encode(response.items.map(serializeSseItem).join("")).length;
}

/** Counts each `tool_call_update` status of one session, and the calls that completed. */
function toolCallWatcher(
  sessionId: string,
): {
  readonly completed: Set<string>;
  readonly statuses: Map<string, number>;
  watch: AgentProcess["onUpdate"];
} {
  const completed = new Set<string>();
  const statuses = new Map<string, number>();
  return {
    completed,
    statuses,
    watch: (params) => {
      const update = params.update;
      if (params.sessionId !== sessionId || update?.sessionUpdate !== "tool_call_update") return;
      const status = update.status ?? "none";
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status === "completed" && update.toolCallId !== undefined) {
        completed.add(update.toolCallId);
      }
    },
  };
}

/**
 * One turn of ours: a fresh session, the two responses queued, then `session/prompt` timed to
 * its response. Throws unless the turn ended with `end_turn`, every tool call completed and the
 * fake server saw exactly the two model requests.
 */
async function llmTurnOurs(agent: AgentProcess, { server, workspace }: FakeModel): Promise<number> {
  const session = await agent.request("session/new", { cwd: workspace, mcpServers: [] });
  const sessionId = (session.result as { sessionId?: unknown } | null)?.sessionId;
  if (typeof sessionId !== "string") throw new Error(`${agent.label}: session/new had no id`);
  const { completed, statuses, watch } = toolCallWatcher(sessionId);
  agent.onUpdate = watch;
  server.requests.length = 0;
  server.enqueue(...LLM_TURN_RESPONSES);
  try {
    const sentAt = performance.now();
    const reply = await prompt(agent, sessionId, LLM_TURN_PROMPT);
    const elapsed = reply.at - sentAt;
    const stopReason = (reply.result as { stopReason?: unknown } | null)?.stopReason;
    const problems: string[] = [];
    if (stopReason !== "end_turn") problems.push(`stopReason ${JSON.stringify(stopReason)}`);
    if (completed.size !== LLM_TURN.toolCalls) {
      problems.push(
        `${completed.size} of ${LLM_TURN.toolCalls} tool calls completed ` +
          `(tool_call_update statuses: ${JSON.stringify(Object.fromEntries(statuses))})`,
      );
    }
    if (server.requests.length !== 2) {
      problems.push(`${server.requests.length} model requests instead of 2`);
    }
    if (problems.length > 0) {
      throw new Error(`${agent.label}: LLM turn check failed: ${problems.join("; ")}`);
    }
    return elapsed;
  } finally {
    agent.onUpdate = undefined;
  }
}

/** A tool call as the bare client accumulates it. */
interface BareToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** The fields of an OpenAI chat chunk the bare client reads. */
interface OpenAiChunk {
  readonly choices?: ReadonlyArray<{
    readonly delta?: {
      readonly content?: string | null;
      readonly tool_calls?: ReadonlyArray<{
        readonly index: number;
        readonly id?: string;
        readonly function?: { readonly name?: string; readonly arguments?: string };
      }>;
    };
    readonly finish_reason?: string | null;
  }>;
}

/** What one bare step read. */
interface BareStep {
  text: string;
  readonly calls: BareToolCall[];
  finishReason: string | undefined;
  done: boolean;
}

/** Adds one `data:` line of the SSE body to `step`. */
function readDataLine(step: BareStep, line: string): void {
  if (!line.startsWith("data:")) return;
  const data = line.slice(line.startsWith("data: ") ? 6 : 5);
  if (data === "[DONE]") {
    step.done = true;
    return;
  }
  const chunk = JSON.parse(data) as OpenAiChunk;
  for (const choice of chunk.choices ?? []) {
    const delta = choice.delta;
    if (typeof delta?.content === "string") step.text += delta.content;
    for (const fragment of delta?.tool_calls ?? []) {
      const call = step.calls[fragment.index] ??= { id: "", name: "", arguments: "" };
      if (fragment.id) call.id = fragment.id;
      if (fragment.function?.name) call.name = fragment.function.name;
      if (fragment.function?.arguments) call.arguments += fragment.function.arguments;
    }
    if (choice.finish_reason) step.finishReason = choice.finish_reason;
  }
}

/**
 * The least a client does for one streamed model step: POST, then read the whole SSE body
 * (TextDecoder, split lines, `JSON.parse` each `data:` line), joining text and tool-call
 * fragments.
 */
async function bareStep(url: string, body: unknown): Promise<BareStep> {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "text/event-stream",
      authorization: "Bearer sk-bench",
    },
    body: JSON.stringify(body),
  });
  if (!response.ok || response.body === null) {
    await response.body?.cancel();
    throw new Error(`bare LLM client: HTTP ${response.status}`);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const step: BareStep = { text: "", calls: [], finishReason: undefined, done: false };
  let buffer = "";
  for (;;) {
    const next = await reader.read();
    buffer += next.done ? decoder.decode() : decoder.decode(next.value, { stream: true });
    let start = 0;
    for (let end = buffer.indexOf("\n"); end !== -1; end = buffer.indexOf("\n", start)) {
      readDataLine(step, buffer.slice(start, end));
      start = end + 1;
    }
    buffer = buffer.slice(start);
    if (next.done) break;
  }
  return step;
}

/**
 * One turn of the bare client: step 1 read and parsed, then step 2 sent with the step's text and
 * tool calls (the tools are not run) and read. Throws unless both steps came back whole.
 */
async function llmTurnBare(server: FakeLlmServer): Promise<number> {
  const url = `${server.url}/v1/chat/completions`;
  server.requests.length = 0;
  server.enqueue(...LLM_TURN_RESPONSES);
  const startedAt = performance.now();
  const user = { role: "user", content: LLM_TURN_PROMPT };
  const first = await bareStep(url, { model: "coder", stream: true, messages: [user] });
  const assistant = {
    role: "assistant",
    content: first.text,
    "tool_calls": first.calls.map((call) => ({
      id: call.id,
      type: "function",
      function: { name: call.name, arguments: call.arguments },
    })),
  };
  const results = first.calls.map((call) => ({
    role: "tool",
    "tool_call_id": call.id,
    content: "(not run)",
  }));
  const second = await bareStep(url, {
    model: "coder",
    stream: true,
    messages: [user, assistant, ...results],
  });
  const elapsed = performance.now() - startedAt;
  const problems: string[] = [];
  const complete = first.calls.filter((call) =>
    call.name === "read_file" && JSON.parse(call.arguments).path === LLM_TURN_FILE
  );
  if (complete.length !== LLM_TURN.toolCalls) {
    problems.push(`${complete.length} of ${LLM_TURN.toolCalls} tool calls`);
  }
  if (!first.done || first.finishReason !== "tool_calls") problems.push("step 1 did not finish");
  if (second.text !== LLM_TURN_ANSWER || !second.done) problems.push("step 2 did not finish");
  if (server.requests.length !== 2) {
    problems.push(`${server.requests.length} model requests instead of 2`);
  }
  if (problems.length > 0) throw new Error(`bare LLM client check failed: ${problems.join("; ")}`);
  return elapsed;
}

/**
 * Runs `body` with the fake OpenAI-compatible server, a temporary workspace holding the 10-line
 * file the `read_file` calls read, the agents' config file pointing at the server and a fresh
 * `LLM_HOME`; removes them after.
 */
async function withFakeModel(body: (model: FakeModel) => Promise<void>): Promise<void> {
  const server = await startFakeLlmServer();
  const workspace = await makeTempDir("acp-harness-bench-llm-");
  try {
    await Deno.writeTextFile(
      `${workspace}/${LLM_TURN_FILE}`,
      Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join("\n") + "\n",
    );
    // A fresh data directory per phase: sessions stored by earlier runs are not carried along.
    await Deno.remove(LLM_HOME, { recursive: true }).catch(() => {});
    await Deno.mkdir(LLM_HOME, { recursive: true });
    await Deno.writeTextFile(
      LLM_CONFIG_FILE,
      JSON.stringify({
        providers: {
          fake: { api: "openai-chat", baseUrl: `${server.url}/v1`, apiKeyEnv: "FAKE_API_KEY" },
        },
        models: { "fake/coder": { contextWindow: 128_000 } },
      }),
    );
    await body({ server, workspace });
  } finally {
    killAllChildren();
    await server.close();
    await removeTempDir(workspace);
  }
}

/** Ours on the fake model (`--stream` when `stream`), initialized. */
async function startLlmAgent(runtime: Runtime, stream: boolean): Promise<AgentProcess> {
  const line = agentCommand({ runtime, kind: "ours", workload: "llm" });
  const agent = new AgentProcess(`ours${stream ? "-stream" : ""}/${runtime}`, {
    ...line,
    args: [...line.args, ...(stream ? ["--stream"] : [])],
  });
  await agent.request("initialize", INITIALIZE_PARAMS);
  return agent;
}

/** Measures the LLM turn of ours against the bare client on `runtime`. */
export async function measureLlmTurn(
  runtime: Runtime,
  result: RuntimeResult,
  { settings }: BenchRun,
): Promise<void> {
  await withFakeModel(async (model) => {
    const agent = await startLlmAgent(runtime, false);
    const sides: Pair<() => Promise<number>> = {
      ours: () => llmTurnOurs(agent, model),
      bare: () => llmTurnBare(model.server),
    };
    for (let i = 0; i < settings.llmTurnWarmups; i++) {
      for (const kind of orderFor(i)) await sides[kind]();
    }
    const samples: Pair<number[]> = { ours: [], bare: [] };
    for (let i = 0; i < settings.llmTurnRuns; i++) {
      for (const kind of orderFor(i)) samples[kind].push(await sides[kind]());
    }
    result.exitMs.ours.push((await finish(agent)).exitMs);
    result.llmTurn = {
      ms: { ours: median(samples.ours), bare: median(samples.bare) },
      minMs: { ours: Math.min(...samples.ours), bare: Math.min(...samples.bare) },
      maxMs: { ours: Math.max(...samples.ours), bare: Math.max(...samples.bare) },
      runs: settings.llmTurnRuns,
    };
  });
}

/**
 * Time to first update on ours with `--stream`, then the turn's CPU per delta and per tool call
 * on that agent and a committed-step one (`bench/llm_breakdown.ts`).
 */
export async function measureLlmBreakdown(
  runtime: Runtime,
  result: RuntimeResult,
  { settings }: BenchRun,
): Promise<void> {
  const counts = breakdownCounts(settings.quick);
  await withFakeModel(async (model) => {
    const streamed = await startLlmAgent(runtime, true);
    result.firstUpdate = await measureFirstUpdate(streamed, model, counts);
    const committed = await startLlmAgent(runtime, false);
    result.turnCpu = await measureTurnCpu({ streamed, committed }, model, counts);
    result.exitMs.ours.push((await finish(streamed)).exitMs, (await finish(committed)).exitMs);
  });
}
