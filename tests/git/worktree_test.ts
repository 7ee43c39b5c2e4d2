/**
 * Session worktrees on real git: where a directory's repository is (and why there is none), a
 * worktree made from `HEAD` or from the working tree, in a subdirectory, with submodules; its
 * removal with its branch unless that has commits of its own; the reaping of what a crash left.
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { NodeHost } from "../../src/host/node_host.ts";
import {
  addWorktree,
  findRepository,
  inWorktree,
  reapWorktrees,
  removeSessionWorktree,
  removeWorktree,
  restoreWorktree,
  type WorktreeHost,
} from "../../src/git/worktree.ts";
import { branchesOf, gitIn, makeRepo, statusOf, writeFiles } from "../_helpers/git_repo.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const node = new NodeHost({});
const host: WorktreeHost = { processes: node, files: node };

Deno.test("findRepository says why a directory gets no worktree", async () => {
  await using plain = await tempDir("acp-harness-wt-plain-");
  assert.deepEqual(await findRepository(host, plain.path), {
    reason: "the directory is not in a git repository",
  });
  await using bare = await tempDir("acp-harness-wt-bare-");
  gitIn(bare.path, "init", "--quiet", "--bare");
  assert.deepEqual(await findRepository(host, bare.path), { reason: "the repository is bare" });
  await using empty = await tempDir("acp-harness-wt-empty-");
  gitIn(empty.path, "init", "--quiet");
  assert.deepEqual(await findRepository(host, empty.path), {
    reason: "the repository has no commit yet",
  });
  const noGit: WorktreeHost = {
    processes: new NodeHost({ PATH: plain.path }),
    files: node,
  };
  assert.deepEqual(await findRepository(noGit, plain.path), {
    reason: "git is not installed (or cannot be started)",
  });
});

Deno.test("a worktree from HEAD in a subdirectory: own branch, checkout untouched, removed with its branch", async () => {
  await using repo = await tempDir("acp-harness-wt-repo-");
  await using data = await tempDir("acp-harness-wt-data-");
  const head = makeRepo(repo.path, { "a.txt": "a\n", "sub/b.txt": "b\n" });
  writeFiles(repo.path, { "a.txt": "changed, not committed\n", "new.txt": "untracked\n" });
  const before = statusOf(repo.path);
  const found = await findRepository(host, `${repo.path}/sub`);
  assert.deepEqual(found, { toplevel: repo.path, head });
  if ("reason" in found) return;
  const sessionId = "0123abcd-0000-4000-8000-000000000000";
  const info = await addWorktree(host, {
    dataDir: data.path,
    sessionId,
    repository: found,
    cwd: `${repo.path}/sub`,
  });
  const { git, ...told } = info;
  assert.deepEqual(git, {
    dir: `${repo.path}/.git/worktrees/${sessionId}`,
    commonDir: `${repo.path}/.git`,
  });
  assert.deepEqual(told, {
    path: `${data.path}/worktrees/${sessionId}`,
    branch: "acp-harness/0123abcd",
    base: head,
    repository: repo.path,
    cwd: `${data.path}/worktrees/${sessionId}/sub`,
  });
  assert.equal(readFileSync(`${info.path}/a.txt`, "utf8"), "a\n");
  assert.equal(existsSync(`${info.path}/new.txt`), false);
  assert.equal(statusOf(repo.path), before);
  assert.deepEqual(branchesOf(repo.path), ["acp-harness/0123abcd", "main"]);
  assert.equal(inWorktree(info, `${repo.path}/sub`), info.cwd);
  const removed = await removeSessionWorktree(host, data.path, sessionId);
  assert.deepEqual(removed?.removal, { branchDeleted: true });
  assert.equal(existsSync(info.path), false);
  assert.equal(existsSync(`${info.path}.json`), false);
  assert.deepEqual(branchesOf(repo.path), ["main"]);
  assert.equal(gitIn(repo.path, "worktree", "list").trim().split("\n").length, 1);
  assert.equal(await removeSessionWorktree(host, data.path, sessionId), undefined);
});

Deno.test("a worktree from the working tree carries uncommitted and untracked files, not ignored ones", async () => {
  await using repo = await tempDir("acp-harness-wt-repo-");
  await using data = await tempDir("acp-harness-wt-data-");
  makeRepo(repo.path, { "a.txt": "a\n", ".gitignore": "*.log\n", "gone.txt": "x\n" });
  writeFiles(repo.path, { "a.txt": "edited\n", "dir/new.txt": "new\n", "debug.log": "noise\n" });
  await Deno.remove(`${repo.path}/gone.txt`);
  const found = await findRepository(host, repo.path);
  if ("reason" in found) throw new Error(found.reason);
  const info = await addWorktree(host, {
    dataDir: data.path,
    sessionId: "s-working-tree",
    repository: found,
    cwd: repo.path,
    from: "working-tree",
  });
  assert.equal(info.fromWorkingTree, true);
  assert.equal(readFileSync(`${info.path}/a.txt`, "utf8"), "edited\n");
  assert.equal(readFileSync(`${info.path}/dir/new.txt`, "utf8"), "new\n");
  assert.equal(existsSync(`${info.path}/gone.txt`), false);
  assert.equal(existsSync(`${info.path}/debug.log`), false);
  await removeWorktree(host, info);
});

Deno.test("a branch with commits of its own is kept when its worktree goes", async () => {
  await using repo = await tempDir("acp-harness-wt-repo-");
  await using data = await tempDir("acp-harness-wt-data-");
  makeRepo(repo.path);
  const found = await findRepository(host, repo.path);
  if ("reason" in found) throw new Error(found.reason);
  const info = await addWorktree(host, {
    dataDir: data.path,
    sessionId: "feedbeef-session",
    repository: found,
    cwd: repo.path,
  });
  writeFiles(info.path, { "work.txt": "done\n" });
  gitIn(info.path, "add", "work.txt");
  gitIn(info.path, "commit", "--quiet", "-m", "work");
  const removal = await removeWorktree(host, info);
  assert.deepEqual(removal, {
    branchDeleted: false,
    branchKept: "it has 1 commit not merged into another branch",
  });
  assert.equal(existsSync(info.path), false);
  assert.deepEqual(branchesOf(repo.path), ["acp-harness/feedbeef", "main"]);
});

Deno.test("a taken short branch name falls back to the whole id; a gone worktree is made again from its branch", async () => {
  await using repo = await tempDir("acp-harness-wt-repo-");
  await using data = await tempDir("acp-harness-wt-data-");
  makeRepo(repo.path);
  gitIn(repo.path, "branch", "acp-harness/aaaaaaaa");
  const found = await findRepository(host, repo.path);
  if ("reason" in found) throw new Error(found.reason);
  const info = await addWorktree(host, {
    dataDir: data.path,
    sessionId: "aaaaaaaa-second",
    repository: found,
    cwd: repo.path,
  });
  assert.equal(info.branch, "acp-harness/aaaaaaaa-second");
  await Deno.remove(info.path, { recursive: true });
  assert.equal(await restoreWorktree(host, info, { dataDir: data.path }), true);
  assert.equal(readFileSync(`${info.path}/a.txt`, "utf8"), "a\n");
  await removeWorktree(host, info);
  await Deno.remove(repo.path, { recursive: true });
  assert.equal(await restoreWorktree(host, info, { dataDir: data.path }), false);
});

Deno.test("submodules are left uninitialized in a worktree", async () => {
  await using sub = await tempDir("acp-harness-wt-sub-");
  await using repo = await tempDir("acp-harness-wt-repo-");
  await using data = await tempDir("acp-harness-wt-data-");
  makeRepo(sub.path, { "lib.txt": "lib\n" });
  makeRepo(repo.path);
  gitIn(
    repo.path,
    "-c",
    "protocol.file.allow=always",
    "submodule",
    "add",
    "--quiet",
    sub.path,
    "lib",
  );
  gitIn(repo.path, "commit", "--quiet", "-m", "submodule");
  const found = await findRepository(host, repo.path);
  if ("reason" in found) throw new Error(found.reason);
  const info = await addWorktree(host, {
    dataDir: data.path,
    sessionId: "with-submodule",
    repository: found,
    cwd: repo.path,
  });
  assert.equal(existsSync(`${info.path}/.gitmodules`), true);
  assert.equal(existsSync(`${info.path}/lib/lib.txt`), false);
  await removeWorktree(host, info);
  assert.equal(statusOf(repo.path), "");
});

Deno.test("reaping removes the worktrees of sessions never stored, keeps the others, reports strays", async () => {
  await using repo = await tempDir("acp-harness-wt-repo-");
  await using data = await tempDir("acp-harness-wt-data-");
  makeRepo(repo.path);
  const found = await findRepository(host, repo.path);
  if ("reason" in found) throw new Error(found.reason);
  const owner = { pid: 999_999_999, host: "here", store: "/data" };
  const make = (sessionId: string) =>
    addWorktree(host, { dataDir: data.path, sessionId, repository: found, cwd: repo.path, owner });
  const self = { host: "here", store: "/data" };
  const isAlive = () => false;
  const stored = await make("11111111-stored");
  const orphan = await make("22222222-orphan");
  await Deno.mkdir(`${data.path}/worktrees/stray`);
  const early = await reapWorktrees(host, {
    dataDir: data.path,
    exists: (id) => Promise.resolve(id === "11111111-stored"),
    before: 0,
    self,
    isAlive,
  });
  assert.deepEqual(early.removed, [], "records newer than the start are left");
  const result = await reapWorktrees(host, {
    dataDir: data.path,
    exists: (id) => Promise.resolve(id === "11111111-stored"),
    before: Date.now() + 60_000,
    self,
    isAlive,
  });
  assert.deepEqual(result.removed.map((info) => info.path), [orphan.path]);
  assert.deepEqual(result.unknown, [`${data.path}/worktrees/stray`]);
  assert.equal(existsSync(orphan.path), false);
  assert.equal(existsSync(stored.path), true);
  assert.deepEqual(branchesOf(repo.path), ["acp-harness/11111111", "main"]);
  await removeWorktree(host, stored);
});

Deno.test("the repository's own filter drivers never run when a worktree is made or carries changes", async () => {
  await using repo = await tempDir("acp-harness-wt-repo-");
  await using data = await tempDir("acp-harness-wt-data-");
  await using out = await tempDir("acp-harness-wt-out-");
  makeRepo(repo.path, { "a.txt": "a\n", ".gitattributes": "* filter=evil\n" });
  const marker = `${out.path}/ran`;
  gitIn(repo.path, "config", "filter.evil.smudge", `sh -c 'touch ${marker}; cat'`);
  gitIn(repo.path, "config", "filter.evil.clean", `sh -c 'touch ${marker}; cat'`);
  gitIn(repo.path, "config", "filter.evil.required", "true");
  writeFiles(repo.path, { "a.txt": "changed\n", "new.txt": "new\n" });
  const found = await findRepository(host, repo.path);
  if ("reason" in found) throw new Error(found.reason);
  for (const from of ["head", "working-tree"] as const) {
    const info = await addWorktree(host, {
      dataDir: data.path,
      sessionId: `filter-${from}`,
      repository: found,
      cwd: repo.path,
      from,
    });
    assert.equal(existsSync(marker), false, `a filter ran on the server (${from})`);
    assert.equal(readFileSync(`${info.path}/a.txt`, "utf8"), from === "head" ? "a\n" : "changed\n");
    await removeWorktree(host, info);
  }
});

Deno.test("working-tree keeps untracked symlinks links and scripts executable, and the checkout's index", async () => {
  await using repo = await tempDir("acp-harness-wt-repo-");
  await using data = await tempDir("acp-harness-wt-data-");
  await using outside = await tempDir("acp-harness-wt-outside-");
  makeRepo(repo.path);
  await Deno.writeTextFile(`${outside.path}/secret`, "secret\n");
  await Deno.symlink(`${outside.path}/secret`, `${repo.path}/link`);
  await Deno.writeTextFile(`${repo.path}/run.sh`, "#!/bin/sh\necho hi\n", { mode: 0o755 });
  gitIn(repo.path, "add", "run.sh");
  const index = await Deno.readFile(`${repo.path}/.git/index`);
  const found = await findRepository(host, repo.path);
  if ("reason" in found) throw new Error(found.reason);
  const info = await addWorktree(host, {
    dataDir: data.path,
    sessionId: "links",
    repository: found,
    cwd: repo.path,
    from: "working-tree",
  });
  assert.equal((await Deno.lstat(`${info.path}/link`)).isSymlink, true);
  assert.equal(await Deno.readLink(`${info.path}/link`), `${outside.path}/secret`);
  assert.notEqual(((await Deno.stat(`${info.path}/run.sh`)).mode ?? 0) & 0o111, 0);
  // Carried as changes (the worktree's index is HEAD's), the checkout's index untouched.
  assert.deepEqual(statusOf(info.path).trim().split("\n").sort(), ["?? link", "?? run.sh"]);
  assert.deepEqual(await Deno.readFile(`${repo.path}/.git/index`), index);
  await removeWorktree(host, info);
});

Deno.test("a cwd git does not check out exists in the worktree; an `acp-harness` branch moves the name aside", async () => {
  await using repo = await tempDir("acp-harness-wt-repo-");
  await using data = await tempDir("acp-harness-wt-data-");
  makeRepo(repo.path, { "a.txt": "a\n", ".gitignore": "build/\n" });
  writeFiles(repo.path, { "build/out.txt": "x\n" });
  gitIn(repo.path, "branch", "acp-harness");
  const found = await findRepository(host, `${repo.path}/build`);
  if ("reason" in found) throw new Error(found.reason);
  const info = await addWorktree(host, {
    dataDir: data.path,
    sessionId: "abcdef12-ignored",
    repository: found,
    cwd: `${repo.path}/build`,
  });
  assert.equal(info.cwd, `${info.path}/build`);
  assert.equal((await Deno.stat(info.cwd)).isDirectory, true);
  assert.equal(info.branch, "acp-harness-abcdef12");
  assert.deepEqual(branchesOf(repo.path), ["acp-harness", "acp-harness-abcdef12", "main"]);
  assert.deepEqual(await removeWorktree(host, info), { branchDeleted: true });
  assert.deepEqual(branchesOf(repo.path), ["acp-harness", "main"], "the user's branch stays");
});

Deno.test("a worktree made again from its branch is recorded; one outside the data directory is not made", async () => {
  await using repo = await tempDir("acp-harness-wt-repo-");
  await using data = await tempDir("acp-harness-wt-data-");
  makeRepo(repo.path);
  const found = await findRepository(host, repo.path);
  if ("reason" in found) throw new Error(found.reason);
  const sessionId = "66666666-again";
  const info = await addWorktree(host, {
    dataDir: data.path,
    sessionId,
    repository: found,
    cwd: repo.path,
  });
  await Deno.remove(info.path, { recursive: true });
  await Deno.remove(`${info.path}.json`);
  assert.equal(await restoreWorktree(host, info, { dataDir: "/elsewhere" }), false);
  assert.equal(await restoreWorktree(host, info, { dataDir: data.path }), true);
  const removed = await removeSessionWorktree(host, data.path, sessionId);
  assert.ok(removed, "the record was written again");
  assert.equal(existsSync(info.path), false);
  assert.deepEqual(branchesOf(repo.path), ["main"]);
});

Deno.test("the reaper leaves alone a live server's worktrees, another store's and another machine's", async () => {
  await using repo = await tempDir("acp-harness-wt-repo-");
  await using data = await tempDir("acp-harness-wt-data-");
  makeRepo(repo.path);
  const found = await findRepository(host, repo.path);
  if ("reason" in found) throw new Error(found.reason);
  const owners = {
    live: { pid: 1000, host: "here", store: "/data" },
    otherStore: { pid: 2000, host: "here", store: "/other" },
    otherHost: { pid: 2000, host: "there", store: "/data" },
    memory: { pid: 2000, host: "here", store: "memory (not kept after exit)" },
    dead: { pid: 2000, host: "here", store: "/data" },
  };
  const made = new Map<string, string>();
  for (const [name, owner] of Object.entries(owners)) {
    const info = await addWorktree(host, {
      dataDir: data.path,
      sessionId: `${name}-session`,
      repository: found,
      cwd: repo.path,
      owner,
    });
    made.set(name, info.path);
  }
  const result = await reapWorktrees(host, {
    dataDir: data.path,
    exists: () => Promise.resolve(false),
    before: Date.now() + 60_000,
    self: { host: "here", store: "/data" },
    isAlive: (pid) => pid === 1000,
  });
  assert.deepEqual(
    result.removed.map((info) => info.path).sort(),
    [made.get("dead"), made.get("memory")].sort(),
  );
  for (const name of ["live", "otherStore", "otherHost"]) {
    assert.equal(existsSync(made.get(name)!), true);
  }
});
