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
  /**
   * Where git keeps the worktree's own state (`<repository>/.git/worktrees/<id>`) and the
   * repository's objects and refs: a sandboxed command must write there to commit.
   */
  readonly git?: { readonly dir: string; readonly commonDir: string };
  /** The server that made it: its reaper leaves alone what a live server or another store has. */
  readonly owner?: WorktreeOwner;
}

/** Who made a worktree: see {@link WorktreeInfo.owner}. */
export interface WorktreeOwner {
  /** The server's pid. */
  readonly pid: number;
  /** The machine's name. */
  readonly host: string;
  /** Where the server records its sessions (the store's description). */
  readonly store: string;
}

/** The fields of a {@link WorktreeInfo} a client is told (the answers' `_meta`). */
export const WORKTREE_ANSWER_FIELDS = [
  "path",
  "branch",
  "base",
  "repository",
  "cwd",
  "fromWorkingTree",
] as const;

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

/** The options that turn off what would run code from the repository: hooks, its monitor. */
const SAFE = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"];

/**
 * {@link SAFE}, and every filter driver the repository's own config defines turned off (a smudge,
 * clean or process command planted in `.git/config`, or a file it includes, would run on checkout,
 * diff or add), and no external diff: for the commands that read or write file contents. The
 * user's own drivers (global and system config, such as Git LFS) are kept.
 */
async function guards(
  host: WorktreeHost,
  cwd: string,
  signal: AbortSignal | undefined,
): Promise<string[]> {
  const listed = await runGit(
    host.processes,
    [...SAFE, "config", "--show-scope", "--get-regexp", "^filter\\."],
    { cwd, ...(signal ? { signal } : {}) },
  );
  const names = new Set<string>();
  for (const line of listed.stdout.split("\n")) {
    const tab = line.indexOf("\t");
    if (tab < 0) continue;
    const scope = line.slice(0, tab);
    if (scope === "global" || scope === "system") continue;
    const key = line.slice(tab + 1).split(" ", 1)[0] ?? "";
    const match = /^filter\.(.+)\.[a-z]+$/.exec(key);
    if (match?.[1]) names.add(match[1]);
  }
  const args = [...SAFE, "-c", "diff.external="];
  for (const name of names) {
    for (const key of ["smudge", "clean", "process"]) args.push("-c", `filter.${name}.${key}=`);
    args.push("-c", `filter.${name}.required=false`);
  }
  return args;
}

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
  /** The server making it, kept in its record for the reaper. */
  readonly owner?: WorktreeOwner;
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
  const guard = await guards(host, repository.toplevel, signal);
  const inside = relativeInside(repository.toplevel, options.cwd) ?? "";
  const record = (branch: string): WorktreeInfo => ({
    path,
    branch,
    base: repository.head,
    repository: repository.toplevel,
    cwd: inside === "" ? path : `${path}/${inside}`,
    ...(options.from === "working-tree" ? { fromWorkingTree: true } : {}),
    ...(options.owner ? { owner: options.owner } : {}),
  });
  await host.files.mkdir(dir);
  // Set once git made the worktree and its branch: only then are they this session's to remove.
  let info: WorktreeInfo | undefined;
  try {
    for (const branch of branchNames(sessionId)) {
      const ref = ["show-ref", "--verify", "--quiet", `refs/heads/${branch}`];
      if ((await runGit(host.processes, [...SAFE, ...ref], run)).code === 0) continue;
      // Written before git makes anything: what a crash leaves is found by its record.
      await host.files.writeFileAtomic(`${path}.json`, JSON.stringify(record(branch)) + "\n");
      const made = await runGit(
        host.processes,
        [...guard, "worktree", "add", "--quiet", "-b", branch, path, repository.head],
        run,
      );
      if (made.code === 0) {
        info = record(branch);
        break;
      }
      // Git may have made the branch before failing: it was not there, so it goes.
      if ((await runGit(host.processes, [...SAFE, ...ref], run)).code === 0) {
        await runGit(host.processes, [...SAFE, "branch", "-D", "--quiet", branch], run);
      }
      // A branch it would sit under or over (`acp-harness`) exists: the next name. Else, fail.
      if (!/cannot lock ref|unable to create|already exists/i.test(made.stderr)) {
        throw new GitError(
          `git worktree add failed (exit ${made.code}): ${lastLine(made.stderr)}`,
          { code: made.code, stderr: made.stderr },
        );
      }
    }
    if (!info) throw new GitError("git worktree add failed: no free branch name", {});
    const gitDirs = await git(
      host.processes,
      [...SAFE, "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"],
      { cwd: path, ...(signal ? { signal } : {}) },
    );
    const [gitDir = "", commonDir = ""] = gitDirs.trim().split("\n");
    info = { ...info, git: { dir: gitDir, commonDir } };
    await host.files.writeFileAtomic(`${path}.json`, JSON.stringify(info) + "\n");
    if (options.from === "working-tree") {
      await carryChanges(host, { checkout: repository.toplevel, path, guard, signal });
    }
    // A cwd git does not check out (ignored, or holding only untracked files) is made empty.
    await host.files.mkdir(info.cwd);
    return info;
  } catch (error) {
    if (info) await drop(host, info).catch(() => {});
    else await host.files.remove(`${path}.json`).catch(() => {});
    throw error;
  }
}

/** The branch names a session's worktree may take, in order of preference. */
function branchNames(sessionId: string): string[] {
  const short = sessionId.slice(0, 8);
  return [
    `acp-harness/${short}`,
    `acp-harness/${sessionId}`,
    `acp-harness-${short}`,
    `acp-harness-${sessionId}`,
  ];
}

