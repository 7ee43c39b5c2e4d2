/**
 * The breakdown of an LLM turn for `bench/main.ts`, on ours started against the fake
 * OpenAI-compatible server of `tests/_helpers/fake_llm_server.ts` (in this process, on
 * 127.0.0.1), like the LLM turn section:
 *
 * - time to first update: from the fake server writing the first text delta of a response to
 *   this process receiving the `agent_message_chunk` that carries it, with `--stream` (both ends
 *   in this process, so one clock); against the same delta read by a fetch client in this
 *   process (the floor of loopback and this event loop);
 * - the turn's own CPU in the agent process (`/proc/<pid>/task/<tid>/schedstat`, the time on
 *   CPU of every thread) per streamed delta and per tool call, from turns that differ only in
 *   the number of deltas or of `read_file` calls.
 *
 * `bench/llm_turn.ts` starts the agents and the fake server, and `bench/report.ts` frames the
 * report; this module takes the measurements and renders its sections.
 *
 * @module
 */
import {
  type FakeLlmServer,
  serializeSseItem,
  type SseItem,
  type SseResponse,
} from "../tests/_helpers/fake_llm_server.ts";
import { openAiTurn } from "../tests/_helpers/llm_fixtures.ts";
import type { BenchAgent } from "./agent_process.ts";
import { fixed, table, type Tally } from "./format.ts";
import type { SessionUpdateParams } from "./rpc_client.ts";
import { median, percentile } from "./stats.ts";

/** The part of a `session/update` these measures look at. */
export type TurnUpdateParams = SessionUpdateParams;

/** The part of a running agent (an `AgentProcess`) these measures use. */
export type TurnAgent = Pick<BenchAgent, "label" | "pid" | "onUpdateAt" | "request">;

/** The fake model the turns run on, and the session's cwd (holding {@link BREAKDOWN_FILE}). */
export interface FakeModel {
  readonly server: FakeLlmServer;
  readonly workspace: string;
}

/** Targets of the issue. */
export const BREAKDOWN_TARGETS = {
  /** Time to first update, p50 (ms). */
  firstUpdateMs: 1,
} as const;

/** How much work one runtime's breakdown does. */
export interface BreakdownCounts {
  readonly firstUpdateWarmups: number;
  readonly firstUpdateRuns: number;
  /** The model's pause before the first text delta (ms): the agent is idle when it comes. */
  readonly firstDeltaDelayMs: number;
  /** Rounds of the CPU turns (each round runs every kind of turn once per agent). */
  readonly cpuRounds: number;
  /** Rounds run first and not counted: the JIT is still compiling the delta path in the first. */
  readonly cpuWarmupRounds: number;
  /** Text deltas of the many-delta turn. */
  readonly deltas: number;
  /** `read_file` calls of the many-call turn. */
  readonly toolCalls: number;
}

/**
 * The counts for a full or a `--quick` run.
 *
 * @param quick Whether the run is a smoke test
 * @returns The counts
 */
export function breakdownCounts(quick: boolean): BreakdownCounts {
  return quick
    ? {
      firstUpdateWarmups: 5,
      firstUpdateRuns: 30,
      firstDeltaDelayMs: 10,
      cpuRounds: 3,
      cpuWarmupRounds: 2,
      deltas: 5_000,
      toolCalls: 50,
    }
    : {
      firstUpdateWarmups: 20,
      firstUpdateRuns: 200,
      firstDeltaDelayMs: 10,
      cpuRounds: 15,
      cpuWarmupRounds: 3,
      deltas: 5_000,
      toolCalls: 50,
    };
}

// ---------------------------------------------------------------------------------------------
// SSE bodies

/**
 * The same SSE body as one `raw` item. The fake server writes each item with its own
 * `res.write` and waits for it to flush, so one item is the fewest writes it allows (plus its
 * header flush and the final chunk); no item or response may have a delay.
 *
 * @param response The response, item by item
 * @returns The response as one item
 */
export function oneWrite(response: SseResponse): SseResponse {
  if ((response.chunkDelayMs ?? 0) !== 0 || response.items.some((item) => item.delayMs)) {
    throw new Error("one-write responses must have no per-chunk delay");
  }
  const { chunkDelayMs: _delay, items, ...rest } = response;
  return { ...rest, items: [{ raw: items.map(serializeSseItem).join("") }] };
}

