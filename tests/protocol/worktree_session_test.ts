/**
 * Sessions in worktrees (`--worktrees`), over the protocol on real git: sessions on one
 * repository prompting at once each see only their own edits, the checkout stays clean, each
 * has its branch; `session/delete` removes worktree and branch, `session/close` keeps them for a
 * load after a restart; a session in a subdirectory; the fallbacks and the explicit requests.
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { RpcError } from "../_helpers/acp_client.ts";
import { type MemoryServer, startServer } from "../_helpers/server.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";
import { branchesOf, makeRepo, statusOf } from "../_helpers/git_repo.ts";
import { postgresTest, withTestDatabase } from "../_helpers/postgres.ts";
import { openPostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { nullLogger } from "../../src/log/logger.ts";

/** Each session's turn: write a file, append its own working directory to it, read it back. */
const SCRIPT = [
  {
    toolCalls: [{
      id: "w",
      name: "write_file",
      arguments: { path: "notes.txt", content: "written\n" },
    }],
  },
  {
    toolCalls: [{
      id: "r",
      name: "run_command",
      arguments: { command: `printf '%s\\n' "$PWD" >> notes.txt` },
    }],
  },
  {
    toolCalls: [{
      id: "e",
      name: "edit_file",
      arguments: { path: "a.txt", old_text: "a", new_text: "b" },
    }],
  },
  { text: "done" },
];

interface Worktree {
  readonly path: string;
  readonly branch: string;
  readonly base: string;
  readonly repository: string;
  readonly cwd: string;
  readonly fromWorkingTree?: boolean;
}

/** Opens a session in `cwd`; returns its id and the answer's `_meta["acp-harness"]`. */
async function open(
  server: MemoryServer,
  cwd: string,
  meta?: unknown,
): Promise<{ sessionId: string; own: { worktree?: Worktree; worktreeUnavailable?: string } }> {
  const result = await server.client.request<
    { sessionId: string; _meta?: Record<string, unknown> }
  >(
    "session/new",
    { cwd, mcpServers: [], ...(meta === undefined ? {} : { _meta: { "acp-harness": meta } }) },
  );
  const own = (result._meta?.["acp-harness"] ?? {}) as {
    worktree?: Worktree;
    worktreeUnavailable?: string;
  };
  return { sessionId: result.sessionId, own };
}

function start(dataDir: string, worktrees = true): MemoryServer {
  return startServer({
    dataDir,
    serverDataDir: true,
    script: SCRIPT,
    config: { model: "scripted", mode: "auto", worktrees },
  });
}

for (const count of [2, 4]) {
  Deno.test(`${count} sessions on one repository prompting at once each see only their own edits`, async () => {
    await using dirs = new TempDirs("acp-harness-worktrees-");
    const [repo, data] = [await dirs.make(), await dirs.make()];
    const head = makeRepo(repo, { "a.txt": "a\n" });
    const server = start(data);
    try {
      await server.client.initialize();
      const sessions = await Promise.all(
        Array.from({ length: count }, () => open(server, repo)),
      );
      const stops = await Promise.all(
        sessions.map(({ sessionId }) => server.client.prompt(sessionId, "go")),
      );
      assert.deepEqual(stops, sessions.map(() => "end_turn"));
      const branches = [];
      for (const { sessionId, own } of sessions) {
        const worktree = own.worktree!;
        assert.equal(worktree.path, `${data}/worktrees/${sessionId}`);
        assert.equal(worktree.cwd, worktree.path);
        assert.equal(worktree.repository, repo);
        assert.equal(worktree.base, head);
        assert.equal(worktree.branch, `acp-harness/${sessionId.slice(0, 8)}`);
        branches.push(worktree.branch);
        assert.equal(
          readFileSync(`${worktree.path}/notes.txt`, "utf8"),
          `written\n${worktree.path}\n`,
          "the session's own write and command, nobody else's",
        );
        assert.equal(readFileSync(`${worktree.path}/a.txt`, "utf8"), "b\n");
        // Tool-call locations name the worktree's files.
        const locations = server.client.updates(sessionId)
          .flatMap(({ update }) => (update.locations as { path: string }[] | undefined) ?? [])
          .map((location) => location.path);
        assert.ok(locations.includes(`${worktree.path}/notes.txt`), JSON.stringify(locations));
      }
      assert.equal(statusOf(repo), "", "the checkout the client named stays clean");
      assert.equal(readFileSync(`${repo}/a.txt`, "utf8"), "a\n");
      assert.deepEqual(branchesOf(repo), [...branches, "main"].sort());
      assert.deepEqual(server.client.problems, []);
      for (const { sessionId, own } of sessions) {
        await server.client.request("session/delete", { sessionId });
        assert.equal(existsSync(own.worktree!.path), false);
      }
      assert.deepEqual(branchesOf(repo), ["main"]);
      assert.equal(statusOf(repo), "");
    } finally {
      await server.disconnect();
    }
  });
}

