/**
 * One malformed tool does not sink its MCP server, on Deno, Node.js and Bun: a server listing a
 * tool whose input schema nests 5,000 levels deep, one whose input schema is `{"type":"string"}`,
 * one whose input schema is `5`, and two good tools (tests/_fixtures/hostile_mcp_server.mjs
 * `--mode=bad-tools`) starts; the good tools are offered to the (scripted) model and run, the bad
 * ones are unknown to it, and a warning names each of them.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { spawnAgent } from "../_helpers/acp_client.ts";
import { killProcessesWithMarker, NODE } from "../_helpers/mcp_servers.ts";
import { ROOT, type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";

const HOSTILE = `${ROOT}tests/_fixtures/hostile_mcp_server.mjs`;
const GOOD = ["poke", "poke_too"];
const BAD = ["deep_in", "string_in", "number_in"];

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

Deno.test("an MCP server with malformed tool schemas starts without them on deno, node and bun", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-bad-tools-");
  await onEveryRuntime(async (runtime) => {
    const base = await dirs.make();
    const cwd = join(base, "ws");
    await mkdir(cwd);
    const script = join(base, "script.json");
    await writeFile(
      script,
      JSON.stringify([
        {
          toolCalls: [...GOOD, ...BAD].map((name) => ({
            id: name,
            name: `mcp__bad__${name}`,
            arguments: { text: "x" },
          })),
        },
        { text: "done" },
      ]),
    );
    const marker = crypto.randomUUID();
    const agent = spawnAgent(runtime.command, [
      ...runtime.args,
      ...["--data-dir", join(base, "data"), "--mode", "auto"],
      ...["--model", "scripted", "--script", script],
    ], { cwd, env: { ...Deno.env.toObject(), ACP_HARNESS_HOME: join(base, "home") } });
    try {
      await agent.client.initialize();
      const sessionId = await agent.client.newSession(cwd, {
        mcpServers: [{
          name: "bad",
          command: NODE,
          args: [HOSTILE, "--mode=bad-tools", `--marker=${marker}`],
          env: [],
        }],
      });
      assert.equal(await agent.client.prompt(sessionId, "call them all"), "end_turn");
      const updates = agent.client.updates(sessionId).map(({ update }) => update);
      const last = (id: string) => updates.filter((update) => update.toolCallId === id).at(-1);
      for (const name of GOOD) {
        assert.equal(last(name)?.status, "completed", `${name}: ${JSON.stringify(last(name))}`);
        assert.match(JSON.stringify(last(name)?.content), /poked/);
      }
      for (const name of BAD) {
        assert.equal(last(name)?.status, "failed", `${name}: ${JSON.stringify(last(name))}`);
        assert.match(JSON.stringify(last(name)?.content), /Unknown tool/);
      }
      agent.end();
      await agent.exited;
      const warnings = agent.stderr().split("\n").filter((line) =>
        line.includes("acp-harness warn: MCP server tool left out")
      );
      for (const name of BAD) {
        assert.ok(
          warnings.some((line) => line.includes(`"tool":"${name}"`)),
          `a warning names ${name}: ${agent.stderr().slice(-3000)}`,
        );
      }
      assert.equal(warnings.length, BAD.length, warnings.join("\n"));
    } finally {
      if (agent.child.exitCode === null && agent.child.signalCode === null) {
        agent.child.kill("SIGKILL");
      }
      await agent.exited;
      await killProcessesWithMarker(marker);
    }
  });
});
