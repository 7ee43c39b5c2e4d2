/**
 * Runs the `git` program for the server's own use (session worktrees, checkpoints): never
 * through a shell, with an environment of its own (no `GIT_*` variable of the server's, no
 * prompts, messages in English), its output collected, bounded and decoded.
 *
 * @module
 */
import type { HostProcesses } from "../host/host.ts";
import { concatBytes } from "../util/concat_bytes.ts";

/** What `git` answered. */
export interface GitResult {
  /** The exit code (`null` when a signal ended it). */
  readonly code: number | null;
  /** The standard output, as text. */
  readonly stdout: string;
  /** The standard error, as text (its last 8 KiB). */
  readonly stderr: string;
}

/** Options for {@link runGit}. */
export interface GitOptions {
  /** The directory git runs in (absolute). */
  readonly cwd: string;
  /** Variables on top of git's own environment (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`…). */
  readonly env?: Readonly<Record<string, string>>;
  /** What git reads on its standard input. @default {nothing} */
  readonly stdin?: string | Uint8Array;
  /** Aborting kills git. */
  readonly signal?: AbortSignal;
  /** Most bytes of standard output kept; past it the call fails. @default {64 MiB} */
  readonly maxOutput?: number;
}

/** Git ended with a non-zero code, was killed, or could not be started. */
export class GitError extends Error {
  /** The exit code, when git ran. */
  readonly code: number | null | undefined;
  /** What git wrote to its standard error. */
  readonly stderr: string;

  /**
   * @param message What failed
   * @param details The exit code and standard error
   */
  constructor(
    message: string,
    details: { readonly code?: number | null; readonly stderr?: string; readonly cause?: unknown },
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = "GitError";
    this.code = details.code;
    this.stderr = details.stderr ?? "";
  }
}

/** The variables git inherits from the server: the user's identity and config, the search path. */
const INHERITED = ["PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "XDG_CONFIG_HOME", "SYSTEMROOT"];

/** The environment every call gets: no prompt for credentials or an editor, stable messages. */
const FIXED_ENV: Readonly<Record<string, string>> = {
  LC_ALL: "C",
  GIT_TERMINAL_PROMPT: "0",
  GIT_EDITOR: "true",
  GIT_PAGER: "cat",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_OPTIONAL_LOCKS: "0",
};

const DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024;
const STDERR_KEPT = 8 * 1024;

/**
 * Runs `git` with `args` and collects what it printed. A non-zero exit is a result, not an error
 * (see {@link git} for that).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NodeHost } from "../host/node_host.ts";
 * import { runGit } from "./git_command.ts";
 * const result = await runGit(new NodeHost(), ["--version"], { cwd: "/" });
 * assert.equal(result.code, 0);
 * assert.match(result.stdout, /^git version/);
 * ```
 *
 * @param processes Starts git
 * @param args The arguments after `git`
 * @param options Where and with what it runs
 * @returns Its exit code and output
 * @throws {GitError} When git cannot be started, prints more than `maxOutput`, or is aborted
 */
export async function runGit(
  processes: Pick<HostProcesses, "spawn">,
  args: readonly string[],
  options: GitOptions,
): Promise<GitResult> {
  options.signal?.throwIfAborted();
  let child;
  try {
    child = await processes.spawn("git", args, {
      cwd: options.cwd,
      env: { ...FIXED_ENV, ...options.env },
      inheritEnv: INHERITED,
      stdin: options.stdin === undefined ? "null" : "piped",
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (error) {
    throw new GitError(`cannot run git ${commandOf(args)}: ${messageOf(error)}`, { cause: error });
  }
  const max = options.maxOutput ?? DEFAULT_MAX_OUTPUT;
  const stdin = options.stdin === undefined ? Promise.resolve() : feed(child.stdin, options.stdin);
  const [stdout, stderr, , exit] = await Promise.all([
    collect(child.stdout, max, () => child.kill("SIGKILL")),
    collect(child.stderr, STDERR_KEPT, undefined),
    stdin,
    child.exited,
  ]);
  options.signal?.throwIfAborted();
  if (stdout === undefined) {
    throw new GitError(`git ${commandOf(args)} printed more than ${max} bytes`, {
      code: exit.code,
      stderr: stderr ?? "",
    });
  }
  return { code: exit.code, stdout, stderr: stderr ?? "" };
}

/**
 * Runs `git` with `args` and returns its standard output; a non-zero exit throws.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NodeHost } from "../host/node_host.ts";
 * import { git } from "./git_command.ts";
 * assert.match(await git(new NodeHost(), ["--version"], { cwd: "/" }), /^git version/);
 * ```
 *
 * @param processes Starts git
 * @param args The arguments after `git`
 * @param options Where and with what it runs
 * @returns The standard output
 * @throws {GitError} When git fails, naming the command and quoting its standard error
 */
export async function git(
  processes: Pick<HostProcesses, "spawn">,
  args: readonly string[],
  options: GitOptions,
): Promise<string> {
  const result = await runGit(processes, args, options);
  if (result.code !== 0) {
    const said = result.stderr.trim().split("\n").slice(-3).join(" ");
    throw new GitError(
      `git ${commandOf(args)} failed (exit ${result.code})${said ? `: ${said}` : ""}`,
      { code: result.code, stderr: result.stderr },
    );
  }
  return result.stdout;
}

/** Writes `data` to git's input and closes it; git closing it early (it read enough) is fine. */
async function feed(
  stdin: WritableStream<Uint8Array> | undefined,
  data: string | Uint8Array,
): Promise<void> {
  if (!stdin) return;
  const writer = stdin.getWriter();
  try {
    await writer.write(typeof data === "string" ? new TextEncoder().encode(data) : data);
    await writer.close();
  } catch {
    // Git exited before reading everything: its exit code says what happened.
  }
}

/**
 * Reads a stream to its end as text. With `onOverflow`, more than `max` bytes calls it and gives
 * `undefined`; without, only the last `max` bytes are kept.
 */
async function collect(
  stream: ReadableStream<Uint8Array>,
  max: number,
  onOverflow: (() => void) | undefined,
): Promise<string | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let overflowed = false;
  try {
    for await (const chunk of stream) {
      if (overflowed) continue;
      chunks.push(chunk);
      size += chunk.byteLength;
      if (size <= max) continue;
      if (onOverflow) {
        overflowed = true;
        chunks.length = 0;
        onOverflow();
        continue;
      }
      while (size - (chunks[0]?.byteLength ?? 0) >= max) size -= chunks.shift()!.byteLength;
    }
  } catch {
    // The child was killed: what was read is kept.
  }
  if (overflowed) return undefined;
  return new TextDecoder().decode(concatBytes(chunks));
}

/** The subcommand and its first argument, past git's own options (`-c key=value`, `-C dir`). */
function commandOf(args: readonly string[]): string {
  let at = 0;
  while (at < args.length && args[at]!.startsWith("-")) {
    at += args[at] === "-c" || args[at] === "-C" ? 2 : 1;
  }
  return args.slice(at, at + 2).join(" ");
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