Deno.test("a closed session keeps its worktree; after a restart, load works in it again", async () => {
  await using dirs = new TempDirs("acp-harness-worktrees-");
  const [repo, data] = [await dirs.make(), await dirs.make()];
  makeRepo(repo, { "a.txt": "a\n", "pkg/b.txt": "b\n" });
  const first = start(data);
  let sessionId: string;
  let worktree: Worktree;
  try {
    await first.client.initialize();
    const opened = await open(first, `${repo}/pkg`);
    sessionId = opened.sessionId;
    worktree = opened.own.worktree!;
    assert.equal(worktree.cwd, `${worktree.path}/pkg`, "a subdirectory maps into the worktree");
    assert.equal(await first.client.prompt(sessionId, "go"), "end_turn");
    await first.client.request("session/close", { sessionId });
    assert.equal(
      readFileSync(`${worktree.path}/pkg/notes.txt`, "utf8"),
      `written\n${worktree.cwd}\n`,
    );
  } finally {
    await first.disconnect();
  }
  const second = start(data);
  try {
    await second.client.initialize();
    const loaded = await second.client.request<{ _meta?: Record<string, unknown> }>(
      "session/load",
      { sessionId, cwd: `${repo}/pkg`, mcpServers: [] },
    );
    assert.deepEqual(loaded._meta?.["acp-harness"], { worktree });
    const resumed = await (async () => {
      await second.client.request("session/close", { sessionId });
      return await second.client.request<{ _meta?: Record<string, unknown> }>(
        "session/resume",
        { sessionId, cwd: `${repo}/pkg`, mcpServers: [] },
      );
    })();
    assert.deepEqual(resumed._meta?.["acp-harness"], { worktree });
    const listed = await second.client.request<{ sessions: { cwd: string }[] }>("session/list", {});
    assert.deepEqual(listed.sessions.map((session) => session.cwd), [`${repo}/pkg`]);
    await second.client.request("session/delete", { sessionId });
    assert.equal(existsSync(worktree.path), false);
    assert.deepEqual(branchesOf(repo), ["main"]);
  } finally {
    await second.disconnect();
  }
});

