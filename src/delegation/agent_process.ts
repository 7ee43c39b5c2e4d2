/**
 * A delegated ACP agent's process: started over stdio in its own process group through the
 * host, and stopped in tiers.
 *
 * @module
 */
import type { AgentConfig } from "../config/config.ts";
import { exitsWithin, StreamTail } from "../host/child_output.ts";
import { CHILD_INHERITED_ENV } from "../host/child_env.ts";
import type { HostProcesses, PipedHostProcess } from "../host/host.ts";
import { DELEGATION_DEPTH_ENV } from "./delegation_depth.ts";

/** How long each tier of {@link AgentProcess.stop} waits for the agent to exit. */
export interface StopGrace {
  /**
   * Milliseconds from the end of its input (stdin EOF) to SIGTERM. An acp-harness child needs up
   * to 2.5 s to wind down on EOF (1.5 s for its turns, 1 s for its own commands).
   * @default {3000}
   */
  readonly eofMs: number;
  /** Milliseconds from SIGTERM to SIGKILL. @default {2000} */
  readonly termMs: number;
}

/** The default {@link StopGrace}: 3 s after stdin EOF, then SIGTERM, 2 s later SIGKILL. */
export const DEFAULT_STOP_GRACE: StopGrace = { eofMs: 3000, termMs: 2000 };

/**
 * The most characters of an agent's stderr kept, to explain a failure: more than the failure
 * message shows (see `stderr_tail.ts`), so that what is shown is redacted with its context.
 */
const STDERR_TAIL_CHARS = 16 * 1024;

/** What {@link AgentProcess.start} starts. */
export interface AgentProcessOptions {
  readonly processes: Pick<HostProcesses, "spawn">;
  /** The agent as the config file declares it. */
  readonly agent: AgentConfig;
  /** Its working directory (the session's). */
  readonly cwd: string;
  /** Its delegation depth (the parent's plus one), passed in {@link DELEGATION_DEPTH_ENV}. */
  readonly depth: number;
  /** How long each stop tier waits. @default {DEFAULT_STOP_GRACE} */
  readonly grace?: StopGrace;
}

/** How an agent's process ended. */
export interface AgentExit {
  readonly code: number | null;
  readonly signal: string | null;
}

/**
 * A running agent: its stdin (as a stream the ACP connection writes to), its stdout, the tail of
 * its stderr, and a stop that ends its input, then SIGTERMs, then SIGKILLs its process group.
 */
export class AgentProcess {
  /** Writes to the agent's stdin; never locked, so {@link AgentProcess.stop} can end it. */
  readonly input: WritableStream<Uint8Array>;
  /** The agent's stdout. */
  readonly output: ReadableStream<Uint8Array>;
  readonly #child: PipedHostProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #grace: StopGrace;
  readonly #stderr = new StreamTail(STDERR_TAIL_CHARS);
  #exit: AgentExit | undefined;
  #stopping: Promise<AgentExit> | undefined;

  private constructor(child: PipedHostProcess, grace: StopGrace) {
    this.#child = child;
    this.#grace = grace;
    this.#writer = child.stdin.getWriter();
    // A write to an agent that already exited must not surface as an unhandled rejection.
    this.#writer.closed.catch(() => {});
    const writer = this.#writer;
    this.input = new WritableStream<Uint8Array>({ write: (chunk) => writer.write(chunk) });
    this.output = child.stdout;
    void child.exited.then((exit) => this.#exit = exit);
    void this.#stderr.read(child.stderr);
  }

  /**
   * Starts an agent in its own process group, with a clean environment: of the server's
   * variables only those programs need to run ({@link CHILD_INHERITED_ENV}) and those the agent's
   * `inheritEnv` names, its declared `env` on top, and its depth. No API key or
   * `ACP_HARNESS_*` setting of the server reaches it unless declared.
   *
   * @param options What to start, where, and at which depth
   * @returns The running agent
   * @throws When it cannot be started (e.g. the command does not exist)
   */
  static async start(options: AgentProcessOptions): Promise<AgentProcess> {
    const { agent } = options;
    const child = await options.processes.spawn(agent.command, agent.args ?? [], {
      cwd: options.cwd,
      env: { ...agent.env, [DELEGATION_DEPTH_ENV]: String(options.depth) },
      inheritEnv: [...CHILD_INHERITED_ENV, ...agent.inheritEnv ?? []],
      stdin: "piped",
    });
    return new AgentProcess(child, options.grace ?? DEFAULT_STOP_GRACE);
  }

  /** The process id (also its process group id). */
  get pid(): number {
    return this.#child.pid;
  }

  /** How it ended, once it has. */
  get exit(): AgentExit | undefined {
    return this.#exit;
  }

  /** The last 16 K characters it wrote on stderr, raw (sanitize before showing them). */
  get stderrTail(): string {
    return this.#stderr.text;
  }

  /** Whether it wrote more on stderr than {@link AgentProcess.stderrTail} keeps. */
  get stderrTruncated(): boolean {
    return this.#stderr.truncated;
  }

  /**
   * Stops the agent in tiers: ends its input (stdin EOF), waits `grace.eofMs`, sends its process
   * group SIGTERM, waits `grace.termMs`, then SIGKILL; resolves once it has exited and the host
   * has ended its descendants that left the group (`setsid`). Concurrent and repeated calls share
   * one stop.
   *
   * @returns How it ended
   */
  stop(): Promise<AgentExit> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<AgentExit> {
    const child = this.#child;
    await this.#writer.close().catch(() => {});
    if (!(await exitsWithin(child, this.#grace.eofMs))) {
      child.kill("SIGTERM");
      if (!(await exitsWithin(child, this.#grace.termMs))) child.kill("SIGKILL");
    }
    return await child.exited;
  }
}