/** The file every `read_file` call reads, relative to the session's cwd. */
export const BREAKDOWN_FILE = "small.txt";

/** The first text delta of the first-update turns: it names what the client must receive. */
const FIRST_DELTA = "first ";

/** Deltas after the first one in a first-update turn. */
const FIRST_UPDATE_TAIL = ["of ", "three."];

/**
 * A first-update answer: the role chunk, then after `delayMs` the first text delta, stamped by
 * `onWrite` when the fake server takes its text (right before its `res.write`; the getter runs
 * when the server serializes the item), then two more deltas and the end. Item by item, as a
 * model streams.
 */
function firstUpdateResponse(delayMs: number, onWrite: (at: number) => void): SseResponse {
  const turn = openAiTurn({ text: [FIRST_DELTA, ...FIRST_UPDATE_TAIL] });
  const [role, first, ...rest] = turn.items;
  if (role === undefined || first === undefined) throw new Error("unexpected openAiTurn shape");
  const text = serializeSseItem(first);
  const stamped: SseItem = {
    delayMs,
    get raw(): string {
      onWrite(performance.now());
      return text;
    },
  };
  return { ...turn, items: [role, stamped, ...rest] };
}

// ---------------------------------------------------------------------------------------------
// Turns

/** Opens a session in `workspace`; resolves with its id. */
async function newSession(agent: TurnAgent, workspace: string): Promise<string> {
  const reply = await agent.request("session/new", { cwd: workspace, mcpServers: [] });
  const sessionId = (reply.result as { sessionId?: unknown } | null)?.sessionId;
  if (typeof sessionId !== "string") throw new Error(`${agent.label}: session/new had no id`);
  return sessionId;
}

/** What a turn must show for its check. */
interface TurnExpectation {
  /** Model requests the turn makes. */
  readonly requests: number;
  /** `tool_call_update`s that must end `completed`. */
  readonly toolCalls: number;
}

/** One turn of {@link promptTurn}. */
interface TurnPlan {
  readonly sessionId: string;
  /** The model's answers, queued at the fake server. */
  readonly responses: readonly SseResponse[];
  readonly expected: TurnExpectation;
  /** Sees the session's updates on the way. */
  readonly onUpdate?: (params: TurnUpdateParams, at: number) => void;
}

/**
 * Queues `responses`, sends `session/prompt` on `sessionId` and waits for its response; throws
 * unless it ended `end_turn` with every tool call completed and the fake server saw exactly the
 * expected model requests. `onUpdate` sees the session's updates on the way.
 */
