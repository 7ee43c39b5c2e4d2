/**
 * The {@link Workspace} and {@link WorkspaceFiles} on the host's own file system and processes.
 *
 * @module
 */
import type { HostFiles, HostProcess, HostProcesses } from "../host/host.ts";
import { completeUtf8Length, decodeTail } from "./_text.ts";
import { concatBytes } from "../util/concat_bytes.ts";
import { dirnamePath } from "./posix_path.ts";
import type {
  CommandResult,
  DirEntry,
  FileInfo,
  RunCommandOptions,
  Workspace,
  WorkspaceFiles,
  WorkspaceOptions,
} from "./workspace.ts";

/**
 * Environment for commands: nothing may wait for a pager or a password prompt (stdin is closed
 * anyway, but git asks the terminal directly).
 */
const COMMAND_ENV: Readonly<Record<string, string>> = {
  PAGER: "cat",
  GIT_PAGER: "cat",
  GIT_TERMINAL_PROMPT: "0",
};

/** What a {@link HostWorkspace} is built with. */
export interface HostWorkspaceOptions {
  /**
   * Names (or `PREFIX*` patterns) of the server's environment variables that commands do not
   * inherit: the server's own secrets (its HTTP token, the providers' API keys). Commands keep
   * the rest of the user's environment. @default {[]}
   */
  readonly hiddenEnv?: readonly string[];
}

/**
 * File and command access through the host: files are read and written directly (atomically,
 * parents created), file-system queries go straight to the host, and commands run as
 * `/bin/sh -c <command>` in their own process group, killed as a group on timeout or abort.
 *
 * @example Running a command
 * ```ts ignore
 * import { NodeHost } from "../host/node_host.ts";
 * import { HostWorkspace } from "./host_workspace.ts";
 * const workspace = new HostWorkspace(new NodeHost());
 * const result = await workspace.runCommand("echo hi", {
 *   cwd: "/tmp", timeoutMs: 10_000, outputLimit: 30_000, signal: new AbortController().signal,
 * });
 * // result.output === "hi\n", result.exitCode === 0
 * ```
 */
export class HostWorkspace implements Workspace, WorkspaceFiles {
  readonly #host: HostFiles & HostProcesses;
  readonly #hiddenEnv: readonly string[];

  /**
   * Creates a workspace over `host`.
   *
   * @param host The host whose files and processes are used
   * @param options The server's secrets that commands must not see
   */
  constructor(host: HostFiles & HostProcesses, options: HostWorkspaceOptions = {}) {
    this.#host = host;
    this.#hiddenEnv = options.hiddenEnv ?? [];
  }

  /**
   * Information about a path, symlinks followed.
   *
   * @param path Absolute path
   * @returns What it is, or `undefined` when it does not exist
   */
  stat(path: string): Promise<FileInfo | undefined> {
    return this.#host.stat(path);
  }

  /**
   * The canonical path.
   *
   * @param path Absolute path
   * @returns The path with symlinks resolved; rejects when it does not exist
   */
  realpath(path: string): Promise<string> {
    return this.#host.realpath(path);
  }

  /**
   * Lists a directory.
   *
   * @param path Absolute path of the directory
   * @returns Its entries
   */
  readDir(path: string): Promise<DirEntry[]> {
    return this.#host.readDir(path);
  }

  /**
   * Creates a directory and its missing parents.
   *
   * @param path Absolute path of the directory
   */
  mkdir(path: string): Promise<void> {
    return this.#host.mkdir(path);
  }

  /**
   * Reads part of a file.
   *
   * @param path Absolute path
   * @param start First byte
   * @param end Byte after the last one (default: the end of the file)
   * @returns The bytes read (fewer when the file is shorter)
   */
  readFileRange(path: string, start: number, end?: number): Promise<Uint8Array> {
    return this.#host.readFileRange(path, start, end);
  }

  /**
   * Reads a whole UTF-8 file.
   *
   * @param path Absolute path
   * @param options Carries the abort signal
   * @returns The text
   */
  readTextFile(path: string, options: WorkspaceOptions): Promise<string> {
    return this.#host.readTextFile(path, { signal: options.signal });
  }

