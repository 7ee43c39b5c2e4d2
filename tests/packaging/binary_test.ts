/**
 * The compiled binary (`scripts/compile.ts`, `bun build --compile`): built into a temporary
 * directory, copied to another one outside the repository and run there with a minimal
 * environment (no `node_modules` within reach, no Deno or Bun on PATH), it answers `--version`,
 * serves a session over stdio, runs built-in and MCP tools, and exits 0 on stdin EOF and on
 * SIGTERM.
 *
 * @module
 */
import assert from "node:assert/strict";
import { copyFile, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { compileBinary } from "../../scripts/compile.ts";
import { VERSION } from "../../mod.ts";
import { exitWithin, spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const FAKE_MCP_SERVER = fileURLToPath(
  new URL("../_fixtures/fake_mcp_server.mjs", import.meta.url),
);

/** The first `name` on PATH, for the MCP server the binary starts. */
function onPath(name: string): string {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    try {
      const path = join(dir, name);
      if (Deno.statSync(path).isFile) return path;
    } catch {
      // not here
    }
  }
  throw new Error(`${name} is not on PATH`);
}

/** The `tool_call_update`s of one tool call. */
function toolUpdates(agent: StdioAgent, sessionId: string, id: string): Record<string, unknown>[] {
  return agent.client.updates(sessionId).map(({ update }) => update).filter((update) =>
    update.sessionUpdate === "tool_call_update" && update.toolCallId === id
  );
}

Deno.test("compiled binary: runs outside the repository with a minimal environment", async (t) => {
  await using build = await tempDir("acp-harness-binary-build-");
  await using run = await tempDir("acp-harness-binary-run-");
  const built = await compileBinary({ outfile: join(build.path, "acp-harness") });
  const binary = join(run.path, "bin", "acp-harness");
  await mkdir(join(run.path, "bin"));
  await copyFile(built.path, binary);
  await Deno.chmod(binary, 0o755);
  const cwd = join(run.path, "work");
  await mkdir(cwd);
  // A standalone Bun program reads `.env` in its working directory unless built not to: this
  // one must ignore it (the value would be a config error).
  await writeFile(join(cwd, ".env"), "ACP_HARNESS_MAX_STEPS=banana\n");
  const env = { PATH: "/usr/bin:/bin", HOME: join(run.path, "home") };
  const start = (args: readonly string[] = []): StdioAgent =>
    spawnAgent(binary, args, { cwd, env });

  await t.step("--version prints the version and exits 0", async () => {
    const agent = start(["--version"]);
    let stdout = "";
    agent.child.stdout?.on("data", (text: string) => stdout += text);
    assert.equal(await exitWithin(agent, 10_000), 0, agent.stderr());
    assert.equal(stdout, `${VERSION}\n`);
  });

  await t.step("initialize → session/new → session/prompt (echo), exit 0 on EOF", async () => {
    const agent = start();
    const { client } = agent;
    const init = await client.initialize();
    assert.equal((init.agentInfo as { name: string }).name, "acp-harness");
    assert.equal((init.agentInfo as { version: string }).version, VERSION);
    const sessionId = await client.newSession(cwd);
    assert.equal(await client.prompt(sessionId, "hello from the binary"), "end_turn");
    const message = client.updates(sessionId).find(({ update }) =>
      update.sessionUpdate === "agent_message_chunk"
    );
    assert.equal((message?.update.content as { text: string }).text, "Echo: hello from the binary");
    agent.end();
    assert.equal(await exitWithin(agent, 5_000), 0, agent.stderr());
    assert.deepEqual(agent.impure, [], "stdout carries protocol frames only");
    assert.deepEqual(client.problems, []);
    // The default data directory is under HOME.
    await Deno.stat(join(env.HOME, ".acp-harness"));
  });

  await t.step(
    "run --json: one document, exit 0; run --resume of an unknown id exits 2",
    async () => {
      const output = await new Deno.Command(binary, {
        args: ["run", "--json", "hello", "from", "run"],
        cwd,
        env,
        clearEnv: true,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(output.stderr);
      assert.equal(output.code, 0, stderr);
      const doc = JSON.parse(new TextDecoder().decode(output.stdout));
      assert.equal(doc.stopReason, "end_turn");
      assert.equal(doc.text, "Echo: hello from run");
      const missing = await new Deno.Command(binary, {
        args: ["run", "--resume", "nope", "hi"],
        cwd,
        env,
        clearEnv: true,
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }).output();
      assert.equal(missing.code, 2);
      assert.match(new TextDecoder().decode(missing.stderr), /--resume nope/);
    },
  );

  await t.step("scripted model: built-in tools and an MCP server's tool in one turn", async () => {
    await writeFile(join(cwd, "note.txt"), "a note\n");
    const fakeServer = join(run.path, "fake_mcp_server.mjs");
    await copyFile(FAKE_MCP_SERVER, fakeServer);
    const script = join(run.path, "tools.json");
    await writeFile(
      script,
      JSON.stringify([
        {
          toolCalls: [
            { id: "r1", name: "read_file", arguments: { path: "note.txt" } },
            { id: "c1", name: "run_command", arguments: { command: "echo hi > out.txt" } },
            { id: "m1", name: "mcp__fake__echo", arguments: { text: "from mcp" } },
          ],
        },
        { text: "done" },
      ]),
    );
    const agent = start(["--model", "scripted", "--script", script, "--mode", "auto"]);
    const { client } = agent;
    await client.initialize();
    const sessionId = await client.newSession(cwd, {
      mcpServers: [{ name: "fake", command: onPath("node"), args: [fakeServer], env: [] }],
    });
    assert.equal(await client.prompt(sessionId, "use the tools"), "end_turn");
    for (const id of ["r1", "c1", "m1"]) {
      assert.equal(toolUpdates(agent, sessionId, id).at(-1)?.status, "completed", id);
    }
    assert.match(JSON.stringify(toolUpdates(agent, sessionId, "r1")), /a note/);
    assert.match(JSON.stringify(toolUpdates(agent, sessionId, "m1")), /echo: from mcp/);
    assert.equal(await readFile(join(cwd, "out.txt"), "utf8"), "hi\n");
    agent.end();
    assert.equal(await exitWithin(agent, 5_000), 0, agent.stderr());
    assert.deepEqual(agent.impure, []);
    assert.deepEqual(client.problems, []);
  });

  await t.step("SIGTERM mid-turn answers the prompt cancelled and exits 0", async () => {
    const script = join(run.path, "hang.json");
    await writeFile(script, JSON.stringify([{ delayMs: 60_000, text: "never" }]));
    const agent = start(["--model", "scripted", "--script", script]);
    const { client } = agent;
    await client.initialize();
    const sessionId = await client.newSession(cwd);
    const prompt = client.prompt(sessionId, "hang");
    await client.waitForUpdate(sessionId, "session_info_update");
    Deno.kill(agent.child.pid as number, "SIGTERM");
    assert.equal(await prompt, "cancelled");
    assert.equal(await exitWithin(agent, 2_000), 0, agent.stderr());
  });

  await t.step("serve --http: the HTTP code is in the binary", async () => {
    const agent = start(["serve", "--http", "--port", "0"]);
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const check = (): void => {
          const match = /listening on (http:\/\/\S+)/.exec(agent.stderr());
          if (match) resolve(match[1]!);
        };
        agent.child.stderr?.on("data", check);
        void agent.exited.then(() => reject(new Error(`exited early:\n${agent.stderr()}`)));
      });
      const answer = await fetch(`${url}/acp`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 0,
          method: "initialize",
          params: { protocolVersion: 1 },
        }),
      });
      assert.equal(answer.status, 200);
      assert(answer.headers.get("acp-connection-id"));
      assert.equal((await answer.json()).result.protocolVersion, 1);
      Deno.kill(agent.child.pid as number, "SIGTERM");
      assert.equal(await exitWithin(agent, 5_000), 0, agent.stderr());
    } finally {
      agent.child.kill("SIGKILL");
      await agent.exited;
    }
  });
});
