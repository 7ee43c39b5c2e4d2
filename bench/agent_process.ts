/**
 * The agents the bench spawns: ours and the bare agent on each runtime, each an NDJSON
 * JSON-RPC client ({@link RpcClient}) on the child's stdio, and the child processes tracked so
 * that every one is killed whatever happens.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  AGENT_HOME,
  BARE_BUNDLE,
  BUN,
  DENO,
  FRESH_HOMES,
  LLM_CONFIG_FILE,
  LLM_HOME,
  NODE,
  ROOT,
  STREAM_SCRIPT,
} from "./paths.ts";
import {
  INITIALIZE_PARAMS,
  LineSplitter,
  type Reply,
  type RequestOptions,
  RpcClient,
  type RpcMessage,
  type SessionUpdateParams,
} from "./rpc_client.ts";
import type { Kind, Runtime } from "./settings.ts";

/** How long an agent may take to exit after stdin EOF before it is killed (ms). */
const EXIT_TIMEOUT_MS = 10_000;

/** A command to run, with the environment it adds. */
export interface CommandLine {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/** What the agent is started for: its model, store and data directory follow from it. */
export type Workload = "echo" | "stream" | "llm" | "store";

/** The part of an agent process the phase modules use (so that they can be driven by fakes). */
export interface BenchAgent {
  readonly label: string;
  /** `performance.now()` of the spawn. */
  readonly spawnedAt: number;
  /** The agent's process id. */
  readonly pid: number | undefined;
  /** `agent_message_chunk` notifications received so far. */
  readonly messageChunks: number;
  /** Other `session/update` notifications received so far. */
  readonly otherUpdates: number;
  /** Told about every `session/update` notification, when set. */
  onUpdate: ((params: SessionUpdateParams) => void) | undefined;
  /** Told about every `session/update` notification and when its bytes arrived, when set. */
  onUpdateAt: ((params: SessionUpdateParams, at: number) => void) | undefined;
  /** Sends a request; resolves with its result and arrival time, rejects on an error reply. */
  request(method: string, params: unknown, options?: RequestOptions): Promise<Reply>;
  /** Closes stdin; returns when. */
  closeStdin(): number;
  /** Waits for the exit (killing the process after a timeout). */
  waitExit(timeoutMs?: number): Promise<number>;
}

/** Every child still running, so that they can all be killed whatever happens. */
const liveChildren = new Set<ChildProcess>();

/** Kills every child still running. */
export function killAllChildren(): void {
  for (const child of liveChildren) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  liveChildren.clear();
}

/** Spawns a child with piped stdio, killed with every other child if left running. */
export function spawnTracked(line: CommandLine): ChildProcess {
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

/** One spawned agent and the bench's JSON-RPC client on its stdio. */
export class AgentProcess extends RpcClient implements BenchAgent {
  readonly child: ChildProcess;
  readonly spawnedAt: number;
  /** Resolves with the `performance.now()` of the exit event. */
  readonly exited: Promise<number>;
  otherUpdates = 0;
  onUpdate: ((params: SessionUpdateParams) => void) | undefined;
  onUpdateAt: ((params: SessionUpdateParams, at: number) => void) | undefined;
  readonly #lines = new LineSplitter();
  #stderrTail = "";

  constructor(label: string, line: CommandLine) {
    super(label);
    this.spawnedAt = performance.now();
    this.child = spawnTracked(line);
    this.child.stdout?.setEncoding("utf8");
    this.child.stdout?.on("data", (data: string) => {
      const at = performance.now();
      this.#lines.push(data, (text) => this.receive(text, at));
    });
    this.child.stderr?.setEncoding("utf8");
    this.child.stderr?.on("data", (data: string) => {
      this.#stderrTail = (this.#stderrTail + data).slice(-2000);
    });
    this.child.stdin?.on("error", () => {});
    this.exited = new Promise<number>((resolve) => {
      const settle = (info: string): void => {
        const at = performance.now();
        this.fail(
          new Error(`${this.label} exited (${info}) ${this.#stderrSummary()}`),
          new Error(`${this.label} already exited (${info})`),
        );
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

  protected override write(message: unknown): void {
    this.child.stdin?.write(JSON.stringify(message) + "\n");
  }

  protected override notified(message: RpcMessage, at: number): void {
    if (message.method !== "session/update") return;
    if (message.params?.update?.sessionUpdate === "agent_message_chunk") this.messageChunks++;
    else this.otherUpdates++;
    if (message.params !== undefined) {
      this.onUpdate?.(message.params);
      this.onUpdateAt?.(message.params, at);
    }
  }

  /** Agent requests (none expected) get "Method not found", so that a turn does not hang. */
  protected override requested(message: RpcMessage): void {
    this.write({
      jsonrpc: "2.0",
      id: message.id,
      error: { code: -32601, message: "Method not found" },
    });
  }

  #stderrSummary(): string {
    const tail = this.#stderrTail.trim();
    return tail === "" ? "" : `; stderr: ${tail.slice(-500)}`;
  }
}

/** Options of {@link agentCommand}. */
export interface AgentCommandOptions {
  readonly runtime: Runtime;
  readonly kind: Kind;
  readonly workload: Workload;
  /** The `agent_message_chunk`s per prompt of the bare agent's `stream` workload. */
  readonly chunks?: number;
  /** The data directory of the `store` workload, given with `--data-dir`. */
  readonly dataDir?: string;
}

/** How to run an agent. */
export function agentCommand(options: AgentCommandOptions): CommandLine {
  const { runtime, kind, workload } = options;
  const streamArgs = kind !== "ours"
    ? []
    : workload === "stream"
    ? ["--stream", "--model", "scripted", "--script", STREAM_SCRIPT]
    : workload === "llm"
    ? ["--config", LLM_CONFIG_FILE, "--model", "fake/coder", "--mode", "auto"]
    : workload === "store"
    ? ["--data-dir", options.dataDir ?? AGENT_HOME]
    : [];
  const env: Record<string, string> = kind === "bare"
    ? workload === "stream" ? { BARE_CHUNKS: String(options.chunks) } : {}
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

/** Ours on the echo model, with `args` after its own and `env` over its own. */
export function oursCommand(
  runtime: Runtime,
  args: readonly string[] = [],
  env: Readonly<Record<string, string>> = {},
): CommandLine {
  const line = agentCommand({ runtime, kind: "ours", workload: "echo" });
  return { ...line, args: [...line.args, ...args], env: { ...line.env, ...env } };
}

/** Starts an agent on the echo model (or the workload's). */
export function startAgent(options: AgentCommandOptions): AgentProcess {
  return new AgentProcess(`${options.kind}/${options.runtime}`, agentCommand(options));
}

let freshHomes = 0;

/** A new, empty data directory under `.bench-tmp/fresh/` (the caller removes it). */
export async function freshHome(): Promise<string> {
  const dir = `${FRESH_HOMES}/${freshHomes++}`;
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  await Deno.mkdir(dir, { recursive: true });
  return dir;
}

/** Ours on the echo model with its own fresh data directory; `stop` removes the directory. */
export async function startFreshOurs(
  runtime: Runtime,
  extraArgs: readonly string[] = [],
  label = `ours/${runtime}`,
): Promise<{ agent: AgentProcess; home: string }> {
  const home = await freshHome();
  const agent = new AgentProcess(
    label,
    oursCommand(runtime, extraArgs, { ACP_HARNESS_HOME: home }),
  );
  return { agent, home };
}

/** Removes a data directory of {@link freshHome} once its agent has exited. */
export async function removeHome(agent: AgentProcess, home: string): Promise<void> {
  if (agent.child.exitCode === null && agent.child.signalCode === null) {
    agent.child.kill("SIGKILL");
    await agent.exited;
  }
  await Deno.remove(home, { recursive: true }).catch(() => {});
}

/** The times of {@link openSession}. */
export interface OpenedSession {
  readonly sessionId: string;
  readonly initializedAt: number;
  readonly sessionSentAt: number;
  readonly sessionAt: number;
}

/**
 * Runs `initialize` and `session/new`; returns the session id, both arrival times and when
 * `session/new` was sent.
 */
export async function openSession(agent: BenchAgent): Promise<OpenedSession> {
  const init = await agent.request("initialize", INITIALIZE_PARAMS);
  const sessionSentAt = performance.now();
  const session = await agent.request("session/new", { cwd: ROOT, mcpServers: [] });
  const sessionId = (session.result as { sessionId?: unknown } | null)?.sessionId;
  if (typeof sessionId !== "string") throw new Error(`${agent.label}: session/new had no id`);
  return { sessionId, initializedAt: init.at, sessionSentAt, sessionAt: session.at };
}

/** Sends `session/prompt` with one text block. */
export function prompt(agent: BenchAgent, sessionId: string, text: string): Promise<Reply> {
  return agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
}

/** Peak resident set size (VmHWM) in MiB, or undefined where /proc is not available. */
export async function peakRssMib(pid: number | undefined): Promise<number | undefined> {
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
export async function finish(
  agent: BenchAgent,
): Promise<{ rssMib: number | undefined; exitMs: number }> {
  const rssMib = await peakRssMib(agent.pid);
  const eofAt = agent.closeStdin();
  const exitAt = await agent.waitExit();
  return { rssMib, exitMs: exitAt - eofAt };
}

/** Runs a short command to completion; resolves with its exit code and stdout. */
export async function runCommand(
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
