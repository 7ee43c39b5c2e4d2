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
import { bwrapAvailable } from "../_helpers/bwrap.ts";

const DENO_RUNTIME: Runtime = RUNTIMES.find((runtime) => runtime.name === "deno")!;
import { tempDir } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";
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

/** The agent's messages in a session, joined. */
function agentSaid(agent: StdioAgent, sessionId: string): string {
  return agent.client.updates(sessionId)
    .filter(({ update }) => update.sessionUpdate === "agent_message_chunk")
    .map(({ update }) => (update.content as { text?: string }).text ?? "").join("");
}

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
  // Made by a server of this machine and this store that is gone (no such pid).
  const owner = { pid: 999_999_999, host: Deno.hostname(), store: data };
  const info = {
    path,
    branch: "acp-harness/deadbeef",
    base: head,
    repository: repo,
    cwd: path,
    owner,
  };
  Deno.writeTextFileSync(record, JSON.stringify(info));
  const old = new Date(Date.now() - 3_600_000);
  utimesSync(record, old, old);
  return path;
}

function spawn(runtime: Runtime, dir: string, data: string, script: string): StdioAgent {
  return spawnAgent(runtime.command, [
    ...runtime.args,
    ...["--data-dir", data, "--model", "scripted", "--script", script, "--mode", "auto"],
    ...["--worktrees", "--log-level", "info"],
  ], { cwd: dir });
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
  const agent = spawn(runtime, dir.path, data, script);
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
    // `/undo` in the second session brings back its a.txt only; the first's stays as it was.
    const second = sessions[1]!.sessionId;
    assert.equal(await agent.client.prompt(second, "/undo"), "end_turn");
    assert.equal(readFileSync(join(paths[1]!, "a.txt"), "utf8"), "a\n");
    assert.equal(readFileSync(join(paths[0]!, "a.txt"), "utf8"), `mine\n${paths[0]}\n`);
    assert.ok(agentSaid(agent, second).includes("Restored the files to checkpoint 1"));
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

/**
 * A server killed with SIGKILL while a turn's command runs, after the turn's checkpoint: the next
 * server loads the session, in its worktree, and `/undo` takes back what the command did.
 */
async function crashThenUndo(runtime: Runtime): Promise<void> {
  await using dir = await tempDir("acp-harness-worktrees-e2e-");
  const [repo, data] = [join(dir.path, "repo"), join(dir.path, "data")];
  await mkdir(repo);
  makeRepo(repo, { "a.txt": "a\n" });
  const script = join(dir.path, "script.json");
  const command = "printf 'half done\\n' > a.txt && touch started && exec sleep 600";
  await writeFile(
    script,
    JSON.stringify([{ toolCalls: [{ id: "c", name: "run_command", arguments: { command } }] }]),
  );
  const first = spawn(runtime, dir.path, data, script);
  let sessionId: string;
  let path: string;
  try {
    await first.client.initialize();
    const opened = await first.client.request<
      { sessionId: string; _meta: Record<string, Record<string, unknown>> }
    >("session/new", { cwd: repo, mcpServers: [] });
    sessionId = opened.sessionId;
    path = (opened._meta["acp-harness"]?.worktree as { path: string }).path;
    const prompt = first.client.nextRequest("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "start it" }],
    });
    await first.writeRaw(JSON.stringify(prompt.frame) + "\n");
    await first.client.waitFor(() =>
      first.client.updates(sessionId).some(({ update }) =>
        update.sessionUpdate === "tool_call_update" && update.status === "in_progress"
      )
    );
    // The command's file is written by a program of the server's: no event announces it.
    await pollUntil(() => existsSync(join(path, "started")), { what: "the command's file" });
  } finally {
    first.child.kill("SIGKILL");
    await first.exited;
  }
  assert.equal(readFileSync(join(path, "a.txt"), "utf8"), "half done\n");
  const second = spawn(runtime, dir.path, data, script);
  try {
    await second.client.initialize();
    const loaded = await second.client.request<{ _meta?: Record<string, Record<string, unknown>> }>(
      "session/load",
      { sessionId, cwd: repo, mcpServers: [] },
    );
    assert.equal((loaded._meta?.["acp-harness"]?.worktree as { path: string }).path, path);
    assert.equal(await second.client.prompt(sessionId, "/undo"), "end_turn");
    assert.equal(readFileSync(join(path, "a.txt"), "utf8"), "a\n");
    assert.equal(existsSync(join(path, "started")), false);
    assert.equal(statusOf(repo), "");
    assert.equal(second.client.problems.length, 0, second.client.problems.join("\n"));
  } finally {
    await stop(second);
  }
}

for (const runtime of RUNTIMES) {
  Deno.test(`a server killed mid-turn: load, then /undo takes back what the turn's command did (${runtime.name})`, () =>
    crashThenUndo(runtime));
}

/** A directory outside the tests' temporary root (`/tmp`, which the sandbox's private `/tmp` hides). */
async function outsideTmp(prefix: string): Promise<AsyncDisposable & { path: string }> {
  await mkdir("/var/tmp", { recursive: true });
  const path = await Deno.realPath(await Deno.makeTempDir({ dir: "/var/tmp", prefix }));
  return { path, [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }) };
}

