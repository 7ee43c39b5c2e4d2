/**
 * The delegation part of `bench/main.ts`: what a `delegate` call costs over the same work done
 * directly, on the agent spawned over stdio like the other benchmarks.
 *
 * - a no-op turn run directly: a fresh session of ours (scripted model) answers `ok`;
 * - the same turn delegated: a fresh session of ours (the parent, mode `auto`) whose scripted model
 *   calls `delegate`, which starts a child of ours on the same runtime (scripted, answering `ok`),
 *   runs the prompt there, stops the child (stdin EOF) and answers `ok`;
 * - the child's start-up on its own: spawn → `initialize` answer, then `session/new`, the no-op
 *   prompt, and stdin EOF → exit, of the same command line the parent starts.
 *
 * Rounds alternate direct and delegated turns so they share the machine's noise. No target: the
 * figures say where a delegation's time goes (the child's start-up and exit dominate).
 *
 * @module
 */
import type { McpBenchAgent } from "./mcp.ts";
import { fixed, table } from "./format.ts";
import { median } from "./stats.ts";

/** The part of a running agent (an `AgentProcess`) this benchmark uses. */
export type DelegationBenchAgent = Pick<
  McpBenchAgent,
  "spawnedAt" | "request" | "closeStdin" | "waitExit"
>;

/** A command line of ours on the runtime measured. */
export interface DelegationCommandLine {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/** Starts ours with extra arguments. */
export type StartDelegationAgent = (extraArgs: readonly string[]) => DelegationBenchAgent;

/** How much work one runtime's delegation benchmark does. */
export interface DelegationBenchCounts {
  readonly warmups: number;
  readonly runs: number;
}

/**
 * The counts for a full or a `--quick` run.
 *
 * @param quick Whether the run is a smoke test
 * @returns The counts
 */
export function delegationBenchCounts(quick: boolean): DelegationBenchCounts {
  return quick ? { warmups: 1, runs: 5 } : { warmups: 2, runs: 20 };
}

/** Median, min and max of some samples (ms). */
export interface DelegationStats {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

/** One runtime's delegation figures (ms). */
export interface DelegationResult {
  /** `session/prompt` → answer of the no-op turn run directly. */
  readonly direct: DelegationStats;
  /** `session/prompt` → answer of the same turn delegated to a child. */
  readonly delegated: DelegationStats;
  /** Per round: delegated − direct. */
  readonly overhead: DelegationStats;
  /** The child alone: spawn → `initialize` answer. */
  readonly childInitialize: DelegationStats;
  /** The child alone: `session/new` → answer, then the no-op prompt → answer. */
  readonly childSessionAndPrompt: DelegationStats;
  /** The child alone: stdin EOF → exit. */
  readonly childExit: DelegationStats;
  readonly runs: number;
}

function stats(values: readonly number[]): DelegationStats {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values) };
}

/** What {@link measureDelegation} runs on. */
export interface DelegationBenchOptions {
  /** Starts ours (the parent and the direct server) with extra arguments. */
  readonly start: StartDelegationAgent;
  /** The command line the parent starts as its agent (ours on the same runtime). */
  readonly child: DelegationCommandLine;
  /** `root`: the sessions' cwd; `tmp`: a scratch directory for scripts and config. */
  readonly paths: { readonly root: string; readonly tmp: string };
  /** Warm-ups and measured rounds. */
  readonly counts: DelegationBenchCounts;
}

/** The scripts and config of a run, written under `tmp`. */
async function writeScripts(
  { child, paths }: DelegationBenchOptions,
): Promise<{ readonly noop: string; readonly parentScript: string; readonly config: string }> {
  const dir = `${paths.tmp}/delegation`;
  await Deno.mkdir(dir, { recursive: true });
  const noop = `${dir}/noop.json`;
  await Deno.writeTextFile(noop, JSON.stringify([{ text: "ok" }]));
  const parentScript = `${dir}/parent.json`;
  await Deno.writeTextFile(
    parentScript,
    JSON.stringify([
      { toolCalls: [{ name: "delegate", arguments: { agent: "noop", prompt: "Do nothing" } }] },
      { text: "ok" },
    ]),
  );
  const childArgs = [...child.args, "--model", "scripted", "--script", noop, "--store", "memory:"];
  const config = `${dir}/config.json`;
  await Deno.writeTextFile(
    config,
    JSON.stringify({
      agents: {
        noop: {
          command: child.command,
          args: childArgs,
          env: child.env,
          description: "Answers ok",
        },
      },
    }),
  );
  return { noop, parentScript, config };
}

/** One no-op turn in a fresh session, `session/prompt` → answer (ms); the session closed after. */
async function timedTurn(agent: DelegationBenchAgent, root: string): Promise<number> {
  const session = await agent.request("session/new", { cwd: root, mcpServers: [] });
  const sessionId = (session.result as { sessionId: string }).sessionId;
  const sent = performance.now();
  const answer = await agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "go" }],
  });
  const stopReason = (answer.result as { stopReason?: string }).stopReason;
  if (stopReason !== "end_turn") throw new Error(`the turn ended ${stopReason}`);
  await agent.request("session/close", { sessionId });
  return answer.at - sent;
}

