/**
 * Permission rules end to end on Deno, Node.js and Bun, with the scripted model and real server
 * processes (issue 29's "Done when"): `--mode read-only --allow 'run_command(echo *)'` runs
 * `echo ok` and none of `echo ok && touch x`, `echo ok; touch x`, `echo $(touch x)`;
 * `--deny write_file` beats `--mode auto`; an ask rule asks in auto mode; the session log
 * records the rule; the reloaded session replays. Whether commands are sandboxed does not
 * matter here (`echo ok` works either way).
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { exitWithin, spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";

/** Runs `check` for every runtime at once; fails with every runtime's failure, named. */
async function onEveryRuntime(check: (runtime: Runtime) => Promise<void>): Promise<void> {
  const outcomes = await Promise.allSettled(RUNTIMES.map((runtime) => check(runtime)));
  const failures = outcomes.flatMap((outcome, index) =>
    outcome.status === "rejected"
      ? [`${RUNTIMES[index]?.name}: ${String(outcome.reason?.stack ?? outcome.reason)}`]
      : []
  );
  assert.deepEqual(failures, [], failures.join("\n\n"));
}

interface Setup {
  readonly cwd: string;
  readonly data: string;
  readonly script: string;
}

async function setup(dirs: TempDirs, steps: unknown[]): Promise<Setup> {
  const base = await dirs.make();
  const cwd = join(base, "ws");
  await mkdir(cwd);
  const script = join(base, "script.json");
  await writeFile(script, JSON.stringify(steps));
  return { cwd, data: join(base, "data"), script };
}

function start(runtime: Runtime, where: Setup, flags: string[]): StdioAgent {
  const agent = spawnAgent(runtime.command, [
    ...runtime.args,
    ...["--data-dir", where.data, "--model", "scripted", "--script", where.script],
    ...["--log-level", "info", ...flags],
  ], { cwd: where.cwd, env: { ...Deno.env.toObject(), ACP_HARNESS_HOME: where.data } });
  return agent;
}

async function stop(agent: StdioAgent): Promise<void> {
  agent.end();
  await exitWithin(agent, 30_000);
}

/** The last update of each tool call: status and text. */
function results(
  agent: StdioAgent,
  sessionId: string,
): Map<string, { status: string; text: string; denied?: { reason: string; rule?: string } }> {
  const found = new Map<
    string,
    { status: string; text: string; denied?: { reason: string; rule?: string } }
  >();
  for (const { update } of agent.client.updates(sessionId)) {
    if (update.sessionUpdate !== "tool_call_update" || update.status === "in_progress") continue;
    const meta = update._meta as Record<string, { denied?: { reason: string; rule?: string } }>;
    const denied = meta?.["acp-harness"]?.denied;
    found.set(update.toolCallId as string, {
      status: String(update.status),
      text: JSON.stringify(update.content ?? ""),
      ...(denied ? { denied } : {}),
    });
  }
  return found;
}

async function permissionRecords(
  data: string,
  sessionId: string,
): Promise<Record<string, unknown>[]> {
  const log = await readFile(join(data, "sessions", `${sessionId}.jsonl`), "utf8");
  return log.split("\n").filter((line) => line.includes(`"type":"permission"`))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .map((line) => (line.record ?? line) as Record<string, unknown>);
}

const COMMANDS: Record<string, string> = {
  ok: "echo ok",
  and: "echo ok && touch x",
  semi: "echo ok; touch x",
  subst: "echo $(touch x)",
};