  /**
   * Creates or replaces a file atomically, creating missing parent directories.
   *
   * @param path Absolute path
   * @param content The new text
   * @param options Carries the abort signal
   */
  async writeTextFile(path: string, content: string, options: WorkspaceOptions): Promise<void> {
    options.signal.throwIfAborted();
    await this.#host.mkdir(dirnamePath(path));
    options.signal.throwIfAborted();
    await this.#host.writeFileAtomic(path, content, { signal: options.signal });
  }

  /**
   * Runs `/bin/sh -c command` (or `options.argv`, its sandboxed form) with the server's
   * environment but for `hiddenEnv` (see {@link HostWorkspaceOptions}). Output of stdout and
   * stderr is combined in arrival order and only
   * the last `outputLimit` bytes are kept (cut at a character boundary). On timeout or abort the
   * process group gets SIGTERM (SIGKILL 2 s later) and this resolves once it has ended.
   *
   * @param command The shell command line
   * @param options Working directory, timeout, output limit, abort signal
   * @returns How the command ended; rejects only when it cannot be started (or `signal` was
   *   already aborted, with its reason)
   */
  async runCommand(command: string, options: RunCommandOptions): Promise<CommandResult> {
    const { signal } = options;
    signal.throwIfAborted();
    const kill = new AbortController();
    let timedOut = false;
    const onAbort = (): void => kill.abort(signal.reason);
    const timer = setTimeout(() => {
      timedOut = true;
      kill.abort(new Error(`Command timed out after ${options.timeoutMs} ms`));
    }, Math.max(0, options.timeoutMs));
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      let child: HostProcess;
      try {
        const { program, args } = options.argv ?? { program: "/bin/sh", args: ["-c", command] };
        child = await this.#host.spawn(program, args, {
          cwd: options.cwd,
          env: COMMAND_ENV,
          excludeEnv: this.#hiddenEnv,
          signal: kill.signal,
        });
      } catch (error) {
        // The deadline passed while the process was starting: it never ran.
        if (!timedOut || signal.aborted) throw error;
        return { output: "", truncated: false, exitCode: null, signal: null, timedOut };
      }
      const output = new TailBuffer(Math.max(0, options.outputLimit), options.onOutput);
      await Promise.all([output.collect(child.stdout), output.collect(child.stderr)]);
      const exit = await child.exited;
      const result = output.result();
      return {
        output: result.text,
        truncated: result.truncated,
        exitCode: exit.code,
        signal: exit.signal,
        timedOut,
      };
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    }
  }
}

/** Keeps the last `limit` bytes of several byte streams, in arrival order. */
class TailBuffer {
  readonly #limit: number;
  readonly #chunks: Uint8Array[] = [];
  readonly #onText: ((text: string) => void) | undefined;
  readonly #decoder = new TextDecoder();
  #kept = 0;
  #total = 0;

  constructor(limit: number, onText?: (text: string) => void) {
    this.#limit = limit;
    this.#onText = onText;
  }

  /** Reads `stream` to its end; a multi-byte character split across chunks stays whole. */
  async collect(stream: ReadableStream<Uint8Array>): Promise<void> {
    let carry = new Uint8Array(0);
    try {
      for await (const chunk of stream) {
        const bytes = carry.length === 0 ? chunk : concatBytes([carry, chunk]);
        const complete = completeUtf8Length(bytes);
        carry = bytes.slice(complete);
        this.#push(bytes.subarray(0, complete));
      }
    } catch {
      // A broken pipe ends the output; what arrived is kept.
    }
    this.#push(carry);
  }

  #push(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    // The bytes end on a character boundary (collect() keeps a split character for the next).
    this.#onText?.(this.#decoder.decode(bytes));
    this.#chunks.push(bytes);
    this.#kept += bytes.length;
    this.#total += bytes.length;
    while (this.#chunks.length > 1 && this.#kept - (this.#chunks[0]?.length ?? 0) >= this.#limit) {
      this.#kept -= this.#chunks.shift()?.length ?? 0;
    }
  }

  result(): { text: string; truncated: boolean } {
    return {
      text: decodeTail(concatBytes(this.#chunks), this.#limit),
      truncated: this.#total > this.#limit,
    };
  }
}
