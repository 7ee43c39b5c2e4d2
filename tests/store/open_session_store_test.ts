import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { NodeHost } from "../../mod.ts";
import { nullLogger } from "../../src/log/logger.ts";
import { runCopySessions } from "../../src/cli/copy_sessions_command.ts";
import { ConfigError } from "../../src/config/value_types.ts";
import { MemorySessionStore } from "../../src/store/memory_session_store.ts";
import { MEMORY_STORE, openSessionStore } from "../../src/store/open_session_store.ts";
import { exitWithin, spawnAgent } from "../_helpers/acp_client.ts";
import { RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

Deno.test("memory: opens an in-memory store, named as such", async () => {
  const opened = await openSessionStore({ location: MEMORY_STORE, host: new NodeHost({}) });
  assert.ok(opened.store instanceof MemorySessionStore);
  assert.equal(opened.postgres, false);
  assert.match(opened.description, /memory/);
  const id = crypto.randomUUID();
  await opened.store.create({
    version: 1,
    id,
    cwd: "/work",
    additionalDirectories: [],
    createdAt: new Date().toISOString(),
  });
  assert.equal((await opened.store.list({ limit: 10 })).sessions[0]?.id, id);
  await opened.close();
});

Deno.test("copy-sessions refuses memory: on either side, naming why", async () => {
  for (const [from, to] of [[MEMORY_STORE, "/tmp/x"], ["/tmp/x", MEMORY_STORE]] as const) {
    await assert.rejects(
      runCopySessions({
        from,
        to,
        host: new NodeHost({}),
        logger: nullLogger,
        leaseTtlMs: 30_000,
        writeStderr: () => {},
      }),
      (error: unknown) =>
        error instanceof ConfigError && /memory: keeps nothing/.test(error.message),
    );
  }
});

for (const runtime of RUNTIMES) {
  Deno.test(`--store memory: on ${runtime.name} serves sessions and writes nothing`, async () => {
    await using dir = await tempDir("acp-memory-store-");
    const agent = spawnAgent(runtime.command, [
      ...runtime.args,
      "--store",
      MEMORY_STORE,
      "--data-dir",
      join(dir.path, "data"),
    ], {
      cwd: dir.path,
      env: { ...Deno.env.toObject(), ACP_HARNESS_HOME: join(dir.path, "home") },
    });
    try {
      await agent.client.initialize();
      const sessionId = await agent.client.newSession(dir.path);
      assert.equal(await agent.client.prompt(sessionId, "hello"), "end_turn");
      const listed = await agent.client.request<{ sessions: Array<{ sessionId: string }> }>(
        "session/list",
        {},
      );
      assert.deepEqual(listed.sessions.map((session) => session.sessionId), [sessionId]);
      agent.end();
      assert.equal(await exitWithin(agent, 20_000), 0);
      // Nothing but the process supervisor's directory is written.
      const data: string[] = await readdir(join(dir.path, "data")).catch(() => []);
      assert.ok(!data.includes("sessions") && !data.includes("index.jsonl"), String(data));
    } finally {
      if (agent.child.exitCode === null) agent.child.kill("SIGKILL");
      await agent.exited;
    }
  });
}
