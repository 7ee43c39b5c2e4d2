// deno-lint-ignore-file no-console
/**
 * Benchmarks acp-harness against a bare SDK echo agent (`bench/bare_agent.ts`) on Deno, Node.js
 * and Bun, side by side in one run, from a small NDJSON JSON-RPC client in this Deno process:
 *
 * - start-up: spawn → `initialize` response (median), and stdin EOF → process exit (median);
 * - prompt round trip: sequential `session/prompt` calls on one session (p50, p99, prompts/s);
 * - update throughput: one prompt answered by many `agent_message_chunk` notifications;
 * - peak RSS of the child (VmHWM) just before stdin is closed.
 *
 * Ours and the bare agent are interleaved so they share the machine's noise. Results go to
 * `bench/RESULTS.md` and stdout. Run `deno task bench` (builds `dist/` first), or
 * `deno run -A bench/main.ts [--quick] [--runtime deno|node|bun]...`.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import os from "node:os";
import { build, stop as stopEsbuild } from "esbuild";

const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const TMP = `${ROOT}/.bench-tmp`;
const BARE_BUNDLE = `${TMP}/bare_agent.js`;
const STREAM_SCRIPT = `${TMP}/stream_script.json`;
const CEILING_FILE = `${TMP}/ceiling.ndjson`;
const RESULTS_FILE = `${ROOT}/bench/RESULTS.md`;
const DENO = `${ROOT}/node_modules/.bin/deno`;
const BUN = `${ROOT}/node_modules/.bin/bun`;
/**
 * Node.js by absolute path. When `node` is not on PATH, Deno puts a `node` link to itself on the
 * PATH it gives this process (and `node:child_process` runs Deno for a bare `node`), which would
 * silently benchmark Deno twice; such links are skipped.
 */
const NODE = await findOnPath("node", await Deno.realPath(Deno.execPath()));

const RUNTIMES = ["deno", "node", "bun"] as const;
type Runtime = typeof RUNTIMES[number];
type Kind = "ours" | "bare";
type Workload = "echo" | "stream";

const TARGETS = {
  startupRatio: 1.3,
  roundTripRatio: 1.3,
  throughputRatio: 0.75,
  exitMs: 100,
} as const;

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
}

const settings = parseSettings(Deno.args);

const REQUEST_TIMEOUT_MS = 60_000;
const EXIT_TIMEOUT_MS = 10_000;

// ---------------------------------------------------------------------------------------------
// Command line

