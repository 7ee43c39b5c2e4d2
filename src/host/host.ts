/**
 * Everything the server needs from the operating system, behind small interfaces by concern
 * (files, durable files, processes, environment, clock) so the rest of the code uses only web
 * APIs and each part takes only what it needs. Implemented once with `node:` built-ins, which
 * Deno, Node.js and Bun all provide.
 *
 * @module
 */

/** Options of {@link HostProcesses.superviseProcesses}. */
export interface SuperviseOptions {
  /**
   * Reaping what dead hosts left waits until this settles, so that start-up work that cannot wait
   * goes first (loading the process part is not free, on Deno least of all). Supervision itself starts
   * at once: a process started meanwhile is supervised, and its start reaps first.
   */
  readonly reapAfter?: Promise<unknown>;
}

/** What {@link HostFiles.stat} reports. */
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
  /** The file's identity on its device (with {@link dev}), when the host knows it. */
  readonly ino?: number;
  /** The device the file is on, when the host knows it. */
  readonly dev?: number;
}

/** A file's identity: its device and inode. */
export interface FileIdentity {
  /** The device the file is on. */
  readonly dev: number;
  /** The file's inode number on that device. */
  readonly ino: number;
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

/** Options for {@link HostProcesses.spawn}. */
export interface SpawnOptions {
  /** Absolute working directory. */
  readonly cwd: string;
  /** Extra environment variables on top of the inherited environment. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The names of the host's environment variables the child inherits; the others are left out
   * (MCP servers and delegated agents get only what they need, not the server's API keys). A
   * name ending in `*` is a prefix pattern (`LC_*`). @default {every variable}
   */
  readonly inheritEnv?: readonly string[];
  /**
   * Names (or `PREFIX*` patterns) of the host's variables left out even when `inheritEnv` lets
   * them through (the server's secrets, for commands that otherwise get the user's whole
   * environment); `env` still sets them. @default {[]}
   */
  readonly excludeEnv?: readonly string[];
  /** Aborting kills the whole process group (SIGTERM, then SIGKILL after a grace period). */
  readonly signal?: AbortSignal;
  /**
   * The child's standard input: `"null"` reads nothing (`/dev/null`); `"piped"` is a pipe the
   * caller writes through {@link HostProcess.stdin} (e.g. a protocol over stdio, such as MCP).
   * @default {"null"}
   */
  readonly stdin?: "null" | "piped";
}

/** A running child process (the leader of its own process group). */
export interface HostProcess {
  /** Process id (also the process group id). */
  readonly pid: number;
  /**
   * The process's standard input when it was started with `stdin: "piped"`, else `undefined`.
   * Closing it ends the child's input; writes reject once the child has closed its end.
   */
  readonly stdin: WritableStream<Uint8Array> | undefined;
  /** The process's standard output. */
  readonly stdout: ReadableStream<Uint8Array>;
  /** The process's standard error. */
  readonly stderr: ReadableStream<Uint8Array>;
  /** Resolves when the process has exited and its output streams are closed. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: string | null }>;
  /** Kills the whole process group. */
  kill(signal?: "SIGTERM" | "SIGKILL"): void;
}

/** A {@link HostProcess} started with `stdin: "piped"`. */
export interface PipedHostProcess extends HostProcess {
  /** The process's standard input; close it to end the child's input. */
  readonly stdin: WritableStream<Uint8Array>;
}

/** Options for {@link HostDurableFiles.appendFile}. */
export interface AppendFileOptions {
  /** Flush the data to disk (`fdatasync`) before resolving. */
  readonly sync: boolean;
  /**
   * Create the file when it does not exist; when `false` a missing file rejects (`ENOENT`).
   * @default {true}
   */
  readonly create?: boolean;
}

/** Options for {@link HostDurableFiles.createExclusive} and {@link HostDurableFiles.truncate}. */
export interface SyncOptions {
  /**
   * Flush the data to disk (`fdatasync`) before resolving.
   * @default {false}
   */
  readonly sync?: boolean;
}

/** The file system: whole-file reads, atomic writes, metadata and directories. */
export interface HostFiles {
  /** Reads a whole file. */
  readFile(path: string, options?: HostOptions): Promise<Uint8Array>;
  /** Reads a whole file as UTF-8. */
  readTextFile(path: string, options?: HostOptions): Promise<string>;
  /** Bytes `start` (inclusive) to `end` (exclusive, default: the end of the file) of a file. */
  readFileRange(path: string, start: number, end?: number): Promise<Uint8Array>;
  /** Writes through a temporary file and a rename, so readers never see half a file. */
  writeFileAtomic(path: string, data: Uint8Array | string, options?: HostOptions): Promise<void>;
  /** Information about `path`, or `undefined` when it does not exist. */
  stat(path: string): Promise<FileInfo | undefined>;
  /** The canonical path, with symlinks resolved. Rejects when `path` does not exist. */
  realpath(path: string): Promise<string>;
  /**
   * {@link stat}, synchronously. Optional: for a server with one client, which checks the paths
   * that client names this way (a call costs less than handing it to another thread and back).
   */
  statSync?(path: string): FileInfo | undefined;
  /** {@link realpath}, synchronously (throws instead of rejecting). Optional, as {@link statSync}. */
  realpathSync?(path: string): string;
  /** Lists a directory's entries. */
  readDir(path: string): Promise<DirEntry[]>;
  /** Creates a directory and any missing parents; an existing one is fine. */
  mkdir(path: string): Promise<void>;
  /** Removes a file or directory tree; a missing path is fine. */
  remove(path: string): Promise<void>;
  /** Renames atomically, replacing `to` if it exists. */
  rename(from: string, to: string): Promise<void>;
}

/** Options for {@link HostDurableFiles.appendFileSync}. */
export interface AppendFileSyncOptions {
  /**
   * Whether a missing file is created: `false` throws instead, `"exclusive"` creates the file
   * and throws (`EEXIST`) when it exists.
   * @default {true}
   */
  readonly create?: boolean | "exclusive";
}

/**
 * The primitives of an append-only log and its lock files: appends that never interleave,
 * flushes to disk, exclusive creation, truncation of a torn tail.
 */
export interface HostDurableFiles {
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
  appendFileSync(path: string, data: string | Uint8Array, options?: AppendFileSyncOptions): void;
  /** Flushes a file's data to disk (`fdatasync`), e.g. after {@link appendFileSync}. */
  syncFile(path: string): Promise<void>;
  /** Closes whatever {@link appendFileSync} keeps open for `path` (no more appends expected). */
  forgetFile(path: string): void;
  /** Creates `path` with `data` only if it does not exist (`O_CREAT|O_EXCL`); `false` if it does. */
  createExclusive(path: string, data: string | Uint8Array, options?: SyncOptions): Promise<boolean>;
  /**
   * Gives the file at `existing` a second name, `path` (a hard link), only if `path` does not
   * exist: an exclusive create without a new file, which on some file systems costs far less than
   * {@link createExclusive}.
   *
   * @returns `false` if `path` exists
   * @throws When `existing` is gone or the file system has no hard links (callers fall back to
   *   {@link createExclusive})
   */
  linkExclusive(existing: string, path: string): Promise<boolean>;
  /** Sets a file's modification (and access) time to now. */
  touch(path: string): Promise<void>;
  /**
   * Removes `path` if its content is exactly `expected`, synchronously (one read, one unlink): a
   * lock file this process still owns. Cheaper than the asynchronous calls when many locks go at
   * once; callers keep each burst of calls short.
   *
   * @returns Whether it was removed (`false` when missing or saying something else)
   */
  removeIfContentSync(path: string, expected: string): boolean;
  /**
   * Removes `path` if it is still the file `file` (its device and inode), synchronously (one
   * `lstat`, one unlink): a lock file that is a hard link of one this process holds.
   *
   * @returns Whether it was removed (`false` when missing or another file)
   */
  removeIfSameFileSync(path: string, file: FileIdentity): boolean;
  /** Cuts a file to `length` bytes. */
  truncate(path: string, length: number, options?: SyncOptions): Promise<void>;
  /** Flushes a directory's entries (after a create or rename) to disk; best effort, never rejects. */
  syncDir(path: string): Promise<void>;
}

/** Child processes: starting them, and making sure none outlives the server. */
export interface HostProcesses {
  /**
   * Starts a process in a new process group, stdin `/dev/null` unless `options.stdin` is
   * `"piped"`. Rejects when it cannot be started (e.g. the command does not exist).
   */
  spawn(
    command: string,
    args: readonly string[],
    options: SpawnOptions & { readonly stdin: "piped" },
  ): Promise<PipedHostProcess>;
  /** Starts a process in a new process group, stdin `/dev/null` unless piped. */
  spawn(command: string, args: readonly string[], options: SpawnOptions): Promise<HostProcess>;
  /**
   * Makes sure the processes started from now on die with this process, even when it is killed
   * with SIGKILL (a supervisor process; on Linux also a record in `dir` that a later call reaps),
   * and kills what earlier, dead hosts recorded in `dir` left behind.
   * Resolves with how many leftovers were killed.
   *
   * @param dir Where the records are kept
   * @param options `reapAfter`: the killing of leftovers waits until it settles (the processes
   *   started meanwhile are supervised all the same)
   */
  superviseProcesses(dir: string, options?: SuperviseOptions): Promise<number>;
  /**
   * Ends every process started by {@link spawn} that is still running (SIGTERM, then SIGKILL after
   * `graceMs`, default 2000), resolves once they are gone, and refuses to start more.
   */
  stopProcesses(options?: { readonly graceMs?: number }): Promise<void>;
  /**
   * Runs a short program to its end, unsupervised and without loading the process supervision
   * (a start-up capability probe, such as the sandbox's `bwrap … true`); SIGKILL after
   * `timeoutMs`. Rejects when it cannot be started. Optional: without it, probes use
   * {@link spawn}.
   */
  probe?(
    command: string,
    args: readonly string[],
    options: { readonly timeoutMs: number },
  ): Promise<ProbeResult>;
}

/** How a {@link HostProcesses.probe} ended. */
export interface ProbeResult {
  /** Exit code, or null when killed by a signal (the timeout). */
  readonly code: number | null;
  /** What it wrote to stderr (at most 64 KiB). */
  readonly stderr: string;
}

/** The process this runs in and the machine it runs on. */
export interface HostEnvironment {
  /** An environment variable. */
  env(name: string): string | undefined;
  /** The user's home directory. */
  homeDir(): string;
  /** The process's working directory. */
  cwd(): string;
  /** This process's id. */
  pid(): number;
  /** This machine's host name. */
  hostname(): string;
  /** Whether a process with this id runs on this machine; zombies count as dead. */
  isProcessAlive(pid: number): boolean;
}

/** The wall clock. */
export interface HostClock {
  /** Milliseconds since the epoch. */
  now(): number;
}

/**
 * The operating system, as the server sees it: every concern at once. Code that needs only one
 * should take that part ({@link HostFiles}, {@link HostDurableFiles}, {@link HostProcesses},
 * {@link HostEnvironment}, {@link HostClock}).
 */
export type Host = HostFiles & HostDurableFiles & HostProcesses & HostEnvironment & HostClock;
