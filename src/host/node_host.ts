import * as childProcess from "node:child_process";
import { closeSync, fstatSync, openSync, readFileSync, writeSync } from "node:fs";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import process from "node:process";
import type { Readable } from "node:stream";
import {
  findOwned,
  groupAlive,
  ownerVariable,
  ProcessRecord,
  ProcessSupervisor,
  reapRecords,
  terminatePids,
} from "./process_guard.ts";
import type {
  AppendFileOptions,
  DirEntry,
  FileInfo,
  Host,
  HostOptions,
  HostProcess,
  SpawnOptions,
  SyncOptions,
} from "./host.ts";

/** Most append descriptors kept open at once. */
const APPEND_FDS = 128;

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
/** Bytes a process's output stream buffers before the pipe is paused. */
const STREAM_HIGH_WATER_BYTES = 64 * 1024;

/**
 * The {@link Host} on `node:` built-ins; works unchanged on Deno, Node.js and Bun.
 *
 * @example Reading a file
 * ```ts ignore
 * import { NodeHost } from "./node_host.ts";
 * const text = await new NodeHost().readTextFile("/etc/hostname");
 * ```
 */
export class NodeHost implements Host {
  readonly #env: Readonly<Record<string, string | undefined>>;
  readonly #appendFds = new Map<string, number>();
  readonly #checkedAt = new Map<string, number>();
  /** Marks everything this host starts (see process_guard.ts). */
  readonly #token = crypto.randomUUID().replaceAll("-", "");
  /** Processes started and not yet settled (their group confirmed gone). */
  readonly #processes = new Set<NodeHostProcess>();
  #supervisor: ProcessSupervisor | undefined;
  #record: ProcessRecord | undefined;
  #stopping: Promise<void> | undefined;

  /**
   * Creates a host.
   *
   * @param env The environment to expose (defaults to the process environment)
   */
  constructor(env?: Readonly<Record<string, string | undefined>>) {
    this.#env = env ?? process.env;
  }

  /** Reads a whole file. */
  async readFile(file: string, options?: HostOptions): Promise<Uint8Array> {
    const buffer = await fs.readFile(file, options?.signal ? { signal: options.signal } : {});
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  }

  /** Reads a whole file as UTF-8. */
  readTextFile(file: string, options?: HostOptions): Promise<string> {
    return fs.readFile(file, {
      encoding: "utf8",
      ...(options?.signal ? { signal: options.signal } : {}),
    });
  }

  /** Writes through a temporary sibling and a rename. */
  async writeFileAtomic(
    file: string,
    data: Uint8Array | string,
    options?: HostOptions,
  ): Promise<void> {
    const temp = path.join(
      path.dirname(file),
      `.${path.basename(file)}.${crypto.randomUUID()}.tmp`,
    );
    try {
      await fs.writeFile(temp, data, options?.signal ? { signal: options.signal } : {});
      this.#forget(file);
      await fs.rename(temp, file);
    } catch (error) {
      await fs.rm(temp, { force: true });
      throw error;
    }
  }

