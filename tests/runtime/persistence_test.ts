import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { appendFile, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { ACPX, acpxProcesses, removeAcpxSocketDir, stopAcpxProcesses } from "../_helpers/acpx.ts";
import { commandLine, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";

const [, NODE] = RUNTIMES as [unknown, { name: "node"; command: string; args: readonly string[] }];

/** A test's directory; disposing it kills the servers still running and removes it. */
interface Setup extends AsyncDisposable {
  readonly cwd: string;
  readonly dataDir: string;
  readonly base: string;
  /** Starts a server process on the bundled Node build, on this data directory. */
  server(args?: readonly string[]): StdioAgent;
}

async function setup(): Promise<Setup> {
  const dir = await tempDir("acp-harness-persist-");
  const base = dir.path;
  const cwd = join(base, "ws");
  const dataDir = join(base, "data");
  await mkdir(cwd);
  const started: StdioAgent[] = [];
  return {
    cwd,
    dataDir,
    base,
    server(args = []) {
      const agent = spawnAgent(NODE.command, [...NODE.args, "--data-dir", dataDir, ...args], {
        cwd,
        env: { ...Deno.env.toObject() },
      });
      started.push(agent);
      return agent;
    },
    async [Symbol.asyncDispose]() {
      for (const agent of started) {
        if (agent.child.exitCode === null && agent.child.signalCode === null) {
          agent.child.kill("SIGKILL");
        }
      }
      await Promise.all(started.map((agent) => agent.exited));
      await stopAcpxProcesses(join(base, "home"));
      await removeAcpxSocketDir(join(base, "home"));
      await dir[Symbol.asyncDispose]();
    },
  };
}

async function stop(agent: StdioAgent): Promise<void> {
  agent.end();
  await agent.exited;
}

type Update = Record<string, unknown>;

Deno.test("a server killed with SIGKILL mid-turn restarts with the committed history", async () => {
  await using f = await setup();
  const { cwd, dataDir, base } = f;
  await writeFile(join(cwd, "notes.txt"), "remember me\n");
  const before = join(base, "before.json");
  await writeFile(
    before,
    JSON.stringify([
      { text: "First answer." },
      { toolCalls: [{ id: "r1", name: "read_file", arguments: { path: "notes.txt" } }] },
      { delayMs: 60_000, text: "never committed" },
    ]),
  );
  const first = f.server(["--model", "scripted", "--script", before, "--mode", "auto"]);
  await first.client.initialize();
  const sessionId = await first.client.newSession(cwd);
  assert.equal(await first.client.prompt(sessionId, "Remember the notes"), "end_turn");
  void first.client.prompt(sessionId, "Read them again").catch(() => {});
  await first.client.waitFor((frames) =>
    frames.some((frame) => (frame.params as { update?: Update })?.update?.status === "completed")
  );
  Deno.kill(first.child.pid as number, "SIGKILL");
  await first.exited;

  // A torn final line, as a crash in the middle of a write would leave.
  const log = join(dataDir, "sessions", `${sessionId}.jsonl`);
  await appendFile(log, '{"seq":999,"time":"2026-01-01T00:00:00.000Z","type":"assist');

  const after = join(base, "after.json");
  await writeFile(
    after,
    JSON.stringify([
      { text: "unused" },
      { text: "unused" },
      { text: "Continuing where we stopped." },
    ]),
  );
  const second = f.server(["--model", "scripted", "--script", after]);
  await second.client.initialize();
  const list = await second.client.request<{ sessions: Update[] }>("session/list", { cwd });
  assert.deepEqual(list.sessions.map((s) => [s.sessionId, s.title]), [[
    sessionId,
    "Remember the notes",
  ]]);
  await second.client.request("session/load", { sessionId, cwd, mcpServers: [] });
  const replayed = second.client.updates(sessionId).map(({ update }) => update);
  const texts = replayed.filter((u) => String(u.sessionUpdate).endsWith("message_chunk"))
    .map((u) => [u.sessionUpdate, (u.content as { text: string }).text]);
  assert.deepEqual(texts, [
    ["user_message_chunk", "Remember the notes"],
    ["agent_message_chunk", "First answer."],
    ["user_message_chunk", "Read them again"],
  ]);
  const tool = replayed.filter((u) => u.toolCallId === "r1").map((u) => u.status);
  assert.deepEqual(tool, ["pending", "completed"]);
  // The interrupted turn was closed in the log.
  const records = (await readFile(log, "utf8")).trim().split("\n").map((line) => JSON.parse(line));
  assert.equal(records.at(-1).type, "turn_end");
  assert.equal(records.at(-1).stopReason, "interrupted");
  assert.ok(!records.some((record) => record.seq === 999), "the torn line is gone");

  assert.equal(await second.client.prompt(sessionId, "Go on"), "end_turn");
  const last = second.client.updates(sessionId).map(({ update }) => update)
    .filter((u) => u.sessionUpdate === "agent_message_chunk").at(-1);
  assert.equal((last?.content as { text: string }).text, "Continuing where we stopped.");
  assert.deepEqual(second.client.problems, []);
  await stop(second);
});

Deno.test("a session is durable once its first prompt is admitted, though written after its session/new answer", async () => {
  await using f = await setup();
  const { cwd, base } = f;
  const script = join(base, "script.json");
  await writeFile(script, JSON.stringify([{ delayMs: 60_000, text: "never committed" }]));
  const first = f.server(["--model", "scripted", "--script", script]);
  await first.client.initialize();
  // The prompt goes out the moment the answer arrives: the session may not be written yet.
  const sessionId = await first.client.newSession(cwd);
  void first.client.prompt(sessionId, "Kept across a crash").catch(() => {});
  // The title follows the admitted prompt's record.
  await first.client.waitForUpdate(sessionId, "session_info_update");
  // A second session, killed before anything was recorded in it (listed or not, never broken).
  const unused = await first.client.newSession(cwd);
  Deno.kill(first.child.pid as number, "SIGKILL");
  await first.exited;

  const second = f.server();
  await second.client.initialize();
  const list = await second.client.request<{ sessions: Update[] }>("session/list", { cwd });
  const listed = list.sessions.map((s) => s.sessionId);
  assert.ok(listed.includes(sessionId), JSON.stringify(listed));
  assert.ok(listed.every((id) => id === sessionId || id === unused), JSON.stringify(listed));
  await second.client.request("session/load", { sessionId, cwd, mcpServers: [] });
  // The title may have missed the index (its line follows its update); the load puts it there.
  const again = await second.client.request<{ sessions: Update[] }>("session/list", { cwd });
  assert.equal(again.sessions.find((s) => s.sessionId === sessionId)?.title, "Kept across a crash");
  const users = second.client.updates(sessionId).map(({ update }) => update)
    .filter((u) => u.sessionUpdate === "user_message_chunk")
    .map((u) => (u.content as { text: string }).text);
  assert.deepEqual(users, ["Kept across a crash"]);
  assert.deepEqual(second.client.problems, []);
  await stop(second);
});

Deno.test("a corrupt index is rebuilt from the logs", async () => {
  await using f = await setup();
  const { cwd, dataDir } = f;
  const first = f.server();
  await first.client.initialize();
  const sessionId = await first.client.newSession(cwd);
  await first.client.prompt(sessionId, "Indexed title");
  await stop(first);
  await writeFile(join(dataDir, "index.jsonl"), "this is not an index\n{{{\n");
  const second = f.server();
  await second.client.initialize();
  const list = await second.client.request<{ sessions: Update[] }>("session/list", {});
  assert.deepEqual(list.sessions.map((s) => [s.sessionId, s.title]), [[
    sessionId,
    "Indexed title",
  ]]);
  assert.match(second.stderr(), /index/i);
  await stop(second);
});

Deno.test("two server processes share a data directory; a session is open in only one", async () => {
  await using f = await setup();
  const { cwd, dataDir } = f;
  const a = f.server();
  const b = f.server();
  await a.client.initialize();
  await b.client.initialize();
  const fromA = await a.client.newSession(cwd);
  const fromB = await b.client.newSession(cwd);
  await Promise.all([
    a.client.prompt(fromA, "from process A"),
    b.client.prompt(fromB, "from process B"),
  ]);
  const refused = await b.client.requestRaw("session/resume", { sessionId: fromA, cwd });
  const error = refused.error as { code: number; message: string };
  assert.equal(error.code, -32602);
  assert.match(error.message, /open in another acp-harness process \(pid \d+\)/);
  // Another process's index lines land asynchronously and B is told nothing when they do:
  // poll the listing until it converges.
  const both = (set: Set<unknown>): boolean =>
    set.has("from process A") && set.has("from process B");
  let titles = new Set<unknown>();
  await pollUntil(async () => {
    const listed = await b.client.request<{ sessions: Update[] }>("session/list", {});
    titles = new Set(listed.sessions.map((s) => s.title));
    return both(titles);
  }, { what: "both titles in B's listing", timeoutMs: 2_000 }).catch(() => {});
  assert.deepEqual(titles, new Set(["from process A", "from process B"]));
  await stop(a);
  // Once A is gone, B can take the session over.
  await b.client.request("session/resume", { sessionId: fromA, cwd });
  assert.equal(await b.client.prompt(fromA, "now in B"), "end_turn");
  await stop(b);
  const logs = await readdir(join(dataDir, "sessions"));
  assert.equal(logs.filter((name) => name.endsWith(".jsonl")).length, 2);
});

function acpx(args: readonly string[], env: Record<string, string>, cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(ACPX, args, {
      cwd,
      env: { ...Deno.env.toObject(), ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk) => out += chunk);
    child.stderr.on("data", (chunk) => err += chunk);
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`acpx ${args.join(" ")} exited ${code}: ${err}\nstdout: ${out}`));
    });
  });
}