async function promptTurn(
  agent: TurnAgent,
  server: FakeLlmServer,
  { sessionId, responses, expected, onUpdate }: TurnPlan,
): Promise<number> {
  const completed = new Set<string>();
  agent.onUpdateAt = (params, at) => {
    if (params.sessionId !== sessionId) return;
    const update = params.update;
    if (update?.sessionUpdate === "tool_call_update" && update.status === "completed") {
      if (update.toolCallId !== undefined) completed.add(update.toolCallId);
    }
    onUpdate?.(params, at);
  };
  server.requests.length = 0;
  server.enqueue(...responses);
  try {
    const sentAt = performance.now();
    const reply = await agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "Go." }],
    });
    const stopReason = (reply.result as { stopReason?: unknown } | null)?.stopReason;
    const problems: string[] = [];
    if (stopReason !== "end_turn") problems.push(`stopReason ${JSON.stringify(stopReason)}`);
    if (completed.size !== expected.toolCalls) {
      problems.push(`${completed.size} of ${expected.toolCalls} tool calls completed`);
    }
    if (server.requests.length !== expected.requests) {
      problems.push(`${server.requests.length} model requests instead of ${expected.requests}`);
    }
    if (problems.length > 0) {
      throw new Error(`${agent.label}: turn check failed: ${problems.join("; ")}`);
    }
    return reply.at - sentAt;
  } finally {
    agent.onUpdateAt = undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Time to first update

/** Percentiles of some samples (ms). */
export interface Percentiles {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** One runtime's time to first update (ms). */
export interface FirstUpdateResult {
  /** The fake server writing the first delta → the `agent_message_chunk` with it arriving. */
  readonly ours: Percentiles;
  /** The same delta read by a fetch client in this process. */
  readonly floor: Percentiles;
  readonly runs: number;
}

/** One first-update turn of ours: a fresh session, then the stamped answer. */
async function firstUpdateOurs(
  agent: TurnAgent,
  { server, workspace }: FakeModel,
  delayMs: number,
): Promise<number> {
  const sessionId = await newSession(agent, workspace);
  let writtenAt: number | undefined;
  let receivedAt: number | undefined;
  let firstText: string | undefined;
  await promptTurn(agent, server, {
    sessionId,
    responses: [firstUpdateResponse(delayMs, (at) => writtenAt = at)],
    expected: { requests: 1, toolCalls: 0 },
    onUpdate: (params, at) => {
      if (receivedAt !== undefined || params.update?.sessionUpdate !== "agent_message_chunk") {
        return;
      }
      receivedAt = at;
      firstText = params.update.content?.text;
    },
  });
  if (writtenAt === undefined || receivedAt === undefined) {
    throw new Error(`${agent.label}: the first delta was not written or not relayed`);
  }
  if (firstText === undefined || !firstText.startsWith(FIRST_DELTA)) {
    throw new Error(
      `${agent.label}: the first agent_message_chunk was ${JSON.stringify(firstText)}, ` +
        `expected it to start with ${JSON.stringify(FIRST_DELTA)} (is --stream on?)`,
    );
  }
  return receivedAt - writtenAt;
}

/** One first-update answer read by a fetch client here: the delta's write → its read. */
async function firstUpdateFloor(server: FakeLlmServer, delayMs: number): Promise<number> {
  let writtenAt: number | undefined;
  server.requests.length = 0;
  server.enqueue(firstUpdateResponse(delayMs, (at) => writtenAt = at));
  const response = await fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ model: "coder", stream: true, messages: [] }),
  });
  if (!response.ok || response.body === null) {
    await response.body?.cancel();
    throw new Error(`first-update floor client: HTTP ${response.status}`);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let readAt: number | undefined;
  for (;;) {
    const next = await reader.read();
    if (next.done) break;
    const at = performance.now();
    if (readAt !== undefined) continue;
    text += decoder.decode(next.value, { stream: true });
    if (text.includes(JSON.stringify(FIRST_DELTA))) readAt = at;
  }
  if (writtenAt === undefined || readAt === undefined) {
    throw new Error("first-update floor client: the first delta was not read");
  }
  return readAt - writtenAt;
}

/**
 * Time to first update: turns of ours (`--stream`) and of the floor client alternate, each
 * answered by a response whose first text delta comes `firstDeltaDelayMs` after the role chunk.
 */
export async function measureFirstUpdate(
  agent: TurnAgent,
  model: FakeModel,
  counts: BreakdownCounts,
): Promise<FirstUpdateResult> {
  const delay = counts.firstDeltaDelayMs;
  const ours: number[] = [];
  const floor: number[] = [];
  const total = counts.firstUpdateWarmups + counts.firstUpdateRuns;
  for (let i = 0; i < total; i++) {
    const measured = i >= counts.firstUpdateWarmups;
    const sides = [
      async (): Promise<void> => {
        const ms = await firstUpdateOurs(agent, model, delay);
        if (measured) ours.push(ms);
      },
      async (): Promise<void> => {
        const ms = await firstUpdateFloor(model.server, delay);
        if (measured) floor.push(ms);
      },
    ];
    for (const side of i % 2 === 0 ? sides : sides.reverse()) await side();
  }
  return { ours: percentiles(ours), floor: percentiles(floor), runs: counts.firstUpdateRuns };
}

// ---------------------------------------------------------------------------------------------
// CPU per delta and per tool call

/**
 * The CPU time of every thread of `pid` so far (ns): the first field of each
 * `/proc/<pid>/task/<tid>/schedstat`. A thread that ended takes its time with it.
 */