/** The child's command line on its own: its start-up, its turn and its exit (ms). */
interface ChildAlone {
  readonly initMs: number;
  readonly sessionMs: number;
  readonly exitMs: number;
}

async function childAlone(
  start: StartDelegationAgent,
  noop: string,
  root: string,
): Promise<ChildAlone> {
  const agent = start(["--model", "scripted", "--script", noop]);
  const init = await agent.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: {},
  });
  const sent = performance.now();
  const session = await agent.request("session/new", { cwd: root, mcpServers: [] });
  const sessionId = (session.result as { sessionId: string }).sessionId;
  const answer = await agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "go" }],
  });
  const closedAt = agent.closeStdin();
  const exitedAt = await agent.waitExit();
  return {
    initMs: init.at - agent.spawnedAt,
    sessionMs: answer.at - sent,
    exitMs: exitedAt - closedAt,
  };
}

/**
 * Measures one runtime.
 *
 * @returns The figures
 */
export async function measureDelegation(
  options: DelegationBenchOptions,
): Promise<DelegationResult> {
  const { start, paths, counts } = options;
  const { noop, parentScript, config } = await writeScripts(options);
  const common = ["--model", "scripted", "--store", "memory:"];
  const direct = start([...common, "--script", noop]);
  const parent = start([...common, "--script", parentScript, "--config", config, "--mode", "auto"]);
  try {
    for (const agent of [direct, parent]) {
      await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    }
    const turn = (agent: DelegationBenchAgent): Promise<number> => timedTurn(agent, paths.root);
    const directMs: number[] = [];
    const delegatedMs: number[] = [];
    const overheadMs: number[] = [];
    const alone: ChildAlone[] = [];
    for (let round = 0; round < counts.warmups + counts.runs; round++) {
      const measured = round >= counts.warmups;
      const pair = round % 2 === 0
        ? [await turn(direct), await turn(parent)]
        : [await turn(parent), await turn(direct)].reverse();
      if (measured) {
        const [d, g] = pair as [number, number];
        directMs.push(d);
        delegatedMs.push(g);
        overheadMs.push(g - d);
      }
      if (measured) alone.push(await childAlone(start, noop, paths.root));
    }
    return {
      direct: stats(directMs),
      delegated: stats(delegatedMs),
      overhead: stats(overheadMs),
      childInitialize: stats(alone.map((run) => run.initMs)),
      childSessionAndPrompt: stats(alone.map((run) => run.sessionMs)),
      childExit: stats(alone.map((run) => run.exitMs)),
      runs: counts.runs,
    };
  } finally {
    for (const agent of [direct, parent]) {
      agent.closeStdin();
      await agent.waitExit().catch(() => {});
    }
  }
}

/** One runtime's row of the report. */
export interface DelegationReportRow {
  readonly runtime: string;
  readonly delegation: DelegationResult | undefined;
  /** Whether the phase failed (its error is in the report's Errors). */
  readonly failed: boolean;
}

function range(value: DelegationStats | undefined, digits: number): string {
  return value === undefined ? "n/a" : `${fixed(value.min, digits)} – ${fixed(value.max, digits)}`;
}

/**
 * Renders the delegation section of `bench/RESULTS.md`.
 *
 * @param rows One per runtime
 * @returns The section's text
 */
export function renderDelegationSection(rows: readonly DelegationReportRow[]): string {
  const runs = rows.find((row) => row.delegation)?.delegation?.runs;
  const turnRows = rows.map(({ runtime, delegation: d, failed }) => [
    runtime,
    failed ? "**failed** (see Errors)" : fixed(d?.direct.median, 1),
    fixed(d?.delegated.median, 1),
    fixed(d?.overhead.median, 1),
    range(d?.overhead, 1),
    fixed(d?.childInitialize.median, 1),
    fixed(d?.childSessionAndPrompt.median, 1),
    fixed(d?.childExit.median, 1),
    fixed(
      d === undefined
        ? undefined
        : d.childInitialize.median + d.childSessionAndPrompt.median + d.childExit.median,
      1,
    ),
  ]);
  return [
    "## Delegation to another ACP agent (ms; no target)",
    "",
    `${runs ?? "n/a"} rounds per runtime, after warm-ups. Direct: a fresh session's no-op turn ` +
    "(the scripted model answers `ok`), `session/prompt` → answer. Delegated: the same turn in a " +
    "parent (mode `auto`) whose model calls `delegate`, which starts ours on the same runtime as " +
    "the child (scripted, answering `ok`, `--store memory:`), `initialize`, `session/new`, the " +
    "prompt, stdin EOF and the child's exit, then answers `ok`. Overhead: delegated − direct per " +
    "round. The child alone: the same command line spawned by the bench: spawn → `initialize` " +
    "answer, `session/new` + the no-op prompt, stdin EOF → exit; their sum is most of the " +
    "overhead (the child's start-up dominates).",
    "",
    table(
      [
        "runtime",
        "direct turn",
        "delegated turn",
        "overhead",
        "overhead min – max",
        "child spawn → initialize",
        "child session/new + prompt",
        "child EOF → exit",
        "child sum",
      ],
      turnRows,
    ),
  ].join("\n");
}
