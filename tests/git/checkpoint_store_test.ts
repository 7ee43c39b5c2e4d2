import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { NodeHost } from "../../src/host/node_host.ts";
import { git } from "../../src/git/git_command.ts";
import { CheckpointError, CheckpointStore } from "../../src/git/checkpoint_store.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const host = new NodeHost();

/** The files under `dir` (relative, sorted) with their contents; `.git` left out. */
async function files(dir: string, prefix = ""): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for (const entry of await host.readDir(`${dir}${prefix}`)) {
    const path = `${prefix}/${entry.name}`;
    if (entry.name === ".git") continue;
    if (entry.isDirectory) Object.assign(found, await files(dir, path));
    else found[path.slice(1)] = await host.readTextFile(`${dir}${path}`);
  }
  return Object.fromEntries(Object.entries(found).sort(([a], [b]) => a.localeCompare(b)));
}

async function write(root: string, path: string, text: string): Promise<void> {
  const at = `${root}/${path}`;
  await host.mkdir(at.slice(0, at.lastIndexOf("/")));
  await host.writeFileAtomic(at, text);
}

async function exists(path: string): Promise<boolean> {
  return (await host.stat(path)) !== undefined;
}

describe("CheckpointStore", () => {
  it("restores a non-git directory: edits, deletions and new files, in subdirectories", async () => {
    await using temp = await tempDir("acp-harness-ckpt-");
    const root = `${temp.path}/root`;
    await write(root, "a.txt", "a1");
    await write(root, "src/deep/b.txt", "b1");
    await write(root, "gone.txt", "g1");
    const store = new CheckpointStore({ host, dir: `${temp.path}/data/checkpoints/s1` });
    const [first] = await store.snapshot([root]);
    assert.ok(first?.tree);
    assert.deepEqual(first.skipped, { large: [] });
    const before = await files(root);

    await write(root, "a.txt", "a2");
    await write(root, "src/deep/b.txt", "b2");
    await host.remove(`${root}/gone.txt`);
    await write(root, "new/deeper/c.txt", "c");
    await write(root, "src/deep/d.txt", "d");
    const [second] = await store.snapshot([root]);
    assert.notEqual(second?.tree, first.tree);
    assert.deepEqual(
      await store.changedFiles(first.tree, second!.tree!),
      ["a.txt", "gone.txt", "new/deeper/c.txt", "src/deep/b.txt", "src/deep/d.txt"],
    );

    const outcome = await store.restore(root, first.tree);
    assert.deepEqual([...outcome.restored].sort(), ["a.txt", "gone.txt", "src/deep/b.txt"]);
    assert.deepEqual([...outcome.removed].sort(), ["new/deeper/c.txt", "src/deep/d.txt"]);
    assert.deepEqual(await files(root), before);
    assert.equal(await exists(`${root}/new`), false, "the emptied directories are gone");
    assert.equal(await exists(`${root}/src/deep`), true);

    // Back to the second state, then nothing more to do.
    await store.restore(root, second!.tree!);
    assert.equal(await host.readTextFile(`${root}/a.txt`), "a2");
    assert.equal(await host.readTextFile(`${root}/new/deeper/c.txt`), "c");
    const again = await store.restore(root, second!.tree!);
    assert.deepEqual(again, { restored: [], removed: [], skipped: { large: [], ignored: [] } });

    await store.remove();
    assert.equal(await exists(`${temp.path}/data/checkpoints/s1`), false);
  });

  it("leaves a repository's .git, index, stash and status alone", async () => {
    await using temp = await tempDir("acp-harness-ckpt-");
    const root = `${temp.path}/repo`;
    await host.mkdir(root);
    const run = (args: string[]): Promise<string> =>
      git(host, ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: root });
    await run(["init", "--quiet"]);
    await write(root, "tracked.txt", "t1");
    await write(root, "staged.txt", "s1");
    await run(["add", "tracked.txt"]);
    await run(["commit", "--quiet", "-m", "one"]);
    await write(root, "tracked.txt", "stash me");
    await run(["stash", "--quiet"]);
    await run(["add", "staged.txt"]);
    await write(root, "tracked.txt", "t2");
    await write(root, "untracked.txt", "u1");

    const status = await run(["status", "--porcelain"]);
    const stash = await run(["stash", "list"]);
    const indexInfo = await host.stat(`${root}/.git/index`);
    const index = await host.readFile(`${root}/.git/index`);
    const head = await run(["rev-parse", "HEAD"]);

    const store = new CheckpointStore({ host, dir: `${temp.path}/shadow` });
    const [snap] = await store.snapshot([root]);
    await write(root, "tracked.txt", "t3");
    await host.remove(`${root}/untracked.txt`);
    await write(root, "created.txt", "c");
    await store.restore(root, snap!.tree!);

    assert.equal(await host.readTextFile(`${root}/tracked.txt`), "t2");
    assert.equal(await host.readTextFile(`${root}/untracked.txt`), "u1");
    assert.equal(await exists(`${root}/created.txt`), false);
    assert.equal(await run(["status", "--porcelain"]), status);
    assert.equal(await run(["stash", "list"]), stash);
    assert.equal(await run(["rev-parse", "HEAD"]), head);
    assert.deepEqual(await host.readFile(`${root}/.git/index`), index);
    assert.equal((await host.stat(`${root}/.git/index`))?.mtimeMs, indexInfo?.mtimeMs);
    const tree = await git(host, ["ls-tree", "-r", "--name-only", snap!.tree!], {
      cwd: root,
      env: { GIT_DIR: `${temp.path}/shadow` },
    });
    assert.deepEqual(tree.trim().split("\n"), ["staged.txt", "tracked.txt", "untracked.txt"]);
  });

  it("skips ignored and large files and leaves them alone on restore", async () => {
    await using temp = await tempDir("acp-harness-ckpt-");
    const root = `${temp.path}/root`;
    await write(root, ".gitignore", "*.log\nbuild/\n");
    await write(root, "keep.txt", "k1");
    await write(root, "debug.log", "log1");
    await write(root, "build/out.js", "o1");
    await write(root, "big.bin", "x".repeat(2000));
    const store = new CheckpointStore({ host, dir: `${temp.path}/shadow`, maxFileSize: 1000 });
    const [snap] = await store.snapshot([root]);
    assert.deepEqual(snap?.skipped, { large: ["big.bin"] });

    await write(root, "keep.txt", "k2");
    await write(root, "debug.log", "log2");
    await write(root, "build/out.js", "o2");
    await write(root, "build/new.js", "n");
    await write(root, "big.bin", "y".repeat(3000));
    const outcome = await store.restore(root, snap!.tree!);
    assert.deepEqual(outcome.restored, ["keep.txt"]);
    assert.deepEqual(outcome.removed, []);
    assert.equal(await host.readTextFile(`${root}/keep.txt`), "k1");
    assert.equal(await host.readTextFile(`${root}/debug.log`), "log2");
    assert.equal(await host.readTextFile(`${root}/build/out.js`), "o2");
    assert.equal(await host.readTextFile(`${root}/build/new.js`), "n");
    assert.equal(await host.readTextFile(`${root}/big.bin`), "y".repeat(3000));
  });

  it("drops a recorded file that a .gitignore written since ignores (nested ones too)", async () => {
    await using temp = await tempDir("acp-harness-ckpt-");
    const root = `${temp.path}/root`;
    await write(root, "notes.log", "n1");
    await write(root, "sub/trace.log", "t1");
    await write(root, "keep.txt", "k1");
    const store = new CheckpointStore({ host, dir: `${temp.path}/shadow` });
    const [first] = await store.snapshot([root]);
    await write(root, ".gitignore", "notes.log\n");
    await write(root, "sub/.gitignore", "*.log\n");
    const [second] = await store.snapshot([root]);
    assert.deepEqual(
      await store.changedFiles(first!.tree!, second!.tree!),
      [".gitignore", "notes.log", "sub/.gitignore", "sub/trace.log"],
    );
    // The ignored files are not the checkpoint's: a restore to it leaves them as they are.
    await write(root, "notes.log", "n2");
    const outcome = await store.restore(root, second!.tree!);
    assert.deepEqual(outcome.restored, []);
    assert.equal(await host.readTextFile(`${root}/notes.log`), "n2");
  });

  it("keeps a small file that grew past the limit, as it is now", async () => {
    await using temp = await tempDir("acp-harness-ckpt-");
    const root = `${temp.path}/root`;
    await write(root, "grows.txt", "small");
    const store = new CheckpointStore({ host, dir: `${temp.path}/shadow`, maxFileSize: 100 });
    const [snap] = await store.snapshot([root]);
    await write(root, "grows.txt", "z".repeat(500));
    const outcome = await store.restore(root, snap!.tree!);
    assert.deepEqual(outcome.skipped.large, ["grows.txt"]);
    assert.deepEqual(outcome.restored, []);
    assert.equal(await host.readTextFile(`${root}/grows.txt`), "z".repeat(500));
  });

  it("leaves out the data directory inside a root, nested repositories and several roots", async () => {
    await using temp = await tempDir("acp-harness-ckpt-");
    const root = `${temp.path}/root`;
    const other = `${temp.path}/other`;
    await write(root, "a.txt", "a");
    await write(other, "o.txt", "o");
    await write(root, "nested/inner.txt", "i1");
    await git(host, ["init", "--quiet"], { cwd: `${root}/nested` });
    const dataDir = `${root}/.data`;
    const store = new CheckpointStore({
      host,
      dir: `${dataDir}/checkpoints/s1`,
      exclude: [dataDir],
    });
    const snaps = await store.snapshot([root, other]);
    assert.equal(snaps.length, 2);
    const list = (tree: string): Promise<string> =>
      git(host, ["ls-tree", "-r", "--name-only", tree], {
        cwd: "/",
        env: { GIT_DIR: store.dir },
      });
    assert.equal((await list(snaps[0]!.tree!)).trim(), "a.txt");
    assert.equal((await list(snaps[1]!.tree!)).trim(), "o.txt");
    await write(root, "nested/inner.txt", "i2");
    await write(other, "o.txt", "o2");
    await store.restore(root, snaps[0]!.tree!);
    await store.restore(other, snaps[1]!.tree!);
    assert.equal(await host.readTextFile(`${root}/nested/inner.txt`), "i2");
    assert.equal(await host.readTextFile(`${other}/o.txt`), "o");
    assert.equal(await exists(`${dataDir}/checkpoints/s1/HEAD`), true);
  });

  it("skips a root with more files than the limit, and refuses to restore it", async () => {
    await using temp = await tempDir("acp-harness-ckpt-");
    const root = `${temp.path}/root`;
    for (const name of ["a", "b", "c"]) await write(root, `${name}.txt`, name);
    const store = new CheckpointStore({ host, dir: `${temp.path}/shadow`, maxFiles: 2 });
    const [snap] = await store.snapshot([root]);
    assert.deepEqual(snap, { root, skipped: { large: [], tooMany: 3 } });
    const small = new CheckpointStore({ host, dir: `${temp.path}/shadow2` });
    const [ok] = await small.snapshot([root]);
    await assert.rejects(store.restore(root, ok!.tree!), CheckpointError);
  });

  it("hashes only what changed: an unchanged root keeps its tree", async () => {
    await using temp = await tempDir("acp-harness-ckpt-");
    const root = `${temp.path}/root`;
    await write(root, "a.txt", "a");
    const store = new CheckpointStore({ host, dir: `${temp.path}/shadow` });
    const [one] = await store.snapshot([root]);
    const [two] = await store.snapshot([root]);
    assert.equal(two?.tree, one?.tree);
    await assert.rejects(
      store.snapshot([root], AbortSignal.abort(new Error("stop"))),
      /stop/,
    );
  });

  it("restores a directory the agent swapped for a symlink without writing through the link", async () => {
    await using temp = await tempDir("acp-harness-ckpt-");
    const root = `${temp.path}/root`;
    const outside = `${temp.path}/outside`;
    await write(root, "d/x", "inside");
    await write(outside, "x", "outside");
    const store = new CheckpointStore({ host, dir: `${temp.path}/shadow` });
    const [before] = await store.snapshot([root]);
    await host.remove(`${root}/d`);
    await Deno.symlink(outside, `${root}/d`);
    // The snapshot of the files now (the link, not what it points to) does not fail.
    const [linked] = await store.snapshot([root]);
    assert.deepEqual(await store.changedFiles(before!.tree!, linked!.tree!), ["d", "d/x"]);
    await store.restore(root, before!.tree!);
    assert.equal(await host.readTextFile(`${outside}/x`), "outside");
    assert.equal((await Deno.lstat(`${root}/d`)).isSymlink, false);
    assert.equal(await host.readTextFile(`${root}/d/x`), "inside");
  });

  it("records a file deleted in a directory a .gitignore now ignores, and one restore brings both back", async () => {
    await using temp = await tempDir("acp-harness-ckpt-");
    const root = `${temp.path}/root`;
    await write(root, "src/main.ts", "main");
    await write(root, ".gitignore", "");
    const store = new CheckpointStore({ host, dir: `${temp.path}/shadow` });
    const [before] = await store.snapshot([root]);
    await write(root, ".gitignore", "src/\n");
    await host.remove(`${root}/src/main.ts`);
    const [after] = await store.snapshot([root]);
    assert.deepEqual(await store.changedFiles(before!.tree!, after!.tree!), [
      ".gitignore",
      "src/main.ts",
    ]);
    const outcome = await store.restore(root, before!.tree!);
    assert.deepEqual(outcome.skipped.ignored, []);
    assert.equal(await host.readTextFile(`${root}/.gitignore`), "");
    assert.equal(await host.readTextFile(`${root}/src/main.ts`), "main");
  });

  it("restores a file replaced by a directory, and a directory replaced by a file", async () => {
    await using temp = await tempDir("acp-harness-ckpt-");
    const root = `${temp.path}/root`;
    await write(root, "a", "file a");
    await write(root, "b/c", "c");
    const store = new CheckpointStore({ host, dir: `${temp.path}/shadow` });
    const [before] = await store.snapshot([root]);
    await host.remove(`${root}/a`);
    await write(root, "a/b", "b");
    await host.remove(`${root}/b`);
    await write(root, "b", "file b");
    const [after] = await store.snapshot([root]);
    const outcome = await store.restore(root, before!.tree!);
    assert.deepEqual([...outcome.removed].sort(), ["a/b", "b"]);
    assert.deepEqual(await files(root), { a: "file a", "b/c": "c" });
    await store.restore(root, after!.tree!);
    assert.deepEqual(await files(root), { "a/b": "b", b: "file b" });
  });

  it("reads names that look like pathspec magic as names", async () => {
    await using temp = await tempDir("acp-harness-ckpt-");
    const root = `${temp.path}/root`;
    const names = [":(glob)*", "*", ":!keep", "-rf"];
    for (const name of names) await write(root, name, `old ${name}`);
    await write(root, "keep", "keep");
    const store = new CheckpointStore({ host, dir: `${temp.path}/shadow` });
    const [before] = await store.snapshot([root]);
    for (const name of names) await write(root, name, `new ${name}`);
    await write(root, ":(top)new", "created");
    const outcome = await store.restore(root, before!.tree!);
    assert.deepEqual([...outcome.restored].sort(), [...names].sort());
    assert.deepEqual(outcome.removed, [":(top)new"]);
    for (const name of names) {
      assert.equal(await host.readTextFile(`${root}/${name}`), `old ${name}`);
    }
    assert.equal(await host.readTextFile(`${root}/keep`), "keep");
  });

  it("removes an index lock a git killed with the server left", async () => {
    await using temp = await tempDir("acp-harness-ckpt-");
    const root = `${temp.path}/root`;
    const shadow = `${temp.path}/shadow`;
    await write(root, "a", "a");
    await new CheckpointStore({ host, dir: shadow }).snapshot([root]);
    const index = (await host.readDir(shadow)).find((entry) =>
      /^index-[0-9a-f]+$/.test(entry.name)
    );
    assert.ok(index);
    await host.writeFileAtomic(`${shadow}/${index.name}.lock`, "");
    await write(root, "a", "b");
    const [snapshot] = await new CheckpointStore({ host, dir: shadow }).snapshot([root]);
    assert.ok(snapshot?.tree);
    assert.equal(await exists(`${shadow}/${index.name}.lock`), false);
  });

  it("rebuilds a torn index from the files", async () => {
    await using temp = await tempDir("acp-harness-ckpt-");
    const root = `${temp.path}/root`;
    const shadow = `${temp.path}/shadow`;
    await write(root, "a", "a");
    const store = new CheckpointStore({ host, dir: shadow });
    const [first] = await store.snapshot([root]);
    const index = (await host.readDir(shadow)).find((entry) =>
      /^index-[0-9a-f]+$/.test(entry.name)
    );
    assert.ok(index);
    await host.writeFileAtomic(`${shadow}/${index.name}`, "not an index");
    const [again] = await store.snapshot([root]);
    assert.equal(again?.tree, first?.tree);
    await write(root, "a", "b");
    await store.restore(root, first!.tree!);
    assert.equal(await host.readTextFile(`${root}/a`), "a");
  });

  it("leaves out an excluded directory named through a symlink", async () => {
    await using temp = await tempDir("acp-harness-ckpt-");
    const root = `${temp.path}/root`;
    await write(root, "a.txt", "a");
    await write(root, ".data [x]/sessions/s1.jsonl", "{}");
    await Deno.symlink(root, `${temp.path}/alias`);
    const dataDir = `${temp.path}/alias/.data [x]`;
    const store = new CheckpointStore({
      host,
      dir: `${dataDir}/checkpoints/s1`,
      exclude: [dataDir],
    });
    const [snap] = await store.snapshot([root]);
    const listed = await git(host, ["ls-tree", "-r", "--name-only", snap!.tree!], {
      cwd: "/",
      env: { GIT_DIR: store.dir },
    });
    assert.equal(listed.trim(), "a.txt");
  });

  it("reads the trees of a store it borrows from, and says clearly when it has a tree nowhere", async () => {
    await using temp = await tempDir("acp-harness-ckpt-");
    const root = `${temp.path}/root`;
    await write(root, "f.txt", "v0");
    const source = new CheckpointStore({ host, dir: `${temp.path}/source` });
    const [before] = await source.snapshot([root]);
    await write(root, "f.txt", "v1");
    const alone = new CheckpointStore({ host, dir: `${temp.path}/alone` });
    await assert.rejects(
      alone.restore(root, before!.tree!),
      (error: unknown) =>
        error instanceof CheckpointError && /not in this session/.test(error.message),
    );
    const fork = new CheckpointStore({
      host,
      dir: `${temp.path}/fork`,
      borrow: [`${temp.path}/source`, `${temp.path}/gone`],
    });
    const outcome = await fork.restore(root, before!.tree!);
    assert.deepEqual(outcome.restored, ["f.txt"]);
    assert.equal(await host.readTextFile(`${root}/f.txt`), "v0");
  });
});
