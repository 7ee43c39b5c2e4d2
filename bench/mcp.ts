/**
 * The MCP part of `bench/main.ts`, on the agent spawned over stdio like the other benchmarks:
 *
 * - `session/new` with three stdio MCP servers (three instances of
 *   `tests/_fixtures/fake_mcp_server.mjs` on Node.js) to its response, against a bare client in
 *   this process (`@modelcontextprotocol/client` with its own `StdioClientTransport`) starting the
 *   same three servers in parallel and reading their `tools/list`;
 * - one MCP tool call inside a turn (the scripted model calls `mcp__fake__echo`, then answers),
 *   against the same turn calling a tool that does not exist, and the bare client's `tools/call`
 *   of `echo`;
 * - whether the MCP client is in the start-up module graph (`deno info` of `mod.ts`, and the
 *   esbuild metafile of `dist/cli.js`); the start-up time itself is the start-up section's.
 *
 * `bench/main.ts` owns the processes and the report frame (`bench/phases.ts` starts the agents);
 * this module takes the measurements and renders its section.
 *
 * @module
 */
import { bundleStartupGraph, sourceStartupGraph } from "./startup_graph.ts";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { processesWithMarker } from "../tests/_helpers/mcp_servers.ts";
import { pollUntil } from "../tests/_helpers/wait.ts";
import type { BenchAgent } from "./agent_process.ts";
import { fixed, ratioText, table, type Tally } from "./format.ts";
import { INITIALIZE_PARAMS } from "./rpc_client.ts";
import { summarize, type Summary } from "./stats.ts";

/** The part of a running agent these benchmarks use. */
export type McpBenchAgent = Pick<
  BenchAgent,
  "label" | "spawnedAt" | "onUpdate" | "request" | "closeStdin" | "waitExit"
>;

/** Starts ours (over stdio) with the scripted model replaying `scriptFile`. */
export type StartMcpAgent = (scriptFile: string) => McpBenchAgent;

/** Starts ours on Node.js from `bundle`, or from `dist/cli.js` when undefined (no arguments). */
export type StartBundle = (bundle: string | undefined) => McpBenchAgent;

/** Targets of the issue. */
export const MCP_TARGETS = {
  /** `session/new` with three servers over the bare client's start + `tools/list`. */
  sessionNewRatio: 1.2,
  /** The turn's MCP call overhead ≤ this × the bare `tools/call` … */
  callRatio: 1.2,
  /** … plus this many milliseconds. */
  callSlackMs: 1,
} as const;

/** How many stdio servers the `session/new` benchmark declares. */
export const MCP_SERVERS = 3;

/** How much work one runtime's MCP benchmark does. */
export interface McpBenchCounts {
  readonly sessionNewWarmups: number;
  readonly sessionNewRuns: number;
  readonly callWarmups: number;
  readonly callRuns: number;
}

/**
 * The counts for a full or a `--quick` run.
 *
 * @param quick Whether the run is a smoke test
 * @returns The counts
 */
export function mcpBenchCounts(quick: boolean): McpBenchCounts {
  return quick
    ? { sessionNewWarmups: 1, sessionNewRuns: 3, callWarmups: 5, callRuns: 20 }
    : { sessionNewWarmups: 2, sessionNewRuns: 25, callWarmups: 20, callRuns: 100 };
}

/** Where things are. */
export interface McpBenchPaths {
  /** The repository root (the sessions' cwd). */
  readonly root: string;
  /** A scratch directory for the script. */
  readonly tmp: string;
  /** Node.js, which runs every MCP server. */
  readonly node: string;
}

/** Median, min and max of some samples (ms). */
export type Stats = Summary;