/**
 * Brings the checkout's uncommitted changes and untracked (not ignored) files into the new
 * worktree, as git has them (modes and symlinks kept, no file read through a symlink): the
 * checkout's files written as a tree through a copy of its index (its own index and files are
 * never changed), that tree checked out over `HEAD` in the worktree, and the worktree's index
 * set back to `HEAD`, so they show as changes there too.
 */
async function carryChanges(
  host: WorktreeHost,
  where: {
    readonly checkout: string;
    readonly path: string;
    readonly guard: readonly string[];
    readonly signal: AbortSignal | undefined;
  },
): Promise<void> {
  const { checkout, path, guard, signal } = where;
  const from = { cwd: checkout, ...(signal ? { signal } : {}) };
  const index = (await git(
    host.processes,
    [...SAFE, "rev-parse", "--path-format=absolute", "--git-path", "index"],
    from,
  )).trim();
  const copy = `${path}.index`;
  try {
    const existing = await host.files.stat(index);
    if (existing?.isFile) await host.files.writeFileAtomic(copy, await host.files.readFile(index));
    const env = { GIT_INDEX_FILE: copy };
    await git(host.processes, [...guard, "add", "--all", "--", "."], { ...from, env });
    const tree = (await git(host.processes, [...guard, "write-tree"], { ...from, env })).trim();
    const into = { cwd: path, ...(signal ? { signal } : {}) };
    await git(host.processes, [...guard, "read-tree", "-u", "-m", "HEAD", tree], into);
    await git(host.processes, [...guard, "reset", "--quiet"], into);
  } finally {
    await host.files.remove(copy);
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
 * @param where This server's data directory (the worktree must be in it), owner and signal
 * @returns Whether it is there now
 */
export function restoreWorktree(
  host: WorktreeHost,
  info: WorktreeInfo,
  where: {
    readonly dataDir: string;
    readonly owner?: WorktreeOwner;
    readonly signal?: AbortSignal;
  },
): Promise<boolean> {
  const { signal } = where;
  return serialized(info.repository, async () => {
    // Only in this server's own worktrees directory, and only from a repository that is here.
    if (info.path !== `${where.dataDir}/worktrees/${info.path.split("/").at(-1)}`) return false;
    if (!(await host.files.stat(info.repository))?.isDirectory) return false;
    const run = { cwd: info.repository, ...(signal ? { signal } : {}) };
    try {
      await runGit(host.processes, [...SAFE, "worktree", "prune"], run);
      const guard = await guards(host, info.repository, signal);
      const record: WorktreeInfo = { ...info, ...(where.owner ? { owner: where.owner } : {}) };
      await host.files.writeFileAtomic(`${info.path}.json`, JSON.stringify(record) + "\n");
      const added = await runGit(
        host.processes,
        [...guard, "worktree", "add", "--quiet", info.path, info.branch],
        run,
      );
      return added.code === 0;
    } catch (error) {
      if (error instanceof GitError && !signal?.aborted) return false;
      throw error;
    }
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
  /** This server: only records of its machine and its store (or a memory store) are reaped. */
  readonly self: Pick<WorktreeOwner, "host" | "store">;
  /** Whether a pid of this machine is alive: a live server's records are never reaped. */
  readonly isAlive: (pid: number) => boolean;
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
      if (!info || written >= options.before || !reapable(info, options)) continue;
      if (await options.exists(id)) continue;
      await removeWorktree(host, info, options.signal);
      removed.push(info);
    } else if (entry.isDirectory && !names.has(`${entry.name}.json`)) {
      unknown.push(`${dir}/${entry.name}`);
    }
  }
  return { removed, unknown };
}

/**
 * Whether a record may be reaped by this server: one of this machine's, made by a server that is
 * gone, for this server's store (its sessions are known here) or for a memory store (its sessions
 * went with it). One without an owner, of another machine or of another store is left alone.
 */
function reapable(info: WorktreeInfo, options: ReapOptions): boolean {
  const { owner } = info;
  if (!owner || owner.host !== options.self.host || options.isAlive(owner.pid)) return false;
  return owner.store === options.self.store || owner.store.startsWith("memory");
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
 * Where a command in the worktree must write to commit on its branch: the worktree's own git
 * state, the repository's objects, and the directory of the branch's ref and of its log. Not the
 * repository's config or hooks: a sandboxed command cannot plant what the server's git would run.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { worktreeGitPaths } from "./worktree.ts";
 * const git = { dir: "/r/.git/worktrees/s", commonDir: "/r/.git" };
 * const info = { path: "/d/s", branch: "acp-harness/ab12cd34", base: "c", repository: "/r", cwd: "/d/s", git };
 * assert.deepEqual(worktreeGitPaths(info), [
 *   "/r/.git/worktrees/s", "/r/.git/objects", "/r/.git/refs/heads/acp-harness",
 *   "/r/.git/logs/refs/heads/acp-harness",
 * ]);
 * ```
 *
 * @param info The worktree
 * @returns The paths (some may not exist yet)
 */
export function worktreeGitPaths(info: WorktreeInfo): string[] {
  if (!info.git) return [];
  const { dir, commonDir } = info.git;
  const slash = info.branch.lastIndexOf("/");
  const refs = slash < 0 ? "refs/heads" : `refs/heads/${info.branch.slice(0, slash)}`;
  return [dir, `${commonDir}/objects`, `${commonDir}/${refs}`, `${commonDir}/logs/${refs}`];
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
