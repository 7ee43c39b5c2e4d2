/**
 * Git worktrees of sessions: a session whose working directory is inside a git repository may
 * work in a worktree of its own, on a branch of its own, under the server's data directory, so
 * that several sessions on one repository never see each other's changes and the checkout the
 * client named stays as it was.
 *
 * Layout under `<dataDir>/worktrees/`: `<session id>/` (the worktree) and `<session id>.json`
 * (what it is: written before the worktree is made and removed after it is gone, so what a crash
 * leaves can be found and reaped, see {@link reapWorktrees}).
 *
 * Git runs in the user's repository with its hooks and file-system monitor turned off: a
 * workspace is untrusted, and a hook planted in it must not run on the server's machine.
 *
 * @module
 */
import type { HostFiles, HostProcesses } from "../host/host.ts";
import { git, GitError, runGit } from "./git_command.ts";
import type { WorktreeFrom } from "./worktree_from.ts";

export type { WorktreeFrom };

/** Where a session's worktree is: the `_meta["acp-harness"].worktree` of session answers. */
export interface WorktreeInfo {
  /** The worktree's directory. */
  readonly path: string;
  /** Its branch (`acp-harness/<short session id>`). */
  readonly branch: string;
  /** The commit it was made from (the checkout's `HEAD` then). */
  readonly base: string;
  /** The checkout the client named: the repository's top-level directory. */
  readonly repository: string;
  /** The session's working directory inside the worktree (its root, or the same subdirectory). */
  readonly cwd: string;
  /** Whether the checkout's uncommitted changes were carried over (`--worktree-from`). */
  readonly fromWorkingTree?: boolean;
}

/** What git and the file system are reached through. */
export interface WorktreeHost {
  readonly processes: Pick<HostProcesses, "spawn">;
  readonly files: Pick<
    HostFiles,
    "readFile" | "writeFileAtomic" | "mkdir" | "remove" | "stat" | "readDir" | "readTextFile"
  >;
}

/** A git repository's checkout a worktree can be made from. */
export interface Repository {
  /** Its top-level directory. */
  readonly toplevel: string;
  /** Its `HEAD` commit. */
  readonly head: string;
}

/** Why a directory cannot get a worktree, in words for the client and the log. */
export type NoRepository = { readonly reason: string };

/** The options that turn off what would run code from the repository. */
const SAFE = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"];

/**
 * Finds the repository checkout `cwd` is in.
 *
 * @param host Runs git
 * @param cwd The session's working directory (canonical)
 * @param signal Aborts git
 * @returns The repository, or why there is none (not a repository, git missing, bare, no commit)
 */