Deno.test("--mode read-only --allow 'run_command(echo *)' runs echo ok and no compound, on deno, node and bun; the log records the rule; a reload replays", async () => {
  await using dirs = new TempDirs("acp-harness-rules-e2e-");
  await onEveryRuntime(async (runtime) => {
    const where = await setup(dirs, [
      {
        toolCalls: Object.entries(COMMANDS).map(([id, command]) => ({
          id,
          name: "run_command",
          arguments: { command },
        })),
      },
      { text: "done" },
    ]);
    const agent = start(runtime, where, ["--mode", "read-only", "--allow", "run_command(echo *)"]);
    let asked = 0;
    agent.client.handlers.set("session/request_permission", () => {
      asked++;
      return { outcome: { outcome: "selected", optionId: "allow_once" } };
    });
    let sessionId: string;
    try {
      await agent.client.initialize();
      sessionId = await agent.client.newSession(where.cwd);
      assert.equal(await agent.client.prompt(sessionId, "run them"), "end_turn");
      const found = results(agent, sessionId);
      assert.equal(found.get("ok")?.status, "completed", JSON.stringify(found.get("ok")));
      assert.match(found.get("ok")?.text ?? "", /ok/);
      for (const id of ["and", "semi", "subst"]) {
        const result = found.get(id);
        assert.equal(result?.status, "failed", `${id}: ${JSON.stringify(result)}`);
        assert.match(result?.text ?? "", /read-only permission mode refused run_command/, id);
        assert.match(result?.text ?? "", /No allow rule covers this call/, id);
        assert.match(result?.text ?? "", /run_command\(echo \*\)/, id);
      }
      assert.equal(asked, 0, "read-only asks nothing");
      assert.equal(existsSync(join(where.cwd, "x")), false, "x was never touched");
      await stop(agent);
      assert.match(
        agent.stderr(),
        /permission: allowed by rule .*"rule":"run_command\(echo \*\)"/,
        agent.stderr().slice(-2000),
      );
    } finally {
      if (agent.exit === undefined) agent.child.kill("SIGKILL");
      await agent.exited;
    }
    const records = await permissionRecords(where.data, sessionId);
    assert.deepEqual(
      records.map((record) => [record.toolCallId, record.answer, record.decision, record.rule]),
      [["ok", "allow_once", "allow", "run_command(echo *)"]],
    );
    // The session, reloaded by a new server process, replays the same calls and ends.
    const again = start(runtime, where, ["--mode", "read-only", "--allow", "run_command(echo *)"]);
    try {
      await again.client.initialize();
      await again.client.request("session/load", { sessionId, cwd: where.cwd, mcpServers: [] });
      const replayed = results(again, sessionId);
      assert.equal(replayed.get("ok")?.status, "completed");
      for (const id of ["and", "semi", "subst"]) {
        assert.equal(replayed.get(id)?.status, "failed");
        // The refusal is replayed as it was sent: why, no rule (the mode refused it).
        assert.deepEqual(replayed.get(id)?.denied, results(agent, sessionId).get(id)?.denied);
        assert.match(replayed.get(id)?.denied?.reason ?? "", /read-only permission mode/);
      }
      assert.equal(replayed.get("ok")?.denied, undefined);
      await stop(again);
    } finally {
      if (again.exit === undefined) again.child.kill("SIGKILL");
      await again.exited;
    }
  });
});

Deno.test("--deny write_file beats --mode auto, and an ask rule asks in auto mode, on deno, node and bun", async () => {
  await using dirs = new TempDirs("acp-harness-rules-e2e-");
  await onEveryRuntime(async (runtime) => {
    const where = await setup(dirs, [
      {
        toolCalls: [
          { id: "write", name: "write_file", arguments: { path: "out.txt", content: "x" } },
          { id: "echo", name: "run_command", arguments: { command: "echo asked" } },
          { id: "ls", name: "run_command", arguments: { command: "ls" } },
        ],
      },
      { text: "done" },
    ]);
    const agent = start(runtime, where, [
      ...["--mode", "auto", "--deny", "write_file", "--ask", "run_command(echo *)"],
    ]);
    const questions: unknown[] = [];
    agent.client.handlers.set("session/request_permission", (params: unknown) => {
      questions.push(params);
      return { outcome: { outcome: "selected", optionId: "allow_always" } };
    });
    let sessionId: string;
    try {
      await agent.client.initialize();
      sessionId = await agent.client.newSession(where.cwd);
      assert.equal(await agent.client.prompt(sessionId, "go"), "end_turn");
      const found = results(agent, sessionId);
      assert.equal(found.get("write")?.status, "failed");
      assert.match(found.get("write")?.text ?? "", /permission rule --deny 'write_file' refused/);
      assert.equal(found.get("write")?.denied?.rule, "write_file");
      assert.match(found.get("write")?.denied?.reason ?? "", /--deny 'write_file'/);
      assert.equal(found.get("echo")?.denied, undefined);
      assert.equal(existsSync(join(where.cwd, "out.txt")), false);
      assert.equal(found.get("echo")?.status, "completed");
      assert.equal(found.get("ls")?.status, "completed");
      assert.equal(questions.length, 1, "only the ask rule's call asks");
      assert.match(JSON.stringify(questions[0]), /echo asked/);
      await stop(agent);
      assert.match(agent.stderr(), /permission: denied by rule .*"rule":"write_file"/);
      assert.match(agent.stderr(), /permission: asked by rule .*"rule":"run_command\(echo \*\)"/);
    } finally {
      if (agent.exit === undefined) agent.child.kill("SIGKILL");
      await agent.exited;
    }
    const records = await permissionRecords(where.data, sessionId);
    assert.deepEqual(
      records.map((record) => [record.toolCallId, record.answer, record.decision, record.rule]),
      [
        ["write", "reject_once", "deny", "write_file"],
        ["echo", "allow_always", "ask", "run_command(echo *)"],
      ],
    );
  });
});