/** One runtime's MCP figures (ms). */
export interface McpResult {
  readonly sessionNew: {
    /** `session/new` with the three servers, steady state (the MCP client already loaded). */
    readonly ours: Stats;
    /** The bare client: three servers started in parallel, each `initialize` + `tools/list`. */
    readonly bare: Stats;
    /** The first `session/new` with servers in a fresh agent: includes loading the MCP client. */
    readonly coldMs: number;
    /** `session/new` without servers in the same process. */
    readonly noServers: Stats;
    /** `session/close` of a session with the three servers (untimed in the ratio). */
    readonly close: Stats;
    readonly runs: number;
  };
  readonly call: {
    /** The scripted turn whose tool call is `mcp__fake__echo`. */
    readonly mcpTurn: Stats;
    /** The same turn calling a tool that does not exist. */
    readonly noToolTurn: Stats;
    /** Per round: MCP turn − no-tool turn. */
    readonly overhead: Stats;
    /** The bare client's `tools/call` of `echo`. */
    readonly bare: Stats;
    readonly runs: number;
  };
  /**
   * Node.js only: spawn → `initialize` of `dist/cli.js` against the same bundle without the
   * MCP hub and client, alternating.
   */
  readonly bundleStartup?: {
    readonly withMcp: Stats;
    readonly withoutMcp: Stats;
    readonly runs: number;
  };
  /** MCP server processes of this run still alive after every session was closed. */
  readonly leftovers: number;
  /** Exit after stdin EOF. */
  readonly exitMs: number;
}

// ---------------------------------------------------------------------------------------------
// Helpers

/** Waits up to `timeoutMs` for the marked processes to be gone; returns how many remain. */
async function leftoversAfter(marker: string, timeoutMs: number): Promise<number> {
  // Other processes' lives announce themselves by no event here: /proc is polled.
  await pollUntil(async () => (await processesWithMarker(marker)).length === 0, {
    what: `the processes marked ${marker} to be gone`,
    timeoutMs,
  }).catch(() => {});
  return (await processesWithMarker(marker)).length;
}

function sessionIdOf(agent: McpBenchAgent, result: unknown): string {
  const sessionId = (result as { sessionId?: unknown } | null)?.sessionId;
  if (typeof sessionId !== "string") throw new Error(`${agent.label}: session/new had no id`);
  return sessionId;
}

// ---------------------------------------------------------------------------------------------
// The bare client

/** One bare client connected to a fake server over the SDK's own stdio transport. */
async function bareConnect(paths: McpBenchPaths, marker: string): Promise<Client> {
  const transport = new StdioClientTransport({
    command: paths.node,
    args: [fakeServer(paths), `--marker=${marker}`],
    cwd: paths.root,
    stderr: "ignore",
  });
  const client = new Client({ name: "acp-harness-bench", version: "0.0.0" }, { capabilities: {} });
  await client.connect(transport);
  const listed = await client.listTools();
  if (!listed.tools.some((tool) => tool.name === "echo")) {
    throw new Error("bare MCP client: the fake server listed no echo tool");
  }
  return client;
}

function fakeServer(paths: McpBenchPaths): string {
  return `${paths.root}/tests/_fixtures/fake_mcp_server.mjs`;
}

// ---------------------------------------------------------------------------------------------
// The scripted turns

type CallKind = "mcp" | "none" | "bare";
const MCP_TOOL = "mcp__fake__echo";
const MISSING_TOOL = "no_such_tool";
const ANSWER = "Done.";

/** The order of the three sides in round `i` (rotated so each goes first as often). */
function callOrder(i: number): readonly CallKind[] {
  const kinds: CallKind[] = ["mcp", "none", "bare"];
  const shift = i % kinds.length;
  return [...kinds.slice(shift), ...kinds.slice(0, shift)];
}

/**
 * The script of the tool-call session: for each round, in {@link callOrder}, a turn of two
 * steps (one tool call, then the answer) for `mcp` and for `none`.
 */
function callScript(rounds: number): unknown[] {
  const steps: unknown[] = [];
  for (let i = 0; i < rounds; i++) {
    for (const kind of callOrder(i)) {
      if (kind === "bare") continue;
      steps.push({
        toolCalls: [{
          id: `${kind}_${i}`,
          name: kind === "mcp" ? MCP_TOOL : MISSING_TOOL,
          arguments: { text: `ping ${i}` },
        }],
      });
      steps.push({ text: ANSWER });
    }
  }
  return steps;
}

