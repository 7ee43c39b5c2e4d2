/**
 * The {@link Host} on `node:` built-ins: files, durable files, environment and clock here, the
 * processes in node_processes.ts.
 *
 * What serving needs before its first session (the environment, the home and working
 * directories) is here at once; the file system (`./_fs.ts`) and the processes
 * (`./node_processes.ts`, with the process guard) are loaded on first use.
 *
 * @module
 */
import type * as NodeFs from "node:fs";
import type { FileHandle } from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import process from "node:process";
import { fsPromises, fsSync, preloadFs } from "./_fs.ts";
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
  SpawnOptions,
  SuperviseOptions,
  SyncOptions,
} from "./host.ts";

/** Most append descriptors kept open at once. */
const APPEND_FDS = 128;

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
  /** Append descriptors with flushes running (how many), and those to close when they end. */
  readonly #syncing = new Map<number, number>();
  readonly #closeAfterSync = new Set<number>();
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
  async readFile(file: string, options?: HostOptions): Promise<Uint8Array> {
    const fs = await fsPromises();
    const buffer = await fs.readFile(file, options?.signal ? { signal: options.signal } : {});
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  }

  /** Reads a whole file as UTF-8. */
  async readTextFile(file: string, options?: HostOptions): Promise<string> {
    const fs = await fsPromises();
    return await fs.readFile(file, {
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
    const fs = await fsPromises();
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

  /** {@link stat}, synchronously. */
  statSync(file: string): FileInfo | undefined {
    const fs = fsSync();
    try {
      // Missing is the common case (an `AGENTS.md` looked for): answered without an exception.
      const link = fs.lstatSync(file, { throwIfNoEntry: false });
      if (link === undefined) return undefined;
      const info = link.isSymbolicLink() ? fs.statSync(file, { throwIfNoEntry: false }) : link;
      return info && fileInfo(info, link.isSymbolicLink());
    } catch (error) {
      // As `stat`: a path through a file (ENOTDIR) does not exist either.
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** {@link realpath}, synchronously. */
  realpathSync(file: string): string {
    return fsSync().realpathSync.native(file);
  }

  /** Stats without following a final symlink's absence into an error. */
  async stat(file: string): Promise<FileInfo | undefined> {
    const fs = await fsPromises();
    try {
      const link = await fs.lstat(file);
      const info = link.isSymbolicLink() ? await fs.stat(file) : link;
      return fileInfo(info, link.isSymbolicLink());
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** Resolves symlinks. */
  async realpath(file: string): Promise<string> {
    return await (await fsPromises()).realpath(file);
  }

  /** Lists a directory. */
  async readDir(dir: string): Promise<DirEntry[]> {
    const entries = await (await fsPromises()).readdir(dir, { withFileTypes: true });
    return entries.map((entry) => ({
      name: entry.name,
      isFile: entry.isFile(),
      isDirectory: entry.isDirectory(),
      isSymlink: entry.isSymbolicLink(),
    }));
  }

  /**
   * Creates a directory and its parents. Level by level rather than with `recursive: true`: on
   * Node.js 20 that never settles (a loop at full CPU) for a directory under `/proc`, where
   * `mkdir` fails with ENOENT although the parent exists.
   */
  async mkdir(dir: string): Promise<void> {
    const fs = await fsPromises();
    const make = async (path: string, depth: number): Promise<void> => {
      try {
        await fs.mkdir(path);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "EEXIST") {
          if ((await fs.stat(path)).isDirectory()) return;
          throw error;
        }
        const parent = path.slice(0, path.lastIndexOf("/"));
        // The parent is made once; a second ENOENT is final (so nothing can loop).
        if (code !== "ENOENT" || parent === "" || parent === path || depth > 4096) throw error;
        await make(parent, depth + 1);
        await fs.mkdir(path).catch(async (again: NodeJS.ErrnoException) => {
          if (again.code !== "EEXIST" || !(await fs.stat(path)).isDirectory()) throw again;
        });
      }
    };
    await make(dir.length > 1 && dir.endsWith("/") ? dir.slice(0, -1) : dir, 0);
  }

  /** Removes a file or a directory tree; a missing path is fine. */
  async remove(file: string): Promise<void> {
    for (const cached of [...this.#appendFds.keys()]) {
      if (cached === file || cached.startsWith(`${file}/`)) this.#forget(cached);
    }
    await (await fsPromises()).rm(file, { recursive: true, force: true });
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
    const fs = await fsPromises();
    const flags = fs.constants.O_WRONLY | fs.constants.O_APPEND |
      (options.create === false ? 0 : fs.constants.O_CREAT);
    if (bytes.byteLength <= SMALL_WRITE_BYTES) {
      const fd = await openOffThread(file, flags);
      try {
        const written = fsSync().writeSync(fd, bytes, 0, bytes.byteLength);
        if (written !== bytes.byteLength) {
          throw new Error(
            `Cannot append to "${file}": wrote ${written} of ${bytes.byteLength} bytes`,
          );
        }
        if (options.sync) await datasyncOffThread(fd);
      } finally {
        fsSync().closeSync(fd);
      }
      return;
    }
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
    options?: AppendFileSyncOptions,
  ): void {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    const { constants, fstatSync, openSync, writeSync } = fsSync();
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
    if (options?.create === "exclusive") {
      // A new file, whatever this process cached for the path before.
      if (fd !== undefined) this.#forget(file);
      fd = undefined;
    }
    if (fd === undefined) {
      const create = options?.create ?? true;
      const flags = constants.O_WRONLY | constants.O_APPEND |
        (create === false ? 0 : constants.O_CREAT) |
        (create === "exclusive" ? constants.O_EXCL : 0);
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

  /**
   * Removes a file whose content is `expected`, synchronously.
   *
   * @param file The file (a lock file)
   * @param expected The exact content it must have
   * @returns Whether it was removed
   */
  removeIfContentSync(file: string, expected: string): boolean {
    const { readFileSync, unlinkSync } = fsSync();
    try {
      if (readFileSync(file, "utf8") !== expected) return false;
      unlinkSync(file);
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  /** Removes `file` if it is still the file `expected` (device and inode). */
  removeIfSameFileSync(
    file: string,
    expected: FileIdentity,
  ): boolean {
    const { lstatSync, unlinkSync } = fsSync();
    const info = lstatSync(file, { throwIfNoEntry: false });
    if (info === undefined || info.ino !== expected.ino || info.dev !== expected.dev) return false;
    try {
      unlinkSync(file);
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
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
    // A flush through it is running: closed when it ends (a reused number would flush another).
    if (this.#syncing.has(fd)) this.#closeAfterSync.add(fd);
    else closeQuietly(fd);
  }

  /**
   * `fdatasync`s a file (the flush covers the file, not a descriptor): through the descriptor
   * {@link appendFileSync} keeps for it, which stays open until the flush ends, else a new one.
   * Rejects (`ENOENT`) when the file was removed before the flush: its data is gone.
   */
  async syncFile(file: string): Promise<void> {
    const fd = this.#appendFds.get(file);
    if (fd !== undefined) {
      const { fdatasync, fstat } = fsSync();
      this.#syncing.set(fd, (this.#syncing.get(fd) ?? 0) + 1);
      try {
        await new Promise<void>((resolve, reject) =>
          fdatasync(fd, (error) => error ? reject(error) : resolve())
        );
        // Flushed into the void if the file was removed meanwhile (the descriptor outlives it).
        const links = await new Promise<number>((resolve, reject) =>
          fstat(fd, (error, info) => error ? reject(error) : resolve(info.nlink))
        );
        if (links === 0) {
          this.#forget(file);
          throw Object.assign(new Error(`ENOENT: "${file}" was removed before it was flushed`), {
            code: "ENOENT",
          });
        }
        return;
      } finally {
        const left = (this.#syncing.get(fd) ?? 1) - 1;
        if (left > 0) this.#syncing.set(fd, left);
        else {
          this.#syncing.delete(fd);
          if (this.#closeAfterSync.delete(fd)) closeQuietly(fd);
        }
      }
    }
    const handle = await (await fsPromises()).open(file, "r");
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
    const fs = await fsPromises();
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    if (bytes.byteLength <= SMALL_WRITE_BYTES) {
      let fd: number;
      try {
        fd = await openOffThread(
          file,
          fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL,
        );
      } catch (error) {
        if ((error as { code?: unknown } | null)?.code === "EEXIST") return false;
        throw error;
      }
      try {
        for (let offset = 0; offset < bytes.byteLength;) {
          offset += fsSync().writeSync(fd, bytes, offset, bytes.byteLength - offset);
        }
        if (options?.sync) await datasyncOffThread(fd);
      } catch (error) {
        closeQuietly(fd);
        try {
          fsSync().rmSync(file, { force: true });
        } catch {
          // The write's error is the one to report.
        }
        throw error;
      }
      fsSync().closeSync(fd);
      return true;
    }
    let handle: FileHandle;
    try {
      handle = await fs.open(file, "wx", 0o644);
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code === "EEXIST") return false;
      throw error;
    }
    try {
      await handle.writeFile(bytes);
      if (options?.sync) await handle.datasync();
    } catch (error) {
      await handle.close().catch(() => {});
      await fs.rm(file, { force: true });
      throw error;
    }
    await handle.close();
    return true;
  }

  /**
   * Links `file` as `existing`'s second name unless `file` exists (`false` then): synchronously,
   * as a link makes no inode and costs less than handing it to another thread.
   */
  async linkExclusive(existing: string, file: string): Promise<boolean> {
    await fsPromises();
    try {
      fsSync().linkSync(existing, file);
      return true;
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code === "EEXIST") return false;
      throw error;
    }
  }

  /** Sets `file`'s modification and access times to now (synchronously: one cheap call). */
  async touch(file: string): Promise<void> {
    await fsPromises();
    const now = new Date();
    fsSync().utimesSync(file, now, now);
  }

  /** Renames atomically, replacing `to`. */
  rename(from: string, to: string): Promise<void> {
    this.#forget(from);
    this.#forget(to);
    return fsPromises().then((fs) => fs.rename(from, to));
  }

  /** Cuts `file` to `length` bytes, then `fdatasync` when `options.sync`. */
  async truncate(file: string, length: number, options?: SyncOptions): Promise<void> {
    const handle = await (await fsPromises()).open(file, "r+");
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
    const handle = await (await fsPromises()).open(file, "r");
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
      const handle = await (await fsPromises()).open(dir, "r");
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
      const stat = fsSync().readFileSync(`/proc/${pid}/stat`, "utf8");
      return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
    } catch {
      return true;
    }
  }
}

function isNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/** Closes a descriptor, ignoring that it may be closed already. */
function closeQuietly(fd: number): void {
  try {
    fsSync().closeSync(fd);
  } catch {
    // Already closed.
  }
}

/**
 * Data up to this size is written synchronously once its file is open: a `write` into the page
 * cache costs microseconds, less than handing it to another thread and back. Opening (which may
 * create an inode, a millisecond of kernel time on some file systems) and flushing stay off the
 * main thread.
 */
const SMALL_WRITE_BYTES = 64 * 1024;

/** Opens `file` (mode 0644 when created) on the thread pool; resolves with the descriptor. */
function openOffThread(file: string, flags: number): Promise<number> {
  return new Promise((resolve, reject) =>
    fsSync().open(file, flags, 0o644, (error, fd) => error ? reject(error) : resolve(fd))
  );
}

/** `fdatasync` on the thread pool. */
function datasyncOffThread(fd: number): Promise<void> {
  return new Promise((resolve, reject) =>
    fsSync().fdatasync(fd, (error) => error ? reject(error) : resolve())
  );
}

/** A host's {@link FileInfo} of `node:fs` stats (`symlink`: the path itself is a link). */
function fileInfo(info: NodeFs.Stats, symlink: boolean): FileInfo {
  return {
    isFile: info.isFile(),
    isDirectory: info.isDirectory(),
    isSymlink: symlink,
    size: info.size,
    mtimeMs: info.mtimeMs,
    ino: info.ino,
    dev: info.dev,
  };
}

/**
 * Whether `dir` holds a record of processes (`<token>.procs`, see `ProcessRecord`): what a host
 * that died left for reaping. A missing directory holds none.
 */
async function hasRecords(dir: string): Promise<boolean> {
  let names: string[];
  try {
    // Synchronous: `node:fs` is loaded by then (the first session's path checks), and on Deno
    // `node:fs/promises` would cost milliseconds to load for this one call.
    names = fsSync().readdirSync(dir);
  } catch (error) {
    // No directory, no records; `node:fs` not loaded yet (Node.js before 20.16): ask again.
    if (typeof (error as { code?: unknown } | null)?.code === "string") return false;
    names = await (await fsPromises()).readdir(dir).catch(() => []);
  }
  return names.some((name) => name.endsWith(".procs"));
}
