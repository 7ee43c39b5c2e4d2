/**
 * {@link HostProcesses} on `node:child_process`: children in their own process groups, killed as
 * groups, supervised so that none outlives the server.
 *
 * @module
 */
import * as childProcess from "node:child_process";
import process from "node:process";
import type { Readable, Writable } from "node:stream";
import {
  findOwned,
  groupAlive,
  OwnedScanner,
  ownerVariable,
  ProcessRecord,
  ProcessSupervisor,
  reapRecords,
  terminatePids,
} from "./process_guard.ts";
import type { HostProcess, HostProcesses, PipedHostProcess, SpawnOptions } from "./host.ts";
import { childEnv } from "./child_env.ts";

/** How long an aborted process group gets between SIGTERM and SIGKILL. */
const KILL_GRACE_MS = 2_000;
/**
 * How long what is left in a process group after its leader exited (background jobs) gets between
 * SIGTERM and SIGKILL.
 */
const LEFTOVER_GRACE_MS = 1_000;
/**
 * How long after SIGKILL we wait for a group to be gone before giving up on it (SIGKILL cannot be
 * ignored; only a process stuck in the kernel, e.g. on a dead network file system, takes longer).
 */
const KILL_CONFIRM_MS = 2_000;
/**
 * How long after its group is gone we keep waiting for a process's output pipes to close. A
 * descendant that left the process group (setsid) can hold them open forever; after this the pipes
 * are closed on our side so `exited` still settles.
 */
const PIPE_GRACE_MS = 1_000;
/**
 * How many times the end of a process looks for descendants that left its group (each look is a
 * scan of `/proc`, then SIGTERM and SIGKILL to what it found), in case some forked meanwhile.
 */
const STRAY_ROUNDS = 3;
/** Bytes a process's output stream buffers before the pipe is paused. */
const STREAM_HIGH_WATER_BYTES = 64 * 1024;

/** A child process as `node:child_process` gives it, stdin piped or not. */
type NodeChild = childProcess.ChildProcessByStdio<Writable | null, Readable, Readable>;

/**
 * The processes of a {@link NodeHost}: each started in its own process group, marked with the
 * host's token in its environment, and ended as a group.
 *
 * @example Running a command
 * ```ts ignore
 * import { NodeProcesses } from "./node_processes.ts";
 * const processes = new NodeProcesses({ PATH: "/usr/bin:/bin" });
 * const child = await processes.spawn("echo", ["hi"], { cwd: "/" });
 * ```
 */
export class NodeProcesses implements HostProcesses {
  readonly #env: Readonly<Record<string, string | undefined>>;
  /** Marks everything started here (see process_guard.ts). */
  readonly #token = crypto.randomUUID().replaceAll("-", "");
  /** Processes started and not yet settled (their group confirmed gone). */
  readonly #processes = new Set<NodeHostProcess>();
  /** Finds the descendants of one spawn by its marker (`/proc`, shared scans). */
  readonly #scanner = new OwnedScanner(this.#token);
  /** How many processes were spawned: the next one's marker value is this plus one. */
  #spawned = 0;
  #supervisor: ProcessSupervisor | undefined;
  #record: ProcessRecord | undefined;
  #stopping: Promise<void> | undefined;
  /** Whether anything was ever started: only then can a process carry this host's marker. */
  #started = false;

  /**
   * Creates the process part of a host.
   *
   * @param env The environment children inherit (before their own extra variables)
   */
  constructor(env: Readonly<Record<string, string | undefined>>) {
    this.#env = env;
  }