/** One timed turn of ours; throws unless it ended as the script says. */
async function turn(
  agent: McpBenchAgent,
  { sessionId, kind, round }: { sessionId: string; kind: "mcp" | "none"; round: number },
): Promise<number> {
  const callId = `${kind}_${round}`;
  let status: string | undefined;
  agent.onUpdate = (params) => {
    const update = params.update;
    if (params.sessionId !== sessionId || update?.sessionUpdate !== "tool_call_update") return;
    if (update.toolCallId === callId && update.status !== undefined) status = update.status;
  };
  try {
    const sentAt = performance.now();
    const reply = await agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: `round ${round} (${kind})` }],
    });
    const elapsed = reply.at - sentAt;
    const stopReason = (reply.result as { stopReason?: unknown } | null)?.stopReason;
    const expected = kind === "mcp" ? "completed" : "failed";
    if (stopReason !== "end_turn" || status !== expected) {
      throw new Error(
        `${agent.label}: ${kind} turn ${round} ended with stopReason ${
          JSON.stringify(stopReason)
        } and tool call status ${status ?? "none"} (expected end_turn, ${expected})`,
      );
    }
    return elapsed;
  } finally {
    agent.onUpdate = undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// The measurement

/** What {@link measureMcp} runs on. */
export interface McpBenchOptions {
  /** Starts ours with the scripted model. */
  readonly start: StartMcpAgent;
  /** Where things are. */
  readonly paths: McpBenchPaths;
  /** How many runs. */
  readonly counts: McpBenchCounts;
  /** For Node.js: how to start a bundle, and the bundle without MCP. */
  readonly bundles?: { readonly start: StartBundle; readonly withoutMcp: string };
}

/** One runtime's MCP run: its agent and how to declare the fake servers. */
interface McpRun {
  readonly agent: McpBenchAgent;
  readonly paths: McpBenchPaths;
  readonly counts: McpBenchCounts;
  /** The marker in the command line of this run's servers. */
  readonly marker: string;
}

/** A stdio MCP server declaration of the fake server, as `session/new` takes it. */
function declare({ paths, marker }: McpRun, name: string): unknown {
  return { name, command: paths.node, args: [fakeServer(paths), `--marker=${marker}`], env: [] };
}

/** `session/new` with `mcpServers`: resolves with its time and the session id. */
async function newSession(
  { agent, paths }: McpRun,
  mcpServers: readonly unknown[],
): Promise<[number, string]> {
  const sentAt = performance.now();
  const reply = await agent.request("session/new", { cwd: paths.root, mcpServers });
  return [reply.at - sentAt, sessionIdOf(agent, reply.result)];
}

/** `session/close`: resolves with its time. */
async function closeSession({ agent }: McpRun, sessionId: string): Promise<number> {
  const sentAt = performance.now();
  const reply = await agent.request("session/close", { sessionId });
  return reply.at - sentAt;
}

/** `session/new` with three servers, ours against the bare client, and ours without servers. */
async function measureSessionNew(run: McpRun): Promise<McpResult["sessionNew"]> {
  const { counts, paths, marker } = run;
  const three = Array.from({ length: MCP_SERVERS }, (_, i) => declare(run, `fake${i + 1}`));
  const [coldMs, coldId] = await newSession(run, three);
  await closeSession(run, coldId);
  const samples = {
    ours: [] as number[],
    bare: [] as number[],
    none: [] as number[],
    close: [] as number[],
  };
  for (let i = 0; i < counts.sessionNewWarmups + counts.sessionNewRuns; i++) {
    const measured = i >= counts.sessionNewWarmups;
    const sides = i % 2 === 0 ? ["ours", "bare"] as const : ["bare", "ours"] as const;
    for (const side of sides) {
      if (side === "ours") {
        const [ms, id] = await newSession(run, three);
        const closeMs = await closeSession(run, id);
        const [noneMs, noneId] = await newSession(run, []);
        await closeSession(run, noneId);
        if (measured) {
          samples.ours.push(ms);
          samples.close.push(closeMs);
          samples.none.push(noneMs);
        }
      } else {
        const startedAt = performance.now();
        const clients = await Promise.all(
          Array.from({ length: MCP_SERVERS }, () => bareConnect(paths, marker)),
        );
        const ms = performance.now() - startedAt;
        await Promise.all(clients.map((client) => client.close()));
        if (measured) samples.bare.push(ms);
      }
    }
  }
  return {
    ours: summarize(samples.ours),
    bare: summarize(samples.bare),
    coldMs,
    noServers: summarize(samples.none),
    close: summarize(samples.close),
    runs: counts.sessionNewRuns,
  };
}

/** One MCP call in a turn, the same turn without a tool to run, and the bare `tools/call`. */
async function measureCall(run: McpRun): Promise<McpResult["call"]> {
  const { agent, counts, paths, marker } = run;
  const [, sessionId] = await newSession(run, [declare(run, "fake")]);
  const bare = await bareConnect(paths, marker);
  try {
    const calls = { mcp: [] as number[], none: [] as number[], bare: [] as number[] };
    for (let i = 0; i < counts.callWarmups + counts.callRuns; i++) {
      const measured = i >= counts.callWarmups;
      for (const kind of callOrder(i)) {
        let ms: number;
        if (kind === "bare") {
          const sentAt = performance.now();
          const result = await bare.callTool({ name: "echo", arguments: { text: `ping ${i}` } });
          ms = performance.now() - sentAt;
          const content = (result as { content?: Array<{ text?: string }> }).content;
          if (content?.[0]?.text !== `echo: ping ${i}`) {
            throw new Error(`bare MCP client: unexpected echo result ${JSON.stringify(result)}`);
          }
        } else {
          ms = await turn(agent, { sessionId, kind, round: i });
        }
        if (measured) calls[kind].push(ms);
      }
    }
    await closeSession(run, sessionId);
    return {
      mcpTurn: summarize(calls.mcp),
      noToolTurn: summarize(calls.none),
      overhead: summarize(calls.mcp.map((ms, i) => ms - (calls.none[i] ?? Number.NaN))),
      bare: summarize(calls.bare),
      runs: counts.callRuns,
    };
  } finally {
    await bare.close().catch(() => {});
  }
}

/**
 * Runs one runtime's MCP benchmarks on one agent process.
 *
 * @returns The figures
 */
export async function measureMcp(
  { start, paths, counts, bundles }: McpBenchOptions,
): Promise<McpResult> {
  const bundleStartup = bundles === undefined
    ? undefined
    : await measureBundleStartup(bundles.start, bundles.withoutMcp, counts.sessionNewRuns);
  const marker = `acp-bench-mcp-${crypto.randomUUID()}`;
  const scriptFile = `${paths.tmp}/mcp_script.json`;
  await Deno.writeTextFile(
    scriptFile,
    JSON.stringify(callScript(counts.callWarmups + counts.callRuns)),
  );
  const agent = start(scriptFile);
  try {
    await agent.request("initialize", INITIALIZE_PARAMS);
    const run: McpRun = { agent, paths, counts, marker };
    const sessionNew = await measureSessionNew(run);
    const call = await measureCall(run);
    const leftovers = await leftoversAfter(marker, 2_000);
    const eofAt = agent.closeStdin();
    const exitMs = (await agent.waitExit()) - eofAt;
    return {
      sessionNew,
      call,
      ...(bundleStartup === undefined ? {} : { bundleStartup }),
      leftovers,
      exitMs,
    };
  } finally {
    agent.onUpdate = undefined;
    await Deno.remove(scriptFile).catch(() => {});
  }
}

/** Spawn → `initialize` of `dist/cli.js` and of `withoutMcp`, alternating after a warm-up. */
async function measureBundleStartup(
  start: StartBundle,
  withoutMcp: string,
  runs: number,
): Promise<NonNullable<McpResult["bundleStartup"]>> {
  const samples = { withMcp: [] as number[], withoutMcp: [] as number[] };
  for (let i = -1; i < runs; i++) {
    const sides = i % 2 === 0
      ? ["withMcp", "withoutMcp"] as const
      : ["withoutMcp", "withMcp"] as const;
    for (const side of sides) {
      const agent = start(side === "withMcp" ? undefined : withoutMcp);
      const reply = await agent.request("initialize", INITIALIZE_PARAMS);
      agent.closeStdin();
      await agent.waitExit();
      if (i >= 0) samples[side].push(reply.at - agent.spawnedAt);
    }
  }
  return { withMcp: summarize(samples.withMcp), withoutMcp: summarize(samples.withoutMcp), runs };
}

// ---------------------------------------------------------------------------------------------
// Start-up graph

/** Whether the MCP client is loaded at start-up, from the module graphs. */
export interface McpStartupGraph {
  /** Modules `deno run mod.ts` / `bun mod.ts` load at start-up (static closure, see below). */
  readonly sourceModules: number;
  /** Of those, modules of `@modelcontextprotocol/*`. */
  readonly sourceMcpModules: readonly string[];
  /** The lazy `import()`s through which the MCP client is reached (`importer → target`). */
  readonly lazyEdges: readonly string[];
  /** What `node dist/cli.js` reads at start-up: `cli.js` and its static chunks (bytes). */
  readonly bundleBytes: number;
  /** Bytes of those files from `@modelcontextprotocol/*`. */
  readonly bundleMcpBytes: number;
  /** Bytes of those files from `src/mcp/`. */
  readonly bundleSrcMcpBytes: number;
  /** How many files `node dist/cli.js` reads at start-up. */
  readonly bundleFiles: number;
  /** Bytes from `@modelcontextprotocol/*` in chunks loaded only on demand. */
  readonly lazyMcpBytes: number;
  /**
   * The same bundle with `src/mcp/mcp_hub.ts` left out (its `import()` kept as an external
   * import, never run at start-up), written for the start-up comparison.
   */
  readonly withoutMcp: { readonly file: string; readonly bytes: number };
}

/**
 * Reads the start-up module graph of `mod.ts` (`deno info --json`) and bundles `dist/cli.js`
 * again in memory with a metafile.
 *
 * The start-up graph of the sources is the closure of `mod.ts` over static imports plus the
 * `import()`s of `mod.ts` and `src/runtime/main.ts` (the entry and the runtime dispatch, run at
 * every start); every other `import()` is lazy.
 *
 * @param root The repository root
 * @param deno The Deno executable
 * @returns What the graphs say
 */
export async function mcpStartupGraph(root: string, deno: string): Promise<McpStartupGraph> {
  const isMcp = (specifier: string): boolean => specifier.includes("/@modelcontextprotocol/");
  const { startup, lazyEdges } = await sourceStartupGraph(root, deno, isMcp);

  // The build script's own options, with a metafile; the variant leaves the MCP hub out.
  const { outputs, startupFiles, without } = await bundleStartupGraph(root, "mcp", /mcp_hub\.ts$/);
  let bundleMcpBytes = 0;
  let bundleSrcMcpBytes = 0;
  let lazyMcpBytes = 0;
  for (const [file, out] of Object.entries(outputs)) {
    for (const [path, input] of Object.entries(out.inputs)) {
      if (path.includes("node_modules/@modelcontextprotocol/")) {
        if (startupFiles.has(file)) bundleMcpBytes += input.bytesInOutput;
        else lazyMcpBytes += input.bytesInOutput;
      }
      if (path.startsWith("src/mcp/") && startupFiles.has(file)) {
        bundleSrcMcpBytes += input.bytesInOutput;
      }
    }
  }
  const bytesOf = (files: Iterable<string>): number =>
    [...files].reduce((sum, file) => sum + (outputs[file]?.bytes ?? 0), 0);
  return {
    sourceModules: startup.size,
    sourceMcpModules: [...startup].filter(isMcp),
    lazyEdges,
    bundleBytes: bytesOf(startupFiles),
    bundleMcpBytes,
    bundleSrcMcpBytes,
    bundleFiles: startupFiles.size,
    lazyMcpBytes,
    withoutMcp: without,
  };
}

// ---------------------------------------------------------------------------------------------
// Report

/** One runtime's row inputs. */
export interface McpReportRow {
  readonly runtime: string;
  readonly mcp: McpResult | undefined;
  /** The start-up section's spawn → `initialize` medians. */
  readonly startup: { readonly ours: number; readonly bare: number } | undefined;
  /** Whether the MCP phase failed (its error is in the report's Errors). */
  readonly failed: boolean;
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(0)} KiB`;
}

/** The intro and the `session/new` part. */
function renderSessionNew(rows: readonly McpReportRow[], tally: Tally): string {
  const first = rows.find((row) => row.mcp)?.mcp;
  const sessionRows = rows.map(({ runtime, mcp, failed }) => {
    const s = mcp?.sessionNew;
    const ratio = s === undefined ? undefined : s.ours.median / s.bare.median;
    const pass = ratio === undefined ? undefined : ratio <= MCP_TARGETS.sessionNewRatio;
    return [
      runtime,
      fixed(s?.ours.median, 1),
      fixed(s?.bare.median, 1),
      ratioText(ratio),
      `≤ ${MCP_TARGETS.sessionNewRatio}×`,
      tally.verdict(pass, failed),
      `${fixed(s?.ours.min, 1)} – ${fixed(s?.ours.max, 1)}`,
      `${fixed(s?.bare.min, 1)} – ${fixed(s?.bare.max, 1)}`,
      fixed(s?.coldMs, 1),
      fixed(s?.noServers.median, 2),
      fixed(s?.close.median, 1),
    ];
  });
  return [
    "## MCP servers",
    "",
    "Ours is one agent process per runtime, started with `--model scripted --script <file>`; " +
    "every MCP server is `node tests/_fixtures/fake_mcp_server.mjs` (dependency-free, answers " +
    "at once). The bare client is `@modelcontextprotocol/client` in this bench process (Deno) " +
    "with the package's own `StdioClientTransport` from `@modelcontextprotocol/client/stdio`; " +
    "its figure is the same kind of Deno client for every runtime row.",
    "",
    `### \`session/new\` with ${MCP_SERVERS} stdio MCP servers (ms, median of ${
      first?.sessionNew.runs ?? "n/a"
    } after warm-ups)`,
    "",
    table(
      [
        "runtime",
        "ours",
        "bare",
        "ratio",
        "target",
        "result",
        "ours min – max",
        "bare min – max",
        "ours first (cold)",
        "ours without servers",
        "ours session/close",
      ],
      sessionRows,
    ),
    "",
    `Ours: \`session/new\` declaring ${MCP_SERVERS} stdio servers, timed from the request to its ` +
    "response; the server answers once every server has been spawned (in its own process " +
    "group, with the allow-listed environment), has answered `initialize`, `tools/list` and " +
    "(the fake server offers prompts) `prompts/list`, and its tools are in the session's tool " +
    "set. Each session is then closed with `session/close` (untimed here; its median is the " +
    "last column: stdin closed, the server's exit awaited). Bare: " +
    `${MCP_SERVERS} \`Client\`s connected in parallel, each spawning its server, ` +
    "`initialize` and `tools/list`, timed until all three have their list; then closed " +
    "(untimed). Ours and bare alternate. The cold column is the first such `session/new` of " +
    "the process, which also loads the MCP client (`import()` of `src/mcp/mcp_hub.ts`); the " +
    "steady-state rows come after it. Without servers: `session/new` with `mcpServers: []` in " +
    "the same process, the part of ours that is not MCP. Most of both sides is the three " +
    "Node.js processes starting on this machine's cores, so the ratio moves with the load.",
  ].join("\n");
}