  /** Stats without following a final symlink's absence into an error. */
  async stat(file: string): Promise<FileInfo | undefined> {
    try {
      const link = await fs.lstat(file);
      const info = link.isSymbolicLink() ? await fs.stat(file) : link;
      return {
        isFile: info.isFile(),
        isDirectory: info.isDirectory(),
        isSymlink: link.isSymbolicLink(),
        size: info.size,
        mtimeMs: info.mtimeMs,
      };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** Resolves symlinks. */
  realpath(file: string): Promise<string> {
    return fs.realpath(file);
  }

  /** Lists a directory. */
  async readDir(dir: string): Promise<DirEntry[]> {
    const entries = await fs.readdir(dir, { withFileTypes: true });
    return entries.map((entry) => ({
      name: entry.name,
      isFile: entry.isFile(),
      isDirectory: entry.isDirectory(),
      isSymlink: entry.isSymbolicLink(),
    }));
  }

  /** Creates a directory and its parents. */
  async mkdir(dir: string): Promise<void> {
    await fs.mkdir(dir, { recursive: true });
  }

  /** Removes a file or a directory tree; a missing path is fine. */
  async remove(file: string): Promise<void> {
    for (const cached of [...this.#appendFds.keys()]) {
      if (cached === file || cached.startsWith(`${file}/`)) this.#forget(cached);
    }
    await fs.rm(file, { recursive: true, force: true });
  }

  /**
   * Starts `command` in its own process group (`detached`), stdin ignored, output piped, with
   * `ACP_HARNESS_OWNER_<token>=1` added to its environment (see {@link superviseProcesses}).
   *
   * Aborting `options.signal` sends SIGTERM to the group and SIGKILL 2 s later if it has not
   * ended. When the process itself exits, whatever is left in its group (background jobs) gets
   * SIGTERM, and SIGKILL 1 s later. `exited` settles once the group is gone and both output
   * streams are closed: read or cancel them.
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
   * @param command The executable (looked up on `PATH` when it has no slash)
   * @param args Its arguments
   * @param options Working directory, extra environment, abort signal
   * @returns The running process, once it has started
   */
  spawn(
    command: string,
    args: readonly string[],
    options: SpawnOptions,
  ): Promise<HostProcess> {
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#stopping) {
      return Promise.reject(new Error(`Cannot start "${command}": the host is shutting down`));
    }
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(this.#env)) {
      if (value !== undefined) env[name] = value;
    }
    Object.assign(env, options.env);
    env[ownerVariable(this.#token)] = "1";
    // Running before the command is, so that even a SIGKILL right after the spawn is covered.
    this.#supervisor?.start();
    return new Promise((resolve, reject) => {
      let child: childProcess.ChildProcessByStdio<null, Readable, Readable>;
      try {
        child = childProcess.spawn(command, [...args], {
          cwd: options.cwd,
          env,
          detached: true,
          stdio: ["ignore", "pipe", "pipe"],
        });
      } catch (error) {
        reject(error);
        return;
      }
      const onError = (error: Error): void => {
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
        const started = new NodeHostProcess(child, signal, () => {
          this.#processes.delete(started);
          this.#supervisor?.remove(pgid);
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
    // Descendants that left their group (setsid) but kept the environment.
    await terminatePids(await findOwned(this.#token), Math.max(0, deadline - Date.now()));
    await this.#supervisor?.close();
    await this.#record?.remove();
  }

  /** The user's home directory. */
  homeDir(): string {
    return os.homedir();
  }

  /** The process's working directory. */
  cwd(): string {
    return process.cwd();
  }

  /** An environment variable. */
  env(name: string): string | undefined {
    return this.#env[name];
  }

  /** Milliseconds since the epoch. */
  now(): number {
    return Date.now();
  }

  /**
   * Appends with one `write` on a descriptor opened with `O_APPEND`, then `fdatasync` when
   * `options.sync`. A short write (only when the disk is full) rejects: the file then has a torn
   * tail, which readers of append-only logs must tolerate.
   *
   * @example Appending a line durably
   * ```ts ignore
   * import { NodeHost } from "./node_host.ts";
   * await new NodeHost().appendFile("/tmp/log.jsonl", '{"a":1}\n', { sync: true });
   * ```
   *
   * @param file The file
   * @param data The bytes (strings are UTF-8 encoded)
   * @param options `sync` to flush; `create: false` to reject when the file is missing
   */
  async appendFile(
    file: string,
    data: string | Uint8Array,
    options: AppendFileOptions,
  ): Promise<void> {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    const flags = fs.constants.O_WRONLY | fs.constants.O_APPEND |
      (options.create === false ? 0 : fs.constants.O_CREAT);
    const handle = await fs.open(file, flags, 0o644);
    try {
      const { bytesWritten } = await handle.write(bytes, 0, bytes.byteLength);
      if (bytesWritten !== bytes.byteLength) {
        throw new Error(
          `Cannot append to "${file}": wrote ${bytesWritten} of ${bytes.byteLength} bytes`,
        );
      }
      if (options.sync) await handle.datasync();
    } finally {
      await handle.close();
    }
  }

  /**
   * Appends synchronously with one `write` on a descriptor opened with `O_APPEND`; no flush.
   *
   * @example Appending a record that must survive a crash of this process
   * ```ts ignore
   * import { NodeHost } from "./node_host.ts";
   * const host = new NodeHost();
   * host.appendFileSync("/tmp/log.jsonl", '{"a":1}\n', { create: false });
   * await host.syncFile("/tmp/log.jsonl"); // and of the machine
   * ```
   *
   * @param file The file
   * @param data The bytes (strings are UTF-8 encoded)
   * @param options `create: false` to throw when the file is missing
   */
  appendFileSync(
    file: string,
    data: string | Uint8Array,
    options?: { readonly create?: boolean },
  ): void {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    // Append descriptors stay open (a log is appended to many times); they are dropped when the
    // path is removed or replaced, and the oldest is closed past APPEND_FDS.
    let fd = this.#appendFds.get(file);
    // A cached descriptor of a file someone has since unlinked would write into the void: check
    // (at most once a second per file, the check costs a system call).
    const now = Date.now();
    if (fd !== undefined && now - (this.#checkedAt.get(file) ?? 0) >= 1000) {
      this.#checkedAt.set(file, now);
      if (fstatSync(fd).nlink === 0) {
        this.#forget(file);
        fd = undefined;
      }
    }
    if (fd === undefined) {
      const flags = fs.constants.O_WRONLY | fs.constants.O_APPEND |
        (options?.create === false ? 0 : fs.constants.O_CREAT);
      fd = openSync(file, flags, 0o644);
      this.#appendFds.set(file, fd);
      if (this.#appendFds.size > APPEND_FDS) {
        const [oldest] = this.#appendFds.keys();
        if (oldest !== undefined) this.#forget(oldest);
      }
    }
    try {
      const written = writeSync(fd, bytes, 0, bytes.byteLength);
      if (written !== bytes.byteLength) {
        throw new Error(
          `Cannot append to "${file}": wrote ${written} of ${bytes.byteLength} bytes`,
        );
      }
    } catch (error) {
      this.#forget(file);
      throw error;
    }
  }

  /** Closes what {@link appendFileSync} keeps open for `file`. */
  forgetFile(file: string): void {
    this.#forget(file);
  }

  /** Closes a cached append descriptor, if any. */
  #forget(file: string): void {
    const fd = this.#appendFds.get(file);
    this.#checkedAt.delete(file);
    if (fd === undefined) return;
    this.#appendFds.delete(file);
    try {
      closeSync(fd);
    } catch {
      // Already closed.
    }
  }

  /** `fdatasync`s a file through a new descriptor (the flush covers the file, not a descriptor). */
  async syncFile(file: string): Promise<void> {
    // Through its own descriptor: a cached append descriptor may be closed (evicted) meanwhile.
    const handle = await fs.open(file, "r");
    try {
      await handle.datasync();
    } finally {
      await handle.close();
    }
  }

  /**
   * Creates `file` with `data` unless it exists (`O_CREAT|O_EXCL`).
   *
   * @example Taking a lock file
   * ```ts ignore
   * import { NodeHost } from "./node_host.ts";
   * const mine = await new NodeHost().createExclusive("/tmp/x.lock", "{}"); // false if taken
   * ```
   *
   * @param file The file to create
   * @param data Its content
   * @param options `sync` to flush the content before resolving
   * @returns `true` when created, `false` when it already existed
   */
  async createExclusive(
    file: string,
    data: string | Uint8Array,
    options?: SyncOptions,
  ): Promise<boolean> {
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(file, "wx", 0o644);
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code === "EEXIST") return false;
      throw error;
    }
    try {
      await handle.writeFile(data);
      if (options?.sync) await handle.datasync();
    } catch (error) {
      await handle.close().catch(() => {});
      await fs.rm(file, { force: true });
      throw error;
    }
    await handle.close();
    return true;
  }

  /** Renames atomically, replacing `to`. */
  rename(from: string, to: string): Promise<void> {
    this.#forget(from);
    this.#forget(to);
    return fs.rename(from, to);
  }

  /** Cuts `file` to `length` bytes, then `fdatasync` when `options.sync`. */
  async truncate(file: string, length: number, options?: SyncOptions): Promise<void> {
    const handle = await fs.open(file, "r+");
    try {
      await handle.truncate(length);
      if (options?.sync) await handle.datasync();
    } finally {
      await handle.close();
    }
  }

  /**
   * Reads bytes `start` to `end` (exclusive; default the current end of the file). Returns fewer
   * bytes when the file is shorter.
   *
   * @example Reading what was appended since the last read
   * ```ts ignore
   * import { NodeHost } from "./node_host.ts";
   * const tail = await new NodeHost().readFileRange("/tmp/log.jsonl", 1024);
   * ```
   *
   * @param file The file
   * @param start First byte
   * @param end Byte after the last one
   * @returns The bytes read
   */
  async readFileRange(file: string, start: number, end?: number): Promise<Uint8Array> {
    const handle = await fs.open(file, "r");
    try {
      const stop = end ?? (await handle.stat()).size;
      const buffer = new Uint8Array(Math.max(0, stop - start));
      let filled = 0;
      while (filled < buffer.byteLength) {
        const { bytesRead } = await handle.read(
          buffer,
          filled,
          buffer.byteLength - filled,
          start + filled,
        );
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      return filled === buffer.byteLength ? buffer : buffer.subarray(0, filled);
    } finally {
      await handle.close();
    }
  }

  /** `fsync`s a directory so renames and creates in it survive a power loss; errors are ignored. */
  async syncDir(dir: string): Promise<void> {
    try {
      const handle = await fs.open(dir, "r");
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    } catch {
      // Best effort: some platforms and file systems cannot fsync a directory.
    }
  }

  /** This process's id. */
  pid(): number {
    return process.pid;
  }

  /** This machine's host name. */
  hostname(): string {
    return os.hostname();
  }

  /**
   * `kill(pid, 0)`: `EPERM` means it exists (owned by someone else). On Linux a zombie (state `Z`
   * in `/proc/<pid>/stat`) counts as dead: an init that does not reap leaves dead processes there.
   *
   * @param pid A process id
   * @returns Whether it is alive
   */
  isProcessAlive(pid: number): boolean {
    if (!Number.isSafeInteger(pid) || pid <= 0) return false;
    try {
      process.kill(pid, 0);
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code !== "EPERM") return false;
    }
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
    } catch {
      return true;
    }
  }
}

/** A child started by {@link NodeHost.spawn}, the leader of its own process group. */
class NodeHostProcess implements HostProcess {
  readonly pid: number;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  readonly exited: Promise<{ readonly code: number | null; readonly signal: string | null }>;
  readonly #child: childProcess.ChildProcessByStdio<null, Readable, Readable>;
  #leaderExited = false;
  #settled = false;
  /** When the group gets SIGKILL if it is still there. */
  #killAt = Number.POSITIVE_INFINITY;
  #ending: Promise<void> | undefined;

  constructor(
    child: childProcess.ChildProcessByStdio<null, Readable, Readable>,
    signal: AbortSignal | undefined,
    onSettled: () => void,
  ) {
    this.#child = child;
    this.pid = child.pid as number;
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
      signal?.removeEventListener("abort", onAbort);
      this.#settled = true;
      onSettled();
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
   * asked for less), until the group is confirmed gone.
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
    this.#killQuietly("SIGTERM");
    let giveUpAt = Number.POSITIVE_INFINITY;
    let delay = 1;
    while (this.#groupAlive()) {
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

  #groupAlive(): boolean {
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

function isNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}