  /**
   * Starts `command` in its own process group (`detached`), stdin `/dev/null` (or a pipe with
   * `stdin: "piped"`), output piped, with `ACP_HARNESS_OWNER_<token>=<n>` added to its
   * environment, `n` numbering this host's spawns (see {@link superviseProcesses}).
   *
   * Aborting `options.signal` sends SIGTERM to the group and SIGKILL 2 s later if it has not
   * ended. When the process itself exits, whatever is left in its group (background jobs) gets
   * SIGTERM, and SIGKILL 1 s later. Once the group is gone, on Linux, its descendants that left
   * the group (`setsid`, a daemon's double fork) but still carry its marker get SIGTERM, and
   * SIGKILL when that grace ends; those of other spawns are left alone. `exited` settles once
   * all of them are gone and both output streams are closed: read or cancel them. A piped stdin
   * is closed on our side by then.
   *
   * @example Running a command
   * ```ts ignore
   * import { NodeHost } from "./node_host.ts";
   * const child = await new NodeHost().spawn("echo", ["hi"], { cwd: "/" });
   * const text = await new Response(child.stdout).text(); // "hi\n"
   * await child.stderr.cancel();
   * const { code } = await child.exited; // 0
   * ```
   *
   * @example Talking to a child over its stdin and stdout
   * ```ts ignore
   * import { NodeHost } from "./node_host.ts";
   * const child = await new NodeHost().spawn("cat", [], { cwd: "/", stdin: "piped" });
   * const writer = child.stdin.getWriter();
   * await writer.write(new TextEncoder().encode("ping\n"));
   * await writer.close(); // cat sees the end of its input and exits
   * const text = await new Response(child.stdout).text(); // "ping\n"
   * ```
   *
   * @param command The executable (looked up on `PATH` when it has no slash)
   * @param args Its arguments
   * @param options Working directory, extra environment, abort signal, stdin
   * @returns The running process, once it has started
   */
  spawn(
    command: string,
    args: readonly string[],
    options: SpawnOptions & { readonly stdin: "piped" },
  ): Promise<PipedHostProcess>;
  /** Starts a process in its own process group, stdin `/dev/null` unless piped. */
  spawn(command: string, args: readonly string[], options: SpawnOptions): Promise<HostProcess>;
  spawn(command: string, args: readonly string[], options: SpawnOptions): Promise<HostProcess> {
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#stopping) {
      return Promise.reject(new Error(`Cannot start "${command}": the host is shutting down`));
    }
    // No prototype: a variable named `__proto__` is an ordinary variable.
    const env = childEnv(this.#env, {
      inherit: options.inheritEnv,
      exclude: options.excludeEnv,
      env: options.env,
    });
    const marker = String(++this.#spawned);
    env[ownerVariable(this.#token)] = marker;
    this.#started = true;
    // Running before the command is, so that even a SIGKILL right after the spawn is covered.
    this.#supervisor?.start();
    return new Promise((resolve, reject) => {
      let child: NodeChild;
      try {
        child = childProcess.spawn(command, [...args], {
          cwd: options.cwd,
          env,
          detached: true,
          stdio: [options.stdin === "piped" ? "pipe" : "ignore", "pipe", "pipe"],
        }) as NodeChild;
      } catch (error) {
        reject(error);
        return;
      }
      const onError = (error: Error): void => {
        child.stdin?.destroy();
        child.stdout.destroy();
        child.stderr.destroy();
        reject(error);
      };
      child.once("error", onError);
      child.once("spawn", () => {
        child.off("error", onError);
        const pgid = child.pid as number;
        this.#supervisor?.add(pgid);
        this.#record?.add(pgid);
        const started = new NodeHostProcess(child, signal, {
          findStrays: () => this.#scanner.find(marker),
          onSettled: () => {
            this.#processes.delete(started);
            this.#supervisor?.remove(pgid);
          },
        });
        this.#processes.add(started);
        resolve(started);
      });
    });
  }

  /**
   * Guards against the processes this host starts outliving it, even when this process is killed
   * with SIGKILL: from the next {@link spawn} on, a supervisor (`/bin/sh`, in its own session,
   * holding a pipe from this process) kills them when that pipe closes, and (on Linux) their
   * groups are recorded in `dir` so that a later host calling this reaps what a dead host and its
   * dead supervisor left. Then reaps `dir` now.
   *
   * @param dir The directory for records (e.g. in the data directory); created when needed
   * @returns How many leftover processes or groups of dead hosts were killed
   */
  superviseProcesses(dir: string): Promise<number> {
    if (!this.#supervisor) {
      this.#record = new ProcessRecord(dir, this.#token);
      this.#supervisor = new ProcessSupervisor(this.#token, this.#record.file);
    }
    return reapRecords(dir, this.#token);
  }

  /**
   * Ends every process this host started that is still running, and refuses to start more: each
   * process group gets SIGTERM, then SIGKILL after `graceMs`; on Linux, processes that left their
   * group but still carry this host's marker are killed the same way. Then the supervisor exits
   * and the record is removed. Resolves once all are confirmed gone; bounded even when SIGKILL
   * cannot end a process at once (about `graceMs` + 5 s, + 5 s for a supervisor that hangs).
   * Concurrent calls share one operation.
   *
   * @param options `graceMs`: milliseconds between SIGTERM and SIGKILL (default 2000)
   */
  stopProcesses(options: { readonly graceMs?: number } = {}): Promise<void> {
    this.#stopping ??= this.#stopAll(options.graceMs ?? KILL_GRACE_MS);
    return this.#stopping;
  }

  async #stopAll(graceMs: number): Promise<void> {
    const deadline = Date.now() + graceMs;
    await Promise.all([...this.#processes].map((child) => {
      child.stop(graceMs);
      return child.exited;
    }));
    // Descendants that left their group (setsid) but kept the environment. With nothing ever
    // started none can exist: the sweep of every process's environment is skipped.
    if (this.#started) {
      const left = (await findOwned(this.#token)).map(({ pid }) => pid);
      await terminatePids(left, Math.max(0, deadline - Date.now()));
    }
    await this.#supervisor?.close();
    await this.#record?.remove();
  }
}

/** What a {@link NodeHostProcess} needs from its host. */
interface ChildHooks {
  /** The live processes carrying this child's marker (its descendants, wherever they went). */
  readonly findStrays: () => Promise<number[]>;
  /** Called once the child, its group and its strays are gone. */
  readonly onSettled: () => void;
}

/** A child started by {@link NodeProcesses.spawn}, the leader of its own process group. */
class NodeHostProcess implements HostProcess {
  readonly pid: number;
  readonly stdin: WritableStream<Uint8Array> | undefined;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  readonly exited: Promise<{ readonly code: number | null; readonly signal: string | null }>;
  readonly #child: NodeChild;
  readonly #findStrays: () => Promise<number[]>;
  #leaderExited = false;
  #settled = false;
  /** When the group gets SIGKILL if it is still there. */
  #killAt = Number.POSITIVE_INFINITY;
  #ending: Promise<void> | undefined;

  constructor(child: NodeChild, signal: AbortSignal | undefined, hooks: ChildHooks) {
    this.#child = child;
    this.#findStrays = hooks.findStrays;
    this.pid = child.pid as number;
    this.stdin = child.stdin ? toWebWritable(child.stdin) : undefined;
    this.stdout = toWebStream(child.stdout);
    this.stderr = toWebStream(child.stderr);
    const onAbort = (): void => this.stop(KILL_GRACE_MS);
    let pipesClosed = false;
    const closed = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
      child.once("close", (code: number | null, exitSignal: NodeJS.Signals | null) => {
        pipesClosed = true;
        resolve({ code, signal: exitSignal });
      });
    });
    const leaderExited = new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      void closed.then(() => resolve());
    });
    this.exited = (async () => {
      await leaderExited;
      this.#leaderExited = true;
      // Background jobs it left in its group end with it.
      this.stop(LEFTOVER_GRACE_MS);
      await this.#ending;
      let timer: ReturnType<typeof setTimeout> | undefined;
      if (!pipesClosed) {
        // Only a process outside the group can still hold the pipes now.
        timer = setTimeout(() => {
          child.stdout.destroy();
          child.stderr.destroy();
        }, PIPE_GRACE_MS);
      }
      const result = await closed;
      clearTimeout(timer);
      // Nobody reads a piped stdin any more: release our end (later writes reject).
      child.stdin?.destroy();
      signal?.removeEventListener("abort", onAbort);
      this.#settled = true;
      hooks.onSettled();
      return result;
    })();
    // A late error (e.g. a failed kill) must not become an unhandled "error" event.
    child.on("error", () => {});
    if (signal?.aborted) onAbort();
    else signal?.addEventListener("abort", onAbort, { once: true });
  }

  /** Sends `signal` (default SIGTERM) to the whole process group; a no-op once it has ended. */
  kill(signal: "SIGTERM" | "SIGKILL" = "SIGTERM"): void {
    if (this.#settled) return;
    try {
      process.kill(-this.pid, signal);
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code !== "ESRCH") throw error;
    }
  }

  /**
   * Ends the group: SIGTERM now (once), SIGKILL after `graceMs` (or sooner, if an earlier call
   * asked for less), until the group is confirmed gone; then the same for the descendants that
   * left it.
   */
  stop(graceMs: number): void {
    if (this.#settled) return;
    this.#killAt = Math.min(this.#killAt, Date.now() + graceMs);
    this.#ending ??= this.#end();
  }

  /** {@link kill} from an abort listener or a timer, where a throw would be uncaught. */
  #killQuietly(signal: "SIGTERM" | "SIGKILL"): void {
    try {
      this.kill(signal);
    } catch {
      // EPERM cannot happen for our own process group; nothing else is worth crashing for.
    }
  }

  async #end(): Promise<void> {
    await this.#endGroup();
    await this.#endStrays();
  }

  async #endGroup(): Promise<void> {
    this.#killQuietly("SIGTERM");
    let giveUpAt = Number.POSITIVE_INFINITY;
    let delay = 1;
    while (await this.#groupAlive()) {
      const now = Date.now();
      if (giveUpAt === Number.POSITIVE_INFINITY && now >= this.#killAt) {
        this.#killQuietly("SIGKILL");
        giveUpAt = now + KILL_CONFIRM_MS;
      }
      if (now >= giveUpAt) return;
      const untilKill = giveUpAt === Number.POSITIVE_INFINITY ? this.#killAt - now : delay;
      const wait = Math.max(1, Math.min(delay, untilKill));
      await new Promise((resolve) => setTimeout(resolve, wait));
      delay = Math.min(delay * 2, 50);
    }
  }

  /**
   * Ends the processes outside the group that carry this child's marker: its descendants that
   * called `setsid`. SIGTERM, then SIGKILL once the child's grace is over (at once when it is),
   * until a scan finds none (a few rounds: one may have forked meanwhile).
   */
  async #endStrays(): Promise<void> {
    // A process SIGKILL could not end at once (stuck in the kernel) is not waited for twice.
    const ended = new Set<number>();
    for (let round = 0; round < STRAY_ROUNDS; round++) {
      const strays = (await this.#findStrays()).filter((pid) => !ended.has(pid));
      if (strays.length === 0) return;
      for (const pid of strays) ended.add(pid);
      await terminatePids(strays, Math.max(0, this.#killAt - Date.now()));
    }
  }

  #groupAlive(): Promise<boolean> | boolean {
    // Until its exit is seen, the leader (alive, or a zombie about to be reaped) keeps the group.
    if (!this.#leaderExited) {
      try {
        process.kill(-this.pid, 0);
        return true;
      } catch {
        return false;
      }
    }
    return groupAlive(this.pid);
  }
}