/** The tool-call part. */
function renderCall(rows: readonly McpReportRow[], tally: Tally): string {
  const first = rows.find((row) => row.mcp)?.mcp;
  const callRows = rows.map(({ runtime, mcp, failed }) => {
    const c = mcp?.call;
    const limit = c === undefined
      ? undefined
      : MCP_TARGETS.callRatio * c.bare.median + MCP_TARGETS.callSlackMs;
    const pass = c === undefined || limit === undefined ? undefined : c.overhead.median <= limit;
    return [
      runtime,
      fixed(c?.mcpTurn.median, 3),
      fixed(c?.noToolTurn.median, 3),
      fixed(c?.overhead.median, 3),
      fixed(c?.bare.median, 3),
      ratioText(c === undefined ? undefined : c.overhead.median / c.bare.median),
      `≤ ${MCP_TARGETS.callRatio}× bare + ${MCP_TARGETS.callSlackMs} ms (${fixed(limit, 3)})`,
      tally.verdict(pass, failed),
      `${fixed(c?.overhead.min, 3)} – ${fixed(c?.overhead.max, 3)}`,
      `${fixed(c?.bare.min, 3)} – ${fixed(c?.bare.max, 3)}`,
    ];
  });
  return [
    `### One MCP tool call inside a turn (ms, median of ${
      first?.call.runs ?? "n/a"
    } rounds after warm-ups)`,
    "",
    table(
      [
        "runtime",
        "turn with MCP call",
        "same turn, no tool run",
        "MCP call overhead",
        "bare tools/call",
        "overhead / bare",
        "target",
        "result",
        "overhead min – max",
        "bare min – max",
      ],
      callRows,
    ),
    "",
    "One session with one fake server (`fake`), and a script of two-step turns: step 1 calls " +
    'one tool with `{"text": "ping N"}`, step 2 answers `Done.`. The MCP turn calls ' +
    `\`${MCP_TOOL}\` (read-only, so allowed without asking): it must end \`end_turn\` with the ` +
    "call's `tool_call_update` `completed`. The no-tool turn is the same turn calling " +
    `\`${MISSING_TOOL}\`, which does not exist: the same two model steps, the same ` +
    "`tool_call` and final `tool_call_update` (`failed`), a tool result in the history, but " +
    "nothing authorized or run; it must end `failed`. **MCP call overhead** = (turn with the " +
    "MCP call) − (no-tool turn), taken per round and then the median: what running one MCP " +
    "tool adds to a turn (permission check, the `in_progress` update, the `tools/call` over " +
    "stdio to the server process and back, mapping its result). Bare: `client.callTool` of " +
    "`echo` on a connected bare client, timed to its result. Target: overhead ≤ " +
    `${MCP_TARGETS.callRatio} × bare + ${MCP_TARGETS.callSlackMs} ms. Each round runs the ` +
    "three in rotated order; the session's history grows by both turns each round, alike for " +
    "both.",
  ].join("\n");
}