export async function findRepository(
  host: WorktreeHost,
  cwd: string,
  signal?: AbortSignal,
): Promise<Repository | NoRepository> {
  let probe;
  try {
    probe = await runGit(host.processes, [...SAFE, "rev-parse", "--is-bare-repository"], {
      cwd,
      ...(signal ? { signal } : {}),
    });
  } catch (error) {
    if (signal?.aborted) throw error;
    return { reason: "git is not installed (or cannot be started)" };
  }
  if (probe.code === 127) return { reason: "git is not installed (or cannot be started)" };
  if (probe.code !== 0) {
    return /not a git repository/i.test(probe.stderr)
      ? { reason: "the directory is not in a git repository" }
      : { reason: `git cannot read the repository: ${lastLine(probe.stderr)}` };
  }
  if (probe.stdout.trim() === "true") return { reason: "the repository is bare" };
  const top = await runGit(host.processes, [...SAFE, "rev-parse", "--show-toplevel"], {
    cwd,
    ...(signal ? { signal } : {}),
  });
  if (top.code !== 0) return { reason: "the directory is inside the repository's .git directory" };
  const head = await runGit(
    host.processes,
    [...SAFE, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
    { cwd, ...(signal ? { signal } : {}) },
  );
  if (head.code !== 0) return { reason: "the repository has no commit yet" };
  return { toplevel: top.stdout.trim(), head: head.stdout.trim() };
}

/** Options for {@link addWorktree}. */
export interface AddWorktreeOptions {
  /** The server's data directory. */
  readonly dataDir: string;
  /** The session id. */
  readonly sessionId: string;
  /** The repository (from {@link findRepository}). */
  readonly repository: Repository;
  /** The session's working directory (inside the repository). */
  readonly cwd: string;
  /** Whether the checkout's uncommitted changes go into the worktree. @default {"head"} */
  readonly from?: WorktreeFrom;
  readonly signal?: AbortSignal;
}

/** One repository's worktree changes at a time in this server: git locks its admin files. */
const queues = new Map<string, Promise<unknown>>();

/** Runs `task` after the other worktree changes of `repository` in this server. */
function serialized<T>(repository: string, task: () => Promise<T>): Promise<T> {
  const before = queues.get(repository) ?? Promise.resolve();
  const run = before.then(task, task);
  const settled = run.then(() => {}, () => {});
  queues.set(repository, settled);
  void settled.then(() => {
    if (queues.get(repository) === settled) queues.delete(repository);
  });
  return run;
}

/**
 * Makes a session's worktree: a new branch `acp-harness/<first 8 characters of the id>` (the whole
 * id if that is taken) at the repository's `HEAD`, checked out in `<dataDir>/worktrees/<id>`, with
 * the checkout's uncommitted and untracked (not ignored) files copied in for `working-tree`.
 * Submodules are not initialized. A failure leaves nothing behind.
 *
 * @param host Runs git, writes the record
 * @param options Where, from what
 * @returns The worktree
 * @throws {GitError} When git cannot make it
 */
export function addWorktree(
  host: WorktreeHost,
  options: AddWorktreeOptions,
): Promise<WorktreeInfo> {
  return serialized(options.repository.toplevel, () => add(host, options));
}

async function add(host: WorktreeHost, options: AddWorktreeOptions): Promise<WorktreeInfo> {
  const { dataDir, sessionId, repository, signal } = options;
  const dir = `${dataDir}/worktrees`;
  const path = `${dir}/${sessionId}`;
  const run = { cwd: repository.toplevel, ...(signal ? { signal } : {}) };
  const short = `acp-harness/${sessionId.slice(0, 8)}`;
  const taken = await runGit(
    host.processes,
    [...SAFE, "show-ref", "--verify", "--quiet", `refs/heads/${short}`],
    run,
  );
  const branch = taken.code === 0 ? `acp-harness/${sessionId}` : short;
  const inside = relativeInside(repository.toplevel, options.cwd) ?? "";
  const info: WorktreeInfo = {
    path,
    branch,
    base: repository.head,
    repository: repository.toplevel,
    cwd: inside === "" ? path : `${path}/${inside}`,
    ...(options.from === "working-tree" ? { fromWorkingTree: true } : {}),
  };
  await host.files.mkdir(dir);
  await host.files.writeFileAtomic(`${path}.json`, JSON.stringify(info) + "\n");
  try {
    await git(
      host.processes,
      [...SAFE, "worktree", "add", "--quiet", "-b", branch, path, repository.head],
      run,
    );
    if (options.from === "working-tree") {
      await carryChanges(host, repository.toplevel, path, signal);
    }
    return info;
  } catch (error) {
    await drop(host, info).catch(() => {});
    throw error;
  }
}

/** Copies the checkout's uncommitted changes (a binary diff) and untracked files into `path`. */
async function carryChanges(
  host: WorktreeHost,
  checkout: string,
  path: string,
  signal: AbortSignal | undefined,
): Promise<void> {
  const from = { cwd: checkout, ...(signal ? { signal } : {}) };
  const diff = await git(
    host.processes,
    [...SAFE, "diff", "--binary", "--no-ext-diff", "--no-textconv", "HEAD", "--"],
    from,
  );
  if (diff !== "") {
    await git(host.processes, [...SAFE, "apply", "--binary", "--whitespace=nowarn"], {
      cwd: path,
      stdin: diff,
      ...(signal ? { signal } : {}),
    });
  }
  const untracked = await git(
    host.processes,
    [...SAFE, "ls-files", "--others", "--exclude-standard", "-z"],
    from,
  );
  for (const file of untracked.split("\0")) {
    if (file === "") continue;
    signal?.throwIfAborted();
    const info = await host.files.stat(`${checkout}/${file}`);
    if (!info?.isFile) continue;
    const target = `${path}/${file}`;
    await host.files.mkdir(target.slice(0, target.lastIndexOf("/")));
    await host.files.writeFileAtomic(target, await host.files.readFile(`${checkout}/${file}`));
  }
}

/** What {@link removeWorktree} did with the branch. */
export interface WorktreeRemoval {
  /** Whether the branch was deleted (else it had commits not merged anywhere, or is in use). */
  readonly branchDeleted: boolean;
  /** Why the branch was kept, when it was. */
  readonly branchKept?: string;
}

/**
 * Removes a session's worktree (its uncommitted changes with it) and its record, and its branch
 * unless that has commits no other branch, tag or worktree has (or is checked out elsewhere).
 * A repository that is gone leaves just the directory to remove.
 *
 * @param host Runs git, removes files
 * @param info The worktree
 * @param signal Aborts git
 * @returns What became of the branch
 */
export function removeWorktree(
  host: WorktreeHost,
  info: WorktreeInfo,
  signal?: AbortSignal,
): Promise<WorktreeRemoval> {
  return serialized(info.repository, () => drop(host, info, signal));
}

async function drop(
  host: WorktreeHost,
  info: WorktreeInfo,
  signal?: AbortSignal,
): Promise<WorktreeRemoval> {
  const run = { cwd: info.repository, ...(signal ? { signal } : {}) };
  const repository = await host.files.stat(info.repository);
  let removal: WorktreeRemoval = { branchDeleted: false, branchKept: "the repository is gone" };
  if (repository?.isDirectory) {
    await runGit(
      host.processes,
      [...SAFE, "worktree", "remove", "--force", "--force", info.path],
      run,
    )
      .catch(() => undefined);
    await host.files.remove(info.path);
    await runGit(host.processes, [...SAFE, "worktree", "prune"], run).catch(() => undefined);
    removal = await dropBranch(host, info, signal);
  } else {
    await host.files.remove(info.path);
  }
  await host.files.remove(`${info.path}.json`);
  return removal;
}

/** Deletes the worktree's branch when every commit on it is on another ref too. */
async function dropBranch(
  host: WorktreeHost,
  info: WorktreeInfo,
  signal?: AbortSignal,
): Promise<WorktreeRemoval> {
  const run = { cwd: info.repository, ...(signal ? { signal } : {}) };
  const ref = `refs/heads/${info.branch}`;
  const exists = await runGit(
    host.processes,
    [...SAFE, "show-ref", "--verify", "--quiet", ref],
    run,
  );
  if (exists.code !== 0) return { branchDeleted: false, branchKept: "the branch is gone" };
  const only = await git(
    host.processes,
    [...SAFE, "rev-list", "--count", ref, "--not", `--exclude=${ref}`, "--all"],
    run,
  );
  const count = Number(only.trim());
  if (count > 0) {
    return {
      branchDeleted: false,
      branchKept: `it has ${count} commit${count === 1 ? "" : "s"} not merged into another branch`,
    };
  }
  const deleted = await runGit(
    host.processes,
    [...SAFE, "branch", "-D", "--quiet", info.branch],
    run,
  );
  return deleted.code === 0
    ? { branchDeleted: true }
    : { branchDeleted: false, branchKept: lastLine(deleted.stderr) };
}

/**
 * Makes a worktree whose directory is gone again from its branch (when the repository still has
 * it): the branch's commits come back, not what was left uncommitted.
 *
 * @param host Runs git
 * @param info The worktree as recorded
 * @param signal Aborts git
 * @returns Whether it is there now
 */
export function restoreWorktree(
  host: WorktreeHost,
  info: WorktreeInfo,
  signal?: AbortSignal,
): Promise<boolean> {
  return serialized(info.repository, async () => {
    const run = { cwd: info.repository, ...(signal ? { signal } : {}) };
    if (!(await host.files.stat(info.repository))?.isDirectory) return false;
    await runGit(host.processes, [...SAFE, "worktree", "prune"], run).catch(() => undefined);
    const added = await runGit(
      host.processes,
      [...SAFE, "worktree", "add", "--quiet", info.path, info.branch],
      run,
    ).catch((error: unknown) => {
      if (error instanceof GitError && !signal?.aborted) return undefined;
      throw error;
    });
    return added?.code === 0;
  });
}

/** Options for {@link reapWorktrees}. */
export interface ReapOptions {
  /** The server's data directory. */
  readonly dataDir: string;
  /** Whether the store has a session (its worktree is kept). */
  readonly exists: (sessionId: string) => Promise<boolean>;
  /** Only records written before this time (ms since the epoch) are reaped: newer may be in use. */
  readonly before: number;
  readonly signal?: AbortSignal;
}

/** What {@link reapWorktrees} found. */
export interface ReapResult {
  /** The worktrees removed: their sessions are not stored (a crash during their creation). */
  readonly removed: readonly WorktreeInfo[];
  /** Worktree directories without a record, left alone. */
  readonly unknown: readonly string[];
}

/**
 * Removes the worktrees whose sessions are not stored (what a server that died while creating a
 * session left) and reports directories under `worktrees/` it knows nothing about.
 *
 * @param host Runs git, reads the records
 * @param options Where, and which sessions exist
 * @returns What was removed and what was left
 */
export async function reapWorktrees(host: WorktreeHost, options: ReapOptions): Promise<ReapResult> {
  const dir = `${options.dataDir}/worktrees`;
  const entries = await host.files.readDir(dir).catch(() => []);
  const names = new Set(entries.map((entry) => entry.name));
  const removed: WorktreeInfo[] = [];
  const unknown: string[] = [];
  for (const entry of entries) {
    options.signal?.throwIfAborted();
    if (entry.name.endsWith(".json")) {
      const id = entry.name.slice(0, -".json".length);
      const info = await readRecord(host, `${dir}/${entry.name}`);
      const written = (await host.files.stat(`${dir}/${entry.name}`))?.mtimeMs ?? Infinity;
      if (!info || written >= options.before || await options.exists(id)) continue;
      await removeWorktree(host, info, options.signal);
      removed.push(info);
    } else if (entry.isDirectory && !names.has(`${entry.name}.json`)) {
      unknown.push(`${dir}/${entry.name}`);
    }
  }
  return { removed, unknown };
}

async function readRecord(host: WorktreeHost, path: string): Promise<WorktreeInfo | undefined> {
  try {
    const value = JSON.parse(await host.files.readTextFile(path)) as Partial<WorktreeInfo>;
    const fields = [value.path, value.branch, value.base, value.repository, value.cwd];
    return fields.every((field) => typeof field === "string") ? value as WorktreeInfo : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Removes the worktree recorded for a session under `<dataDir>/worktrees/` (see
 * {@link removeWorktree}); a session without one is fine.
 *
 * @param host Runs git, removes files
 * @param dataDir The server's data directory
 * @param sessionId The session
 * @param signal Aborts git
 * @returns The worktree and what became of its branch, or `undefined` when it had none
 */
export async function removeSessionWorktree(
  host: WorktreeHost,
  dataDir: string,
  sessionId: string,
  signal?: AbortSignal,
): Promise<{ info: WorktreeInfo; removal: WorktreeRemoval } | undefined> {
  const info = await readRecord(host, `${dataDir}/worktrees/${sessionId}.json`);
  if (!info) return undefined;
  return { info, removal: await removeWorktree(host, info, signal) };
}

/**
 * Maps a directory inside the repository's checkout to the same place in the worktree; one
 * outside it stays as it is.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { inWorktree } from "./worktree.ts";
 * const info = { path: "/d/worktrees/s", branch: "b", base: "c", repository: "/r", cwd: "/d/worktrees/s" };
 * assert.equal(inWorktree(info, "/r/src"), "/d/worktrees/s/src");
 * assert.equal(inWorktree(info, "/elsewhere"), "/elsewhere");
 * ```
 *
 * @param info The worktree
 * @param directory A canonical directory
 * @returns Its place in the worktree, or itself
 */
export function inWorktree(info: WorktreeInfo, directory: string): string {
  const inside = relativeInside(info.repository, directory);
  if (inside === undefined) return directory;
  return inside === "" ? info.path : `${info.path}/${inside}`;
}

/** `path` relative to `root` ("" for the root itself), or `undefined` when it is outside. */
function relativeInside(root: string, path: string): string | undefined {
  if (path === root) return "";
  const prefix = root.endsWith("/") ? root : `${root}/`;
  return path.startsWith(prefix) ? path.slice(prefix.length) : undefined;
}

function lastLine(text: string): string {
  return text.trim().split("\n").at(-1) ?? "";
}
