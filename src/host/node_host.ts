/**
 * The {@link Host} on `node:` built-ins, composed of its parts: the files (`./node_files.ts`),
 * the durable files (`./node_durable_files.ts`) and the processes (`./node_processes.ts`), with
 * the environment and the clock here.
 *
 * What serving needs before its first session (the environment, the home and working
 * directories) is here at once; the file system (`./_fs.ts`) and the processes
 * (`./node_processes.ts`, with the process guard) are loaded on first use.
 *
 * @module
 */
import * as os from "node:os";
import process from "node:process";
import { fsPromises, fsSync, preloadFs } from "./_fs.ts";
import { NodeDurableFiles } from "./node_durable_files.ts";
import { NodeFiles } from "./node_files.ts";
import { lazyImport } from "../util/lazy_import.ts";
import type * as NodeProcessesModule from "./node_processes.ts";
import type { NodeProcesses } from "./node_processes.ts";
import type {
  AppendFileOptions,
  AppendFileSyncOptions,
  DirEntry,
  FileIdentity,
  FileInfo,
  Host,
  HostOptions,
  HostProcess,
  PipedHostProcess,
  ProbeResult,
  SpawnOptions,
  SuperviseOptions,
  SyncOptions,
} from "./host.ts";

/**
 * The {@link Host} on `node:` built-ins; works unchanged on Deno, Node.js and Bun. Each concern
 * is a part of its own, which the host hands every call to: the durable files keep the append
 * descriptors, which the plain files have them let go of before a path is replaced or removed.
 *
 * @example Reading a file
 * ```ts ignore
 * import { NodeHost } from "./node_host.ts";
 * const text = await new NodeHost().readTextFile("/etc/hostname");
 * ```
 */
export class NodeHost implements Host {
  readonly #env: Readonly<Record<string, string | undefined>>;
  readonly #durable: NodeDurableFiles = new NodeDurableFiles();
  readonly #files: NodeFiles = new NodeFiles(this.#durable);
  #processes: Promise<NodeProcesses> | undefined;
  /** Where {@link superviseProcesses} keeps records, once it is called. */
  #superviseDir: string | undefined;
  /** The first supervision (and its reaping), once the process part has it. */
  #supervision: Promise<number> | undefined;
  /** Set by {@link stopProcesses} before the process part was loaded: nothing may start now. */
  #stoppedEarly = false;

  /**
   * Creates a host.
   *
   * @param env The environment to expose (defaults to the process environment)
   */
  constructor(env?: Readonly<Record<string, string | undefined>>) {
    this.#env = env ?? process.env;
    preloadFs();
  }

  /** The process part, loaded by the first process started or supervised. */
  #loadProcesses(): Promise<NodeProcesses> {
    if (this.#processes) return this.#processes;
    const loading = lazyImport<typeof NodeProcessesModule>(import("./node_processes" + ".ts"));
    this.#processes = loading.then(({ NodeProcesses }) => new NodeProcesses(this.#env));
    return this.#processes;
  }

  /** Reads a whole file. */
  readFile(file: string, options?: HostOptions): Promise<Uint8Array> {
    return this.#files.readFile(file, options);
  }

  /** Reads a whole file as UTF-8. */
  readTextFile(file: string, options?: HostOptions): Promise<string> {
    return this.#files.readTextFile(file, options);
  }

  /** Bytes `start` to `end` (exclusive; default the end) of a file; see {@link NodeFiles.readFileRange}. */
  readFileRange(file: string, start: number, end?: number): Promise<Uint8Array> {
    return this.#files.readFileRange(file, start, end);
  }

  /** Writes through a temporary sibling and a rename. */
  writeFileAtomic(file: string, data: Uint8Array | string, options?: HostOptions): Promise<void> {
    return this.#files.writeFileAtomic(file, data, options);
  }

  /** {@link stat}, synchronously. */
  statSync(file: string): FileInfo | undefined {
    return this.#files.statSync(file);
  }

