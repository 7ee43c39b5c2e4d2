/**
 * MCP servers with real server processes on Deno, Node.js and Bun: acpx's `--mcp-config` hands a
 * stdio server to the agent and the scripted model calls its tool end to end; and a session's
 * stdio server (with a grandchild in its process group) is gone however the agent ends: stdin
 * EOF, SIGTERM, SIGINT, and SIGKILL (then the host's supervisor kills the recorded groups).
 *
 * Each test runs the three runtimes at once, one agent each, and names the runtime in failures.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { type AcpxRun, removeAcpxSocketDir, runAcpx, stopAcpxProcesses } from "../_helpers/acpx.ts";
import {
  fakeStdio,
  killProcessesWithMarker,
  processesWithMarker,
  startEverythingRemote,
} from "../_helpers/mcp_servers.ts";
import { commandLine, type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";
import { withoutSpend } from "../_helpers/acp_schema.ts";

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

/**
 * `acpx --mcp-config <file> exec <prompt>` (JSON output, every permission approved) against the
 * agent on `runtime` with the scripted model.
 */
function acpxExec(
  runtime: Runtime,
  paths: { home: string; workspace: string; script: string; mcpConfig: string },
  prompt: string,
): Promise<AcpxRun> {
  return runAcpx([
    "--agent",
    commandLine(runtime, ["--model", "scripted", "--script", paths.script]),
    "--mcp-config",
    paths.mcpConfig,
    "--format",
    "json",
    "--approve-all",
    "exec",
    prompt,
  ], {
    cwd: paths.workspace,
    env: { HOME: paths.home, ACP_HARNESS_HOME: join(paths.home, "agent") },
  });
}

/** The `session/update` params acpx printed. */
function updatesOf(frames: ReadonlyArray<Record<string, unknown>>): Array<Record<string, unknown>> {
  return frames
    .filter((frame) => frame.method === "session/update")
    .map((frame) => (frame.params as { update: Record<string, unknown> }).update);
}

Deno.test("acpx --mcp-config: the scripted model calls mcp__fake__echo on deno, node and bun", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-acpx-");
  await onEveryRuntime(async (runtime) => {
    const base = await dirs.make();
    const home = join(base, "home");
    const workspace = join(base, "ws");
    await mkdir(home);
    await mkdir(workspace);
    // acpx's --mcp-config file: `mcpServers` as an array of ACP server declarations (name,
    // command, args, env as name/value pairs; `type` http/sse for remote ones).
    const mcpConfig = join(base, "mcp.json");
    const fake = fakeStdio();
    await writeFile(
      mcpConfig,
      JSON.stringify({ mcpServers: [{ name: "fake", command: fake.command, args: fake.args }] }),
    );
    const script = join(base, "script.json");
    await writeFile(
      script,
      JSON.stringify([
        {
          toolCalls: [{ name: "mcp__fake__echo", arguments: { text: `hi from ${runtime.name}` } }],
        },
        { text: "echoed" },
      ]),
    );
    try {
      const run = await acpxExec(runtime, { home, workspace, script, mcpConfig }, "echo something");
      assert.equal(run.code, 0, run.stderr);
      const sessionNew = run.frames.find((frame) => frame.method === "session/new");
      const declared = (sessionNew?.params as { mcpServers: Array<{ name: string }> }).mcpServers;
      assert.deepEqual(declared.map((server) => server.name), ["fake"], "acpx passed the server");
      const updates = updatesOf(run.frames);
      const call = updates.find((update) =>
        update.sessionUpdate === "tool_call" &&
        JSON.stringify(update).includes("echo (MCP fake)")
      );
      assert.ok(call, `a tool call of mcp__fake__echo in ${JSON.stringify(updates)}`);
      const done = updates.find((update) =>
        update.sessionUpdate === "tool_call_update" && update.toolCallId === call.toolCallId &&
        update.status === "completed"
      );
      assert.ok(done, "the call completed");
      assert.match(JSON.stringify(done.content), new RegExp(`echo: hi from ${runtime.name}`));
      assert.deepEqual(withoutSpend(run.frames.at(-1)?.result), { stopReason: "end_turn" });
    } finally {
      await stopAcpxProcesses(home);
      await removeAcpxSocketDir(home);
    }
  });
});

Deno.test("acpx --mcp-config: Streamable HTTP and SSE servers' tools run on deno, node and bun", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-acpx-remote-");
  // One server of each transport serves the three agents (each gets its own MCP session).
  await using http = await startEverythingRemote("streamableHttp");
  await using sse = await startEverythingRemote("sse");
  await onEveryRuntime(async (runtime) => {
    const base = await dirs.make();
    const home = join(base, "home");
    const workspace = join(base, "ws");
    await mkdir(home);
    await mkdir(workspace);
    const mcpConfig = join(base, "mcp.json");
    await writeFile(
      mcpConfig,
      JSON.stringify({
        mcpServers: [
          { type: "http", name: "web", url: http.url, headers: [] },
          { type: "sse", name: "old", url: sse.url, headers: [] },
        ],
      }),
    );
    const script = join(base, "script.json");
    await writeFile(
      script,
      JSON.stringify([
        {
          toolCalls: [
            { id: "sum", name: "mcp__web__get-sum", arguments: { a: 2, b: 40 } },
            { id: "echo", name: "mcp__old__echo", arguments: { message: runtime.name } },
          ],
        },
        { text: "done" },
      ]),
    );
    try {
      const run = await acpxExec(runtime, { home, workspace, script, mcpConfig }, "add and echo");
      assert.equal(run.code, 0, run.stderr);
      const completed = (id: string): string =>
        JSON.stringify(
          updatesOf(run.frames).find((update) =>
            update.sessionUpdate === "tool_call_update" && update.toolCallId === id &&
            update.status === "completed"
          )?.content,
        );
      assert.match(completed("sum"), /The sum of 2 and 40 is 42/);
      assert.match(completed("echo"), new RegExp(`Echo: ${runtime.name}`));
      assert.deepEqual(withoutSpend(run.frames.at(-1)?.result), { stopReason: "end_turn" });
    } finally {
      await stopAcpxProcesses(home);
      await removeAcpxSocketDir(home);
    }
  });
});

