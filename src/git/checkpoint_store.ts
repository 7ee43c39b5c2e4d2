/**
 * A session's checkpoints: the state of its roots' files, kept in a bare git object store of the
 * session's own under the server's data directory (`checkpoints/<session id>`), so that it works
 * for roots that are not git repositories and never touches a repository's `.git`, index or
 * stash. Each root has an index file of its own in that store (its stat cache: a snapshot hashes
 * only the files that changed since the last one).
 *
 * @module
 */
import type { HostFiles, HostProcesses } from "../host/host.ts";
import { git, GitError, runGit } from "./git_command.ts";

/** The largest file a checkpoint records by default, in bytes (1 MiB). */
export const DEFAULT_CHECKPOINT_MAX_FILE_SIZE = 1_048_576;

/** The most files of one root a checkpoint records by default: a larger root is skipped. */
export const DEFAULT_CHECKPOINT_MAX_FILES = 50_000;

/** What a checkpoint store works with. */
export interface CheckpointStoreOptions {
  /** Runs git and reads file sizes, removes the store. */
  readonly host:
    & Pick<HostProcesses, "spawn">
    & Pick<HostFiles, "stat" | "realpath" | "remove" | "mkdir" | "writeFileAtomic">;
  /** The store's directory (`<dataDir>/checkpoints/<session id>`): made on the first snapshot. */
  readonly dir: string;
  /** Files larger than this are not recorded (nor restored). @default {DEFAULT_CHECKPOINT_MAX_FILE_SIZE} */
  readonly maxFileSize?: number;
  /** A root with more files than this is not recorded. @default {DEFAULT_CHECKPOINT_MAX_FILES} */
  readonly maxFiles?: number;
  /**
   * Directories never recorded (the data directory, when it lies inside a root): compared with
   * the roots by their canonical paths, so one named through a symlink is left out too; the
   * store's own directory always is. @default {none}
   */
  readonly exclude?: readonly string[];
  /**
   * Other stores whose objects this one may read (a forked session's source's), by directory:
   * the checkpoints copied from them restore from there. A missing one is left out. @default {none}
   */
  readonly borrow?: readonly string[];
}

/** What a checkpoint of one root left out. */
export interface SkippedFiles {
  /** Files over the size limit, relative to the root. */
  readonly large: readonly string[];
  /** Set when the root had more files than the limit (then nothing of it is recorded). */
  readonly tooMany?: number;
}

/** The state of one root, as a checkpoint recorded it. */
export interface RootSnapshot {
  /** The root (absolute). */
  readonly root: string;
  /** The git tree of its files; absent when the root was skipped (see `skipped.tooMany`). */
  readonly tree?: string;
  readonly skipped: SkippedFiles;
}

/** How {@link CheckpointStore.restore} runs. */
export interface RestoreOptions {
  /** Stops it (git is killed). @default {never} */
  readonly signal?: AbortSignal;
  /**
   * Runs once the files are known to change, before the first change (a rejection stops the
   * restore with nothing changed); not run when nothing is to change. @default {none}
   */
  readonly beforeChange?: () => Promise<void>;
}

/** What {@link CheckpointStore.restore} did. */
export interface RestoreOutcome {
  /** The files written back (changed or deleted since), relative to the root. */
  readonly restored: readonly string[];
  /** The files removed (created since), relative to the root. */
  readonly removed: readonly string[];
  /** Files left alone: over the size limit now, or ignored now. */
  readonly skipped: { readonly large: readonly string[]; readonly ignored: readonly string[] };
}

/**
 * A checkpoint store was asked what it cannot do: a root too large to record, a tree whose
 * files it does not have.
 */
export class CheckpointError extends Error {
  /** @param message What failed */
  constructor(message: string) {
    super(message);
    this.name = "CheckpointError";
  }
}

/**
 * Where a session's checkpoints are kept.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkpointDir } from "./checkpoint_store.ts";
 * assert.equal(checkpointDir("/data", "s1"), "/data/checkpoints/s1");
 * ```
 *
 * @param dataDir The server's data directory
 * @param sessionId The session
 * @returns The directory of its store
 */
export function checkpointDir(dataDir: string, sessionId: string): string {
  return `${dataDir.replace(/\/+$/, "")}/checkpoints/${sessionId}`;
}

