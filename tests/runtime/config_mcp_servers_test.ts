/**
 * The operator's MCP servers (config file `mcpServers`) on Deno, Node.js and Bun: started for
 * every session beside the client's, the client's entry winning a name clash, and an invalid
 * entry stopping the start with exit 2 naming it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { spawnAgent } from "../_helpers/acp_client.ts";
import { fakeStdio } from "../_helpers/mcp_servers.ts";
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

/** A fake stdio server declaration, `FAKE_VALUE` set to `value` (its `env` tool tells it). */
function fakeServer(name: string, value: string): Record<string, unknown> {
  const fake = fakeStdio();
  return {
    name,
    command: fake.command,
    args: fake.args,
    env: [{ name: "FAKE_VALUE", value }],
  };
}

Deno.test("config mcpServers start for every session, merged with the client's (its entry wins)", async () => {
  await using dirs = new TempDirs("acp-harness-config-mcp-");
  await onEveryRuntime(async (runtime) => {
    const base = await dirs.make();
    const cwd = join(base, "ws");
    await mkdir(cwd);
    const config = join(base, "config.json");
    await writeFile(
      config,
      JSON.stringify({
        mcpServers: [fakeServer("ops", "from-config"), fakeServer("shared", "config-loses")],
      }),
    );
    const script = join(base, "script.json");
    await writeFile(
      script,
      JSON.stringify([
        {
          toolCalls: [
            { name: "mcp__ops__env", arguments: { name: "FAKE_VALUE" } },
            { name: "mcp__shared__env", arguments: { name: "FAKE_VALUE" } },
            { name: "mcp__cli__env", arguments: { name: "FAKE_VALUE" } },
          ],
        },
        { text: "done" },
      ]),
    );
    const agent = spawnAgent(runtime.command, [
      ...runtime.args,
      "--config",
      config,
      "--model",
      "scripted",
      "--script",
      script,
      "--mode",
      "auto",
    ], { cwd, env: { ...Deno.env.toObject(), ACP_HARNESS_HOME: join(base, "home") } });
    agent.client.handlers.set("session/request_permission", () => ({
      outcome: { outcome: "selected", optionId: "allow_once" },
    }));
    try {
      await agent.client.initialize();
      const sessionId = await agent.client.newSession(cwd, {
        mcpServers: [fakeServer("shared", "client-wins"), fakeServer("cli", "from-client")],
      });
      assert.equal(await agent.client.prompt(sessionId, "tell the values"), "end_turn");
      const results = agent.client.updates(sessionId).map(({ update }) => update)
        .filter((update) => update.sessionUpdate === "tool_call_update")
        .filter((update) => update.status === "completed" || update.status === "failed");
      const texts = results.map((update) => `${update.status} ${JSON.stringify(update.content)}`);
      // The calls may end in any order; each tells the FAKE_VALUE of the server it reached.
      const values = texts.map((text) => /"text":"([^"]*)"/.exec(text)?.[1]).sort();
      assert.deepEqual(values, ["client-wins", "from-client", "from-config"], texts.join("\n"));
      assert.ok(texts.every((text) => text.startsWith("completed")), texts.join("\n"));
      assert.deepEqual(agent.client.problems, []);
    } finally {
      agent.end();
      await agent.exited;
    }
  });
});

Deno.test("an invalid config mcpServers entry stops the start with exit 2 naming it", async () => {
  await using dirs = new TempDirs("acp-harness-config-mcp-bad-");
  await onEveryRuntime(async (runtime) => {
    const base = await dirs.make();
    const config = join(base, "config.json");
    await writeFile(
      config,
      JSON.stringify({ mcpServers: [fakeServer("ok", "v"), { name: "broken", args: [] }] }),
    );
    const agent = spawnAgent(runtime.command, [...runtime.args, "--config", config], {
      cwd: base,
      env: { ...Deno.env.toObject(), ACP_HARNESS_HOME: join(base, "home") },
    });
    const { code } = await agent.exited;
    assert.equal(code, 2, agent.stderr());
    assert.match(agent.stderr(), /"mcpServers".*mcpServers\[1\]\.command/);
    const notArray = join(base, "not_array.json");
    await writeFile(notArray, JSON.stringify({ mcpServers: { name: "x" } }));
    const second = spawnAgent(runtime.command, [...runtime.args, "--config", notArray], {
      cwd: base,
      env: { ...Deno.env.toObject(), ACP_HARNESS_HOME: join(base, "home") },
    });
    assert.equal((await second.exited).code, 2, second.stderr());
    assert.match(second.stderr(), /"mcpServers" must be an array/);
  });
});
