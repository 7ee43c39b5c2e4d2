/**
 * Worktrees end to end over stdio on every runtime (`--worktrees`, real git): two sessions on
 * one repository edit the same file at once, each in its own worktree, the checkout stays
 * clean; `session/delete` removes a worktree and its branch; and a start reaps the worktree a
 * server that died while creating a session left behind.
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, utimesSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { branchesOf, gitIn, makeRepo, statusOf } from "../_helpers/git_repo.ts";

const SCRIPT = [
  { toolCalls: [{ id: "w", name: "write_file", arguments: { path: "a.txt", content: "mine\n" } }] },
  {
    toolCalls: [{
      id: "r",
      name: "run_command",
      arguments: { command: `printf '%s\\n' "$PWD" >> a.txt` },
    }],
  },
  { text: "done" },
];

async function stop(agent: StdioAgent): Promise<void> {
  if (agent.child.exitCode === null && agent.child.signalCode === null) agent.end();
  await agent.exited;
}

/** A worktree as a server that died mid-`session/new` leaves it: made, its session never stored. */
function leftByACrash(repo: string, data: string): string {
  const id = "deadbeef-0000-4000-8000-000000000000";
  const path = join(data, "worktrees", id);
  gitIn(repo, "worktree", "add", "--quiet", "-b", "acp-harness/deadbeef", path, "HEAD");
  const record = join(data, "worktrees", `${id}.json`);
  const head = gitIn(repo, "rev-parse", "HEAD").trim();
  const info = { path, branch: "acp-harness/deadbeef", base: head, repository: repo, cwd: path };
  Deno.writeTextFileSync(record, JSON.stringify(info));
  const old = new Date(Date.now() - 3_600_000);
  utimesSync(record, old, old);
  return path;
}

async function twoSessions(runtime: Runtime): Promise<void> {
  await using dir = await tempDir("acp-harness-worktrees-e2e-");
  const [repo, data] = [join(dir.path, "repo"), join(dir.path, "data")];
  await mkdir(repo);
  await mkdir(join(data, "worktrees"), { recursive: true });
  makeRepo(repo, { "a.txt": "a\n" });
  const stale = leftByACrash(repo, data);
  const script = join(dir.path, "script.json");
  await writeFile(script, JSON.stringify(SCRIPT));
  const agent = spawnAgent(runtime.command, [
    ...runtime.args,
    ...["--data-dir", data, "--model", "scripted", "--script", script, "--mode", "auto"],
    ...["--worktrees", "--log-level", "info"],
  ], { cwd: dir.path });
  try {
    await agent.client.initialize();
    const open = () =>
      agent.client.request<{ sessionId: string; _meta: Record<string, Record<string, unknown>> }>(
        "session/new",
        { cwd: repo, mcpServers: [] },
      );
    const sessions = await Promise.all([open(), open()]);
    const stops = await Promise.all(
      sessions.map(({ sessionId }) => agent.client.prompt(sessionId, "edit a.txt")),
    );
    assert.deepEqual(stops, ["end_turn", "end_turn"]);
    const paths = sessions.map(({ _meta }) =>
      (_meta["acp-harness"]?.worktree as { path: string }).path
    );
    for (const path of paths) {
      assert.equal(readFileSync(join(path, "a.txt"), "utf8"), `mine\n${path}\n`);
    }
    assert.equal(statusOf(repo), "");
    assert.equal(readFileSync(join(repo, "a.txt"), "utf8"), "a\n");
    // The crash's worktree goes once the server is idle; the sessions' stay.
    assert.ok(
      await agent.client.waitUntil(() => agent.stderr().includes("removed worktrees of sessions")),
      agent.stderr(),
    );
    assert.equal(existsSync(stale), false);
    assert.deepEqual(
      branchesOf(repo),
      [...sessions.map(({ sessionId }) => `acp-harness/${sessionId.slice(0, 8)}`), "main"].sort(),
    );
    await agent.client.request("session/delete", { sessionId: sessions[0]!.sessionId });
    assert.equal(existsSync(paths[0]!), false);
    assert.equal(existsSync(paths[1]!), true);
    assert.equal(branchesOf(repo).length, 2);
    assert.equal(agent.client.problems.length, 0, agent.client.problems.join("\n"));
  } finally {
    await stop(agent);
  }
}

for (const runtime of RUNTIMES) {
  Deno.test(`two sessions edit one file of one repository at once in their worktrees (${runtime.name})`, () =>
    twoSessions(runtime));
}