/**
 * Every file's attributes unset: what is stored is the bytes on disk, with no filter (LFS), no
 * line-ending conversion and no encoding of the root's `.gitattributes`.
 */
const RAW_ATTRIBUTES = "* -text -filter -diff -merge -ident -eol -working-tree-encoding\n";

/** Settings of the user's git config that would change what is stored or read. */
const CONFIG: ReadonlyArray<readonly [string, string]> = [
  ["core.autocrlf", "false"],
  ["core.safecrlf", "false"],
  ["core.fsmonitor", "false"],
  ["core.untrackedCache", "false"],
  ["core.splitIndex", "false"],
  ["advice.addEmbeddedRepo", "false"],
];

/** {@link CONFIG} as git reads it from its environment. */
const CONFIG_ENV: Readonly<Record<string, string>> = Object.fromEntries([
  // Every path given to git is a path, never pathspec magic (a file named `:(glob)*`).
  ["GIT_LITERAL_PATHSPECS", "1"],
  ["GIT_CONFIG_COUNT", String(CONFIG.length)],
  ...CONFIG.flatMap(([key, value], index) => [
    [`GIT_CONFIG_KEY_${index}`, key],
    [`GIT_CONFIG_VALUE_${index}`, value],
  ]),
]);

/** The signal of a call given none: never aborted. */
const NO_SIGNAL: AbortSignal = new AbortController().signal;

/** How many file sizes are asked for at once. */
const STAT_BATCH = 64;

/**
 * A session's shadow object store: {@link snapshot} records its roots' files, {@link restore}
 * brings a root back to a recorded state, {@link remove} deletes the store. Calls run one at a
 * time, in call order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NodeHost } from "../host/node_host.ts";
 * import { CheckpointStore } from "./checkpoint_store.ts";
 * const host = new NodeHost();
 * const base = `${host.env("TMPDIR") ?? "/tmp"}/ckpt-doc-${crypto.randomUUID()}`;
 * const root = `${base}/root`;
 * await host.mkdir(root);
 * try {
 *   await host.writeFileAtomic(`${root}/a.txt`, "one");
 *   const store = new CheckpointStore({ host, dir: `${base}/shadow` });
 *   const [before] = await store.snapshot([root]);
 *   await host.writeFileAtomic(`${root}/a.txt`, "two");
 *   const outcome = await store.restore(root, before!.tree!);
 *   assert.deepEqual(outcome.restored, ["a.txt"]);
 *   assert.equal(await host.readTextFile(`${root}/a.txt`), "one");
 *   await store.remove();
 * } finally {
 *   await host.remove(base);
 * }
 * ```
 */
export class CheckpointStore {
  readonly #options: CheckpointStoreOptions;
  #ready: Promise<void> | undefined;
  /** The canonical excluded directories (set by {@link #init}). */
  #excluded: readonly string[] = [];
  /** The last call: the next one runs after it (git locks the index). */
  #tail: Promise<unknown> = Promise.resolve();

  /** @param options Where the store is and what it records */
  constructor(options: CheckpointStoreOptions) {
    this.#options = options;
  }

  /** The store's directory. */
  get dir(): string {
    return this.#options.dir;
  }

