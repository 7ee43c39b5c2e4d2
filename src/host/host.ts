/**
 * Everything the server needs from the operating system, behind one interface so the rest of the
 * code uses only web APIs. Implemented once with `node:` built-ins, which Deno, Node.js and Bun
 * all provide.
 *
 * @module
 */

/** What {@link Host.stat} reports. */
export interface FileInfo {
  /** Whether it is a regular file (after following a symlink). */
  readonly isFile: boolean;
  /** Whether it is a directory (after following a symlink). */
  readonly isDirectory: boolean;
  /** Whether the path itself is a symlink. */
  readonly isSymlink: boolean;
  /** Size in bytes. */
  readonly size: number;
  /** Last modification time, in milliseconds since the epoch. */
  readonly mtimeMs: number;
}

/** One directory entry. */
export interface DirEntry {
  /** File name, without the directory. */
  readonly name: string;
  /** Whether it is a regular file. */
  readonly isFile: boolean;
  /** Whether it is a directory. */
  readonly isDirectory: boolean;
  /** Whether it is a symlink. */
  readonly isSymlink: boolean;
}

/** Options shared by the file operations. */
export interface HostOptions {
  /** Aborts the operation. */
  readonly signal?: AbortSignal;
}

/** Options for {@link Host.spawn}. */
export interface SpawnOptions {
  /** Absolute working directory. */
  readonly cwd: string;
  /** Extra environment variables on top of the host's environment. */
  readonly env?: Readonly<Record<string, string>>;
  /** Aborting kills the whole process group (SIGTERM, then SIGKILL after a grace period). */
  readonly signal?: AbortSignal;
}

/** A running child process (the leader of its own process group). */
export interface HostProcess {
  /** Process id (also the process group id). */
  readonly pid: number;
  /** The process's standard output. */
  readonly stdout: ReadableStream<Uint8Array>;
  /** The process's standard error. */
  readonly stderr: ReadableStream<Uint8Array>;
  /** Resolves when the process has exited and its output streams are closed. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: string | null }>;
  /** Kills the whole process group. */
  kill(signal?: "SIGTERM" | "SIGKILL"): void;
}

/** Options for {@link Host.appendFile}. */
export interface AppendFileOptions {
  /** Flush the data to disk (`fdatasync`) before resolving. */
  readonly sync: boolean;
  /**
   * Create the file when it does not exist; when `false` a missing file rejects (`ENOENT`).
   * @default {true}
   */
  readonly create?: boolean;
}

/** Options for {@link Host.createExclusive} and {@link Host.truncate}. */
export interface SyncOptions {
  /**
   * Flush the data to disk (`fdatasync`) before resolving.
   * @default {false}
   */
  readonly sync?: boolean;
}

/** The operating system, as the server sees it. */
export interface Host {
  /** Reads a whole file. */
  readFile(path: string, options?: HostOptions): Promise<Uint8Array>;
  /** Reads a whole file as UTF-8. */
  readTextFile(path: string, options?: HostOptions): Promise<string>;
  /** Writes through a temporary file and a rename, so readers never see half a file. */
  writeFileAtomic(path: string, data: Uint8Array | string, options?: HostOptions): Promise<void>;
  /** Information about `path`, or `undefined` when it does not exist. */
  stat(path: string): Promise<FileInfo | undefined>;
  /** The canonical path, with symlinks resolved. Rejects when `path` does not exist. */
  realpath(path: string): Promise<string>;
  /** Lists a directory's entries. */
  readDir(path: string): Promise<DirEntry[]>;
  /** Creates a directory and any missing parents; an existing one is fine. */
  mkdir(path: string): Promise<void>;
  /** Removes a file or directory tree; a missing path is fine. */
  remove(path: string): Promise<void>;
  /**
   * Starts a process in a new process group, stdin closed.
   * Rejects when it cannot be started (e.g. the command does not exist).
   */
  spawn(command: string, args: readonly string[], options: SpawnOptions): Promise<HostProcess>;
  /**
   * Makes sure the processes started from now on die with this process, even when it is killed
   * with SIGKILL (a supervisor process; on Linux also a record in `dir` that a later call reaps),
   * and kills what earlier, dead hosts recorded in `dir` left behind.
   * Resolves with how many leftovers were killed.
   */
  superviseProcesses(dir: string): Promise<number>;
  /**
   * Ends every process started by {@link spawn} that is still running (SIGTERM, then SIGKILL after
   * `graceMs`, default 2000), resolves once they are gone, and refuses to start more.
   */
  stopProcesses(options?: { readonly graceMs?: number }): Promise<void>;
  /** The user's home directory. */
  homeDir(): string;
  /** The process's working directory. */
  cwd(): string;
  /** An environment variable. */
  env(name: string): string | undefined;
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Appends `data` with a single `write` on a file opened with `O_APPEND`, so concurrent appenders
   * never interleave: the data lands whole, or torn at its end by a crash.
   */
  appendFile(path: string, data: string | Uint8Array, options: AppendFileOptions): Promise<void>;
  /**
   * {@link appendFile} done synchronously (open, one `write`, close; no flush): the data is in the
   * operating system's hands when this returns, so a crash of this process cannot lose it. Throws
   * on failure. Pair with {@link syncFile} for durability.
   */
  appendFileSync(
    path: string,
    data: string | Uint8Array,
    options?: { readonly create?: boolean },
  ): void;
  /** Flushes a file's data to disk (`fdatasync`), e.g. after {@link appendFileSync}. */
  syncFile(path: string): Promise<void>;
  /** Closes whatever {@link appendFileSync} keeps open for `path` (no more appends expected). */
  forgetFile(path: string): void;
  /** Creates `path` with `data` only if it does not exist (`O_CREAT|O_EXCL`); `false` if it does. */
  createExclusive(path: string, data: string | Uint8Array, options?: SyncOptions): Promise<boolean>;
  /** Renames atomically, replacing `to` if it exists. */
  rename(from: string, to: string): Promise<void>;
  /** Cuts a file to `length` bytes. */
  truncate(path: string, length: number, options?: SyncOptions): Promise<void>;
  /** Bytes `start` (inclusive) to `end` (exclusive, default: the end of the file) of a file. */
  readFileRange(path: string, start: number, end?: number): Promise<Uint8Array>;
  /** Flushes a directory's entries (after a create or rename) to disk; best effort, never rejects. */
  syncDir(path: string): Promise<void>;
  /** This process's id. */
  pid(): number;
  /** This machine's host name. */
  hostname(): string;
  /** Whether a process with this id runs on this machine; zombies count as dead. */
  isProcessAlive(pid: number): boolean;
}