export async function processCpuNs(pid: number): Promise<number> {
  let total = 0;
  for await (const task of Deno.readDir(`/proc/${pid}/task`)) {
    try {
      const text = await Deno.readTextFile(`/proc/${pid}/task/${task.name}/schedstat`);
      total += Number(text.split(" ")[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return total;
}

/** A poll of the agent's CPU counts as quiet when it used less than this much since the last. */
const QUIET_NS = 50_000;
const QUIET_POLL_MS = 5;
const QUIET_MAX_POLLS = 100;

/**
 * The agent's CPU time once it is quiet: polled every 5 ms until a poll finds less than 50 µs
 * used since the previous one (its background work after a response, such as the log's flush,
 * done), for at most half a second.
 */
async function quietCpuNs(pid: number): Promise<number> {
  let last = await processCpuNs(pid);
  for (let i = 0; i < QUIET_MAX_POLLS; i++) {
    await new Promise((resolve) => setTimeout(resolve, QUIET_POLL_MS));
    const now = await processCpuNs(pid);
    if (now - last < QUIET_NS) return now;
    last = now;
  }
  return last;
}

/** The turns of the CPU measure. */
type CpuTurn = "oneDelta" | "deltas" | "oneCall" | "calls";

const CPU_TURNS: readonly CpuTurn[] = ["oneDelta", "deltas", "oneCall", "calls"];

/** The responses (one write each) and the check of each kind of CPU turn. */
function cpuTurns(
  counts: BreakdownCounts,
): Record<CpuTurn, { responses: SseResponse[]; expected: TurnExpectation }> {
  const answer = oneWrite(openAiTurn({ text: ["Done."] }));
  const calls = (n: number): SseResponse =>
    oneWrite(openAiTurn({
      toolCalls: Array.from({ length: n }, (_, i) => ({
        id: `call_${i}`,
        name: "read_file",
        arguments: { path: BREAKDOWN_FILE },
      })),
    }));
  return {
    oneDelta: { responses: [answer], expected: { requests: 1, toolCalls: 0 } },
    deltas: {
      responses: [
        oneWrite(openAiTurn({ text: Array.from({ length: counts.deltas }, (_, i) => `w${i} `) })),
      ],
      expected: { requests: 1, toolCalls: 0 },
    },
    oneCall: { responses: [calls(1), answer], expected: { requests: 2, toolCalls: 1 } },
    calls: {
      responses: [calls(counts.toolCalls), answer],
      expected: { requests: 2, toolCalls: counts.toolCalls },
    },
  };
}

/** One agent's CPU figures (µs of the agent process's CPU). */
export interface TurnCpu {
  /** (many-delta turn − one-delta turn) ÷ (deltas − 1), median over rounds. */
  readonly perDeltaUs: number;
  /** (many-call turn − one-call turn) ÷ (calls − 1), median over rounds. */
  readonly perCallUs: number;
  /** The one-delta turn itself. */
  readonly oneDeltaTurnUs: number;
  /** The per-round values of `perDeltaUs` and `perCallUs`: their min and max. */
  readonly perDeltaRange: readonly [number, number];
  readonly perCallRange: readonly [number, number];
}

/** One runtime's CPU figures: the `--stream` agent and the committed-step one. */
export interface TurnCpuResult {
  readonly streamed: TurnCpu;
  readonly committed: TurnCpu;
  readonly rounds: number;
}

/**
 * The turn's own CPU: each round runs every kind of turn once on each agent (the order rotating),
 * each in a fresh session opened before the first reading; the agent's CPU time is read once it
 * is quiet before the prompt and again once it is quiet after the response.
 */
export async function measureTurnCpu(
  agents: { readonly streamed: TurnAgent; readonly committed: TurnAgent },
  { server, workspace }: FakeModel,
  counts: BreakdownCounts,
): Promise<TurnCpuResult> {
  const turns = cpuTurns(counts);
  const sides = ["streamed", "committed"] as const;
  const samples = {
    streamed: new Map<CpuTurn, number[]>(CPU_TURNS.map((turn) => [turn, []])),
    committed: new Map<CpuTurn, number[]>(CPU_TURNS.map((turn) => [turn, []])),
  };
  const runTurn = async (agent: TurnAgent, turn: CpuTurn): Promise<number> => {
    if (agent.pid === undefined) throw new Error(`${agent.label}: no pid`);
    const sessionId = await newSession(agent, workspace);
    const before = await quietCpuNs(agent.pid);
    await promptTurn(agent, server, { sessionId, ...turns[turn] });
    const after = await quietCpuNs(agent.pid);
    return (after - before) / 1000;
  };
  for (let round = 0; round < counts.cpuWarmupRounds + counts.cpuRounds; round++) {
    for (let k = 0; k < CPU_TURNS.length * sides.length; k++) {
      const index = (k + round) % (CPU_TURNS.length * sides.length);
      const side = sides[index % sides.length] as typeof sides[number];
      const turn = CPU_TURNS[Math.floor(index / sides.length)] as CpuTurn;
      const us = await runTurn(agents[side], turn);
      if (round >= counts.cpuWarmupRounds) samples[side].get(turn)?.push(us);
    }
  }
  const figures = (side: typeof sides[number]): TurnCpu => {
    const of = (turn: CpuTurn): number[] => samples[side].get(turn) ?? [];
    const perRound = (many: CpuTurn, one: CpuTurn, n: number): number[] =>
      of(many).map((us, i) => (us - (of(one)[i] ?? Number.NaN)) / (n - 1));
    const perDelta = perRound("deltas", "oneDelta", counts.deltas);
    const perCall = perRound("calls", "oneCall", counts.toolCalls);
    return {
      perDeltaUs: median(perDelta),
      perCallUs: median(perCall),
      oneDeltaTurnUs: median(of("oneDelta")),
      perDeltaRange: [Math.min(...perDelta), Math.max(...perDelta)],
      perCallRange: [Math.min(...perCall), Math.max(...perCall)],
    };
  };
  return {
    streamed: figures("streamed"),
    committed: figures("committed"),
    rounds: counts.cpuRounds,
  };
}

// ---------------------------------------------------------------------------------------------
// Report

/** One runtime's row of the breakdown sections. */
export interface BreakdownReportRow {
  readonly runtime: string;
  readonly firstUpdate: FirstUpdateResult | undefined;
  readonly cpu: TurnCpuResult | undefined;
  /** Whether the phase failed (see the report's Errors). */
  readonly failed: boolean;
}

/** Time to first update, with its target. */
function renderFirstUpdate(
  rows: readonly BreakdownReportRow[],
  counts: BreakdownCounts,
  tally: Tally,
): string {
  const firstRows = rows.map(({ runtime, firstUpdate: f, failed }) => {
    const pass = f === undefined ? undefined : f.ours.p50 <= BREAKDOWN_TARGETS.firstUpdateMs;
    return [
      runtime,
      fixed(f?.ours.p50, 3),
      fixed(f?.ours.p99, 3),
      fixed(f?.floor.p50, 3),
      ratioText(f === undefined ? undefined : f.ours.p50 / f.floor.p50),
      `≤ ${BREAKDOWN_TARGETS.firstUpdateMs} ms p50`,
      tally.verdict(pass, failed),
      fixed(f?.ours.max, 2),
      fixed(f?.floor.p99, 3),
    ];
  });
  return [
    `## Time to first update: the model's first streamed delta → the client's \`agent_message_chunk\` (ms, ${counts.firstUpdateRuns} turns after ${counts.firstUpdateWarmups} warm-ups)`,
    "",
    table(
      [
        "runtime",
        "ours p50",
        "ours p99",
        "floor p50",
        "ratio",
        "target",
        "result",
        "ours max",
        "floor p99",
      ],
      firstRows,
    ),
    "",
    "What a user watching the agent feels once the model starts answering. Ours is started with " +
    "`--stream` (each text delta relayed as its own `agent_message_chunk`); each turn opens a " +
    "fresh session and its model answer is streamed item by item: the role chunk, then after " +
    `${counts.firstDeltaDelayMs} ms (the model thinking; the agent is idle by then) the first ` +
    "text delta, then two more and the end. The fake server runs in this bench process, which " +
    "also reads the agent's stdout, so both ends share one clock: the delta is stamped " +
    "(`performance.now()`) by a getter of its SSE item, which the fake server reads right " +
    "before its `res.write`; the chunk's time is when its bytes came off the agent's stdout. " +
    "In between: the agent reading the delta off its HTTP response, parsing it, relaying it as " +
    "a `session/update` and writing it to the pipe, and this process reading it. Floor: the " +
    "same answer read by a fetch client in this process (Deno), from the stamp to the read " +
    "that holds the delta: loopback and this event loop alone, with no agent in between; the " +
    "ratio is ours over it. Ours and the floor alternate turn by turn. Every turn must end " +
    "`end_turn` with the first chunk carrying the first delta, else the section fails.",
  ].join("\n");
}

/** CPU per delta and per tool call (no target). */
function renderTurnCpu(rows: readonly BreakdownReportRow[], counts: BreakdownCounts): string {
  const range = (values: readonly [number, number] | undefined): string =>
    values === undefined ? "n/a" : `${fixed(values[0], 2)} – ${fixed(values[1], 2)}`;
  const cpuRows = rows.map(({ runtime, cpu }) => [
    runtime,
    fixed(cpu?.streamed.perDeltaUs, 2),
    fixed(cpu?.committed.perDeltaUs, 2),
    fixed(cpu?.streamed.perCallUs, 1),
    fixed(cpu?.committed.perCallUs, 1),
    `${fixed(cpu?.streamed.oneDeltaTurnUs, 0)} / ${fixed(cpu?.committed.oneDeltaTurnUs, 0)}`,
    `${range(cpu?.streamed.perDeltaRange)} / ${range(cpu?.committed.perDeltaRange)}`,
    `${range(cpu?.streamed.perCallRange)} / ${range(cpu?.committed.perCallRange)}`,
  ]);
  return [
    `## CPU per streamed delta and per tool call (µs of the agent process's CPU; no target; median of ${counts.cpuRounds} rounds after ${counts.cpuWarmupRounds} warm-up rounds)`,
    "",
    table(
      [
        "runtime",
        "per delta `--stream`",
        "per delta committed",
        "per tool call `--stream`",
        "per tool call committed",
        "one-delta turn `--stream` / committed",
        "per delta min – max (`--stream` / committed)",
        "per tool call min – max (`--stream` / committed)",
      ],
      cpuRows,
    ),
    "",
    "Where the agent's own CPU goes in a turn, so that a regression shows where it is. The CPU " +
    "time is the sum over the agent process's threads of the first field of " +
    "`/proc/<pid>/task/<tid>/schedstat` (ns on CPU; main thread, JIT, GC and I/O threads " +
    "alike), read before the prompt and after its response, each time once the process is " +
    "quiet (a 5 ms poll in which it used under 50 µs), so work left after the response (the " +
    "log's flush) is counted with its turn. Each turn opens a fresh session before the first " +
    "reading. Two agents on the fake server, side by side: `--stream` (every text delta relayed " +
    "as its own `agent_message_chunk`) and committed-step (the LLM turn section's mode: one " +
    "chunk per step). Per delta: (a turn answered by " +
    `${counts.deltas.toLocaleString("en-US")} text deltas − a turn answered by one) ÷ ` +
    `${(counts.deltas - 1).toLocaleString("en-US")}: reading and parsing the delta off the SSE ` +
    "response and, with `--stream`, its ACP notification. Per tool call: (a turn whose first " +
    `step calls \`read_file\` ${counts.toolCalls} times − one calling it once) ÷ ` +
    `${counts.toolCalls - 1}, both answering \`Done.\` in a second step, so both make two model ` +
    "requests and the difference is the calls alone: parsing the call, the permission check, " +
    "the `tool_call` and `tool_call_update` notifications, reading the 10-line file, its durable " +
    "record and its share of the second request's body. Each response is one write, as in the " +
    "LLM turn section. Differences are taken per round (the turns of a round run back to back, " +
    "the order rotating by round), then the median; the one-delta turn column is the whole " +
    "turn's CPU, its fixed cost.",
  ].join("\n");
}

/**
 * The two sections: time to first update (with its target) and CPU per delta and per tool call.
 *
 * @param rows One row per runtime
 * @param counts The counts of the run
 * @param tally Counts the sections' targets
 * @returns The text
 */
export function renderBreakdownSections(
  rows: readonly BreakdownReportRow[],
  counts: BreakdownCounts,
  tally: Tally,
): string {
  return [renderFirstUpdate(rows, counts, tally), "", renderTurnCpu(rows, counts)].join("\n");
}

function percentiles(values: readonly number[]): Percentiles {
  return {
    p50: percentile(values, 0.5),
    p99: percentile(values, 0.99),
    max: values.length === 0 ? Number.NaN : Math.max(...values),
  };
}

/** A ratio as `1.23×`; `n/a` when missing or infinite (a floor of 0). */
function ratioText(ratio: number | undefined): string {
  return ratio === undefined || !Number.isFinite(ratio) ? "n/a" : `${ratio.toFixed(2)}×`;
}