  /**
   * Records the files of each root: what its `.gitignore` files ignore, `.git`, nested
   * repositories, files over the size limit and the excluded directories are left out.
   *
   * @param roots The roots (absolute, canonical)
   * @param signal Stops it (git is killed)
   * @returns Each root's tree and what was skipped, in the order of `roots`
   * @throws {GitError} When git is missing or fails
   */
  snapshot(roots: readonly string[], signal: AbortSignal = NO_SIGNAL): Promise<RootSnapshot[]> {
    return this.#serial(async () => {
      await this.#init(signal);
      const snapshots: RootSnapshot[] = [];
      for (const root of roots) snapshots.push(await this.#record(root, signal));
      return snapshots;
    });
  }

  /**
   * Makes a root's files match a recorded tree: files created since are removed first (and
   * directories they leave empty), then the `.gitignore` files and the other files changed or
   * deleted since are written back. Files the store does not record now (ignored once the
   * `.gitignore` files are back, over the size limit, in `.git` or a nested repository) are left
   * alone.
   *
   * @param root The root (absolute, canonical)
   * @param tree The tree a snapshot of it recorded
   * @param options The signal, and what runs before the first change
   * @returns What was written back, removed and left alone
   * @throws {CheckpointError} When the root has too many files to record, or the store does not
   *   have the tree
   * @throws {GitError} When git is missing or fails
   */
  restore(root: string, tree: string, options: RestoreOptions = {}): Promise<RestoreOutcome> {
    const signal = options.signal ?? NO_SIGNAL;
    return this.#serial(async () => {
      await this.#init(signal);
      await this.#assertTree(tree, signal);
      const now = await this.#record(root, signal);
      if (now.tree === undefined) {
        throw new CheckpointError(
          `${root} has more than ${this.#maxFiles} files (${now.skipped.tooMany}): not restored`,
        );
      }
      const env = await this.#env(root);
      const changes = await this.#diff(now.tree, tree, root, env, signal);
      const large = new Set(now.skipped.large);
      const wanted = changes.filter((change) => !large.has(change.path));
      const removed = wanted.filter((change) => change.status === "A").map((change) => change.path);
      const writing = wanted.filter((change) => change.status !== "A").map((change) => change.path);
      const ignoreFiles = writing.filter(isIgnoreFile);
      const others = writing.filter((path) => !isIgnoreFile(path));
      // Without removals or `.gitignore` files to write, what is ignored is known before anything
      // changes: when that is every file, nothing changes.
      let ignored = removed.length + ignoreFiles.length === 0
        ? await this.#ignored(others, root, env, signal)
        : undefined;
      const skippedLarge = [...large].filter((path) => changes.some((c) => c.path === path));
      if (ignored && others.every((path) => ignored?.has(path))) {
        return {
          restored: [],
          removed: [],
          skipped: { large: skippedLarge, ignored: [...ignored] },
        };
      }
      await options.beforeChange?.();
      // Deletions first: a directory (or a symlink) where the checkpoint has a file goes before
      // the file is written, and git never writes through a symlink it just removed.
      if (removed.length > 0) {
        await git(this.#options.host, [
          "rm",
          "--force",
          "--quiet",
          "--ignore-unmatch",
          "--pathspec-from-file=-",
          "--pathspec-file-nul",
        ], { cwd: root, env, stdin: nulList(removed), signal });
      }
      // Then the `.gitignore` files: what they ignore once restored is what is left alone.
      await this.#checkout(tree, ignoreFiles, root, env, signal);
      ignored ??= await this.#ignored(others, root, env, signal);
      const rest = others.filter((path) => !ignored?.has(path));
      await this.#checkout(tree, rest, root, env, signal);
      const restored = [...ignoreFiles, ...rest];
      return {
        restored,
        removed,
        skipped: { large: skippedLarge, ignored: [...ignored] },
      };
    });
  }

  /**
   * The files that differ between two trees of a root.
   *
   * @param from One tree
   * @param to The other
   * @param signal Stops it
   * @returns Their paths, relative to the root
   */
  changedFiles(from: string, to: string, signal: AbortSignal = NO_SIGNAL): Promise<string[]> {
    if (from === to) return Promise.resolve([]);
    return this.#serial(async () => {
      const out = await git(this.#options.host, [
        "diff-tree",
        "-r",
        "-z",
        "--name-only",
        "--no-renames",
        from,
        to,
      ], { cwd: "/", env: { GIT_DIR: this.#options.dir }, signal });
      return out.split("\0").filter((path) => path !== "");
    });
  }

  /** Deletes the store (a missing one is fine). */
  remove(): Promise<void> {
    return this.#serial(async () => {
      this.#ready = undefined;
      await this.#options.host.remove(this.#options.dir);
    });
  }

  get #maxFiles(): number {
    return this.#options.maxFiles ?? DEFAULT_CHECKPOINT_MAX_FILES;
  }

  #serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(task, task);
    this.#tail = run.catch(() => {});
    return run;
  }

  /**
   * Makes the bare store once (no automatic gc, every attribute unset), points it at the stores
   * it borrows from, and resolves the excluded directories.
   */
  #init(signal: AbortSignal): Promise<void> {
    this.#ready ??= (async () => {
      const { host, dir } = this.#options;
      const marker = await host.stat(`${dir}/info/attributes`);
      if (!marker?.isFile) {
        await host.mkdir(dir);
        await git(host, ["init", "--bare", "--quiet", dir], { cwd: dir, signal });
        await git(host, ["config", "gc.auto", "0"], { cwd: dir, env: { GIT_DIR: dir }, signal });
        await host.mkdir(`${dir}/info`);
        await host.writeFileAtomic(`${dir}/info/attributes`, RAW_ATTRIBUTES);
      }
      await this.#borrow();
      this.#excluded = await this.#canonicalExcludes();
    })();
    const ready = this.#ready;
    ready.catch(() => {
      if (this.#ready === ready) this.#ready = undefined;
    });
    return ready;
  }

  /** Lists the object directories of the stores borrowed from (those that exist) as alternates. */
  async #borrow(): Promise<void> {
    const { host, dir, borrow = [] } = this.#options;
    if (borrow.length === 0) return;
    const found: string[] = [];
    for (const other of borrow) {
      const objects = `${other.replace(/\/+$/, "")}/objects`;
      if ((await host.stat(objects))?.isDirectory) found.push(objects);
    }
    await host.writeFileAtomic(
      `${dir}/objects/info/alternates`,
      found.map((objects) => `${objects}\n`).join(""),
    );
  }

  /** The excluded directories and the store's own, each by its canonical path and as given. */
  async #canonicalExcludes(): Promise<string[]> {
    const { host, dir, exclude = [] } = this.#options;
    const given = [...exclude, dir].map((path) => path.replace(/\/+$/, ""));
    const canonical = await Promise.all(
      given.map((path) => host.realpath(path).catch(() => path)),
    );
    return [...new Set([...canonical, ...given])];
  }

  /** Fails clearly when the store does not have a tree (a fork's checkpoint, a store removed). */
  async #assertTree(tree: string, signal: AbortSignal): Promise<void> {
    const result = await runGit(this.#options.host, ["cat-file", "-e", `${tree}^{tree}`], {
      cwd: "/",
      env: { GIT_DIR: this.#options.dir },
      signal,
    });
    if (result.code !== 0) {
      throw new CheckpointError(
        `the checkpoint's files (tree ${tree.slice(0, 12)}) are not in this session's ` +
          "checkpoint store (a forked session's source deleted, or its store removed)",
      );
    }
  }

  /** The environment of git calls on `root`: the store, the root, the root's index. */
  async #env(root: string): Promise<Record<string, string> & { GIT_INDEX_FILE: string }> {
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(root));
    const id = [...new Uint8Array(digest).slice(0, 8)]
      .map((byte) => byte.toString(16).padStart(2, "0")).join("");
    const { dir } = this.#options;
    return {
      ...CONFIG_ENV,
      GIT_DIR: dir,
      GIT_WORK_TREE: root,
      GIT_INDEX_FILE: `${dir}/index-${id}`,
    };
  }

  /**
   * Brings the root's index up to its files and writes its tree. Deletions are recorded apart
   * from changes (a path under a directory now a symlink, or now ignored, only leaves the index).
   * When git fails (git missing aside), once more from a new index.
   */
  async #record(root: string, signal: AbortSignal): Promise<RootSnapshot> {
    try {
      return await this.#recordOnce(root, signal);
    } catch (error) {
      signal.throwIfAborted();
      if (error instanceof GitError && error.code === undefined) throw error;
      // The index is only a stat cache (a torn or stale one fails git): rebuilt from the files.
      const env = await this.#env(root);
      await this.#options.host.remove(env.GIT_INDEX_FILE).catch(() => {});
      return await this.#recordOnce(root, signal);
    }
  }

  /** {@link #record}, once. */
  async #recordOnce(root: string, signal: AbortSignal): Promise<RootSnapshot> {
    const { host } = this.#options;
    const env = await this.#env(root);
    await this.#dropStaleLock(env);
    const excluded = this.#excludedIn(root);
    const listed = await git(host, [
      "ls-files",
      "-z",
      "-t",
      "--cached",
      "--others",
      "--modified",
      "--deleted",
      "--exclude-standard",
      ...excluded.map((path) => `--exclude=/${ignorePattern(path)}`),
      "--",
      ".",
    ], { cwd: root, env, signal });
    const all = new Set<string>();
    const changed = new Set<string>();
    const trackedChanged = new Set<string>();
    for (const entry of listed.split("\0")) {
      if (entry.length < 3) continue;
      const tag = entry[0];
      const path = entry.slice(2);
      // A nested repository (listed as its directory) is left alone.
      if (
        path.endsWith("/") || excluded.some((dir) => path === dir || path.startsWith(`${dir}/`))
      ) {
        continue;
      }
      all.add(path);
      if (tag !== "H") changed.add(path);
      if (tag === "C" || tag === "R") trackedChanged.add(path);
    }
    if (all.size > this.#maxFiles) return { root, skipped: { large: [], tooMany: all.size } };
    const large = await this.#large(root, [...changed], signal);
    // Files that grew past the limit, that a `.gitignore` now ignores, or that lie under a
    // directory now a symlink leave the index. Only a changed `.gitignore` can make a recorded
    // file ignored: without one, git is not asked.
    const ignoresChanged = [...changed].some(isIgnoreFile);
    const tracked = ignoresChanged
      ? await git(host, [
        "ls-files",
        "-z",
        "--cached",
        "--ignored",
        "--exclude-standard",
      ], { cwd: root, env, signal })
      : "";
    const leaving = new Set([
      ...tracked.split("\0").filter((path) => path !== ""),
      ...large,
      ...await this.#beyondLinks(root, [...trackedChanged]),
    ]);
    await this.#updateIndex(["--force-remove"], [...leaving], root, env, signal);
    // Tracked paths before new ones: a file now a directory leaves before the files under it come.
    const adding = [...changed].filter((path) => !leaving.has(path));
    const [known, fresh] = [
      adding.filter((path) => trackedChanged.has(path)),
      adding.filter((path) => !trackedChanged.has(path)),
    ];
    await this.#updateIndex(["--add", "--remove"], known, root, env, signal);
    await this.#updateIndex(["--add", "--remove"], fresh, root, env, signal);
    const tree = (await git(host, ["write-tree"], { cwd: root, env, signal })).trim();
    return { root, tree, skipped: { large: large.sort() } };
  }

  /** Writes paths back from a tree (the index too), when there are any. */
  async #checkout(
    tree: string,
    paths: readonly string[],
    root: string,
    env: Record<string, string>,
    signal: AbortSignal,
  ): Promise<void> {
    if (paths.length === 0) return;
    await git(this.#options.host, [
      "restore",
      `--source=${tree}`,
      "--staged",
      "--worktree",
      "--pathspec-from-file=-",
      "--pathspec-file-nul",
    ], { cwd: root, env, stdin: nulList(paths), signal });
  }

  /** Runs `git update-index` on paths (literal, NUL-separated on its input), when there are any. */
  async #updateIndex(
    flags: readonly string[],
    paths: readonly string[],
    root: string,
    env: Record<string, string>,
    signal: AbortSignal,
  ): Promise<void> {
    if (paths.length === 0) return;
    await git(this.#options.host, ["update-index", ...flags, "-z", "--stdin"], {
      cwd: root,
      env,
      stdin: nulList(paths),
      signal,
    });
  }

  /**
   * Removes the root's index lock when one is there: calls run one at a time and the store
   * serves one session, so a lock seen before a call of ours is a git killed with the server.
   */
  async #dropStaleLock(env: Record<string, string>): Promise<void> {
    const lock = `${env.GIT_INDEX_FILE}.lock`;
    if (await this.#options.host.stat(lock)) await this.#options.host.remove(lock);
  }

  /** Which of `paths` lie under a directory that is not there any more as a real directory. */
  async #beyondLinks(root: string, paths: readonly string[]): Promise<string[]> {
    const { host } = this.#options;
    const canonicalRoot = await host.realpath(root).catch(() => root);
    const verdicts = new Map<string, Promise<boolean>>();
    const beyond = (dir: string): Promise<boolean> => {
      let verdict = verdicts.get(dir);
      if (!verdict) {
        verdict = host.realpath(`${root}/${dir}`).then(
          (real) => real !== `${canonicalRoot}/${dir}`,
          () => true,
        );
        verdicts.set(dir, verdict);
      }
      return verdict;
    };
    const found: string[] = [];
    for (let start = 0; start < paths.length; start += STAT_BATCH) {
      const batch = paths.slice(start, start + STAT_BATCH);
      const flags = await Promise.all(batch.map((path) => {
        const slash = path.lastIndexOf("/");
        return slash < 0 ? false : beyond(path.slice(0, slash));
      }));
      batch.forEach((path, index) => flags[index] && found.push(path));
    }
    return found;
  }

  /** The excluded directories inside `root`, relative to it. */
  #excludedIn(root: string): string[] {
    const prefix = root.endsWith("/") ? root : `${root}/`;
    return this.#excluded
      .filter((dir) => dir.startsWith(prefix))
      .map((dir) => dir.slice(prefix.length).replace(/\/+$/, ""))
      .filter((dir) => dir !== "");
  }

  /** Which of `paths` (existing ones) are over the size limit. */
  async #large(
    root: string,
    paths: readonly string[],
    signal: AbortSignal,
  ): Promise<string[]> {
    const max = this.#options.maxFileSize ?? DEFAULT_CHECKPOINT_MAX_FILE_SIZE;
    const large: string[] = [];
    for (let start = 0; start < paths.length; start += STAT_BATCH) {
      signal.throwIfAborted();
      const batch = paths.slice(start, start + STAT_BATCH);
      const infos = await Promise.all(
        batch.map((path) => this.#options.host.stat(`${root}/${path}`).catch(() => undefined)),
      );
      infos.forEach((info, index) => {
        if (info?.isFile && info.size > max) large.push(batch[index] as string);
      });
    }
    return large;
  }

  /** The changes that bring `root` from tree `now` to tree `target`. */
  async #diff(
    now: string,
    target: string,
    root: string,
    env: Record<string, string>,
    signal: AbortSignal,
  ): Promise<Array<{ status: string; path: string }>> {
    if (now === target) return [];
    const out = await git(this.#options.host, [
      "diff-tree",
      "-r",
      "-z",
      "--name-status",
      "--no-renames",
      now,
      target,
    ], { cwd: root, env, signal });
    const fields = out.split("\0");
    const changes: Array<{ status: string; path: string }> = [];
    // Pairs of status, path: `D` means the file is not in the target (it was created since).
    for (let index = 0; index + 1 < fields.length; index += 2) {
      const status = fields[index] as string;
      const path = fields[index + 1] as string;
      changes.push({ status: status === "D" ? "A" : status === "A" ? "D" : status, path });
    }
    return changes;
  }

  /** Which of `paths` the root's `.gitignore` files ignore now. */
  async #ignored(
    paths: readonly string[],
    root: string,
    env: Record<string, string>,
    signal: AbortSignal,
  ): Promise<Set<string>> {
    if (paths.length === 0) return new Set();
    // check-ignore refuses literal pathspecs: `./` keeps a name such as `:(glob)*` a path.
    const { GIT_LITERAL_PATHSPECS: _literal, ...plain } = env;
    // Exit 1: none is ignored.
    const result = await runGit(this.#options.host, [
      "check-ignore",
      "--no-index",
      "-z",
      "--stdin",
    ], { cwd: root, env: plain, stdin: nulList(paths.map((path) => `./${path}`)), signal });
    if (result.code !== 0 && result.code !== 1) {
      throw new CheckpointError(`git check-ignore failed: ${result.stderr.trim()}`);
    }
    return new Set(
      result.stdout.split("\0").filter((path) => path !== "").map((path) =>
        path.startsWith("./") ? path.slice(2) : path
      ),
    );
  }
}

/** Whether a path is a `.gitignore` file. */
function isIgnoreFile(path: string): boolean {
  return path === ".gitignore" || path.endsWith("/.gitignore");
}

/** A path as a `.gitignore` pattern that matches it alone (its special characters escaped). */
function ignorePattern(path: string): string {
  return path.replace(/[\\*?[\] !#]/g, (char) => `\\${char}`);
}

/** Paths as git reads them with `--pathspec-file-nul` / `-z`. */
function nulList(paths: readonly string[]): string {
  return paths.map((path) => `${path}\0`).join("");
}