Deno.test("without a repository the session works in its cwd and says why; asked for, it fails closed", async () => {
  await using dirs = new TempDirs("acp-harness-worktrees-");
  const [plain, data, repo] = [await dirs.make(), await dirs.make(), await dirs.make()];
  makeRepo(repo);
  const server = start(data);
  try {
    await server.client.initialize();
    const fallback = await open(server, plain);
    assert.deepEqual(fallback.own, {
      worktreeUnavailable: "the directory is not in a git repository",
    });
    assert.ok(server.logs.some((line) => line.includes("without a worktree")));
    await assert.rejects(
      open(server, plain, { worktree: true }),
      (error: unknown) =>
        error instanceof RpcError && error.code === -32602 &&
        error.message.includes(
          '_meta["acp-harness"].worktree: the session cannot have a worktree: the directory is not in a git repository',
        ),
    );
    await assert.rejects(
      open(server, repo, { worktree: "yes" }),
      (error: unknown) =>
        error instanceof RpcError && error.code === -32602 &&
        /_meta\.acp-harness\.worktree: must be true, false or \{"from"/.test(error.message),
    );
    const refused = await open(server, repo, { worktree: false });
    assert.deepEqual(refused.own, {});
    assert.deepEqual(branchesOf(repo), ["main"]);
  } finally {
    await server.disconnect();
  }
  const off = start(data, false);
  try {
    await off.client.initialize();
    assert.deepEqual((await open(off, repo)).own, {}, "no worktree unless asked");
    const asked = await open(off, repo, { worktree: { from: "working-tree" } });
    assert.equal(asked.own.worktree?.branch, `acp-harness/${asked.sessionId.slice(0, 8)}`);
    assert.equal(asked.own.worktree?.fromWorkingTree, true);
  } finally {
    await off.disconnect();
  }
});

Deno.test("a worktree gone from this disk is made again from its branch, or the load says it is not here", async () => {
  await using dirs = new TempDirs("acp-harness-worktrees-");
  const [repo, data] = [await dirs.make(), await dirs.make()];
  makeRepo(repo);
  const server = start(data);
  try {
    await server.client.initialize();
    const { sessionId, own } = await open(server, repo);
    const worktree = own.worktree!;
    await server.client.request("session/close", { sessionId });
    await Deno.remove(worktree.path, { recursive: true });
    const again = await server.client.request<{ _meta?: Record<string, unknown> }>(
      "session/load",
      { sessionId, cwd: repo, mcpServers: [] },
    );
    assert.deepEqual(again._meta?.["acp-harness"], { worktree });
    assert.equal(readFileSync(`${worktree.path}/a.txt`, "utf8"), "a\n");
    assert.ok(server.logs.some((line) => line.includes("made again from its branch")));
    await server.client.request("session/close", { sessionId });
    // Another machine: neither the worktree nor the repository is there.
    await Deno.remove(worktree.path, { recursive: true });
    await Deno.remove(`${repo}/.git`, { recursive: true });
    await assert.rejects(
      server.client.request("session/load", { sessionId, cwd: repo, mcpServers: [] }),
      (error: unknown) =>
        error instanceof RpcError && error.code === -32602 &&
        error.message.includes(`works in the git worktree ${worktree.path}`) &&
        error.message.includes("not on this machine"),
    );
    // Deleting it still works, and removes its record.
    await server.client.request("session/delete", { sessionId });
    assert.equal(existsSync(`${worktree.path}.json`), false);
  } finally {
    await server.disconnect();
  }
});

postgresTest(
  "on PostgreSQL a session's worktree survives a restart and goes with its delete",
  async (url) => {
    await using database = await withTestDatabase(url);
    await using dirs = new TempDirs("acp-harness-worktrees-pg-");
    const [repo, data] = [await dirs.make(), await dirs.make()];
    makeRepo(repo);
    const serve = async () => {
      const pg = await openPostgresStore({
        url: database.url,
        logger: nullLogger,
        leaseTtlMs: 3_000,
      });
      const server = startServer({
        dataDir: data,
        serverDataDir: true,
        stores: pg,
        script: SCRIPT,
        config: { model: "scripted", mode: "auto", worktrees: true },
      });
      return {
        server,
        async [Symbol.asyncDispose]() {
          await server.disconnect();
          await pg.close();
        },
      };
    };
    let sessionId: string;
    let worktree: Worktree;
    {
      await using first = await serve();
      await first.server.client.initialize();
      const opened = await open(first.server, repo);
      sessionId = opened.sessionId;
      worktree = opened.own.worktree!;
      assert.equal(await first.server.client.prompt(sessionId, "go"), "end_turn");
    }
    assert.equal(existsSync(`${data}/${sessionId}.jsonl`), false, "the log is in PostgreSQL");
    {
      await using second = await serve();
      await second.server.client.initialize();
      const loaded = await second.server.client.request<{ _meta?: Record<string, unknown> }>(
        "session/load",
        { sessionId, cwd: repo, mcpServers: [] },
      );
      assert.deepEqual(loaded._meta?.["acp-harness"], { worktree });
      assert.equal(
        readFileSync(`${worktree.path}/notes.txt`, "utf8"),
        `written\n${worktree.path}\n`,
      );
      await second.server.client.request("session/delete", { sessionId });
      assert.equal(existsSync(worktree.path), false);
      assert.deepEqual(branchesOf(repo), ["main"]);
    }
  },
);

Deno.test("git failing to make a worktree: the cwd with the reason, or -32602 when the client asked", async () => {
  await using dirs = new TempDirs("acp-harness-worktrees-");
  const [repo, data] = [await dirs.make(), await dirs.make()];
  makeRepo(repo);
  // Git keeps its worktrees' state here: a file in its place makes every `worktree add` fail.
  await Deno.writeTextFile(`${repo}/.git/worktrees`, "");
  const server = start(data);
  try {
    await server.client.initialize();
    const fallback = await open(server, repo);
    assert.match(fallback.own.worktreeUnavailable ?? "", /^git could not make one: git worktree/);
    assert.ok(
      server.logs.some((line) => line.includes("git could not make the session's worktree")),
    );
    await assert.rejects(
      open(server, repo, { worktree: true }),
      (error: unknown) =>
        error instanceof RpcError && error.code === -32602 &&
        error.message.includes(
          '_meta["acp-harness"].worktree: the session cannot have a worktree: git could not make one',
        ),
    );
    assert.deepEqual(branchesOf(repo), ["main"], "nothing left behind");
    assert.deepEqual(await Array.fromAsync(Deno.readDir(`${data}/worktrees`)), []);
  } finally {
    await server.disconnect();
  }
});
