/**
 * Descendants that leave their process group (`setsid`) end with the process of the session that
 * started them, not only when the server exits, on Deno, Node.js and Bun: an MCP server's
 * grandchild after `session/close` and `session/delete` (another session's living on), a
 * delegated agent's after a cancelled delegation and after `session/close`, and a command's after
 * its turn ends or is cancelled. Each escaped process ignores SIGTERM where it can, so the sweep's
 * SIGKILL is needed. They are not our children and announce their end by no event: /proc is polled,
 * bounded.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { exitWithin, spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { MARK, marked } from "../_helpers/marked_processes.ts";
import {
  fakeStdio,
  killProcessesWithMarker,
  processesWithMarker,
} from "../_helpers/mcp_servers.ts";
import { DENO, ROOT, type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";

const ASKING_AGENT = fileURLToPath(
  new URL("../delegation/_fixtures/asking_agent.ts", import.meta.url),
);

/** A server under test in a temporary directory; its marked processes are killed afterwards. */
interface Setup {
  readonly cwd: string;
  readonly base: string;
  /** Markers whose processes are killed when the test ends (so a failure leaves nothing). */
  readonly marks: string[];
  /** Starts the server on `runtime` with these flags (and a data directory of its own). */
  start(runtime: Runtime, args: readonly string[]): Promise<StdioAgent>;
  /** Writes JSON to a file in the temporary directory; returns its path. */
  file(name: string, content: unknown): Promise<string>;
}

async function withSetup(body: (setup: Setup) => Promise<void>): Promise<void> {
  await using dir = await tempDir("acp-harness-setsid-");
  const cwd = join(dir.path, "ws");
  await mkdir(cwd);
  const agents: StdioAgent[] = [];
  const setup: Setup = {
    cwd,
    base: dir.path,
    marks: [],
    async start(runtime, args) {
      const agent = spawnAgent(runtime.command, [
        ...runtime.args,
        ...["--data-dir", join(dir.path, "data"), "--mode", "auto"],
        ...args,
      ], { cwd, env: { ...Deno.env.toObject(), ACP_HARNESS_DELEGATION_DEPTH: "" } });
      agents.push(agent);
      await agent.client.initialize();
      return agent;
    },
    async file(name, content) {
      const path = join(dir.path, name);
      await writeFile(path, JSON.stringify(content));
      return path;
    },
  };
  try {
    await body(setup);
  } finally {
    for (const agent of agents) {
      agent.end();
      await exitWithin(agent, 15_000).catch(() => {});
    }
    for (const mark of setup.marks) {
      await killProcessesWithMarker(mark);
      for (const pid of await marked(mark)) process.kill(pid, "SIGKILL");
    }
  }
}

/** Waits (bounded) until no process carries `mark` (in its command line or environment). */
async function allGone(mark: string, after: string): Promise<void> {
  await pollUntil(
    async () => (await processesWithMarker(mark)).length === 0,
    { what: `every process carrying the marker to be gone after ${after}`, timeoutMs: 10_000 },
  );
}

/** Waits (bounded) until `count` processes carry `mark`. */
async function running(mark: string, count: number, what: string): Promise<void> {
  await pollUntil(async () => (await processesWithMarker(mark)).length === count, {
    what: `${what}: ${count} processes carrying the marker`,
  });
}

/** A process's command line, its arguments joined by spaces ("" once it is gone). */
async function commandLine(pid: number): Promise<string> {
  const text = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
  return text.replaceAll("\0", " ").trim();
}

/** The text of a session's tool call updates, joined. */
function callText(agent: StdioAgent, sessionId: string): string {
  return JSON.stringify(agent.client.updates(sessionId).map(({ update }) => update.content));
}