/** The start-up part. */
function renderStartup(rows: readonly McpReportRow[], graph: McpStartupGraph | string): string {
  const startupRows = rows.map(({ runtime, startup, mcp }) => [
    runtime,
    fixed(startup?.ours, 1),
    fixed(startup?.bare, 1),
    ratioText(startup === undefined ? undefined : startup.ours / startup.bare),
    mcp?.bundleStartup === undefined
      ? "n/a"
      : `${fixed(mcp.bundleStartup.withMcp.median, 1)} / ${
        fixed(mcp.bundleStartup.withoutMcp.median, 1)
      } (${ratioText(mcp.bundleStartup.withMcp.median / mcp.bundleStartup.withoutMcp.median)})`,
    typeof graph === "string"
      ? "n/a"
      : runtime === "node"
      ? `start-up reads ${graph.bundleFiles} files, ${kib(graph.bundleBytes)}: ${
        kib(graph.bundleMcpBytes)
      } from @modelcontextprotocol, ${kib(graph.bundleSrcMcpBytes)} from src/mcp; ${
        kib(graph.lazyMcpBytes)
      } of it in on-demand chunks`
      : graph.sourceMcpModules.length === 0
      ? `none (${graph.sourceModules} modules)`
      : `**${graph.sourceMcpModules.length}**: ${graph.sourceMcpModules.join(", ")}`,
    mcp === undefined ? "n/a" : String(mcp.leftovers),
    fixed(mcp?.exitMs, 1),
  ]);
  return [
    "### Start-up without MCP servers",
    "",
    table(
      [
        "runtime",
        "spawn → initialize ours",
        "bare",
        "ratio",
        "dist/cli.js / without MCP",
        "MCP client in the start-up graph",
        "MCP servers left after close",
        "exit after EOF (ms)",
      ],
      startupRows,
    ),
    "",
    "The first three columns repeat the start-up section (same processes, no MCP servers " +
    "declared), spawn → `initialize`, which has no target. Sources (Deno, Bun run `mod.ts`): `deno info --json " +
    "mod.ts`, closure over static imports plus the entry's and the runtime dispatch's " +
    "`import()`s; the other `import()`s are lazy. " +
    (typeof graph === "string"
      ? `The graphs could not be read: ${graph}.`
      : (graph.lazyEdges.length === 0
        ? "No lazy import leads to the MCP client. "
        : `The MCP client is reached only through ${
          graph.lazyEdges.map((edge) => `\`${edge}\``).join(", ")
        }. `) +
        "Node.js runs `dist/cli.js`, an esbuild bundle with code splitting (the build script's " +
        "options with a metafile): start-up reads `cli.js` and the chunks it imports " +
        "statically; the MCP client sits in chunks loaded by the first session with servers. " +
        "The `dist/cli.js / without MCP` column times spawn → `initialize` of that build " +
        "against the same build with `src/mcp/mcp_hub.ts` left " +
        `out (${kib(graph.withoutMcp.bytes)}), alternating, median of ${
          rows.find((row) => row.mcp?.bundleStartup)?.mcp?.bundleStartup?.runs ?? "n/a"
        } after a warm-up. `) +
    "Left after close: processes of this run's servers (found by a marker in their command " +
    "line, zombies excluded) still alive up to 2 s after every session and bare client was " +
    "closed.",
  ].join("\n");
}

/**
 * Renders the MCP section of `bench/RESULTS.md`; its targets are counted in `tally`.
 *
 * @param rows One per runtime
 * @param graph The start-up graphs, or an error message
 * @param tally Counts the section's targets
 * @returns The section's text
 */
export function renderMcpSection(
  rows: readonly McpReportRow[],
  graph: McpStartupGraph | string,
  tally: Tally,
): string {
  return [
    renderSessionNew(rows, tally),
    "",
    renderCall(rows, tally),
    "",
    renderStartup(rows, graph),
  ].join("\n");
}
