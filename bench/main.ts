// deno-lint-ignore-file no-console
/**
 * Benchmarks acp-harness against a bare SDK echo agent (`bench/bare_agent.ts`) on Deno, Node.js
 * and Bun, side by side in one run, from a small NDJSON JSON-RPC client in this Deno process:
 *
 * - start-up: spawn → `initialize` response (median), the first `session/new` on a fresh data
 *   directory, and stdin EOF → process exit (median); then every way of running ours side by
 *   side with the compiled binary (`scripts/compile.ts`, built into `.bench-tmp/bin/` here) and
 *   the bare agent run and compiled the same ways;
 * - `session/new` many times in a row on one server (p50, p99), then stdin EOF → exit with all
 *   those sessions open;
 * - prompt round trip: sequential `session/prompt` calls on one session (p50, p99, prompts/s),
 *   ours durable and with `--store memory:` beside the bare agent;
 * - update throughput: one prompt answered by many `agent_message_chunk` notifications;
 * - peak RSS of the child (VmHWM) just before stdin is closed;
 * - LLM turn: one `session/prompt` whose model (the fake OpenAI-compatible server of
 *   `tests/_helpers/fake_llm_server.ts`, on 127.0.0.1) streams 5,000 text deltas and 20
 *   `read_file` calls, then a short answer; the baseline is a minimal fetch + SSE client in this
 *   process that reads the same two responses.
 * - LLM turn breakdown (`bench/llm_breakdown.ts`): time from the fake server writing a response's
 *   first text delta to the client receiving its `agent_message_chunk` (`--stream`), and the
 *   agent's CPU (`/proc/<pid>/task/<tid>/schedstat`) per streamed delta and per tool call.
 * - durable sessions (`bench/store_bench.ts`): `session/list` first page at 100 and at 10,000
 *   stored sessions, `session/load` of a 10,000-event session (to its response and to its first
 *   replayed update) against reading and parsing its log in this process, and appends per
 *   second of the session store in this process.
 * - MCP servers (`bench/mcp.ts`): `session/new` with three stdio MCP servers against a bare
 *   `@modelcontextprotocol/client` starting them, one MCP tool call inside a turn against the bare
 *   client's `tools/call`, and whether the MCP client is in the start-up module graph.
 * - delegation (`bench/delegation.ts`): a no-op turn delegated to a child of ours on the same
 *   runtime against the same turn run directly, and the child's start-up and exit on their own.
 * - HTTP transport (`bench/http.ts`): ours as `serve --http`: update throughput over SSE and
 *   WebSocket against stdio, many connections streaming turns from the fake model at once
 *   (latency of each delta, peak RSS, wall time), idle memory per connection, and whether the
 *   HTTP code is in the stdio start-up graph.
 *
 * Ours and the bare agent are interleaved so they share the machine's noise. Results go to
 * `bench/RESULTS.md` and stdout. Run `deno task bench` (builds `dist/` first), or
 * `deno run -A bench/main.ts [--quick] [--runtime deno|node|bun]... [--only <phase>,...]`
 * (`--only`: some phases, for working on a section; the report is partial).
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import os from "node:os";
import { build, stop as stopEsbuild } from "../scripts/esbuild.ts";
import { compileBinary, type CompiledBinary } from "../scripts/compile.ts";
import { findBun, findDeno } from "../tests/_helpers/runtime_binaries.ts";
import {
  type FakeLlmServer,
  serializeSseItem,
  type SseResponse,
  startFakeLlmServer,
} from "../tests/_helpers/fake_llm_server.ts";
import { openAiTurn } from "../tests/_helpers/llm_fixtures.ts";
import {
  type AppendMode,
  type AppendResult,
  createStoreFixture,
  type ListResult,
  type LoadResult,
  measureAppends,
  measureSessionList,
  measureSessionLoad,
  STORE_BENCH,
  type StoreFixture,
  timerDelayMs,
} from "./store_bench.ts";
import { SYNC_DELAY_MS } from "../src/store/jsonl_session_store.ts";
import {
  mcpBenchCounts,
  type McpResult,
  type McpStartupGraph,
  mcpStartupGraph,
  measureMcp,
  renderMcpSection,
} from "./mcp.ts";
import {
  delegationBenchCounts,
  type DelegationResult,
  measureDelegation,
  renderDelegationSection,
} from "./delegation.ts";
import {
  httpBenchCounts,
  type HttpBenchHost,
  type HttpResult,
  type HttpStartupGraph,
  httpStartupGraph,
  measureHttp,
  renderHttpSection,
} from "./http.ts";
import { profileStartup, renderStartupProfiles, type StartupProfile } from "./startup_profile.ts";
import {
  BREAKDOWN_FILE,
  type BreakdownCounts,
  breakdownCounts,
  type FirstUpdateResult,
  measureFirstUpdate,
  measureTurnCpu,
  oneWrite,
  renderBreakdownSections,
  type TurnCpuResult,
  type TurnUpdateParams,
} from "./llm_breakdown.ts";
import { type CompactionResult, measureCompaction } from "./compaction.ts";
import { median, percentile } from "./stats.ts";

const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const TMP = `${ROOT}/.bench-tmp`;
const BARE_BUNDLE = `${TMP}/bare_agent.js`;
/** The compiled binaries of ours and of the bare agent (`scripts/compile.ts`), built by `prepare`. */
const OURS_BINARY = `${TMP}/bin/acp-harness`;
const BARE_BINARY = `${TMP}/bin/bare-agent`;
const STREAM_SCRIPT = `${TMP}/stream_script.json`;
const CEILING_FILE = `${TMP}/ceiling.ndjson`;
/** The config file of the LLM-turn agents (rewritten per runtime: the fake server's port). */
const LLM_CONFIG_FILE = `${TMP}/llm_config.json`;
/**
 * `ACP_HARNESS_HOME` (the data directory, where sessions are stored) of our agents, so nothing
 * lands in the real `~/.acp-harness`; emptied before each run. The LLM-turn agents get their own,
 * emptied per runtime.
 */
const AGENT_HOME = `${TMP}/home`;
const LLM_HOME = `${TMP}/llm_home`;
/** Fresh data directories of ours, one per run that needs one (each removed after its run). */
const FRESH_HOMES = `${TMP}/fresh`;
/** The generated data directories of the durable-session benchmarks (removed at the end). */
const STORE_DIR = `${TMP}/store`;
const RESULTS_FILE = `${ROOT}/bench/RESULTS.md`;
const DENO = findDeno(ROOT);
const BUN = findBun(ROOT);
/**
 * Node.js by absolute path. When `node` is not on PATH, Deno puts a `node` link to itself on the
 * PATH it gives this process (and `node:child_process` runs Deno for a bare `node`), which would
 * silently benchmark Deno twice; such links are skipped.
 */
const NODE = await findOnPath("node", await Deno.realPath(Deno.execPath()));

const RUNTIMES = ["deno", "node", "bun"] as const;
type Runtime = typeof RUNTIMES[number];
type Kind = "ours" | "bare";
type Workload = "echo" | "stream" | "llm" | "store";

const TARGETS = {
  startupRatio: 1.1,
  roundTripRatio: 1.3,
  throughputRatio: 0.75,
  exitMs: 100,
  sessionListRatio: 2,
  sessionLoadRatio: 2,
  /** The first `session/new` after `initialize` on a fresh data directory, median (ms). */
  firstSessionNewMs: 2,
  /** Many `session/new` in a row: ours p50 ≤ this × bare p50 … */
  sessionNewRatio: 2,
  /** … plus this many ms. */
  sessionNewSlackMs: 0.5,
  /** Exit after stdin EOF with many open sessions (ms). */
  exitWithSessionsMs: 100,
} as const;

/** The LLM-turn workload: step 1 streams this many text deltas and `read_file` calls. */
const LLM_TURN = { deltas: 5_000, toolCalls: 20 } as const;

/** How much work one run does. */
interface Settings {
  readonly quick: boolean;
  readonly runtimes: readonly Runtime[];
  readonly startupRuns: number;
  readonly warmupPrompts: number;
  readonly prompts: number;
  readonly promptBlock: number;
  readonly chunks: number;
  readonly throughputRuns: number;
  readonly llmTurnWarmups: number;
  readonly llmTurnRuns: number;
  readonly listWarmups: number;
  readonly listRuns: number;
  readonly loadWarmups: number;
  readonly loadRuns: number;
  /** Appends per mode of the in-process append benchmark. */
  readonly appends: Readonly<Record<AppendMode, number>>;
  /** Appends issued together in the `burst` mode. */
  readonly appendBurst: number;
  /** Runs of the many-sessions phase: fresh servers each, sessions opened, then stdin EOF. */
  readonly sessionRuns: number;
  /** `session/new` calls in a row per server and run. */
  readonly sessionsPerRun: number;
  /** Ours and bare alternate in blocks of this many `session/new` calls. */
  readonly sessionBlock: number;
  /** Only these per-runtime phases (`--only`, for working on a section), or all. */
  readonly only: readonly string[] | undefined;
}

/** The per-runtime phases, in the order they run (`--only` names them). */
const PHASE_NAMES = [
  "start-up",
  "round trip",
  "sessions",
  "throughput",
  "LLM turn",
  "LLM breakdown",
  "session/list",
  "session/load",
  "MCP",
  "delegation",
  "HTTP",
  "compaction",
] as const;

/** The phases run once for all runtimes, after the per-runtime ones (`--only` names them too). */
const SHARED_PHASES = ["builds", "appends", "start-up profile"] as const;

/** Whether `--only` lets phase `name` run. */
function selected(name: string): boolean {
  return settings.only === undefined || settings.only.includes(name);
}

const settings = parseSettings(Deno.args);

/**
 * Keeps every request to the fake LLM server (this process's and the agents', which inherit the
 * environment) off any HTTP proxy the shell names: Deno's and Bun's fetch honour `HTTP_PROXY`,
 * and `NO_PROXY` exempts loopback. Set before this process first uses fetch.
 */
for (const name of ["NO_PROXY", "no_proxy"]) {
  const current = Deno.env.get(name);
  Deno.env.set(name, current ? `${current},127.0.0.1,localhost` : "127.0.0.1,localhost");
}

const REQUEST_TIMEOUT_MS = 60_000;
const EXIT_TIMEOUT_MS = 10_000;

// ---------------------------------------------------------------------------------------------
// Command line

function parseSettings(args: readonly string[]): Settings {
  let quick = false;
  const runtimes: Runtime[] = [];
  let only: string[] | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    if (arg === "--quick") {
      quick = true;
    } else if (arg === "--runtime" || arg.startsWith("--runtime=")) {
      const value = arg === "--runtime" ? args[++i] : arg.slice("--runtime=".length);
      for (const name of (value ?? "").split(",")) {
        if (!isRuntime(name)) throw new Error(`--runtime expects deno, node or bun, got "${name}"`);
        if (!runtimes.includes(name)) runtimes.push(name);
      }
    } else if (arg === "--only" || arg.startsWith("--only=")) {
      const value = arg === "--only" ? args[++i] : arg.slice("--only=".length);
      only = [...only ?? [], ...(value ?? "").split(",").filter((name) => name !== "")];
    } else if (arg === "--help" || arg === "-h") {
      console.log(
        "usage: deno run -A bench/main.ts [--quick] [--runtime deno|node|bun]... " +
          "[--only <phase>,...]\n" +
          "  --only runs only the named per-runtime phases (for working on a section; the " +
          "report is partial): " + [...PHASE_NAMES, ...SHARED_PHASES].join(", "),
      );
      Deno.exit(0);
    } else {
      throw new Error(`unknown argument "${arg}"`);
    }
  }
  const phaseNames: readonly string[] = [...PHASE_NAMES, ...SHARED_PHASES];
  for (const name of only ?? []) {
    if (!phaseNames.includes(name)) {
      throw new Error(`--only expects some of ${phaseNames.join(", ")}; got "${name}"`);
    }
  }
  return {
    quick,
    runtimes: runtimes.length > 0 ? runtimes : RUNTIMES,
    startupRuns: quick ? 3 : 15,
    warmupPrompts: quick ? 20 : 4_000,
    prompts: quick ? 200 : 2000,
    promptBlock: quick ? 50 : 100,
    chunks: quick ? 2000 : 20_000,
    throughputRuns: quick ? 1 : 3,
    llmTurnWarmups: quick ? 1 : 3,
    llmTurnRuns: quick ? 3 : 9,
    listWarmups: quick ? 5 : 20,
    listRuns: quick ? 10 : 50,
    loadWarmups: quick ? 1 : 2,
    loadRuns: quick ? 3 : 7,
    appends: quick
      ? { awaited: 100, burst: 2_000, nosync: 2_000 }
      : { awaited: 1_000, burst: 20_000, nosync: 20_000 },
    appendBurst: 100,
    sessionRuns: quick ? 2 : 3,
    sessionsPerRun: quick ? 200 : 1_000,
    sessionBlock: quick ? 50 : 100,
    only,
  };
}

