/**
 * File and command access for tools, the only way tools reach files and processes.
 * {@link Workspace} reads and writes whole files and runs commands; it has two implementations:
 * the host's own file system and processes, and the ACP client's `fs/*` and `terminal/*` methods
 * when it advertises them. {@link WorkspaceFiles} answers what ACP clients cannot (metadata,
 * listings, symlinks, partial reads), so it is always the host's file system.
 * Paths given to a workspace are absolute and already confined to the session's roots (except
 * for the symlink resolution that confinement itself uses).
 *
 * @module
 */
import type { DirEntry, FileInfo } from "../host/host.ts";

export type { DirEntry, FileInfo };

/** Options shared by workspace operations. */
export interface WorkspaceOptions {
  /** Aborts the operation. */
  readonly signal: AbortSignal;
}

/** Options for {@link Workspace.runCommand}. */
export interface RunCommandOptions extends WorkspaceOptions {
  /** Absolute working directory. */
  readonly cwd: string;
  /** Kill the command (its whole process group) after this long. */
  readonly timeoutMs: number;
  /** Keep at most this many bytes of output (the end is kept). */
  readonly outputLimit: number;
  /**
   * Told of the output as it arrives (whole characters, stdout and stderr in arrival order), for
   * showing progress. A workspace whose command output the client shows itself (a client
   * terminal) need not call it.
   */
  readonly onOutput?: (text: string) => void;
  /**
   * The argv that runs the command confined (the sandbox's wrapping of `/bin/sh -c command`):
   * run instead of `/bin/sh -c command`, on the host or in the client's terminal.
   */
  readonly argv?: { readonly program: string; readonly args: readonly string[] };
}

/** How a command ended. */
export interface CommandResult {
  /** Combined stdout and stderr, in arrival order, possibly truncated at the start. */
  readonly output: string;
  /** Whether output was dropped from the start to fit `outputLimit`. */
  readonly truncated: boolean;
  /** Exit code, or null when killed by a signal. */
  readonly exitCode: number | null;
  /** Signal that killed the command, or null when it exited. */
  readonly signal: string | null;
  /** Whether the command was killed for exceeding `timeoutMs`. */
  readonly timedOut: boolean;
  /** Set when the command ran in a client terminal that stays visible in the tool call. */
  readonly terminalId?: string;
}

/** File and command access for one session. */
export interface Workspace {
  /** Reads a whole text file. Rejects when it does not exist or cannot be read. */
  readTextFile(path: string, options: WorkspaceOptions): Promise<string>;
  /** Creates or replaces a text file (atomically on the host). */
  writeTextFile(path: string, content: string, options: WorkspaceOptions): Promise<void>;
  /**
   * Runs a shell command line (`sh -c` on the host). On timeout or abort the whole process group
   * is killed before this resolves. Rejects only when the command cannot be started.
   */
  runCommand(command: string, options: RunCommandOptions): Promise<CommandResult>;
}

/**
 * The file-system queries tools need besides reading and writing whole files: metadata, directory
 * listings, symlink resolution, directory creation and partial reads. ACP clients offer none of
 * them, so a session answers them from the host's file system, whatever {@link Workspace} it uses.
 * The method shapes are those of the host's files, so a host satisfies this interface too.
 */
export interface WorkspaceFiles {
  /** Information about `path` (symlinks followed), or `undefined` when it does not exist. */
  stat(path: string): Promise<FileInfo | undefined>;
  /** The canonical path, with symlinks resolved. Rejects when `path` does not exist. */
  realpath(path: string): Promise<string>;
  /** Lists a directory's entries (in no particular order). */
  readDir(path: string): Promise<DirEntry[]>;
  /** Creates a directory and any missing parents; an existing one is fine. */
  mkdir(path: string): Promise<void>;
  /** Bytes `start` (inclusive) to `end` (exclusive, default: the end of the file) of a file. */
  readFileRange(path: string, start: number, end?: number): Promise<Uint8Array>;
}