function toolOutput(agent: StdioAgent, sessionId: string): string {
  return agent.client.updates(sessionId)
    .filter(({ update }) => update.sessionUpdate === "tool_call_update")
    .map(({ update }) => JSON.stringify(update.content ?? update.rawOutput ?? ""))
    .join("\n");
}

Deno.test({
  name: "under the sandbox a worktree session sees no other session's data and can git commit",
  ignore: !bwrapAvailable(),
  fn: async () => {
    await using dir = await outsideTmp("acp-harness-worktrees-sandbox-");
    const [repo, data, plain] = ["repo", "data", "plain"].map((name) => join(dir.path, name));
    await mkdir(repo!);
    await mkdir(plain!);
    makeRepo(repo!, { "a.txt": "a\n" });
    // Counts the logs holding the other session's secret (spelled so that the probe does not).
    const probe =
      `grep -l 'HUNT''ER2' ${data}/sessions/*.jsonl 2>/dev/null | wc -l | sed 's/^/seen=/'`;
    const commit = "echo fixed > a.txt && git -c user.name=t -c user.email=t@t.invalid " +
      "commit -qam fix 2>&1; echo exit=$?";
    const script = join(dir.path, "script.json");
    await writeFile(
      script,
      JSON.stringify([
        { toolCalls: [{ id: "p", name: "run_command", arguments: { command: probe } }] },
        { toolCalls: [{ id: "c", name: "run_command", arguments: { command: commit } }] },
        { text: "done" },
      ]),
    );
    const agent = spawnAgent(DENO_RUNTIME.command, [
      ...DENO_RUNTIME.args,
      ...["--data-dir", data!, "--model", "scripted", "--script", script, "--mode", "auto"],
      ...["--worktrees", "--sandbox", "workspace-write"],
    ], { cwd: dir.path });
    try {
      await agent.client.initialize();
      const other = await agent.client.newSession(plain!);
      assert.equal(await agent.client.prompt(other, "my password is HUNTER2"), "end_turn");
      const worker = await agent.client.request<
        { sessionId: string; _meta: Record<string, Record<string, unknown>> }
      >("session/new", { cwd: repo, mcpServers: [] });
      assert.equal(await agent.client.prompt(worker.sessionId, "fix a.txt and commit"), "end_turn");
      const seen = toolOutput(agent, worker.sessionId);
      assert.match(seen, /seen=0/, seen);
      assert.match(seen, /exit=0/, seen);
      const branch = (worker._meta["acp-harness"]?.worktree as { branch: string }).branch;
      assert.equal(gitIn(repo!, "log", "-1", "--format=%s", branch).trim(), "fix");
      assert.equal(statusOf(repo!), "");
    } finally {
      await stop(agent);
    }
  },
});

Deno.test("a delegated acp-harness with --worktrees works in its parent's worktree, not one of its own", async () => {
  await using dir = await tempDir("acp-harness-worktrees-e2e-");
  const [repo, data] = [join(dir.path, "repo"), join(dir.path, "data")];
  await mkdir(repo);
  makeRepo(repo, { "a.txt": "a\n" });
  const file = async (name: string, content: unknown): Promise<string> => {
    const path = join(dir.path, name);
    await writeFile(path, JSON.stringify(content));
    return path;
  };
  const child = await file("child.json", [
    { toolCalls: [{ id: "w", name: "write_file", arguments: { path: "b.txt", content: "b\n" } }] },
    { text: "written" },
  ]);
  const config = await file("config.json", {
    agents: {
      worker: {
        command: DENO_RUNTIME.command,
        args: [
          ...DENO_RUNTIME.args,
          ...["--model", "scripted", "--script", child, "--data-dir", data],
          ...["--mode", "auto", "--worktrees"],
        ],
        description: "Writes b.txt",
      },
    },
  });
  const parent = await file("parent.json", [
    {
      toolCalls: [{
        id: "d",
        name: "delegate",
        arguments: { agent: "worker", prompt: "Write b.txt" },
      }],
    },
    { text: "done" },
  ]);
  const agent = spawnAgent(DENO_RUNTIME.command, [
    ...DENO_RUNTIME.args,
    ...["--data-dir", data, "--model", "scripted", "--script", parent, "--mode", "auto"],
    ...["--worktrees", "--config", config],
  ], { cwd: dir.path, env: { ...Deno.env.toObject(), ACP_HARNESS_DELEGATION_DEPTH: "" } });
  try {
    await agent.client.initialize();
    const opened = await agent.client.request<
      { sessionId: string; _meta: Record<string, Record<string, unknown>> }
    >("session/new", { cwd: repo, mcpServers: [] });
    assert.equal(await agent.client.prompt(opened.sessionId, "delegate"), "end_turn");
    const path = (opened._meta["acp-harness"]?.worktree as { path: string }).path;
    assert.equal(readFileSync(join(path, "b.txt"), "utf8"), "b\n");
    assert.deepEqual(branchesOf(repo), [`acp-harness/${opened.sessionId.slice(0, 8)}`, "main"]);
    assert.equal(statusOf(repo), "");
  } finally {
    await stop(agent);
  }
});