/** The first executable `name` on PATH that is not (a link to) `exclude`. */
async function findOnPath(name: string, exclude: string): Promise<string | undefined> {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    if (dir === "") continue;
    const candidate = `${dir}/${name}`;
    try {
      const info = await Deno.stat(candidate);
      const executable = info.isFile && ((info.mode ?? 0) & 0o111) !== 0;
      if (executable && await Deno.realPath(candidate) !== exclude) return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

function isRuntime(name: string): name is Runtime {
  return (RUNTIMES as readonly string[]).includes(name);
}

// ---------------------------------------------------------------------------------------------
// Child processes and the JSON-RPC client

/** Every child still running, so that they can all be killed whatever happens. */
const liveChildren = new Set<ChildProcess>();

function killAllChildren(): void {
  for (const child of liveChildren) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  liveChildren.clear();
}

/** The part of a `session/update` the bench looks at. */
type SessionUpdateParams = TurnUpdateParams;

interface JsonRpcMessage {
  readonly id?: number | string | null;
  readonly method?: string;
  readonly params?: SessionUpdateParams;
  readonly result?: unknown;
  readonly error?: unknown;
}

interface Pending {
  readonly method: string;
  readonly resolve: (reply: Reply) => void;
  readonly reject: (error: Error) => void;
  readonly timer: ReturnType<typeof setTimeout>;
}

/** A response and when it arrived. */
interface Reply {
  readonly result: unknown;
  readonly at: number;
}

interface CommandLine {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/** One spawned agent and a minimal NDJSON JSON-RPC client for it. */
class AgentProcess {
  readonly label: string;
  readonly child: ChildProcess;
  readonly spawnedAt: number;
  /** Resolves with the `performance.now()` of the exit event. */
  readonly exited: Promise<number>;
  /** `agent_message_chunk` notifications received so far. */
  messageChunks = 0;
  /** Other `session/update` notifications received so far. */
  otherUpdates = 0;
  /** Told about every `session/update` notification, when set. */
  onUpdate: ((params: SessionUpdateParams) => void) | undefined;
  /**
   * Told about every `session/update` notification and when its bytes came off stdout
   * (`performance.now()`), when set.
   */
  onUpdateAt: ((params: SessionUpdateParams, at: number) => void) | undefined;
  #pending = new Map<number, Pending>();
  #nextId = 0;
  #buffer = "";
  #stderrTail = "";
  #exitInfo: string | undefined;

  constructor(label: string, line: CommandLine) {
    this.label = label;
    this.spawnedAt = performance.now();
    this.child = spawn(line.command, [...line.args], {
      cwd: ROOT,
      env: { ...Deno.env.toObject(), ...line.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    liveChildren.add(this.child);
    this.child.stdout?.setEncoding("utf8");
    this.child.stdout?.on("data", (data: string) => this.#onData(data, performance.now()));
    this.child.stderr?.setEncoding("utf8");
    this.child.stderr?.on("data", (data: string) => {
      this.#stderrTail = (this.#stderrTail + data).slice(-2000);
    });
    this.child.stdin?.on("error", () => {});
    this.exited = new Promise<number>((resolve) => {
      const settle = (info: string): void => {
        const at = performance.now();
        liveChildren.delete(this.child);
        this.#exitInfo = info;
        this.#failPending(new Error(`${this.label} exited (${info}) ${this.#stderrSummary()}`));
        resolve(at);
      };
      this.child.once("exit", (code, signal) => settle(`code ${code}, signal ${signal}`));
      this.child.once("error", (error) => settle(`spawn error: ${error.message}`));
    });
  }

  /** The child's process id. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Sends a request; resolves with its result and arrival time, rejects on an error reply. */
  request(method: string, params: unknown, timeoutMs = REQUEST_TIMEOUT_MS): Promise<Reply> {
    if (this.#exitInfo !== undefined) {
      return Promise.reject(new Error(`${this.label} already exited (${this.#exitInfo})`));
    }
    const id = this.#nextId++;
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error(`${this.label}: ${method} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      this.#pending.set(id, { method, resolve, reject, timer });
      this.child.stdin?.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    });
  }

  /** Closes the child's stdin; returns when that happened. */
  closeStdin(): number {
    const at = performance.now();
    this.child.stdin?.end();
    return at;
  }

  /** Waits for the exit, killing the child if it takes longer than `timeoutMs`. */
  async waitExit(timeoutMs = EXIT_TIMEOUT_MS): Promise<number> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const killed = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.child.kill("SIGKILL");
        reject(new Error(`${this.label} did not exit within ${timeoutMs} ms of stdin EOF`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([this.exited, killed]);
    } finally {
      clearTimeout(timer);
    }
  }

  #onData(data: string, at: number): void {
    const text = this.#buffer + data;
    let start = 0;
    let end = text.indexOf("\n");
    while (end !== -1) {
      if (end > start) this.#onLine(text.slice(start, end), at);
      start = end + 1;
      end = text.indexOf("\n", start);
    }
    this.#buffer = text.slice(start);
  }

  #onLine(line: string, at: number): void {
    let message: JsonRpcMessage;
    try {
      message = JSON.parse(line) as JsonRpcMessage;
    } catch {
      return;
    }
    if (message.method !== undefined) {
      if (message.method === "session/update") {
        if (message.params?.update?.sessionUpdate === "agent_message_chunk") this.messageChunks++;
        else this.otherUpdates++;
        if (message.params !== undefined) {
          this.onUpdate?.(message.params);
          this.onUpdateAt?.(message.params, at);
        }
      } else if (message.id !== undefined) {
        this.child.stdin?.write(
          JSON.stringify({
            jsonrpc: "2.0",
            id: message.id,
            error: { code: -32601, message: "Method not found" },
          }) + "\n",
        );
      }
      return;
    }
    if (typeof message.id !== "number") return;
    const pending = this.#pending.get(message.id);
    if (pending === undefined) return;
    this.#pending.delete(message.id);
    clearTimeout(pending.timer);
    if (message.error !== undefined) {
      pending.reject(
        new Error(`${this.label}: ${pending.method} failed: ${JSON.stringify(message.error)}`),
      );
    } else {
      pending.resolve({ result: message.result, at });
    }
  }

  #failPending(error: Error): void {
    for (const pending of this.#pending.values()) {
      clearTimeout(pending.timer);
      pending.reject(error);
    }
    this.#pending.clear();
  }

  #stderrSummary(): string {
    const tail = this.#stderrTail.trim();
    return tail === "" ? "" : `; stderr: ${tail.slice(-500)}`;
  }
}

/**
 * How to run an agent. The `store` workload is ours on the data directory `dataDir`, given with
 * `--data-dir`.
 */
function agentCommand(
  runtime: Runtime,
  kind: Kind,
  workload: Workload,
  dataDir?: string,
): CommandLine {
  const streamArgs = kind !== "ours"
    ? []
    : workload === "stream"
    ? ["--stream", "--model", "scripted", "--script", STREAM_SCRIPT]
    : workload === "llm"
    ? ["--config", LLM_CONFIG_FILE, "--model", "fake/coder", "--mode", "auto"]
    : workload === "store"
    ? ["--data-dir", dataDir ?? AGENT_HOME]
    : [];
  const env: Record<string, string> = kind === "bare"
    ? workload === "stream" ? { BARE_CHUNKS: String(settings.chunks) } : {}
    : workload === "llm"
    ? { FAKE_API_KEY: "sk-bench", ACP_HARNESS_HOME: LLM_HOME }
    : workload === "store"
    ? {}
    : { ACP_HARNESS_HOME: AGENT_HOME };
  switch (runtime) {
    case "deno": {
      const entry = kind === "ours" ? "mod.ts" : "bench/bare_agent.ts";
      return { command: DENO, args: ["run", "-A", entry, ...streamArgs], env };
    }
    case "node": {
      if (NODE === undefined) throw new Error("node is not on PATH");
      const entry = kind === "ours" ? "dist/cli.js" : BARE_BUNDLE;
      return { command: NODE, args: [entry, ...streamArgs], env };
    }
    case "bun": {
      const entry = kind === "ours" ? "mod.ts" : "bench/bare_agent.ts";
      return { command: BUN, args: [entry, ...streamArgs], env };
    }
  }
}

/** Spawns a child with piped stdio, killed with every other child if left running. */
function spawnTracked(line: CommandLine): ChildProcess {
  const child = spawn(line.command, [...line.args], {
    cwd: ROOT,
    env: { ...Deno.env.toObject(), ...line.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  liveChildren.add(child);
  child.once("exit", () => liveChildren.delete(child));
  child.once("error", () => liveChildren.delete(child));
  return child;
}

function startAgent(runtime: Runtime, kind: Kind, workload: Workload): AgentProcess {
  return new AgentProcess(`${kind}/${runtime}`, agentCommand(runtime, kind, workload));
}

let freshHomes = 0;

/** A new, empty data directory under `.bench-tmp/fresh/` (the caller removes it). */
async function freshHome(): Promise<string> {
  const dir = `${FRESH_HOMES}/${freshHomes++}`;
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  await Deno.mkdir(dir, { recursive: true });
  return dir;
}

/** Ours on the echo model with its own fresh data directory; `stop` removes the directory. */
async function startFreshOurs(
  runtime: Runtime,
  extraArgs: readonly string[] = [],
  label = `ours/${runtime}`,
): Promise<{ agent: AgentProcess; home: string }> {
  const home = await freshHome();
  const line = agentCommand(runtime, "ours", "echo");
  const agent = new AgentProcess(label, {
    ...line,
    args: [...line.args, ...extraArgs],
    env: { ...line.env, ACP_HARNESS_HOME: home },
  });
  return { agent, home };
}

/** Removes a data directory of {@link freshHome} once its agent has exited. */
async function removeHome(agent: AgentProcess, home: string): Promise<void> {
  if (agent.child.exitCode === null && agent.child.signalCode === null) {
    agent.child.kill("SIGKILL");
    await agent.exited;
  }
  await Deno.remove(home, { recursive: true }).catch(() => {});
}

const INITIALIZE_PARAMS = {
  protocolVersion: 1,
  clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  clientInfo: { name: "acp-harness-bench", version: "0.0.0" },
};

/**
 * Runs `initialize` and `session/new`; returns the session id, both arrival times and when
 * `session/new` was sent.
 */
async function openSession(
  agent: AgentProcess,
): Promise<{ sessionId: string; initializedAt: number; sessionSentAt: number; sessionAt: number }> {
  const init = await agent.request("initialize", INITIALIZE_PARAMS);
  const sessionSentAt = performance.now();
  const session = await agent.request("session/new", { cwd: ROOT, mcpServers: [] });
  const sessionId = (session.result as { sessionId?: unknown } | null)?.sessionId;
  if (typeof sessionId !== "string") throw new Error(`${agent.label}: session/new had no id`);
  return { sessionId, initializedAt: init.at, sessionSentAt, sessionAt: session.at };
}

function prompt(agent: AgentProcess, sessionId: string, text: string): Promise<Reply> {
  return agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
}

/** Peak resident set size (VmHWM) in MiB, or undefined where /proc is not available. */
async function peakRssMib(pid: number | undefined): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  try {
    const status = await Deno.readTextFile(`/proc/${pid}/status`);
    const match = /^VmHWM:\s+(\d+)\s+kB/m.exec(status);
    return match?.[1] === undefined ? undefined : Number(match[1]) / 1024;
  } catch {
    return undefined;
  }
}

/** Reads peak RSS, closes stdin and times the exit. */
async function finish(
  agent: AgentProcess,
): Promise<{ rssMib: number | undefined; exitMs: number }> {
  const rssMib = await peakRssMib(agent.child.pid);
  const eofAt = agent.closeStdin();
  const exitAt = await agent.waitExit();
  return { rssMib, exitMs: exitAt - eofAt };
}

// ---------------------------------------------------------------------------------------------
// Measurements

interface Pair<T> {
  ours: T;
  bare: T;
}

interface StartupResult {
  initializeMs: Pair<number>;
  sessionNewMs: Pair<number>;
  /** The first `session/new` alone: its request → its response (ours on a fresh data dir). */
  firstSessionNewMs: Pair<number>;
  firstSessionNewMaxMs: Pair<number>;
  exitMs: Pair<number>;
  rssMib: Pair<number | undefined>;
}

/** The round trip's sides: ours durable, ours with `--store memory:`, bare. */
type RoundTripSide = Kind | "memory";

interface RoundTripResult {
  p50Ms: Pair<number>;
  /** Ours with `--store memory:` (no log), interleaved with the others. */
  memory: { p50Ms: number; p99Ms: number; promptsPerSecond: number };
  /** p50 of the first and of the last block, to show drift as the session grows. */
  firstBlockP50Ms: Pair<number>;
  lastBlockP50Ms: Pair<number>;
  p99Ms: Pair<number>;
  promptsPerSecond: Pair<number>;
}

interface ThroughputResult {
  notificationsPerSecond: Pair<number>;
  chunksPerPrompt: Pair<number>;
  rssMib: Pair<number | undefined>;
}

interface LlmTurnResult {
  /** Median time of one turn. */
  ms: Pair<number>;
  minMs: Pair<number>;
  maxMs: Pair<number>;
  /** Measured turns per side (warm-ups not counted). */
  runs: number;
}

/** Many `session/new` in a row on one server, then stdin EOF with those sessions open. */
interface SessionsResult {
  p50Ms: Pair<number>;
  p99Ms: Pair<number>;
  /** Exit after stdin EOF with the sessions open, median over the runs. */
  exitMs: Pair<number>;
  exitMaxMs: Pair<number>;
  runs: number;
}

interface RuntimeResult {
  runtime: Runtime;
  startup?: StartupResult;
  roundTrip?: RoundTripResult;
  sessions?: SessionsResult;
  firstUpdate?: FirstUpdateResult;
  turnCpu?: TurnCpuResult;
  throughput?: ThroughputResult;
  llmTurn?: LlmTurnResult;
  sessionList?: ListResult;
  sessionLoad?: LoadResult;
  mcp?: McpResult;
  delegation?: DelegationResult;
  http?: HttpResult;
  compaction?: CompactionResult;
  /** Exit-after-EOF times of every process of the runtime, for the max column. */
  exitMs: Pair<number[]>;
  errors: string[];
}

function orderFor(iteration: number): readonly Kind[] {
  return iteration % 2 === 0 ? ["ours", "bare"] : ["bare", "ours"];
}

/** One start-up run: spawn → `initialize` → `session/new`, then stdin EOF → exit. */
interface StartupRun {
  initializeMs: number;
  sessionNewMs: number;
  /** `session/new` request → response. */
  firstSessionNewMs: number;
  exitMs: number;
  rssMib?: number;
}

/** One start-up run; ours gets a fresh, empty data directory of its own. */
async function measureStartupOnce(runtime: Runtime, kind: Kind): Promise<StartupRun> {
  if (kind === "bare") return await startupRun(startAgent(runtime, kind, "echo"));
  const { agent, home } = await startFreshOurs(runtime);
  try {
    return await startupRun(agent);
  } finally {
    await removeHome(agent, home);
  }
}

async function startupRun(agent: AgentProcess): Promise<StartupRun> {
  const opened = await openSession(agent);
  const { rssMib, exitMs } = await finish(agent);
  return {
    initializeMs: opened.initializedAt - agent.spawnedAt,
    sessionNewMs: opened.sessionAt - agent.spawnedAt,
    firstSessionNewMs: opened.sessionAt - opened.sessionSentAt,
    exitMs,
    ...(rssMib === undefined ? {} : { rssMib }),
  };
}

async function measureStartup(runtime: Runtime, result: RuntimeResult): Promise<void> {
  for (const kind of orderFor(0)) await measureStartupOnce(runtime, kind); // warm-up
  type Samples = {
    init: number[];
    session: number[];
    first: number[];
    exit: number[];
    rss: number[];
  };
  const samples: Pair<Samples> = {
    ours: { init: [], session: [], first: [], exit: [], rss: [] },
    bare: { init: [], session: [], first: [], exit: [], rss: [] },
  };
  for (let i = 0; i < settings.startupRuns; i++) {
    for (const kind of orderFor(i)) {
      const run = await measureStartupOnce(runtime, kind);
      samples[kind].init.push(run.initializeMs);
      samples[kind].session.push(run.sessionNewMs);
      samples[kind].first.push(run.firstSessionNewMs);
      samples[kind].exit.push(run.exitMs);
      result.exitMs[kind].push(run.exitMs);
      if (run.rssMib !== undefined) samples[kind].rss.push(run.rssMib);
    }
  }
  const rss = (values: number[]): number | undefined =>
    values.length === 0 ? undefined : median(values);
  result.startup = {
    initializeMs: { ours: median(samples.ours.init), bare: median(samples.bare.init) },
    sessionNewMs: { ours: median(samples.ours.session), bare: median(samples.bare.session) },
    firstSessionNewMs: { ours: median(samples.ours.first), bare: median(samples.bare.first) },
    firstSessionNewMaxMs: {
      ours: Math.max(...samples.ours.first),
      bare: Math.max(...samples.bare.first),
    },
    exitMs: { ours: median(samples.ours.exit), bare: median(samples.bare.exit) },
    rssMib: { ours: rss(samples.ours.rss), bare: rss(samples.bare.rss) },
  };
}

/** One way of running an agent in the start-up comparison of builds. */
interface BuildLine {
  /** How the report names it. */
  readonly label: string;
  /**
   * The runtime, `binary`, or a runtime running a bundle (`deno bundle`, `bun bundle`): ours and
   * bare of the same key are compared.
   */
  readonly key: Runtime | "binary" | "deno bundle" | "bun bundle";
  readonly kind: Kind;
  readonly line: CommandLine;
  /** The executable's size, for the compiled binaries. */
  readonly bytes?: number;
}

/** The start-up of one build: medians and range over the runs. */
interface BuildStartup extends BuildLine {
  readonly initializeMs: number;
  readonly minMs: number;
  readonly maxMs: number;
  readonly sessionNewMs: number;
  readonly exitMs: number;
  readonly rssMib: number | undefined;
}

/** The compiled binaries (`prepare` builds them), or why they could not be built. */
let compiled: { ours: CompiledBinary; bare: CompiledBinary } | string = "not built";

/** Ours run every way (the compiled binary first), then the bare agent the same ways. */
function buildLines(): BuildLine[] {
  const lines: BuildLine[] = [];
  const ours = agentCommand("deno", "ours", "echo").env;
  if (typeof compiled !== "string") {
    const { path, bytes } = compiled.ours;
    lines.push({
      label: "compiled binary (`scripts/compile.ts`)",
      key: "binary",
      kind: "ours",
      line: { command: path, args: [], env: ours },
      bytes,
    });
  }
  const each = (kind: Kind, labels: Readonly<Record<Runtime, string>>): void => {
    for (const runtime of settings.runtimes) {
      if (runtime === "node" && NODE === undefined) continue;
      const line = agentCommand(runtime, kind, "echo");
      lines.push({ label: labels[runtime], key: runtime, kind, line });
    }
  };
  each("ours", { deno: "`deno run -A mod.ts`", node: "`node dist/cli.js`", bun: "`bun mod.ts`" });
  // The bundles on Deno and Bun, against the bare agent's bundle run the same way.
  const bundles = (kind: Kind, entry: string, label: (runtime: string) => string): void => {
    const env = kind === "ours" ? ours : {};
    if (settings.runtimes.includes("deno")) {
      lines.push({
        label: label("deno run -A"),
        key: "deno bundle",
        kind,
        line: { command: DENO, args: ["run", "-A", entry], env },
      });
    }
    if (settings.runtimes.includes("bun")) {
      lines.push({
        label: label("bun"),
        key: "bun bundle",
        kind,
        line: { command: BUN, args: [entry], env },
      });
    }
  };
  bundles("ours", "dist/cli.js", (run) => `\`${run} dist/cli.js\``);
  if (typeof compiled !== "string") {
    const { path, bytes } = compiled.bare;
    lines.push({
      label: "bare: compiled binary",
      key: "binary",
      kind: "bare",
      line: { command: path, args: [], env: {} },
      bytes,
    });
  }
  each("bare", {
    deno: "bare: `deno run -A bare_agent.ts`",
    node: "bare: `node` bundle",
    bun: "bare: `bun bare_agent.ts`",
  });
  bundles("bare", BARE_BUNDLE, (run) => `bare: \`${run}\` bundle`);
  return lines;
}

/**
 * The start-up of every build side by side: the builds take turns run by run (the order rotating
 * each run), so they share the machine's noise.
 */
async function measureBuildStartup(): Promise<BuildStartup[]> {
  const lines = buildLines();
  for (const build of lines) await startupRun(new AgentProcess(build.label, build.line)); // warm-up
  const runs: StartupRun[][] = lines.map(() => []);
  for (let i = 0; i < settings.startupRuns; i++) {
    for (let j = 0; j < lines.length; j++) {
      const index = (i + j) % lines.length;
      const build = lines[index] as BuildLine;
      runs[index]?.push(await startupRun(new AgentProcess(build.label, build.line)));
    }
  }
  return lines.map((build, index) => {
    const samples = runs[index] ?? [];
    const init = samples.map((run) => run.initializeMs);
    const rss = samples.flatMap((run) => run.rssMib === undefined ? [] : [run.rssMib]);
    return {
      ...build,
      initializeMs: median(init),
      minMs: Math.min(...init),
      maxMs: Math.max(...init),
      sessionNewMs: median(samples.map((run) => run.sessionNewMs)),
      exitMs: median(samples.map((run) => run.exitMs)),
      rssMib: rss.length === 0 ? undefined : median(rss),
    };
  });
}

/** The order of the round trip's three sides in block `block` (rotating). */
function roundTripOrder(block: number): readonly RoundTripSide[] {
  const sides: readonly RoundTripSide[] = ["ours", "memory", "bare"];
  return sides.map((_, i) => sides[(i + block) % sides.length] as RoundTripSide);
}

/**
 * Sequential prompts on one session of each side: ours (durable, on a fresh data directory),
 * ours with `--store memory:` and bare, in blocks whose order rotates.
 */
async function measureRoundTrip(runtime: Runtime, result: RuntimeResult): Promise<void> {
  const durable = await startFreshOurs(runtime);
  const agents: Record<RoundTripSide, AgentProcess> = {
    ours: durable.agent,
    memory: new AgentProcess(`ours-memory/${runtime}`, {
      ...agentCommand(runtime, "ours", "echo"),
      args: [...agentCommand(runtime, "ours", "echo").args, "--store", "memory:"],
    }),
    bare: startAgent(runtime, "bare", "echo"),
  };
  try {
    const sessions: Record<RoundTripSide, string> = {
      ours: (await openSession(agents.ours)).sessionId,
      memory: (await openSession(agents.memory)).sessionId,
      bare: (await openSession(agents.bare)).sessionId,
    };
    for (const side of roundTripOrder(0)) {
      for (let i = 0; i < settings.warmupPrompts; i++) {
        await prompt(agents[side], sessions[side], `warm-up ${i}`);
      }
    }
    const latencies: Record<RoundTripSide, number[]> = { ours: [], memory: [], bare: [] };
    const busyMs: Record<RoundTripSide, number> = { ours: 0, memory: 0, bare: 0 };
    const blocks = Math.ceil(settings.prompts / settings.promptBlock);
    for (let block = 0; block < blocks; block++) {
      const size = Math.min(settings.promptBlock, settings.prompts - block * settings.promptBlock);
      for (const side of roundTripOrder(block)) {
        const blockStart = performance.now();
        for (let i = 0; i < size; i++) {
          const sentAt = performance.now();
          const reply = await prompt(agents[side], sessions[side], `ping ${block}.${i}`);
          latencies[side].push(reply.at - sentAt);
        }
        busyMs[side] += performance.now() - blockStart;
      }
    }
    for (const kind of ["ours", "bare"] as const) {
      result.exitMs[kind].push((await finish(agents[kind])).exitMs);
    }
    await finish(agents.memory);
    const rate = (side: RoundTripSide): number => latencies[side].length / (busyMs[side] / 1000);
    result.roundTrip = {
      p50Ms: { ours: percentile(latencies.ours, 0.5), bare: percentile(latencies.bare, 0.5) },
      p99Ms: { ours: percentile(latencies.ours, 0.99), bare: percentile(latencies.bare, 0.99) },
      memory: {
        p50Ms: percentile(latencies.memory, 0.5),
        p99Ms: percentile(latencies.memory, 0.99),
        promptsPerSecond: rate("memory"),
      },
      firstBlockP50Ms: {
        ours: percentile(latencies.ours.slice(0, settings.promptBlock), 0.5),
        bare: percentile(latencies.bare.slice(0, settings.promptBlock), 0.5),
      },
      lastBlockP50Ms: {
        ours: percentile(latencies.ours.slice(-settings.promptBlock), 0.5),
        bare: percentile(latencies.bare.slice(-settings.promptBlock), 0.5),
      },
      promptsPerSecond: { ours: rate("ours"), bare: rate("bare") },
    };
  } finally {
    await removeHome(durable.agent, durable.home);
  }
}

/**
 * `session/new` many times in a row on one server of ours (a fresh data directory) and one bare,
 * alternating in blocks; then stdin EOF with all those sessions open, timed to the exit. Repeated
 * on fresh servers; latencies are pooled over the runs.
 */
async function measureSessions(runtime: Runtime, result: RuntimeResult): Promise<void> {
  const latencies: Pair<number[]> = { ours: [], bare: [] };
  const exits: Pair<number[]> = { ours: [], bare: [] };
  for (let run = 0; run < settings.sessionRuns; run++) {
    const fresh = await startFreshOurs(runtime);
    const agents: Pair<AgentProcess> = {
      ours: fresh.agent,
      bare: startAgent(runtime, "bare", "echo"),
    };
    try {
      for (const kind of orderFor(run)) await agents[kind].request("initialize", INITIALIZE_PARAMS);
      const blocks = Math.ceil(settings.sessionsPerRun / settings.sessionBlock);
      for (let block = 0; block < blocks; block++) {
        const size = Math.min(
          settings.sessionBlock,
          settings.sessionsPerRun - block * settings.sessionBlock,
        );
        for (const kind of orderFor(run + block)) {
          for (let i = 0; i < size; i++) {
            const sentAt = performance.now();
            const reply = await agents[kind].request("session/new", { cwd: ROOT, mcpServers: [] });
            const sessionId = (reply.result as { sessionId?: unknown } | null)?.sessionId;
            if (typeof sessionId !== "string") {
              throw new Error(`${agents[kind].label}: session/new had no id`);
            }
            latencies[kind].push(reply.at - sentAt);
          }
        }
      }
      for (const kind of orderFor(run)) {
        const eofAt = agents[kind].closeStdin();
        const exitMs = await agents[kind].waitExit() - eofAt;
        exits[kind].push(exitMs);
      }
    } finally {
      await removeHome(fresh.agent, fresh.home);
    }
  }
  result.sessions = {
    p50Ms: { ours: percentile(latencies.ours, 0.5), bare: percentile(latencies.bare, 0.5) },
    p99Ms: { ours: percentile(latencies.ours, 0.99), bare: percentile(latencies.bare, 0.99) },
    exitMs: { ours: median(exits.ours), bare: median(exits.bare) },
    exitMaxMs: { ours: Math.max(...exits.ours), bare: Math.max(...exits.bare) },
    runs: settings.sessionRuns,
  };
}

async function measureThroughput(runtime: Runtime, result: RuntimeResult): Promise<void> {
  const agents: Pair<AgentProcess> = {
    ours: startAgent(runtime, "ours", "stream"),
    bare: startAgent(runtime, "bare", "stream"),
  };
  const sessions: Pair<string> = {
    ours: (await openSession(agents.ours)).sessionId,
    bare: (await openSession(agents.bare)).sessionId,
  };
  const rates: Pair<number[]> = { ours: [], bare: [] };
  const counts: Pair<number[]> = { ours: [], bare: [] };
  // Run 0 is a warm-up; the script has one step per run.
  for (let run = 0; run <= settings.throughputRuns; run++) {
    for (const kind of orderFor(run)) {
      const agent = agents[kind];
      agent.messageChunks = 0;
      const sentAt = performance.now();
      const reply = await prompt(agent, sessions[kind], `stream ${run}`);
      if (run === 0) continue;
      rates[kind].push(agent.messageChunks / ((reply.at - sentAt) / 1000));
      counts[kind].push(agent.messageChunks);
    }
  }
  const ours = await finish(agents.ours);
  const bare = await finish(agents.bare);
  result.exitMs.ours.push(ours.exitMs);
  result.exitMs.bare.push(bare.exitMs);
  result.throughput = {
    notificationsPerSecond: { ours: median(rates.ours), bare: median(rates.bare) },
    chunksPerPrompt: { ours: Math.min(...counts.ours), bare: Math.min(...counts.bare) },
    rssMib: { ours: ours.rssMib, bare: bare.rssMib },
  };
}

// ---------------------------------------------------------------------------------------------
// LLM turn against the fake OpenAI-compatible server

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

function sseBytes(response: SseResponse): number {
  return new TextEncoder().encode(response.items.map(serializeSseItem).join("")).length;
}

/**
 * One turn of ours: a fresh session, the two responses queued, then `session/prompt` timed to
 * its response. Throws unless the turn ended with `end_turn`, every tool call completed and the
 * fake server saw exactly the two model requests.
 */
async function llmTurnOurs(
  agent: AgentProcess,
  server: FakeLlmServer,
  workspace: string,
): Promise<number> {
  const session = await agent.request("session/new", { cwd: workspace, mcpServers: [] });
  const sessionId = (session.result as { sessionId?: unknown } | null)?.sessionId;
  if (typeof sessionId !== "string") throw new Error(`${agent.label}: session/new had no id`);
  const completed = new Set<string>();
  const statuses = new Map<string, number>();
  agent.onUpdate = (params) => {
    const update = params.update;
    if (params.sessionId !== sessionId || update?.sessionUpdate !== "tool_call_update") return;
    const status = update.status ?? "none";
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    if (status === "completed" && update.toolCallId !== undefined) {
      completed.add(update.toolCallId);
    }
  };
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
  readonly text: string;
  readonly calls: readonly BareToolCall[];
  readonly finishReason: string | undefined;
  readonly done: boolean;
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
  const calls: BareToolCall[] = [];
  let text = "";
  let finishReason: string | undefined;
  let done = false;
  let buffer = "";
  for (;;) {
    const next = await reader.read();
    buffer += next.done ? decoder.decode() : decoder.decode(next.value, { stream: true });
    let start = 0;
    for (let end = buffer.indexOf("\n"); end !== -1; end = buffer.indexOf("\n", start)) {
      const line = buffer.slice(start, end);
      start = end + 1;
      if (!line.startsWith("data:")) continue;
      const data = line.slice(line.startsWith("data: ") ? 6 : 5);
      if (data === "[DONE]") {
        done = true;
        continue;
      }
      const chunk = JSON.parse(data) as OpenAiChunk;
      for (const choice of chunk.choices ?? []) {
        const delta = choice.delta;
        if (typeof delta?.content === "string") text += delta.content;
        for (const fragment of delta?.tool_calls ?? []) {
          const call = calls[fragment.index] ??= { id: "", name: "", arguments: "" };
          if (fragment.id) call.id = fragment.id;
          if (fragment.function?.name) call.name = fragment.function.name;
          if (fragment.function?.arguments) call.arguments += fragment.function.arguments;
        }
        if (choice.finish_reason) finishReason = choice.finish_reason;
      }
    }
    buffer = buffer.slice(start);
    if (next.done) break;
  }
  return { text, calls, finishReason, done };
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
async function withFakeModel(
  body: (server: FakeLlmServer, workspace: string) => Promise<void>,
): Promise<void> {
  const server = await startFakeLlmServer();
  const workspace = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "acp-harness-bench-llm-" }),
  );
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
    await body(server, workspace);
  } finally {
    killAllChildren();
    await server.close();
    await Deno.remove(workspace, { recursive: true });
  }
}

/** Ours on the fake model (`--stream` when `stream`), initialized. */
async function startLlmAgent(runtime: Runtime, stream: boolean): Promise<AgentProcess> {
  const line = agentCommand(runtime, "ours", "llm");
  const agent = new AgentProcess(`ours${stream ? "-stream" : ""}/${runtime}`, {
    ...line,
    args: [...line.args, ...(stream ? ["--stream"] : [])],
  });
  await agent.request("initialize", INITIALIZE_PARAMS);
  return agent;
}

async function measureLlmTurn(runtime: Runtime, result: RuntimeResult): Promise<void> {
  await withFakeModel(async (server, workspace) => {
    const agent = await startLlmAgent(runtime, false);
    const sides: Pair<() => Promise<number>> = {
      ours: () => llmTurnOurs(agent, server, workspace),
      bare: () => llmTurnBare(server),
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

function breakdown(): BreakdownCounts {
  return breakdownCounts(settings.quick);
}

/**
 * Time to first update on ours with `--stream`, then the turn's CPU per delta and per tool call
 * on that agent and a committed-step one (`bench/llm_breakdown.ts`).
 */
async function measureLlmBreakdown(runtime: Runtime, result: RuntimeResult): Promise<void> {
  await withFakeModel(async (server, workspace) => {
    const streamed = await startLlmAgent(runtime, true);
    result.firstUpdate = await measureFirstUpdate(streamed, server, workspace, breakdown());
    const committed = await startLlmAgent(runtime, false);
    result.turnCpu = await measureTurnCpu({ streamed, committed }, server, workspace, breakdown());
    result.exitMs.ours.push((await finish(streamed)).exitMs, (await finish(committed)).exitMs);
  });
}

// ---------------------------------------------------------------------------------------------
// Durable sessions (bench/store_bench.ts)

let storeFixture: Promise<StoreFixture> | undefined;

/** The generated data directories: written on first use, shared by every runtime. */
function storeData(): Promise<StoreFixture> {
  storeFixture ??= createStoreFixture(STORE_DIR).then((fixture) => {
    console.error(`[bench] wrote and checked the session data in ${fixture.seconds.toFixed(1)} s`);
    return fixture;
  });
  return storeFixture;
}

/** Starts ours on a data directory (killed with every other child if left running). */
function storeServer(runtime: Runtime): (dataDir: string) => AgentProcess {
  return (dataDir) =>
    new AgentProcess(`ours/${runtime}`, agentCommand(runtime, "ours", "store", dataDir));
}

async function measureSessionListPhase(runtime: Runtime, result: RuntimeResult): Promise<void> {
  result.sessionList = await measureSessionList(storeServer(runtime), await storeData(), {
    warmups: settings.listWarmups,
    runs: settings.listRuns,
  });
  result.exitMs.ours.push(...result.sessionList.exitMs);
}

async function measureSessionLoadPhase(runtime: Runtime, result: RuntimeResult): Promise<void> {
  result.sessionLoad = await measureSessionLoad(storeServer(runtime), await storeData(), {
    warmups: settings.loadWarmups,
    runs: settings.loadRuns,
  });
  result.exitMs.ours.push(result.sessionLoad.exitMs);
}

// ---------------------------------------------------------------------------------------------
// MCP servers (bench/mcp.ts)

const MCP_PHASE = "MCP";

/** The start-up graphs (read in `main` before the runtimes run), or why they could not be. */
let mcpGraph: McpStartupGraph | string = "not read";

async function measureMcpPhase(runtime: Runtime, result: RuntimeResult): Promise<void> {
  if (NODE === undefined) throw new Error("node is not on PATH (it runs the MCP servers)");
  const start = (script: string): AgentProcess => {
    const line = agentCommand(runtime, "ours", "echo");
    return new AgentProcess(`ours/${runtime}`, {
      ...line,
      args: [...line.args, "--model", "scripted", "--script", script],
    });
  };
  const node = NODE;
  const bundles = runtime !== "node" || typeof mcpGraph === "string" ? undefined : {
    start: (bundle: string | undefined): AgentProcess => {
      const line = agentCommand(runtime, "ours", "echo");
      return new AgentProcess(`ours/${runtime}`, { ...line, args: [bundle ?? "dist/cli.js"] });
    },
    withoutMcp: mcpGraph.withoutMcp.file,
  };
  result.mcp = await measureMcp(
    start,
    { root: ROOT, tmp: TMP, node },
    mcpBenchCounts(settings.quick),
    bundles,
  );
  result.exitMs.ours.push(result.mcp.exitMs);
}

// ---------------------------------------------------------------------------------------------
// Compaction (bench/compaction.ts)

const COMPACTION_PHASE = "compaction";

async function measureCompactionPhase(runtime: Runtime, result: RuntimeResult): Promise<void> {
  const dir = await freshHome();
  try {
    result.compaction = await measureCompaction(
      (args, home) => {
        const line = agentCommand(runtime, "ours", "echo");
        return new AgentProcess(`ours/${runtime}`, {
          ...line,
          args: [...line.args, ...args],
          env: { ...line.env, ACP_HARNESS_HOME: home },
        });
      },
      dir,
      settings.quick ? 50 : 200,
    );
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

function renderCompactionSection(results: readonly RuntimeResult[]): string {
  const rows = results.map(({ runtime, compaction: c }) => [
    runtime,
    thousands(c?.turns),
    fixed(c?.compactMs, 1),
    fixed(c?.promptMs, 2),
    c === undefined ? "–" : `${thousands(c.messagesBefore)} → ${thousands(c.messagesAfter)}`,
    c === undefined ? "–" : `${thousands(c.tokensBefore)} → ${thousands(c.tokensAfter)}`,
    c === undefined ? "–" : `${fixed(c.logBytes / 1_048_576, 1)} MiB`,
  ]);
  return [
    "## Compaction of a long session (no target)",
    "",
    table(
      [
        "runtime",
        "turns",
        "`/compact` ms",
        "prompt ms (same history)",
        "messages before → after",
        "est. tokens before → after",
        "log size",
      ],
      rows,
    ),
    "",
    "A scripted session of that many turns (each reads a 4 KB file, then answers), then " +
    "`/compact` from a client that takes compaction updates. The summary is scripted, so the " +
    "`/compact` time is the server's own work (the transcript of the older history, the token " +
    "estimates, the record, the updates) besides one model round trip; the prompt column is the " +
    "median of ordinary prompts just after, for scale. The model's window is 2,000 tokens a " +
    "turn (the session just fits, so it does not compact by itself); the recent steps that fit " +
    "a fifth of it stay verbatim.",
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------
// Delegation (bench/delegation.ts)

const DELEGATION_PHASE = "delegation";

async function measureDelegationPhase(runtime: Runtime, result: RuntimeResult): Promise<void> {
  const home = await freshHome();
  try {
    const line = agentCommand(runtime, "ours", "echo");
    const env = { ...line.env, ACP_HARNESS_HOME: home };
    result.delegation = await measureDelegation(
      (extraArgs) =>
        new AgentProcess(`ours/${runtime}`, { ...line, args: [...line.args, ...extraArgs], env }),
      { command: line.command, args: line.args, env },
      { root: ROOT, tmp: TMP },
      delegationBenchCounts(settings.quick),
    );
  } finally {
    await Deno.remove(home, { recursive: true }).catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP transport (bench/http.ts)

const HTTP_PHASE = "HTTP";

/** The start-up graphs of the HTTP code (read in `main`), or why they could not be. */
let httpGraph: HttpStartupGraph | string = "not read";

function httpCounts(): ReturnType<typeof httpBenchCounts> {
  return httpBenchCounts(settings.quick, settings.chunks);
}

async function measureHttpPhase(runtime: Runtime, result: RuntimeResult): Promise<void> {
  const host: HttpBenchHost = {
    root: ROOT,
    tmp: TMP,
    ours: (args, env = {}) => {
      const line = agentCommand(runtime, "ours", "echo");
      return { ...line, args: [...line.args, ...args], env: { ...line.env, ...env } };
    },
    spawn: spawnTracked,
  };
  const bundles = runtime !== "node" || typeof httpGraph === "string" ? undefined : {
    start: (bundle: string | undefined): CommandLine => {
      const line = agentCommand(runtime, "ours", "echo");
      return { ...line, args: [bundle ?? "dist/cli.js"] };
    },
    withoutHttp: httpGraph.withoutHttp.file,
  };
  result.http = await measureHttp(host, httpCounts(), bundles);
  result.exitMs.ours.push(result.http.stdioExitMs);
}

/** The in-process appends, each mode on a fresh store. */
interface AppendsOutcome {
  readonly results: readonly AppendResult[];
  readonly errors: readonly string[];
  /** What a `setTimeout(SYNC_DELAY_MS)` really takes in this process (ms). */
  readonly timerMs?: number;
}

/** The start-up module profile of every runtime measured (`bench/startup_profile.ts`). */
async function profileStartups(): Promise<StartupProfile[]> {
  const profiles: StartupProfile[] = [];
  const commands: Record<Runtime, string | undefined> = { deno: DENO, node: NODE, bun: BUN };
  for (const runtime of settings.runtimes) {
    const command = commands[runtime];
    if (command === undefined) continue;
    console.log(`[bench] start-up profile: ${runtime}`);
    profiles.push(
      await profileStartup({
        root: ROOT,
        runtime,
        command,
        deno: DENO,
        runs: settings.quick ? 3 : 7,
      }),
    );
  }
  return profiles;
}

async function measureAllAppends(): Promise<AppendsOutcome> {
  const results: AppendResult[] = [];
  const errors: string[] = [];
  for (const mode of ["awaited", "burst", "nosync"] as const) {
    const started = performance.now();
    console.error(`[bench] appends (${mode}, in-process)…`);
    try {
      await Deno.mkdir(STORE_DIR, { recursive: true });
      results.push(
        await measureAppends(STORE_DIR, mode, {
          appends: settings.appends[mode],
          burst: settings.appendBurst,
        }),
      );
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      errors.push(`appends (${mode}): ${message}`);
      console.error(`[bench] appends (${mode}) failed: ${message}`);
    }
    console.error(
      `[bench] appends (${mode}) took ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }
  const timerMs = await timerDelayMs(SYNC_DELAY_MS, settings.quick ? 20 : 200);
  return { results, errors, timerMs };
}

/**
 * How fast this client alone takes in notifications: `cat` of a ready-made NDJSON file.
 *
 * @returns Notifications per second, or undefined when `cat` cannot run
 */
async function measureClientCeiling(): Promise<number | undefined> {
  const rates: number[] = [];
  try {
    for (let run = 0; run < 3; run++) {
      const agent = new AgentProcess("cat", { command: "cat", args: [CEILING_FILE], env: {} });
      const { at } = await agent.request("session/prompt", {});
      rates.push(agent.messageChunks / ((at - agent.spawnedAt) / 1000));
      await agent.waitExit();
    }
  } catch (error) {
    console.error(`[bench] client ceiling not measured: ${(error as Error).message}`);
    return undefined;
  } finally {
    killAllChildren();
  }
  return median(rates);
}

// ---------------------------------------------------------------------------------------------
// Preparation

async function newestMtime(path: string): Promise<number> {
  const info = await Deno.stat(path);
  if (!info.isDirectory) return info.mtime?.getTime() ?? 0;
  let newest = 0;
  for await (const entry of Deno.readDir(path)) {
    newest = Math.max(newest, await newestMtime(`${path}/${entry.name}`));
  }
  return newest;
}

async function prepare(): Promise<string[]> {
  const warnings: string[] = [];
  let distMtime: number;
  try {
    distMtime = await newestMtime(`${ROOT}/dist/cli.js`);
  } catch {
    throw new Error("dist/cli.js is missing: run `deno task build` (or `deno task bench`)");
  }
  const sourceMtime = Math.max(
    await newestMtime(`${ROOT}/src`),
    await newestMtime(`${ROOT}/mod.ts`),
  );
  if (sourceMtime > distMtime) {
    warnings.push("dist/cli.js is older than src/: the Node figures may not match the sources");
  }
  await Deno.mkdir(TMP, { recursive: true });
  await Deno.remove(AGENT_HOME, { recursive: true }).catch(() => {});
  await Deno.mkdir(AGENT_HOME, { recursive: true });
  try {
    await build({
      entryPoints: [`${ROOT}/bench/bare_agent.ts`],
      bundle: true,
      minify: true,
      format: "esm",
      platform: "node",
      target: "node20",
      outfile: BARE_BUNDLE,
      legalComments: "none",
      logLevel: "warning",
    });
  } finally {
    await stopEsbuild();
  }
  try {
    if (!selected("builds")) throw new Error("not built: --only leaves out the builds");
    compiled = {
      ours: await compileBinary({ outfile: OURS_BINARY }),
      bare: await compileBinary({ outfile: BARE_BINARY, entry: "bench/bare_agent.ts" }),
    };
  } catch (error) {
    compiled = error instanceof Error ? error.message : String(error);
    warnings.push(`the compiled binaries could not be built: ${compiled.split("\n")[0]}`);
  }
  const words = Array.from({ length: settings.chunks }, (_, i) => `w${i} `);
  const steps = Array.from({ length: settings.throughputRuns + 1 }, () => ({ text: words }));
  await Deno.writeTextFile(STREAM_SCRIPT, JSON.stringify(steps));
  const notification = (i: number): string =>
    JSON.stringify({
      jsonrpc: "2.0",
      method: "session/update",
      params: {
        sessionId: crypto.randomUUID(),
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `w${i} ` } },
      },
    });
  const lines = Array.from({ length: settings.chunks }, (_, i) => notification(i));
  lines.push(JSON.stringify({ jsonrpc: "2.0", id: 0, result: { stopReason: "end_turn" } }));
  await Deno.writeTextFile(CEILING_FILE, lines.join("\n") + "\n");
  return warnings;
}

/** Runs a short command to completion; resolves with its exit code and stdout. */
async function runCommand(
  command: string,
  args: readonly string[],
): Promise<{ code: number | null; stdout: string }> {
  const child = spawn(command, [...args], { cwd: ROOT, stdio: ["ignore", "pipe", "ignore"] });
  liveChildren.add(child);
  let stdout = "";
  child.stdout?.setEncoding("utf8");
  child.stdout?.on("data", (data: string) => stdout += data);
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once("close", (exitCode: number | null) => resolve(exitCode));
      child.once("error", reject);
    });
    return { code, stdout };
  } finally {
    liveChildren.delete(child);
  }
}

/** The first line a `--version` run prints. */
async function versionOf(command: string | undefined): Promise<string> {
  if (command === undefined) return "not found";
  try {
    const { stdout } = await runCommand(command, ["--version"]);
    return stdout.trim().split("\n")[0] ?? "unknown";
  } catch {
    return "unavailable";
  }
}

// ---------------------------------------------------------------------------------------------
// Report

interface Machine {
  readonly date: string;
  readonly nproc: number;
  readonly cpu: string;
  readonly memoryGib: number;
  readonly kernel: string;
  readonly node: string;
  readonly deno: string;
  readonly bun: string;
  readonly clientCeiling: number | undefined;
  /** The 1-minute load average when the run started and when it ended. */
  readonly load: readonly [number, number];
}

function fixed(value: number | undefined, digits: number): string {
  return value === undefined || Number.isNaN(value) ? "n/a" : value.toFixed(digits);
}

function thousands(value: number | undefined): string {
  return value === undefined || Number.isNaN(value)
    ? "n/a"
    : Math.round(value).toLocaleString("en-US");
}

function ratioOf(ours: number | undefined, bare: number | undefined): number | undefined {
  return ours === undefined || bare === undefined || bare === 0 ? undefined : ours / bare;
}

function ratioText(ratio: number | undefined): string {
  return ratio === undefined || Number.isNaN(ratio) ? "n/a" : `${ratio.toFixed(2)}×`;
}

function verdict(pass: boolean | undefined): string {
  return pass === undefined ? "n/a" : pass ? "pass" : "**FAIL**";
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

interface Verdicts {
  passed: number;
  failed: number;
}

function count(verdicts: Verdicts, pass: boolean | undefined): boolean | undefined {
  if (pass === true) verdicts.passed++;
  if (pass === false) verdicts.failed++;
  return pass;
}

function mib(bytes: number | undefined): string {
  return bytes === undefined ? "" : `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}

/** The start-up comparison of builds: its table and what it shows. */
function renderBuildSection(builds: readonly BuildStartup[] | string): string {
  const heading = "## Start-up by build: spawn → `initialize` response (ms, median of " +
    `${settings.startupRuns} after a warm-up; no target)`;
  if (typeof builds === "string") return [heading, "", `Not measured: ${builds}`].join("\n");
  const rows = builds.map((build) => {
    const bare = builds.find((other) => other.kind === "bare" && other.key === build.key);
    return [
      build.label,
      fixed(build.initializeMs, 1),
      build.kind === "ours" ? ratioText(ratioOf(build.initializeMs, bare?.initializeMs)) : "",
      `${fixed(build.minMs, 1)} – ${fixed(build.maxMs, 1)}`,
      fixed(build.sessionNewMs, 1),
      fixed(build.exitMs, 1),
      fixed(build.rssMib, 1),
      mib(build.bytes),
    ];
  });
  const ours = builds.filter((build) => build.kind === "ours");
  const fastest = [...ours].sort((a, b) => a.initializeMs - b.initializeMs)[0];
  const binary = ours.find((build) => build.key === "binary");
  const buildSeconds = typeof compiled === "string" ? undefined : compiled.ours.ms / 1000;
  return [
    heading,
    "",
    table(
      [
        "build",
        "initialize",
        "ratio to bare",
        "min – max",
        "session/new",
        "exit after EOF",
        "idle RSS (MiB)",
        "size",
      ],
      rows,
    ),
    "",
    "Every way of running ours, and the bare agent run the same ways, in one rotation: each run " +
    "starts every build once (the order shifting by one each run), so they share the machine's " +
    "noise; the per-runtime table above measures ours and bare of one runtime at a time. The " +
    "compiled binaries are built by `scripts/compile.ts` (`bun build --compile --minify " +
    "--bytecode`: the Bun runtime and the bundled program in one file that needs no " +
    "`node_modules`) into `.bench-tmp/bin/` before the run" +
    (buildSeconds === undefined ? "" : `, ours in ${buildSeconds.toFixed(1)} s`) +
    "; the bare one is `bench/bare_agent.ts` compiled the same way. The bundles on Deno and Bun " +
    "are `dist/cli.js` (ours: it runs each runtime's own entry) and the bare agent's Node.js " +
    "bundle, run with `deno run -A` and `bun`. Ratio to bare: ours over " +
    "the bare agent run the same way. Session/new: spawn → `session/new` response; exit after " +
    "EOF: stdin closed → process exit; idle RSS: VmHWM after `session/new`. The size is the " +
    "executable's (Node.js, Deno and Bun themselves are not counted for the other rows). " +
    (fastest === undefined
      ? ""
      : `Fastest of ours to \`initialize\`: ${fastest.label}, ${
        fixed(fastest.initializeMs, 1)
      } ms` +
        (binary === undefined || binary === fastest
          ? "."
          : `; the compiled binary ${fixed(binary.initializeMs, 1)} ms.`)),
  ].join("\n");
}

function renderReport(
  machine: Machine,
  results: readonly RuntimeResult[],
  warnings: string[],
  appends: AppendsOutcome,
  fixture: StoreFixture | undefined,
  mcpGraph: McpStartupGraph | string,
  httpGraph: HttpStartupGraph | string,
  builds: readonly BuildStartup[] | string,
  profiles: readonly StartupProfile[] | string,
): string {
  const verdicts: Verdicts = { passed: 0, failed: 0 };
  const mcpSection = renderMcpSection(
    results.map((r) => ({
      runtime: r.runtime,
      mcp: r.mcp,
      startup: r.startup?.initializeMs,
      failed: r.errors.some((e) => e.startsWith(`${MCP_PHASE}:`)),
    })),
    mcpGraph,
  );
  for (const pass of mcpSection.verdicts) count(verdicts, pass);
  const httpSection = renderHttpSection(
    results.map((r) => ({
      runtime: r.runtime,
      http: r.http,
      startup: r.startup?.initializeMs,
      failed: r.errors.some((e) => e.startsWith(`${HTTP_PHASE}:`)),
    })),
    httpGraph,
    httpCounts(),
  );
  for (const pass of httpSection.verdicts) count(verdicts, pass);
  const startupRows = results.map((r) => {
    const s = r.startup;
    const ratio = ratioOf(s?.initializeMs.ours, s?.initializeMs.bare);
    const pass = ratio === undefined ? undefined : ratio <= TARGETS.startupRatio;
    return [
      r.runtime,
      fixed(s?.initializeMs.ours, 1),
      fixed(s?.initializeMs.bare, 1),
      ratioText(ratio),
      `≤ ${TARGETS.startupRatio}×`,
      verdict(count(verdicts, pass)),
      fixed(s?.sessionNewMs.ours, 1),
      fixed(s?.sessionNewMs.bare, 1),
    ];
  });
  const exitRows = results.map((r) => {
    const s = r.startup;
    const pass = s === undefined ? undefined : s.exitMs.ours <= TARGETS.exitMs;
    const max = (values: number[]): number | undefined =>
      values.length === 0 ? undefined : Math.max(...values);
    return [
      r.runtime,
      fixed(s?.exitMs.ours, 1),
      fixed(s?.exitMs.bare, 1),
      ratioText(ratioOf(s?.exitMs.ours, s?.exitMs.bare)),
      `≤ ${TARGETS.exitMs} ms`,
      verdict(count(verdicts, pass)),
      fixed(max(r.exitMs.ours), 1),
      fixed(max(r.exitMs.bare), 1),
    ];
  });
  const roundTripRows = results.map((r) => {
    const t = r.roundTrip;
    const ratio = ratioOf(t?.p50Ms.ours, t?.p50Ms.bare);
    const pass = ratio === undefined ? undefined : ratio <= TARGETS.roundTripRatio;
    return [
      r.runtime,
      fixed(t?.p50Ms.ours, 3),
      fixed(t?.memory.p50Ms, 3),
      fixed(t?.p50Ms.bare, 3),
      ratioText(ratio),
      `≤ ${TARGETS.roundTripRatio}×`,
      verdict(count(verdicts, pass)),
      ratioText(ratioOf(t?.memory.p50Ms, t?.p50Ms.bare)),
      fixed(t === undefined ? undefined : t.p50Ms.ours - t.memory.p50Ms, 3),
      `${fixed(t?.p99Ms.ours, 2)} / ${fixed(t?.memory.p99Ms, 2)} / ${fixed(t?.p99Ms.bare, 2)}`,
      `${thousands(t?.promptsPerSecond.ours)} / ${thousands(t?.memory.promptsPerSecond)} / ` +
      thousands(t?.promptsPerSecond.bare),
      ratioText(ratioOf(t?.promptsPerSecond.ours, t?.promptsPerSecond.bare)),
      `${fixed(t?.firstBlockP50Ms.ours, 3)} → ${fixed(t?.lastBlockP50Ms.ours, 3)}`,
      `${fixed(t?.firstBlockP50Ms.bare, 3)} → ${fixed(t?.lastBlockP50Ms.bare, 3)}`,
    ];
  });
  const firstSessionRows = results.map((r) => {
    const s = r.startup;
    const pass = s === undefined
      ? undefined
      : s.firstSessionNewMs.ours <= TARGETS.firstSessionNewMs;
    return [
      r.runtime,
      fixed(s?.firstSessionNewMs.ours, 2),
      fixed(s?.firstSessionNewMs.bare, 2),
      ratioText(ratioOf(s?.firstSessionNewMs.ours, s?.firstSessionNewMs.bare)),
      `≤ ${TARGETS.firstSessionNewMs} ms`,
      verdict(count(verdicts, pass)),
      `${fixed(s?.firstSessionNewMaxMs.ours, 2)} / ${fixed(s?.firstSessionNewMaxMs.bare, 2)}`,
    ];
  });
  const sessionLimit = (bare: number | undefined): number | undefined =>
    bare === undefined ? undefined : TARGETS.sessionNewRatio * bare + TARGETS.sessionNewSlackMs;
  const sessionsRows = results.map((r) => {
    const s = r.sessions;
    const limit = sessionLimit(s?.p50Ms.bare);
    const pass = s === undefined || limit === undefined ? undefined : s.p50Ms.ours <= limit;
    return [
      r.runtime,
      fixed(s?.p50Ms.ours, 3),
      fixed(s?.p50Ms.bare, 3),
      ratioText(ratioOf(s?.p50Ms.ours, s?.p50Ms.bare)),
      `≤ ${TARGETS.sessionNewRatio}× bare + ${TARGETS.sessionNewSlackMs} ms (${fixed(limit, 3)})`,
      verdict(count(verdicts, pass)),
      `${fixed(s?.p99Ms.ours, 3)} / ${fixed(s?.p99Ms.bare, 3)}`,
    ];
  });
  const exitSessionsRows = results.map((r) => {
    const s = r.sessions;
    const pass = s === undefined ? undefined : s.exitMs.ours <= TARGETS.exitWithSessionsMs;
    return [
      r.runtime,
      fixed(s?.exitMs.ours, 1),
      fixed(s?.exitMs.bare, 1),
      ratioText(ratioOf(s?.exitMs.ours, s?.exitMs.bare)),
      `≤ ${TARGETS.exitWithSessionsMs} ms`,
      verdict(count(verdicts, pass)),
      `${fixed(s?.exitMaxMs.ours, 1)} / ${fixed(s?.exitMaxMs.bare, 1)}`,
    ];
  });
  const breakdownSection = renderBreakdownSections(
    results.map((r) => ({
      runtime: r.runtime,
      firstUpdate: r.firstUpdate,
      cpu: r.turnCpu,
      failed: r.errors.some((e) => e.startsWith(`${BREAKDOWN_PHASE}:`)),
    })),
    breakdown(),
  );
  for (const pass of breakdownSection.verdicts) count(verdicts, pass);
  const throughputRows = results.map((r) => {
    const t = r.throughput;
    const ratio = ratioOf(t?.notificationsPerSecond.ours, t?.notificationsPerSecond.bare);
    const pass = ratio === undefined ? undefined : ratio >= TARGETS.throughputRatio;
    return [
      r.runtime,
      thousands(t?.notificationsPerSecond.ours),
      thousands(t?.notificationsPerSecond.bare),
      ratioText(ratio),
      `≥ ${TARGETS.throughputRatio}×`,
      verdict(count(verdicts, pass)),
      `${thousands(t?.chunksPerPrompt.ours)} / ${thousands(t?.chunksPerPrompt.bare)}`,
    ];
  });
  const llmTurnRows = results.map((r) => {
    const t = r.llmTurn;
    const failed = r.errors.some((e) => e.startsWith(`${LLM_TURN_PHASE}:`));
    return [
      r.runtime,
      fixed(t?.ms.ours, 1),
      fixed(t?.ms.bare, 1),
      ratioText(ratioOf(t?.ms.ours, t?.ms.bare)),
      failed ? "**failed** (see Errors)" : t === undefined ? "n/a" : "ok",
      `${fixed(t?.minMs.ours, 1)} – ${fixed(t?.maxMs.ours, 1)}`,
      `${fixed(t?.minMs.bare, 1)} – ${fixed(t?.maxMs.bare, 1)}`,
    ];
  });
  const listRows = results.map((r) => {
    const l = r.sessionList;
    const ratio = ratioOf(l?.large.median, l?.small.median);
    const pass = ratio === undefined ? undefined : ratio <= TARGETS.sessionListRatio;
    return [
      r.runtime,
      fixed(l?.small.median, 3),
      fixed(l?.large.median, 3),
      ratioText(ratio),
      `≤ ${TARGETS.sessionListRatio}×`,
      verdict(count(verdicts, pass)),
      `${fixed(l?.small.min, 3)} – ${fixed(l?.small.max, 3)}`,
      `${fixed(l?.large.min, 3)} – ${fixed(l?.large.max, 3)}`,
    ];
  });
  const loadRows = results.map((r) => {
    const l = r.sessionLoad;
    const ratio = ratioOf(l?.load.median, l?.parse.median);
    const pass = ratio === undefined ? undefined : ratio <= TARGETS.sessionLoadRatio;
    const bareRate = r.throughput?.notificationsPerSecond.bare;
    return [
      r.runtime,
      fixed(l?.load.median, 1),
      fixed(l?.parse.median, 1),
      ratioText(ratio),
      `≤ ${TARGETS.sessionLoadRatio}×`,
      verdict(count(verdicts, pass)),
      fixed(l?.firstFrame.median, 2),
      `${fixed(l?.load.min, 1)} – ${fixed(l?.load.max, 1)}`,
      `${fixed(l?.parse.min, 1)} – ${fixed(l?.parse.max, 1)}`,
      thousands(l?.frames),
      fixed(l === undefined || bareRate === undefined ? undefined : l.frames / bareRate * 1000, 1),
    ];
  });
  const appendRows = appends.results.map((a) => [
    APPEND_MODES[a.mode],
    thousands(a.appends),
    thousands(a.perSecond),
    thousands(a.logSyncs),
    a.logSyncs === 0 ? "n/a" : fixed(a.appends / a.logSyncs, 1),
    fixed(a.logSyncMs, 2),
    thousands(a.indexSyncs),
  ]);
  const pageSize = results.find((r) => r.sessionList)?.sessionList?.pageSize;
  const load = fixture?.load;
  const appendBytes = appends.results[0]?.bytesPerAppend;
  const rssRows = results.map((r) => [
    r.runtime,
    fixed(r.startup?.rssMib.ours, 1),
    fixed(r.startup?.rssMib.bare, 1),
    ratioText(ratioOf(r.startup?.rssMib.ours, r.startup?.rssMib.bare)),
    fixed(r.throughput?.rssMib.ours, 1),
    fixed(r.throughput?.rssMib.bare, 1),
    ratioText(ratioOf(r.throughput?.rssMib.ours, r.throughput?.rssMib.bare)),
  ]);
  const errors = [
    ...results.flatMap((r) => r.errors.map((e) => `- ${r.runtime}: ${e}`)),
    ...appends.errors.map((e) => `- in-process: ${e}`),
  ];

  return [
    "# acp-harness benchmark: ours vs a bare SDK 2.4 echo agent",
    "",
    `Generated by \`deno run -A bench/main.ts${
      settings.quick ? " --quick" : ""
    }\` on ${machine.date}.` +
    (settings.quick ? " **Quick run: reduced iterations, smoke test only.**" : ""),
    "",
    `Machine: ${machine.nproc} cores (${machine.cpu}), ${machine.memoryGib.toFixed(0)} GiB, ` +
    `Linux ${machine.kernel}; node ${machine.node}, ${machine.deno}, bun ${machine.bun}. ` +
    `Load average (1 min) at the start and the end of the run: ${fixed(machine.load[0], 2)}, ` +
    `${fixed(machine.load[1], 2)} (other work on the machine moves every figure).`,
    "",
    "Ours is `deno run -A mod.ts`, `node dist/cli.js` (minified esbuild bundle) and `bun mod.ts`; " +
    "the bare agent is `bench/bare_agent.ts` run the same ways (bundled the same way for Node). " +
    "Ratios are ours / bare.",
    "",
    `Result: ${verdicts.passed} targets met, ${verdicts.failed} missed.`,
    "",
    `## Start-up: spawn → \`initialize\` response (ms, median of ${settings.startupRuns} after a warm-up)`,
    "",
    table(
      [
        "runtime",
        "ours",
        "bare",
        "ratio",
        "target",
        "result",
        "ours session/new",
        "bare session/new",
      ],
      startupRows,
    ),
    "",
    "## Exit after stdin EOF (ms, median of the start-up runs)",
    "",
    table(
      ["runtime", "ours", "bare", "ratio", "target (ours)", "result", "ours max", "bare max"],
      exitRows,
    ),
    "",
    "The max columns cover every process of the runtime, including the round-trip and throughput ones.",
    "",
    `## \`session/new\` on a running server (ms)`,
    "",
    `### The first \`session/new\` after \`initialize\` (median of the ${settings.startupRuns} start-up runs)`,
    "",
    table(
      ["runtime", "ours", "bare", "ratio", "target (ours)", "result", "max ours / bare"],
      firstSessionRows,
    ),
    "",
    "The start-up runs' `session/new`, timed from its request (sent once `initialize` was " +
    "answered) to its response: what a client waits for its first session on a freshly " +
    "started agent. Ours gets a fresh, empty data directory each run (`ACP_HARNESS_HOME`), so " +
    "this is the first session the store ever creates there. Ours answers once its session " +
    "side (the code the session methods need, imported after the `initialize` answer) and the " +
    "built-in tools are loaded; the session is written to the store after the answer (the " +
    "README's durable sessions), so what is left is loading that code: about a hundred source " +
    "modules on Deno and Bun, a chunk of the bundle on Node.js. Loading it before " +
    "`initialize` is answered would move the same time into start-up; the start-up table's " +
    "`ours session/new` column is the sum a client waits for its first session.",
    "",
    `### ${
      settings.sessionsPerRun.toLocaleString("en-US")
    } \`session/new\` in a row on one server ` +
    `(${settings.sessionRuns} runs, latencies pooled)`,
    "",
    table(
      [
        "runtime",
        "ours p50",
        "bare p50",
        "ratio",
        "target (ours p50)",
        "result",
        "p99 ours / bare",
      ],
      sessionsRows,
    ),
    "",
    "The cost of creating a session on an agent that is already warm, as a client opening many " +
    "does. Each run starts ours (a fresh data directory) and bare, sends `initialize` to both, " +
    `then ${settings.sessionsPerRun.toLocaleString("en-US")} \`session/new\` to each, one ` +
    `at a time, ours and bare alternating in blocks of ${settings.sessionBlock}; each is ` +
    "timed from its request to its response. The sessions stay open (idle) for the next " +
    "section. Ours answers once the cwd is checked (a stat and a realpath), its `AGENTS.md` " +
    "looked for and the session built; the session's lock (a hard link to another of the " +
    "process's locks), its log (one exclusive create, opened off the main thread, holding the " +
    "header and the initial model and mode) and its index line are written right after the " +
    "answer, while the next request arrives. Creating a file costs up to a millisecond of " +
    "kernel time on this machine's file system, several times the bare " +
    "agent's whole answer, so that work still weighs on the next `session/new` of a client " +
    "that opens them back to back; the data directory is under the bench's `.bench-tmp/`.",
    "",
    `## Exit after stdin EOF with ${settings.sessionsPerRun.toLocaleString("en-US")} open ` +
    `sessions (ms, median of ${settings.sessionRuns} runs)`,
    "",
    table(
      ["runtime", "ours", "bare", "ratio", "target (ours)", "result", "max ours / bare"],
      exitSessionsRows,
    ),
    "",
    "The servers of the previous section, once all their sessions are open: stdin closed → " +
    "process exit, one server at a time (the other idle). Ours closes every session before it " +
    "exits, so this is how shutdown grows with the number of sessions: each session's index " +
    "line that is due (one write for all of them; none here, as these sessions were never " +
    "used), and its lock file (an `lstat` and an unlink each, in bursts of a few milliseconds).",
    "",
    renderBuildSection(builds),
    "",
    "## What start-up loads, by module group (no target)",
    "",
    typeof profiles === "string"
      ? `Not measured: ${profiles}`
      : "Every module `initialize` waits for, grouped (our source directories, each npm package, " +
        "the `node:` built-ins), with its size and load cost: measured on Deno and Bun (the " +
        "modules imported in dependency order in one process, median of processes), estimated " +
        "on Node.js from each group's bytes in the start-up bundle times its measured load " +
        "time (`bench/startup_profile.ts`). What is not needed for `initialize` is loaded on " +
        "first use: the session side after the `initialize` answer, the file system and the " +
        "process supervisor on first use, MCP, HTTP and PostgreSQL with their first use.\n\n" +
        renderStartupProfiles(profiles),
    "",
    `## Prompt round trip: ${
      settings.prompts.toLocaleString("en-US")
    } sequential \`session/prompt\` ` +
    `calls on one session (ms)`,
    "",
    table(
      [
        "runtime",
        "ours p50 (durable)",
        "ours p50 (memory:)",
        "bare p50",
        "ratio (durable)",
        "target",
        "result",
        "ratio (memory:)",
        "durability p50 (ms)",
        "p99 durable / memory: / bare",
        "prompts/s durable / memory: / bare",
        "prompts/s ratio (durable)",
        "ours p50 first → last block",
        "bare p50 first → last block",
      ],
      roundTripRows,
    ),
    "",
    `After ${settings.warmupPrompts} warm-up prompts each; the three sides take turns in blocks ` +
    `of ${settings.promptBlock} (the order rotating block by block). Ours runs the echo model, ` +
    "which answers with an `agent_thought_chunk` and an `agent_message_chunk` (two " +
    "notifications per prompt, plus a title on the first); the bare agent sends the same " +
    "frames, so the ratio is the server's own cost. Durable: ours as shipped, on a fresh data " +
    "directory, recording every prompt in its session log (fdatasync by group commit); the " +
    "target is on this one. Memory: the same server with `--store memory:` (sessions kept in " +
    "the process, nothing written), so durability p50 (durable − memory:) is what the log " +
    "costs a prompt and ratio (memory:) is the server without it; the bare agent persists " +
    "nothing. The warm-up lets all reach steady state: V8 optimizes a function after a few " +
    "interrupt-budget ticks (about 67 KB of its bytecode run each, in Node.js 20), so a " +
    "function that runs once per prompt is optimized only after a few thousand prompts (the " +
    "bare agent's hot functions run many times per prompt and get there sooner); with 1,000 " +
    "warm-up prompts Node.js's ours went from 0.41 to 0.17 ms within the measured prompts. The " +
    "first → last block columns show the latency at the start and the end of the measured " +
    "prompts, as the session's history grows. Before sessions were durable " +
    "(bench/RESULTS.md at commit 78c471b) the same measurement gave 1.06-1.14x.",
    "",
    `## Update throughput: one prompt answered by ${settings.chunks.toLocaleString("en-US")} ` +
    "`agent_message_chunk` notifications (notifications/s, higher is better)",
    "",
    table(
      ["runtime", "ours", "bare", "ratio", "target", "result", "chunks seen ours / bare"],
      throughputRows,
    ),
    "",
    `Median of ${settings.throughputRuns} prompt(s) after a warm-up prompt, ours and bare ` +
    "alternating. Ours: `--stream --model scripted` with one script step of " +
    `${settings.chunks.toLocaleString("en-US")} text deltas per prompt; bare: ` +
    `\`BARE_CHUNKS=${settings.chunks}\`. Time runs from sending the prompt to its response.`,
    "",
    `## LLM turn: one turn whose model streams ${LLM_TURN.deltas.toLocaleString("en-US")} ` +
    `deltas and ${LLM_TURN.toolCalls} tool calls from the fake server (ms, median of ` +
    `${settings.llmTurnRuns} after ${settings.llmTurnWarmups} warm-up turn(s); no target)`,
    "",
    table(
      ["runtime", "ours", "bare", "ratio", "turn check", "ours min – max", "bare min – max"],
      llmTurnRows,
    ),
    "",
    "The whole turn against a bare read of the same streams, as information: its old target " +
    "(≤ 1.2× bare) gave way to the breakdown below, the agent's CPU per streamed delta and per " +
    "tool call. The model is the fake OpenAI-compatible server of `tests/_helpers/fake_llm_server.ts`, run " +
    "in this bench process on 127.0.0.1 with no per-chunk delay. Step 1 is one SSE response of " +
    `${
      LLM_TURN.deltas.toLocaleString("en-US")
    } \`content\` deltas of a few bytes each ("w0 ", "w1 ", …) and ` +
    `${LLM_TURN.toolCalls} \`read_file\` calls on a 10-line file in a temporary workspace (each ` +
    "call's arguments in two fragments), " +
    `${thousands(sseBytes(LLM_TURN_RESPONSES[0]) / 1024)} KiB; step 2 is a one-delta answer. ` +
    "The fake server writes each SSE item with its own `res.write` and waits for the flush, so " +
    "each body is handed to it as one item: one write per response (after the header flush), " +
    "for both sides alike. Ours: the agent started with `--config <file> --model fake/coder " +
    "--mode auto` (committed-step mode, no `--stream`: the text reaches the client as one " +
    "`agent_message_chunk` per step); each turn opens a fresh session, queues both responses " +
    "and times `session/prompt` over stdio to its response, which must be `end_turn` with all " +
    `${LLM_TURN.toolCalls} \`tool_call_update\`s \`completed\` (else the section fails). ` +
    "Bare: a client in this bench process (Deno's fetch) that POSTs, reads the whole step-1 " +
    "stream (TextDecoder, line split, `JSON.parse` of every `data:` line, tool-call fragments " +
    "joined), then POSTs step 2 with the text and tool calls and reads it; it runs no tools and " +
    "sends no ACP frames, so the ratio is everything ours adds to the bare HTTP + SSE work: " +
    "ACP framing, history, request building, the tool calls and their updates, and its " +
    "process boundary. Ours and bare alternate turn by turn against the same server and " +
    "responses; the bare figure is the same Deno client for every runtime row (it shares this " +
    "process's event loop with the fake server, where ours runs beside it in its own process).",
    "",
    breakdownSection.text,
    "",
    "## Durable sessions",
    "",
    "Ours over stdio, started with `--data-dir` on data directories that `bench/store_bench.ts` " +
    "writes directly in the store's format (one JSONL log per session and a compact " +
    "`index.jsonl`, one line per session, as a rewrite leaves it) and checks first with " +
    "`JsonlSessionStore` in this process (the first page and a sample load must match what was " +
    "written, and any store warning, such as a rebuilt index, fails the run). The data lives " +
    "under `.bench-tmp/store/` for the run and is removed at the end.",
    "",
    `### \`session/list\` first page at ${
      STORE_BENCH.listSizes.map((n) => n.toLocaleString("en-US")).join(" and ")
    } stored sessions (ms, median of ${settings.listRuns} after ${settings.listWarmups} ` +
    "warm-ups each)",
    "",
    table(
      [
        "runtime",
        `${STORE_BENCH.listSizes[0].toLocaleString("en-US")} sessions`,
        `${STORE_BENCH.listSizes[1].toLocaleString("en-US")} sessions`,
        "ratio",
        "target",
        "result",
        `${STORE_BENCH.listSizes[0].toLocaleString("en-US")} min – max`,
        `${STORE_BENCH.listSizes[1].toLocaleString("en-US")} min – max`,
      ],
      listRows,
    ),
    "",
    "One server per data directory, both running at once; the calls alternate between them. " +
    `Each session is one ${STORE_BENCH.turnEvents}-event turn, spread over 60 days and 25 ` +
    "cwds. Every call is " +
    "`session/list` with no cwd and no cursor: the first page, " +
    `${pageSize === undefined ? "n/a" : pageSize} sessions on both sides (the configured page ` +
    "size; only the larger one has a `nextCursor`), so both replies are the same size. The " +
    "first warm-up call reads `index.jsonl` whole (sorting the sessions once); after that a " +
    "call stats the index file and serves the page from the sorted in-memory index, so the " +
    "cost should not grow with the number of sessions. Time runs from the request to its " +
    "response; the ratio is the larger data directory over the smaller one.",
    "",
    `### \`session/load\` of a ${
      STORE_BENCH.loadEvents.toLocaleString("en-US")
    }-event session vs reading and parsing its log (ms, median of ${settings.loadRuns} after ` +
    `${settings.loadWarmups} warm-up(s))`,
    "",
    table(
      [
        "runtime",
        "session/load",
        "read + parse",
        "ratio",
        "target",
        "result",
        "first replayed update",
        "load min – max",
        "parse min – max",
        "updates replayed",
        "bare agent sending them",
      ],
      loadRows,
    ),
    "",
    (load === undefined
      ? "The log could not be written (see Errors). "
      : `The log is ${(load.logBytes / 1024 ** 2).toFixed(1)} MiB, ` +
        `${thousands(load.logBytes / load.events)} bytes a record on average: ` +
        `${
          thousands(load.events / STORE_BENCH.turnEvents)
        } turns, each a prompt, four model steps (reasoning and ` +
        "text; three of them with two tool calls, their results and, in two, a permission " +
        "answer) and their usage, then the turn's end. ") +
    "Ours: `session/load` over stdio, timed from the request to its response; first replayed " +
    "update: from the request to the first `session/update` of that session arriving here " +
    "(median), how soon a client starts drawing the conversation. Before " +
    "answering, the server reads and checks the log, rebuilds the conversation and replays it: " +
    `${
      load === undefined ? "thousands of" : thousands(load.replayFrames)
    } \`session/update\` notifications (user messages, thoughts, messages, tool calls and ` +
    "their final updates, the title, the latest usage), each serialized and written to the " +
    "pipe, then read and `JSON.parse`d by this client; the run fails unless every one of them " +
    "arrives before the response. The session is closed (untimed) before the next load. " +
    "Read + parse: the same file in this bench process (`Deno.readTextFile`, split lines, " +
    "`JSON.parse` each), with no server, no checks and no replay in between; it is the same " +
    "Deno baseline for every runtime row. Loads and parses alternate. The last column (ms) is " +
    "how long the bare SDK agent of the throughput section takes to send that many " +
    "notifications (updates replayed / its notifications/s): what the replay costs at the " +
    "SDK's one-message-at-a-time rate, before the log is even read.",
    "",
    "### Appends per second: `JsonlSessionStore` in this process (Deno), one event per append " +
    "(no target)",
    "",
    table(
      [
        "mode",
        "appends",
        "appends/s",
        "log fdatasyncs",
        "appends per fdatasync",
        "mean fdatasync (ms)",
        "index flushes",
      ],
      appendRows,
    ),
    "",
    "Each mode appends to one session of a fresh store (after a warm-up) on the file system of " +
    "`.bench-tmp/`; each event is one `tool_result` of " +
    `${appendBytes === undefined ? "a few hundred" : thousands(appendBytes)} bytes as a log ` +
    "line. Every append is one `write` on the log's kept-open `O_APPEND` descriptor, done " +
    "before `append` returns. `sync: true` (a commit point: prompt admitted, step committed, " +
    "tool result, turn end) then resolves once the log is `fdatasync`ed; the store starts a " +
    `flush ${SYNC_DELAY_MS} ms after the first request so that the commit points of a burst ` +
    "share it (group commit). Awaited: each commit point waits for its flush before the next " +
    "append, so every append pays the window and an `fdatasync`. Burst: " +
    `${settings.appendBurst} commit points issued without waiting, then awaited together; they ` +
    "share one flush. The server itself never waits for a commit point (a session writes its " +
    "records at once and leaves their flush to the background; `session/close` waits for it), " +
    "so its commit points share flushes like this. No sync: `sync: false`, each " +
    "awaited; nothing is flushed. The index gets a line for the session at most once a second " +
    "(index flushes counts the `sync` ones), so these runs rarely touch it. The mean " +
    "fdatasync column is this machine's flush time. " +
    (appends.timerMs === undefined ? "" : `A \`setTimeout(${SYNC_DELAY_MS})\` takes ` +
      `${fixed(appends.timerMs, 2)} ms in this Deno process: an awaited append is that window ` +
      "plus the flush. ") +
    "On a disk whose flushes take milliseconds the awaited row falls in proportion, while " +
    "the burst row pays one flush per burst.",
    "",
    mcpSection.text,
    "",
    renderDelegationSection(results.map((r) => ({
      runtime: r.runtime,
      delegation: r.delegation,
      failed: r.errors.some((e) => e.startsWith(`${DELEGATION_PHASE}:`)),
    }))),
    "",
    httpSection.text,
    "",
    renderCompactionSection(results),
    "",
    "## Peak RSS of the agent process (VmHWM, MiB, read just before stdin is closed; no target)",
    "",
    table(
      [
        "runtime",
        "idle ours",
        "idle bare",
        "ratio",
        "after stream ours",
        "after stream bare",
        "ratio",
      ],
      rssRows,
    ),
    "",
    "Idle: after `initialize` and `session/new` (median of the start-up runs). After stream: the " +
    "throughput process, after all its prompts.",
    "",
    "## Noise",
    "",
    `The machine has ${machine.nproc} cores shared by the client (this Deno process) and the agent, ` +
    "so figures move by up to ±40% between runs; " +
    "compare ours with bare within one run only. Ours and bare are interleaved run by run (start-up), " +
    "block by block (round trip, with ours on `memory:` as a third; `session/new` in a row), " +
    "prompt by prompt (throughput) and turn by turn (LLM turn, time to first update with its " +
    "floor) so they share the same noise; likewise the CPU turns round by round, the two " +
    "`session/list` servers call by call, " +
    "`session/load` with its read + parse baseline, and the HTTP section's SSE, WebSocket and " +
    "stdio prompt by prompt. " +
    (machine.clientCeiling === undefined
      ? "The client's own ceiling could not be measured (no `cat`)."
      : `This client alone takes in about ${thousands(machine.clientCeiling)} notifications/s ` +
        "(`cat` of a ready-made NDJSON file), the ceiling of the throughput figures above that " +
        "it measured; the HTTP section's lean clients do not parse `agent_message_chunk` " +
        "updates, so their figures can go higher."),
    ...(warnings.length > 0 ? ["", "## Warnings", "", ...warnings.map((w) => `- ${w}`)] : []),
    ...(errors.length > 0 ? ["", "## Errors", "", ...errors] : []),
    "",
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------
// Main

const LLM_TURN_PHASE = "LLM turn";
const BREAKDOWN_PHASE = "LLM breakdown";
const SESSIONS_PHASE = "sessions";

/** How the append modes are named in the report. */
const APPEND_MODES: Readonly<Record<AppendMode, string>> = {
  awaited: "`sync: true`, awaited one by one",
  burst: "`sync: true`, in bursts (group commit)",
  nosync: "`sync: false`",
};

async function runRuntime(runtime: Runtime): Promise<RuntimeResult> {
  const result: RuntimeResult = { runtime, exitMs: { ours: [], bare: [] }, errors: [] };
  const phases: Readonly<Record<typeof PHASE_NAMES[number], typeof measureStartup>> = {
    "start-up": measureStartup,
    "round trip": measureRoundTrip,
    [SESSIONS_PHASE]: measureSessions,
    "throughput": measureThroughput,
    [LLM_TURN_PHASE]: measureLlmTurn,
    [BREAKDOWN_PHASE]: measureLlmBreakdown,
    "session/list": measureSessionListPhase,
    "session/load": measureSessionLoadPhase,
    [MCP_PHASE]: measureMcpPhase,
    [DELEGATION_PHASE]: measureDelegationPhase,
    [HTTP_PHASE]: measureHttpPhase,
    [COMPACTION_PHASE]: measureCompactionPhase,
  };
  for (const name of PHASE_NAMES) {
    if (!selected(name)) continue;
    const phase = phases[name];
    const started = performance.now();
    console.error(`[bench] ${runtime}: ${name}…`);
    try {
      await phase(runtime, result);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      result.errors.push(`${name}: ${message}`);
      console.error(`[bench] ${runtime}: ${name} failed: ${message}`);
    } finally {
      killAllChildren();
    }
    console.error(
      `[bench] ${runtime}: ${name} took ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }
  return result;
}

/** Runs {@link measureBuildStartup}; resolves with its rows, or why it failed. */
async function measureBuildStartupPhase(): Promise<BuildStartup[] | string> {
  const started = performance.now();
  console.error("[bench] start-up by build…");
  try {
    return await measureBuildStartup();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    console.error(`[bench] start-up by build failed: ${message}`);
    return message;
  } finally {
    killAllChildren();
    console.error(
      `[bench] start-up by build took ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }
}

async function main(): Promise<void> {
  const onSignal = (): void => {
    killAllChildren();
    try {
      Deno.removeSync(STORE_DIR, { recursive: true });
    } catch {
      // not there
    }
    try {
      Deno.removeSync(FRESH_HOMES, { recursive: true });
    } catch {
      // not there
    }
    Deno.exit(130);
  };
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  try {
    const loadAtStart = os.loadavg()[0] ?? Number.NaN;
    const warnings = await prepare();
    const [node, deno, bun] = await Promise.all([versionOf(NODE), versionOf(DENO), versionOf(BUN)]);
    const clientCeiling = await measureClientCeiling();
    mcpGraph = await mcpStartupGraph(ROOT, DENO).catch((error: unknown) =>
      error instanceof Error ? error.message : String(error)
    );
    httpGraph = await httpStartupGraph(ROOT, DENO).catch((error: unknown) =>
      error instanceof Error ? error.message : String(error)
    );
    const results: RuntimeResult[] = [];
    for (const runtime of settings.runtimes) results.push(await runRuntime(runtime));
    const builds = selected("builds") ? await measureBuildStartupPhase() : "not measured (--only)";
    const profiles = selected("start-up profile")
      ? await profileStartups().catch((error: unknown) =>
        error instanceof Error ? error.message : String(error)
      )
      : "not measured (--only)";
    const appends = selected("appends")
      ? await measureAllAppends()
      : { results: [], errors: [] } satisfies AppendsOutcome;
    const machine: Machine = {
      date: new Date().toISOString(),
      nproc: navigator.hardwareConcurrency,
      cpu: os.cpus()[0]?.model.trim() ?? "unknown CPU",
      memoryGib: os.totalmem() / 1024 ** 3,
      kernel: os.release(),
      node,
      deno,
      bun,
      clientCeiling,
      load: [loadAtStart, os.loadavg()[0] ?? Number.NaN],
    };
    const fixture = await storeFixture?.catch(() => undefined);
    await Deno.writeTextFile(
      RESULTS_FILE,
      renderReport(
        machine,
        results,
        warnings,
        appends,
        fixture,
        mcpGraph,
        httpGraph,
        builds,
        profiles,
      ),
    );
    // Leave the file as the repo's formatter wants it, so `deno fmt --check` stays clean.
    const formatted = await runCommand(DENO, ["fmt", "--quiet", RESULTS_FILE]);
    if (formatted.code !== 0) console.error(`[bench] deno fmt ${RESULTS_FILE} failed`);
    console.log(await Deno.readTextFile(RESULTS_FILE));
    console.error(`[bench] wrote ${RESULTS_FILE}`);
  } finally {
    killAllChildren();
    await Deno.remove(STORE_DIR, { recursive: true }).catch(() => {});
    await Deno.remove(FRESH_HOMES, { recursive: true }).catch(() => {});
    // Two executables of over 100 MiB each: not worth keeping between runs.
    await Deno.remove(`${TMP}/bin`, { recursive: true }).catch(() => {});
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
  }
}

await main();