/** A running agent whose session has the fake server with a grandchild, all marked. */
interface Started {
  readonly agent: StdioAgent;
  readonly marker: string;
  readonly dataDir: string;
}

/**
 * Starts the agent on `runtime` and opens a session whose fake server spawns a grandchild; resolves
 * once the server, the grandchild shell and its `sleep` run (found by the marker in /proc: they
 * are not our children and announce nothing).
 */
async function startWithGrandchild(runtime: Runtime, base: string): Promise<Started> {
  const marker = crypto.randomUUID();
  const cwd = join(base, "ws");
  const dataDir = join(base, "data");
  await mkdir(cwd);
  const agent = spawnAgent(runtime.command, [...runtime.args, "--data-dir", dataDir], {
    cwd,
    env: { ...Deno.env.toObject(), ACP_HARNESS_HOME: join(base, "home") },
  });
  const started = { agent, marker, dataDir };
  try {
    await agent.client.initialize();
    const fake = fakeStdio("--spawn-grandchild", `--marker=${marker}`);
    await agent.client.newSession(cwd, {
      mcpServers: [{ name: "fake", command: fake.command, args: fake.args, env: [] }],
    });
    // The server, `/bin/sh -c 'sleep 1000; exit 0'` and its `sleep`.
    await pollUntil(async () => (await processesWithMarker(marker)).length === 3, {
      what: `the fake server and its grandchild (${runtime.name})`,
    });
    return started;
  } catch (error) {
    await cleanUp(started);
    throw error;
  }
}

/**
 * Kills the agent if it still runs, anything carrying the marker and a supervisor left for the
 * data directory (all no-ops unless the test failed).
 */
async function cleanUp({ agent, marker, dataDir }: Started): Promise<void> {
  if (agent.child.exitCode === null && agent.child.signalCode === null) {
    agent.child.kill("SIGKILL");
  }
  await agent.exited;
  await killProcessesWithMarker(marker);
  for (const pid of await supervisors(dataDir)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone meanwhile.
    }
  }
}

/** Supervisor processes whose record file is in `dataDir`. */
async function supervisors(dataDir: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (cmdline.includes("acp-harness-supervisor") && cmdline.includes(dataDir)) {
      found.push(Number(entry));
    }
  }
  return found;
}

for (const how of ["stdin EOF", "SIGTERM", "SIGINT"] as const) {
  Deno.test(`MCP: ${how} ends the agent and its MCP server's whole group on deno, node and bun`, async () => {
    await using dirs = new TempDirs("acp-harness-mcp-end-");
    await onEveryRuntime(async (runtime) => {
      const started = await startWithGrandchild(runtime, await dirs.make());
      const { agent, marker } = started;
      try {
        if (how === "stdin EOF") agent.end();
        // Deno.kill: Deno's node:child_process reports a child it signalled as killed by it.
        else Deno.kill(agent.child.pid as number, how);
        const exit = await agent.exited;
        assert.equal(exit.code, 0, `${JSON.stringify(exit)}\n${agent.stderr()}`);
        // The agent confirms its process groups gone before it exits: no polling.
        assert.deepEqual(
          await processesWithMarker(marker),
          [],
          "nothing of the MCP server runs on",
        );
      } finally {
        await cleanUp(started);
      }
    });
  });
}

Deno.test("MCP: after SIGKILL of the agent the supervisor kills the MCP server's group on deno, node and bun", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-kill-");
  await onEveryRuntime(async (runtime) => {
    const started = await startWithGrandchild(runtime, await dirs.make());
    const { agent, marker, dataDir } = started;
    try {
      agent.child.kill("SIGKILL");
      await agent.exited;
      // The fake server itself ends at its stdin's EOF; its grandchild (same group) can only go
      // through the supervisor (`/bin/sh`, not our child), which notices the closed pipe and
      // kills the recorded groups. Nothing announces that here, so /proc is polled, bounded.
      // Measured: nothing is left on any runtime, within a few hundred ms of the agent's death
      // (right after the exit, the grandchild shell and its `sleep` may still be seen).
      await pollUntil(async () => (await processesWithMarker(marker)).length === 0, {
        what: `the supervisor killed the MCP server and its grandchild (${runtime.name})`,
        timeoutMs: 10_000,
      });
      await pollUntil(async () => (await supervisors(dataDir)).length === 0, {
        what: `the supervisor exited (${runtime.name})`,
        timeoutMs: 10_000,
      });
      assert.deepEqual(await readdir(join(dataDir, "processes")), [], "the record is removed");
    } finally {
      await cleanUp(started);
    }
  });
});