  /** {@link realpath}, synchronously. */
  realpathSync(file: string): string {
    return this.#files.realpathSync(file);
  }

  /** Stats without following a final symlink's absence into an error. */
  stat(file: string): Promise<FileInfo | undefined> {
    return this.#files.stat(file);
  }

  /** Resolves symlinks. */
  realpath(file: string): Promise<string> {
    return this.#files.realpath(file);
  }

  /** Lists a directory. */
  readDir(dir: string): Promise<DirEntry[]> {
    return this.#files.readDir(dir);
  }

  /** Creates a directory and its parents; see {@link NodeFiles.mkdir}. */
  mkdir(dir: string): Promise<void> {
    return this.#files.mkdir(dir);
  }

  /** Removes a file or a directory tree; a missing path is fine. */
  remove(file: string): Promise<void> {
    return this.#files.remove(file);
  }

  /** Renames atomically, replacing `to`. */
  rename(from: string, to: string): Promise<void> {
    return this.#files.rename(from, to);
  }
  /**
   * Starts a process in its own process group; see {@link NodeProcesses.spawn}.
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
    if (this.#stoppedEarly) {
      return Promise.reject(new Error(`Cannot start "${command}": the host is shutting down`));
    }
    return this.#loadProcesses().then((processes) => {
      // Supervised from the first start on once asked for, even when this start loaded the part.
      if (this.#superviseDir !== undefined && !this.#supervision) {
        this.#supervision = processes.superviseProcesses(this.#superviseDir);
        this.#supervision.catch(() => {});
      }
      return processes.spawn(command, args, options);
    });
  }

  /**
   * Runs a short program to its end with `node:child_process` alone (no process group, no
   * supervision, nothing of `./node_processes.ts` loaded); SIGKILL after `timeoutMs`.
   *
   * @param command The program
   * @param args Its arguments
   * @param options `timeoutMs`: when it is killed
   * @returns Its exit code and stderr; rejects when it cannot be started
   */
  async probe(
    command: string,
    args: readonly string[],
    options: { readonly timeoutMs: number },
  ): Promise<ProbeResult> {
    const { spawn } = await import("node:child_process");
    return await new Promise<ProbeResult>((resolve, reject) => {
      const child = spawn(command, args, { stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs);
      child.stderr?.setEncoding("utf8");
      child.stderr?.on("data", (text: string) => {
        if (stderr.length < 65_536) stderr += text;
      });
      child.once("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once("close", (code) => {
        clearTimeout(timer);
        resolve({ code, stderr });
      });
    });
  }

