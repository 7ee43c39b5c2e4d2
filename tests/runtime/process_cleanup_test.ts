/**
 * No command outlives the server: real servers on Deno, Node.js and Bun run commands through the
 * scripted model, end in every way a user can end them (stdin EOF, SIGTERM, session/close,
 * session/delete, SIGKILL), and the commands' processes, found by a marker in their environment,
 * must be gone.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { MARK, marked } from "../_helpers/marked_processes.ts";
import { pollUntil } from "../_helpers/wait.ts";
import { makeTempDir, removeTempDir } from "../_helpers/temp_dir.ts";

/** A temporary workspace and data directory, a unique marker, and the cleanup of both. */
interface Fixture {
  readonly cwd: string;
  readonly dataDir: string;
  readonly base: string;
  readonly mark: string;
  /** A shell prefix that marks every process the command starts. */
  readonly exportMark: string;
}

async function fixture(): Promise<Fixture> {
  const base = await makeTempDir("acp-harness-procs-");
  const cwd = join(base, "ws");
  await mkdir(cwd);
  const mark = crypto.randomUUID();
  return { cwd, dataDir: join(base, "data"), base, mark, exportMark: `export ${MARK}=${mark}; ` };
}

/**
 * Polls until `check` holds, at most `ms`; returns whether it did. The processes checked are not
 * our children (a command's descendants, a supervisor): /proc is all there is to wait on.
 */
async function eventually(check: () => Promise<boolean>, ms = 10_000): Promise<boolean> {
  return await pollUntil(check, { what: "the processes to change", timeoutMs: ms, intervalMs: 25 })
    .then(() => true, () => false);
}

/** Kills whatever carries the marker (so a failing test leaves nothing behind) and the files. */
async function cleanUp(f: Fixture, agents: readonly StdioAgent[]): Promise<void> {
  for (const agent of agents) {
    if (agent.child.exitCode === null && agent.child.signalCode === null) {
      agent.child.kill("SIGKILL");
      await agent.exited;
    }
  }
  for (const pid of await marked(f.mark)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone.
    }
  }
  // A supervisor left by a test that failed before its server was killed.
  for (const pid of await supervisors(f.dataDir)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone.
    }
  }
  await removeTempDir(f.base);
}

/** Supervisor processes whose record file is in `dataDir`. */
async function supervisors(dataDir: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.includes("acp-harness-supervisor") && cmdline.includes(dataDir)) {
        found.push(Number(entry));
      }
    } catch {
      // Gone.
    }
  }
  return found;
}

/** Starts a server whose scripted model runs `command`, then answers "done". */
async function server(runtime: Runtime, f: Fixture, command?: string): Promise<StdioAgent> {
  const script = join(f.base, `script-${crypto.randomUUID()}.json`);
  const steps = command === undefined
    ? [{ text: "idle" }]
    : [{ toolCalls: [{ name: "run_command", arguments: { command } }] }, { text: "done" }];
  await writeFile(script, JSON.stringify(steps));
  const agent = spawnAgent(runtime.command, [
    ...runtime.args,
    ...["--model", "scripted", "--script", script, "--mode", "auto", "--data-dir", f.dataDir],
    // These tests are about the host's supervision of commands: unconfined ones (a sandboxed
    // command dies with its bwrap, the server's SIGKILL included; tests/sandbox/ covers that).
    ...["--sandbox", "off"],
  ], { cwd: f.cwd, env: { ...Deno.env.toObject() } });
  await agent.client.initialize();
  return agent;
}

/** Starts `command` in a new session and waits until a marked process runs. */
async function runUntilMarked(agent: StdioAgent, f: Fixture): Promise<string> {
  const sessionId = await agent.client.newSession(f.cwd);
  void agent.client.prompt(sessionId, "go").catch(() => {});
  assert.ok(await eventually(async () => (await marked(f.mark)).length > 0), "the command runs");
  return sessionId;
}