/**
 * A web byte stream over a Node writable: each write resolves once Node has handed the bytes on
 * (so the pipe's backpressure reaches the writer), rejects once the other end is closed; closing
 * ends the pipe, aborting destroys it.
 */
function toWebWritable(writable: Writable): WritableStream<Uint8Array> {
  // Without a listener an EPIPE (the child closed its end) would be an uncaught error event.
  let failure: unknown;
  writable.on("error", (error: Error) => failure ??= error);
  const ended = (): Error =>
    failure instanceof Error
      ? failure
      : new Error("Cannot write to the process: its stdin is closed");
  return new WritableStream<Uint8Array>({
    write(chunk): Promise<void> {
      if (failure !== undefined || writable.destroyed) return Promise.reject(ended());
      return new Promise((resolve, reject) => {
        writable.write(chunk, (error) => error ? reject(error) : resolve());
      });
    },
    close(): Promise<void> {
      if (writable.destroyed) return Promise.resolve();
      return new Promise((resolve) => {
        const done = (): void => {
          writable.off("finish", done);
          writable.off("close", done);
          writable.off("error", done);
          resolve();
        };
        writable.once("finish", done);
        writable.once("close", done);
        writable.once("error", done);
        writable.end();
      });
    },
    abort(): void {
      writable.destroy();
    },
  });
}

/** A web byte stream over a Node readable, with backpressure and cancellation. */
function toWebStream(readable: Readable): ReadableStream<Uint8Array> {
  let done = false;
  return new ReadableStream<Uint8Array>({
    start(controller): void {
      readable.on("data", (chunk: Uint8Array) => {
        if (done) return;
        controller.enqueue(new Uint8Array(chunk));
        if ((controller.desiredSize ?? 1) <= 0) readable.pause();
      });
      const finish = (): void => {
        if (done) return;
        done = true;
        controller.close();
      };
      readable.once("end", finish);
      // Destroyed without an end (e.g. after a kill): what arrived is all there is.
      readable.once("close", finish);
      readable.once("error", finish);
    },
    pull(): void {
      readable.resume();
    },
    cancel(): void {
      done = true;
      readable.destroy();
    },
  }, { highWaterMark: STREAM_HIGH_WATER_BYTES, size: (chunk) => chunk.byteLength });
}