function parseSettings(args: readonly string[]): Settings {
  let quick = false;
  const runtimes: Runtime[] = [];
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
    } else if (arg === "--help" || arg === "-h") {
      console.log("usage: deno run -A bench/main.ts [--quick] [--runtime deno|node|bun]...");
      Deno.exit(0);
    } else {
      throw new Error(`unknown argument "${arg}"`);
    }
  }
  return {
    quick,
    runtimes: runtimes.length > 0 ? runtimes : RUNTIMES,
    startupRuns: quick ? 3 : 15,
    warmupPrompts: quick ? 20 : 1_000,
    prompts: quick ? 200 : 2000,
    promptBlock: quick ? 50 : 100,
    chunks: quick ? 2000 : 20_000,
    throughputRuns: quick ? 1 : 3,
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

interface JsonRpcMessage {
  readonly id?: number | string | null;
  readonly method?: string;
  readonly params?: { readonly update?: { readonly sessionUpdate?: string } };
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

function agentCommand(runtime: Runtime, kind: Kind, workload: Workload): CommandLine {
  const streamArgs = kind === "ours" && workload === "stream"
    ? ["--stream", "--model", "scripted", "--script", STREAM_SCRIPT]
    : [];
  const env: Record<string, string> = kind === "bare" && workload === "stream"
    ? { BARE_CHUNKS: String(settings.chunks) }
    : {};
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

function startAgent(runtime: Runtime, kind: Kind, workload: Workload): AgentProcess {
  return new AgentProcess(`${kind}/${runtime}`, agentCommand(runtime, kind, workload));
}

const INITIALIZE_PARAMS = {
  protocolVersion: 1,
  clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  clientInfo: { name: "acp-harness-bench", version: "0.0.0" },
};

/** Runs `initialize` and `session/new`; returns the session id and both arrival times. */
async function openSession(
  agent: AgentProcess,
): Promise<{ sessionId: string; initializedAt: number; sessionAt: number }> {
  const init = await agent.request("initialize", INITIALIZE_PARAMS);
  const session = await agent.request("session/new", { cwd: ROOT, mcpServers: [] });
  const sessionId = (session.result as { sessionId?: unknown } | null)?.sessionId;
  if (typeof sessionId !== "string") throw new Error(`${agent.label}: session/new had no id`);
  return { sessionId, initializedAt: init.at, sessionAt: session.at };
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
  exitMs: Pair<number>;
  rssMib: Pair<number | undefined>;
}

interface RoundTripResult {
  p50Ms: Pair<number>;
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

interface RuntimeResult {
  runtime: Runtime;
  startup?: StartupResult;
  roundTrip?: RoundTripResult;
  throughput?: ThroughputResult;
  /** Exit-after-EOF times of every process of the runtime, for the max column. */
  exitMs: Pair<number[]>;
  errors: string[];
}

function orderFor(iteration: number): readonly Kind[] {
  return iteration % 2 === 0 ? ["ours", "bare"] : ["bare", "ours"];
}

async function measureStartupOnce(
  runtime: Runtime,
  kind: Kind,
): Promise<{ initializeMs: number; sessionNewMs: number; exitMs: number; rssMib?: number }> {
  const agent = startAgent(runtime, kind, "echo");
  const opened = await openSession(agent);
  const { rssMib, exitMs } = await finish(agent);
  return {
    initializeMs: opened.initializedAt - agent.spawnedAt,
    sessionNewMs: opened.sessionAt - agent.spawnedAt,
    exitMs,
    ...(rssMib === undefined ? {} : { rssMib }),
  };
}

async function measureStartup(runtime: Runtime, result: RuntimeResult): Promise<void> {
  for (const kind of orderFor(0)) await measureStartupOnce(runtime, kind); // warm-up
  const samples: Pair<{ init: number[]; session: number[]; exit: number[]; rss: number[] }> = {
    ours: { init: [], session: [], exit: [], rss: [] },
    bare: { init: [], session: [], exit: [], rss: [] },
  };
  for (let i = 0; i < settings.startupRuns; i++) {
    for (const kind of orderFor(i)) {
      const run = await measureStartupOnce(runtime, kind);
      samples[kind].init.push(run.initializeMs);
      samples[kind].session.push(run.sessionNewMs);
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
    exitMs: { ours: median(samples.ours.exit), bare: median(samples.bare.exit) },
    rssMib: { ours: rss(samples.ours.rss), bare: rss(samples.bare.rss) },
  };
}

async function measureRoundTrip(runtime: Runtime, result: RuntimeResult): Promise<void> {
  const agents: Pair<AgentProcess> = {
    ours: startAgent(runtime, "ours", "echo"),
    bare: startAgent(runtime, "bare", "echo"),
  };
  const sessions: Pair<string> = {
    ours: (await openSession(agents.ours)).sessionId,
    bare: (await openSession(agents.bare)).sessionId,
  };
  for (const kind of orderFor(0)) {
    for (let i = 0; i < settings.warmupPrompts; i++) {
      await prompt(agents[kind], sessions[kind], `warm-up ${i}`);
    }
  }
  const latencies: Pair<number[]> = { ours: [], bare: [] };
  const busyMs: Pair<number> = { ours: 0, bare: 0 };
  const blocks = Math.ceil(settings.prompts / settings.promptBlock);
  for (let block = 0; block < blocks; block++) {
    const size = Math.min(settings.promptBlock, settings.prompts - block * settings.promptBlock);
    for (const kind of orderFor(block)) {
      const blockStart = performance.now();
      for (let i = 0; i < size; i++) {
        const sentAt = performance.now();
        const reply = await prompt(agents[kind], sessions[kind], `ping ${block}.${i}`);
        latencies[kind].push(reply.at - sentAt);
      }
      busyMs[kind] += performance.now() - blockStart;
    }
  }
  for (const kind of ["ours", "bare"] as const) {
    result.exitMs[kind].push((await finish(agents[kind])).exitMs);
  }
  result.roundTrip = {
    p50Ms: { ours: percentile(latencies.ours, 0.5), bare: percentile(latencies.bare, 0.5) },
    p99Ms: { ours: percentile(latencies.ours, 0.99), bare: percentile(latencies.bare, 0.99) },
    firstBlockP50Ms: {
      ours: percentile(latencies.ours.slice(0, settings.promptBlock), 0.5),
      bare: percentile(latencies.bare.slice(0, settings.promptBlock), 0.5),
    },
    lastBlockP50Ms: {
      ours: percentile(latencies.ours.slice(-settings.promptBlock), 0.5),
      bare: percentile(latencies.bare.slice(-settings.promptBlock), 0.5),
    },
    promptsPerSecond: {
      ours: latencies.ours.length / (busyMs.ours / 1000),
      bare: latencies.bare.length / (busyMs.bare / 1000),
    },
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

function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? sorted[middle] ?? Number.NaN
    : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2;
}

/** Nearest-rank percentile, `fraction` in (0, 1]. */
function percentile(values: readonly number[], fraction: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(fraction * sorted.length) - 1)] ?? Number.NaN;
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

function renderReport(
  machine: Machine,
  results: readonly RuntimeResult[],
  warnings: string[],
): string {
  const verdicts: Verdicts = { passed: 0, failed: 0 };
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
      fixed(t?.p50Ms.bare, 3),
      ratioText(ratio),
      `≤ ${TARGETS.roundTripRatio}×`,
      verdict(count(verdicts, pass)),
      `${fixed(t?.p99Ms.ours, 2)} / ${fixed(t?.p99Ms.bare, 2)}`,
      `${thousands(t?.promptsPerSecond.ours)} / ${thousands(t?.promptsPerSecond.bare)}`,
      ratioText(ratioOf(t?.promptsPerSecond.ours, t?.promptsPerSecond.bare)),
      `${fixed(t?.firstBlockP50Ms.ours, 3)} → ${fixed(t?.lastBlockP50Ms.ours, 3)}`,
      `${fixed(t?.firstBlockP50Ms.bare, 3)} → ${fixed(t?.lastBlockP50Ms.bare, 3)}`,
    ];
  });
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
  const rssRows = results.map((r) => [
    r.runtime,
    fixed(r.startup?.rssMib.ours, 1),
    fixed(r.startup?.rssMib.bare, 1),
    ratioText(ratioOf(r.startup?.rssMib.ours, r.startup?.rssMib.bare)),
    fixed(r.throughput?.rssMib.ours, 1),
    fixed(r.throughput?.rssMib.bare, 1),
    ratioText(ratioOf(r.throughput?.rssMib.ours, r.throughput?.rssMib.bare)),
  ]);
  const errors = results.flatMap((r) => r.errors.map((e) => `- ${r.runtime}: ${e}`));

  return [
    "# acp-harness benchmark: ours vs a bare SDK 2.4 echo agent",
    "",
    `Generated by \`deno run -A bench/main.ts${
      settings.quick ? " --quick" : ""
    }\` on ${machine.date}.` +
    (settings.quick ? " **Quick run: reduced iterations, smoke test only.**" : ""),
    "",
    `Machine: ${machine.nproc} cores (${machine.cpu}), ${machine.memoryGib.toFixed(0)} GiB, ` +
    `Linux ${machine.kernel}; node ${machine.node}, ${machine.deno}, bun ${machine.bun}.`,
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
    `## Prompt round trip: ${
      settings.prompts.toLocaleString("en-US")
    } sequential \`session/prompt\` ` +
    `calls on one session (ms)`,
    "",
    table(
      [
        "runtime",
        "ours p50",
        "bare p50",
        "ratio",
        "target",
        "result",
        "p99 ours / bare",
        "prompts/s ours / bare",
        "prompts/s ratio",
        "ours p50 first → last block",
        "bare p50 first → last block",
      ],
      roundTripRows,
    ),
    "",
    `After ${settings.warmupPrompts} warm-up prompts each; ours and bare alternate in blocks of ` +
    `${settings.promptBlock}. Ours runs the echo model, which answers with an ` +
    "`agent_thought_chunk` and an `agent_message_chunk` (two notifications per prompt, plus a " +
    "title on the first); the bare agent sends the same frames, so the ratio is the server's " +
    "own cost. The warm-up lets both reach steady state (the JIT optimizes more of the " +
    "larger server later); the first → last block columns show the latency at the start and " +
    "the end of the measured prompts, as the session's history grows.",
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
    "block by block (round trip) and prompt by prompt (throughput) so they share the same noise. " +
    (machine.clientCeiling === undefined
      ? "The client's own ceiling could not be measured (no `cat`)."
      : `This client alone takes in about ${thousands(machine.clientCeiling)} notifications/s ` +
        "(`cat` of a ready-made NDJSON file), the ceiling of any throughput figure above."),
    ...(warnings.length > 0 ? ["", "## Warnings", "", ...warnings.map((w) => `- ${w}`)] : []),
    ...(errors.length > 0 ? ["", "## Errors", "", ...errors] : []),
    "",
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------
// Main

async function runRuntime(runtime: Runtime): Promise<RuntimeResult> {
  const result: RuntimeResult = { runtime, exitMs: { ours: [], bare: [] }, errors: [] };
  const phases: ReadonlyArray<readonly [string, typeof measureStartup]> = [
    ["start-up", measureStartup],
    ["round trip", measureRoundTrip],
    ["throughput", measureThroughput],
  ];
  for (const [name, phase] of phases) {
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

async function main(): Promise<void> {
  const onSignal = (): void => {
    killAllChildren();
    Deno.exit(130);
  };
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  try {
    const warnings = await prepare();
    const [node, deno, bun] = await Promise.all([versionOf(NODE), versionOf(DENO), versionOf(BUN)]);
    const clientCeiling = await measureClientCeiling();
    const results: RuntimeResult[] = [];
    for (const runtime of settings.runtimes) results.push(await runRuntime(runtime));
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
    };
    await Deno.writeTextFile(RESULTS_FILE, renderReport(machine, results, warnings));
    // Leave the file as the repo's formatter wants it, so `deno fmt --check` stays clean.
    const formatted = await runCommand(DENO, ["fmt", "--quiet", RESULTS_FILE]);
    if (formatted.code !== 0) console.error(`[bench] deno fmt ${RESULTS_FILE} failed`);
    console.log(await Deno.readTextFile(RESULTS_FILE));
    console.error(`[bench] wrote ${RESULTS_FILE}`);
  } finally {
    killAllChildren();
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
  }
}

await main();