/** Starts a server running a command of two marked processes (a job and itself) until both run. */
async function serverRunningTwo(
  runtime: Runtime,
  f: Fixture,
  agents: StdioAgent[],
): Promise<StdioAgent> {
  const agent = await server(runtime, f, `${f.exportMark}sleep 300 & sleep 300`);
  agents.push(agent);
  await runUntilMarked(agent, f);
  assert.ok(await eventually(async () => (await marked(f.mark)).length === 2));
  return agent;
}

for (const runtime of RUNTIMES) {
  const name = runtime.name;

  for (const how of ["stdin close", "SIGTERM"] as const) {
    Deno.test(`${name}: ${how} kills a command that ignores SIGTERM before the server exits`, async () => {
      const f = await fixture();
      const agents: StdioAgent[] = [];
      try {
        const agent = await server(runtime, f, `${f.exportMark}trap "" TERM; sleep 300`);
        agents.push(agent);
        await runUntilMarked(agent, f);
        if (how === "stdin close") agent.end();
        // Deno.kill: Deno's node:child_process reports a child it signalled as killed by it.
        else Deno.kill(agent.child.pid as number, "SIGTERM");
        const exit = await agent.exited;
        assert.equal(exit.code, 0, `${JSON.stringify(exit)}\n${agent.stderr()}`);
        assert.deepEqual(await marked(f.mark), [], "nothing of the command runs on");
      } finally {
        await cleanUp(f, agents);
      }
    });
  }

  for (const how of ["session/close", "session/delete", "stdin close"] as const) {
    Deno.test(`${name}: a background job of a finished command is gone after ${how}`, async () => {
      const f = await fixture();
      const agents: StdioAgent[] = [];
      try {
        const agent = await server(runtime, f, `${f.exportMark}sleep 300 >/dev/null 2>&1 &`);
        agents.push(agent);
        const sessionId = await agent.client.newSession(f.cwd);
        assert.equal(await agent.client.prompt(sessionId, "go"), "end_turn");
        if (how === "stdin close") {
          agent.end();
          assert.equal((await agent.exited).code, 0);
        } else {
          assert.deepEqual(await agent.client.request(how, { sessionId }), {});
        }
        assert.deepEqual(await marked(f.mark), [], "the background job is gone");
      } finally {
        await cleanUp(f, agents);
      }
    });
  }

  Deno.test(`${name}: the next server reaps what a server and its supervisor left when both were SIGKILLed`, async () => {
    const f = await fixture();
    const agents: StdioAgent[] = [];
    try {
      const agent = await serverRunningTwo(runtime, f, agents);
      // Stopped first, so that it cannot start another supervisor once its own is gone.
      process.kill(agent.child.pid as number, "SIGSTOP");
      const found = await supervisors(f.dataDir);
      assert.ok(found.length > 0, "the server runs a supervisor");
      for (const pid of found) process.kill(pid, "SIGKILL");
      assert.ok(await eventually(async () => (await supervisors(f.dataDir)).length === 0));
      agent.child.kill("SIGKILL");
      await agent.exited;
      assert.equal((await marked(f.mark)).length, 2, "nothing killed the command");
      // The next server on the data directory reaps them once it is idle after `initialize`
      // (which `server()` waits for): no session needed.
      const next = await server(runtime, f);
      agents.push(next);
      assert.ok(
        await eventually(async () => (await marked(f.mark)).length === 0),
        `the next server reaped the command's processes\n${next.stderr()}`,
      );
      next.end();
      assert.equal((await next.exited).code, 0);
    } finally {
      await cleanUp(f, agents);
    }
  });

  Deno.test(`${name}: SIGKILL of the server mid-command kills the command (supervisor)`, async () => {
    const f = await fixture();
    const agents: StdioAgent[] = [];
    try {
      const agent = await serverRunningTwo(runtime, f, agents);
      agent.child.kill("SIGKILL");
      await agent.exited;
      assert.ok(
        await eventually(async () => (await marked(f.mark)).length === 0),
        "the supervisor killed the command's processes",
      );
      assert.ok(await eventually(async () => (await supervisors(f.dataDir)).length === 0));
      assert.deepEqual(await readdir(join(f.dataDir, "processes")), [], "record removed");
    } finally {
      await cleanUp(f, agents);
    }
  });
}
