/**
 * Issue 7, defect 7 end to end: real server processes on one data directory. A creates a
 * session; B resumes it and prompts (which titles it); C, started before B prompted, and D,
 * started after B exited, both list the title.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { DENO } from "../_helpers/runtimes.ts";
import { pollUntil } from "../_helpers/wait.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

type Listed = { sessions: Array<{ sessionId: string; title?: string }> };

Deno.test("a title written by one server process is listed by the others, before and after it exits", async () => {
  await using temp = await tempDir("acp-store-title-");
  const base = temp.path;
  const cwd = join(base, "ws");
  const dataDir = join(base, "data");
  await mkdir(cwd);
  const started: StdioAgent[] = [];
  const server = async (): Promise<StdioAgent> => {
    const agent = spawnAgent(
      DENO,
      ["run", "-A", `${ROOT}mod.ts`, "--data-dir", dataDir],
      { cwd, env: { ...Deno.env.toObject() } },
    );
    started.push(agent);
    await agent.client.initialize();
    return agent;
  };
  const stop = async (agent: StdioAgent): Promise<void> => {
    agent.end();
    assert.equal((await agent.exited).code, 0, agent.stderr());
  };
  const titles = async (agent: StdioAgent): Promise<Array<string | undefined>> =>
    (await agent.client.request<Listed>("session/list", {})).sessions.map((s) => s.title);
  // The prompt's answer does not wait for the index line (it is written while the answer goes
  // out), and another process's writes to the shared index announce themselves by no event: so
  // another process may list a moment before the line lands. Poll, bounded.
  const eventually = async (agent: StdioAgent): Promise<Array<string | undefined>> => {
    let seen = await titles(agent);
    await pollUntil(async () => (seen = await titles(agent))[0] !== undefined, {
      what: "the title listed by another process",
      timeoutMs: 2_000,
    }).catch(() => {});
    return seen;
  };
  try {
    const a = await server();
    const sessionId = await a.client.newSession(cwd);
    await stop(a);
    const c = await server();
    assert.deepEqual(await titles(c), [undefined]);

    const b = await server();
    await b.client.request("session/resume", { sessionId, cwd, mcpServers: [] });
    assert.equal(await b.client.prompt(sessionId, "Fix the build\nplease"), "end_turn");
    assert.deepEqual(await titles(b), ["Fix the build"]);
    assert.deepEqual(await eventually(c), ["Fix the build"], "C, while B is alive");
    await stop(b);
    assert.deepEqual(await titles(c), ["Fix the build"], "C, after B exited");
    const d = await server();
    assert.deepEqual(await titles(d), ["Fix the build"], "D, started after B exited");
    await stop(c);
    await stop(d);
  } finally {
    for (const agent of started) if (agent.child.exitCode === null) agent.child.kill("SIGKILL");
    await Promise.all(started.map((agent) => agent.exited));
  }
});