for (const runtime of RUNTIMES) {
  const name = runtime.name;

  Deno.test(`${name}: session/close and session/delete end an MCP server's setsid grandchild; another session's lives on`, async () => {
    await withSetup(async (setup) => {
      const agent = await setup.start(runtime, []);
      const sessions: string[] = [];
      for (let index = 0; index < 3; index++) {
        const mark = crypto.randomUUID();
        setup.marks.push(mark);
        const fake = fakeStdio("--spawn-setsid-grandchild", `--marker=${mark}`);
        sessions.push(
          await agent.client.newSession(setup.cwd, {
            mcpServers: [{ name: "fake", command: fake.command, args: fake.args, env: [] }],
          }),
        );
      }
      const [closed, deleted, kept] = setup.marks as [string, string, string];
      // Each: the server, the escaped shell (its own session, ignoring SIGTERM) and its sleep.
      for (const mark of setup.marks) await running(mark, 3, "the server and its grandchild");
      assert.deepEqual(
        await agent.client.request("session/close", { sessionId: sessions[0] }),
        {},
      );
      await allGone(closed, "session/close");
      assert.equal((await processesWithMarker(deleted)).length, 3, "the other sessions' run on");
      assert.deepEqual(
        await agent.client.request("session/delete", { sessionId: sessions[1] }),
        {},
      );
      await allGone(deleted, "session/delete");
      assert.equal((await processesWithMarker(kept)).length, 3, "the open session's run on");
      agent.end();
      assert.equal(await exitWithin(agent, 15_000), 0, agent.stderr());
      await allGone(kept, "the server's exit");
    });
  });

  for (const how of ["a cancelled delegation", "session/close"] as const) {
    Deno.test(`${name}: a delegated agent's setsid grandchild is gone after ${how}`, async () => {
      await withSetup(async (setup) => {
        const mark = crypto.randomUUID();
        setup.marks.push(mark);
        const config = await setup.file("config.json", {
          agents: {
            worker: {
              command: DENO,
              args: ["run", "-A", "--config", `${ROOT}deno.json`, ASKING_AGENT],
              env: { [MARK]: mark },
              description: "Leaves a process of its own session behind",
            },
          },
        });
        const script = await setup.file("script.json", [
          {
            toolCalls: [{
              id: "call_delegate",
              name: "delegate",
              arguments: { agent: "worker", prompt: "setsid" },
            }],
          },
          { text: "unused" },
        ]);
        const agent = await setup.start(runtime, [
          ...["--model", "scripted", "--script", script, "--config", config],
        ]);
        const sessionId = await agent.client.newSession(setup.cwd);
        const prompt = agent.client.prompt(sessionId, "Delegate").catch(String);
        await agent.client.waitFor(() => /escaped \d+/.test(callText(agent, sessionId)), 30_000);
        const escaped = Number(/escaped (\d+)/.exec(callText(agent, sessionId))?.[1]);
        assert.ok((await marked(mark)).includes(escaped), "the escaped process runs");
        if (how === "session/close") {
          assert.deepEqual(await agent.client.request("session/close", { sessionId }), {});
        } else {
          await agent.client.notify("session/cancel", { sessionId });
        }
        assert.equal(await prompt, "cancelled");
        await allGone(mark, how);
        assert.deepEqual(agent.client.problems, []);
      });
    });
  }

  for (const how of ["ends", "is cancelled"] as const) {
    Deno.test(`${name}: a command's setsid job is gone once its turn ${how}`, async () => {
      await withSetup(async (setup) => {
        const mark = crypto.randomUUID();
        setup.marks.push(mark);
        const escape = `setsid sh -c 'trap "" TERM; sleep 300; exit 0' >/dev/null 2>&1 &`;
        const command = how === "ends"
          // Ends once the job has its own group (before, the group kill would reach it anyway).
          ? `export ${MARK}=${mark}; ${escape} p=$!
while [ "$(cut -d' ' -f5 /proc/$p/stat)" != "$p" ]; do sleep 0.01; done`
          : `export ${MARK}=${mark}; ${escape} sleep 300`;
        const script = await setup.file("script.json", [
          { toolCalls: [{ name: "run_command", arguments: { command } }] },
          { text: "done" },
        ]);
        const agent = await setup.start(runtime, ["--model", "scripted", "--script", script]);
        const sessionId = await agent.client.newSession(setup.cwd);
        if (how === "ends") {
          assert.equal(await agent.client.prompt(sessionId, "go"), "end_turn");
        } else {
          const prompt = agent.client.prompt(sessionId, "go");
          // The escaped shell (which has called setsid once it runs `sh`) and its sleep, and the
          // command's sleep (its shell may have become that sleep).
          await pollUntil(async () => {
            const commands = await Promise.all((await marked(mark)).map(commandLine));
            return commands.filter((line) => line.startsWith("sleep 300")).length === 2 &&
              commands.some((line) => line.startsWith("sh -c trap"));
          }, { what: "the command and its escaped job" });
          await agent.client.notify("session/cancel", { sessionId });
          assert.equal(await prompt, "cancelled");
        }
        await allGone(mark, `the turn ${how}`);
        assert.deepEqual(agent.client.problems, []);
      });
    });
  }
}
