/**
 * `session/fork` over real stdio on Deno, Node and Bun, on the JSONL store and on PostgreSQL: the
 * capability is advertised, the fork's model continues from the copied conversation, and after a
 * restart the fork loads (the copied history, then its own turn) and resumes. Every frame is
 * checked against the ACP schema (the fork's answer against the unstable one).
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { postgresTest, withTestDatabase } from "../_helpers/postgres.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

/** The texts of a session's message chunks, in order. */
function texts(agent: StdioAgent, sessionId: string): string[] {
  return agent.client.updates(sessionId).map(({ update }) => update)
    .filter((update) => String(update.sessionUpdate).endsWith("message_chunk"))
    .map((update) => (update.content as { text: string }).text);
}

async function stop(agent: StdioAgent): Promise<void> {
  agent.end();
  await agent.exited;
}

/**
 * Forks a session on one server process, restarts, loads the fork and prompts it. The scripted
 * model answers a session's n-th model request with step n, counting the assistant messages its
 * history starts with: a fork that got the copy answers with the step after the source's.
 */
async function forkAcrossRestart(runtime: Runtime, store: readonly string[]): Promise<void> {
  await using dir = await tempDir("acp-harness-fork-e2e-");
  const cwd = join(dir.path, "ws");
  await mkdir(cwd);
  const script = join(dir.path, "script.json");
  await writeFile(
    script,
    JSON.stringify([{ text: "first" }, { text: "second" }, { text: "third" }]),
  );
  const started: StdioAgent[] = [];
  const start = (): StdioAgent => {
    const agent = spawnAgent(
      runtime.command,
      [...runtime.args, ...store, "--model", "scripted", "--script", script],
      { cwd, env: { ...Deno.env.toObject(), NO_COLOR: "1" } },
    );
    started.push(agent);
    return agent;
  };
  try {
    const first = start();
    const init = await first.client.initialize();
    const capabilities = init.agentCapabilities as { sessionCapabilities: { fork?: unknown } };
    assert.deepEqual(capabilities.sessionCapabilities.fork, {});
    const sourceId = await first.client.newSession(cwd);
    assert.equal(await first.client.prompt(sourceId, "one"), "end_turn");
    const fork = await first.client.request<{ sessionId: string; modes: unknown }>(
      "session/fork",
      { sessionId: sourceId, cwd, mcpServers: [] },
    );
    assert.notEqual(fork.sessionId, sourceId);
    assert.ok(fork.modes, "the answer has the modes, as session/new's");
    assert.equal(await first.client.prompt(fork.sessionId, "two"), "end_turn");
    assert.deepEqual(texts(first, fork.sessionId), ["second"], "the model saw the copied turn");
    assert.deepEqual(first.client.problems, []);
    await stop(first);

    const second = start();
    await second.client.initialize();
    await second.client.request("session/load", { sessionId: fork.sessionId, cwd, mcpServers: [] });
    assert.deepEqual(texts(second, fork.sessionId), ["one", "first", "two", "second"]);
    assert.equal(await second.client.prompt(fork.sessionId, "three"), "end_turn");
    assert.equal(texts(second, fork.sessionId).at(-1), "third");
    // The source is as it was: one turn.
    await second.client.request("session/load", { sessionId: sourceId, cwd, mcpServers: [] });
    assert.deepEqual(texts(second, sourceId), ["one", "first"]);
    assert.deepEqual(second.client.problems, []);
    await stop(second);
  } finally {
    for (const agent of started) {
      if (agent.child.exitCode === null && agent.child.signalCode === null) {
        agent.child.kill("SIGKILL");
      }
    }
    await Promise.all(started.map((agent) => agent.exited));
  }
}

for (const runtime of RUNTIMES) {
  Deno.test(`session/fork over stdio on ${runtime.name} (JSONL store) survives a restart`, async () => {
    await using data = await tempDir("acp-harness-fork-data-");
    await forkAcrossRestart(runtime, ["--data-dir", data.path]);
  });

  postgresTest(
    `session/fork over stdio on ${runtime.name} (PostgreSQL store) survives a restart`,
    async (url) => {
      await using database = await withTestDatabase(url);
      await using data = await tempDir("acp-harness-fork-data-");
      await forkAcrossRestart(runtime, ["--store", database.url, "--data-dir", data.path]);
    },
  );
}