  /**
   * Makes sure the processes started from now on die with this process; see
   * {@link NodeProcesses.superviseProcesses}. The directory is taken at once, so every process
   * started from now on is supervised; with `reapAfter`, loading the process part and reaping wait
   * for it (unless a process is started first, which does both).
   *
   * @param dir The directory for records; created when needed
   * @param options `reapAfter`: what the reaping waits for
   * @returns How many leftover processes or groups of dead hosts were killed
   */
  superviseProcesses(dir: string, options?: SuperviseOptions): Promise<number> {
    this.#superviseDir ??= dir;
    const reap = async (): Promise<number> => {
      // A process started meanwhile reaped this directory already.
      if (this.#supervision && dir === this.#superviseDir) return await this.#supervision;
      // Shut down before the reaping was due: nothing may start, and nothing is loaded for it.
      if (this.#stoppedEarly) return 0;
      // No record (no host died with processes running): nothing to reap, nothing to load; the
      // first process started sets up the supervision.
      if (!this.#processes && !(await hasRecords(dir))) return 0;
      const processes = await this.#loadProcesses();
      const supervision = processes.superviseProcesses(dir);
      this.#supervision ??= supervision;
      return await supervision;
    };
    const after = options?.reapAfter;
    return after ? after.then(reap, reap) : reap();
  }

  /**
   * Ends every process this host started and refuses to start more; see
   * {@link NodeProcesses.stopProcesses}.
   *
   * @param options `graceMs`: milliseconds between SIGTERM and SIGKILL (default 2000)
   */
  stopProcesses(options?: { readonly graceMs?: number }): Promise<void> {
    if (!this.#processes) {
      // Nothing was ever started; nothing may start from now on.
      this.#stoppedEarly = true;
      return Promise.resolve();
    }
    return this.#processes.then((processes) => processes.stopProcesses(options));
  }

  /** Appends with one `write` on an `O_APPEND` descriptor; see {@link NodeDurableFiles.appendFile}. */
  appendFile(file: string, data: string | Uint8Array, options: AppendFileOptions): Promise<void> {
    return this.#durable.appendFile(file, data, options);
  }

  /** Appends synchronously, no flush; see {@link NodeDurableFiles.appendFileSync}. */
  appendFileSync(file: string, data: string | Uint8Array, options?: AppendFileSyncOptions): void {
    this.#durable.appendFileSync(file, data, options);
  }

  /** Removes a file whose content is `expected`, synchronously. */
  removeIfContentSync(file: string, expected: string): boolean {
    return this.#durable.removeIfContentSync(file, expected);
  }

  /** Removes `file` if it is still the file `expected` (device and inode). */
  removeIfSameFileSync(file: string, expected: FileIdentity): boolean {
    return this.#durable.removeIfSameFileSync(file, expected);
  }

  /** Closes what {@link appendFileSync} keeps open for `file`. */
  forgetFile(file: string): void {
    this.#durable.forgetFile(file);
  }

  /** `fdatasync`s a file; see {@link NodeDurableFiles.syncFile}. */
  syncFile(file: string): Promise<void> {
    return this.#durable.syncFile(file);
  }

  /** Creates `file` with `data` unless it exists; see {@link NodeDurableFiles.createExclusive}. */
  createExclusive(
    file: string,
    data: string | Uint8Array,
    options?: SyncOptions,
  ): Promise<boolean> {
    return this.#durable.createExclusive(file, data, options);
  }

  /** Links `file` as `existing`'s second name unless `file` exists (`false` then). */
  linkExclusive(existing: string, file: string): Promise<boolean> {
    return this.#durable.linkExclusive(existing, file);
  }

  /** Sets `file`'s modification and access times to now. */
  touch(file: string): Promise<void> {
    return this.#durable.touch(file);
  }

  /** Cuts `file` to `length` bytes, then `fdatasync` when `options.sync`. */
  truncate(file: string, length: number, options?: SyncOptions): Promise<void> {
    return this.#durable.truncate(file, length, options);
  }

  /** `fsync`s a directory (best effort, never rejects). */
  syncDir(dir: string): Promise<void> {
    return this.#durable.syncDir(dir);
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
      const stat = fsSync().readFileSync(`/proc/${pid}/stat`, "utf8");
      return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
    } catch {
      return true;
    }
  }

  /** Milliseconds since the epoch. */
  now(): number {
    return Date.now();
  }
}

/**
 * Whether `dir` holds a record of processes (`<token>.procs`, see `ProcessRecord`): what a host
 * that died left for reaping. A missing directory holds none.
 */
async function hasRecords(dir: string): Promise<boolean> {
  let names: string[];
  try {
    // Synchronous: `node:fs` is loaded by then (the first session's path checks), and on Deno
    // loading `node:fs/promises` for this one call would cost more than the call.
    names = fsSync().readdirSync(dir);
  } catch (error) {
    // No directory, no records; `node:fs` not loaded yet (Node.js before 20.16): ask again.
    if (typeof (error as { code?: unknown } | null)?.code === "string") return false;
    names = await (await fsPromises()).readdir(dir).catch(() => []);
  }
  return names.some((name) => name.endsWith(".procs"));
}