async function agentProcesses(dataDir: string): Promise<number> {
  let count = 0;
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8");
      if (cmdline.includes(dataDir)) count++;
    } catch {
      // gone
    }
  }
  return count;
}

/**
 * Waits (up to 10 s) for the agent processes acpx started to exit after their idle TTL. They are
 * acpx's detached children, not ours: nothing to wait on but /proc, so this polls.
 */
async function agentsGone(dataDir: string): Promise<void> {
  await pollUntil(async () => await agentProcesses(dataDir) === 0, {
    what: "acpx's agent processes to exit",
    intervalMs: 100,
  }).catch(() => {});
}

Deno.test("acpx persistent sessions resume after the agent process is gone and keep the history", async () => {
  await using f = await setup();
  const { cwd, dataDir, base } = f;
  const env = { HOME: join(base, "home"), ACP_HARNESS_HOME: dataDir };
  await mkdir(env.HOME);
  const agent = commandLine(NODE, ["--data-dir", dataDir]);
  await acpx(["--agent", agent, "sessions", "new"], env, cwd);
  const first = await acpx(
    ["--agent", agent, "--ttl", "1", "--format", "json", "first prompt"],
    env,
    cwd,
  );
  assert.match(first, /"stopReason":"end_turn"/);
  await agentsGone(dataDir);
  assert.equal(await agentProcesses(dataDir), 0, "the agent process is gone");
  // And acpx's queue owner, which outlives its agent a little: a second prompt that finds it
  // still up is sent to it, and fails once it is gone.
  await pollUntil(async () => (await acpxProcesses(env.HOME)).length === 0, {
    what: "acpx's queue owner to exit",
    intervalMs: 100,
  });
  const second = await acpx(
    ["--agent", agent, "--ttl", "1", "--format", "json", "second prompt"],
    env,
    cwd,
  );
  const methods = second.split("\n").filter((line) => line.startsWith("{")).map((line) =>
    JSON.parse(line).method
  );
  assert.ok(methods.includes("session/resume"), methods.join(", "));
  assert.match(second, /"stopReason":"end_turn"/);
  await agentsGone(dataDir);
  // Our own client sees both prompts in the one session.
  const check = f.server();
  await check.client.initialize();
  const [session] =
    (await check.client.request<{ sessions: Update[] }>("session/list", { cwd })).sessions;
  assert.ok(session);
  await check.client.request("session/load", { sessionId: session.sessionId, cwd, mcpServers: [] });
  const users = check.client.updates(session.sessionId as string).map(({ update }) => update)
    .filter((u) => u.sessionUpdate === "user_message_chunk").map((u) =>
      (u.content as { text: string }).text
    );
  assert.deepEqual(users, ["first prompt", "second prompt"]);
  await stop(check);
});
