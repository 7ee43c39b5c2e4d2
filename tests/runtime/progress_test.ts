/**
 * Long work shows progress, on real servers on Deno, Node.js and Bun: a scripted `run_command`
 * that waits for the test, which goes on only once the client was shown the command's first line;
 * a model request that is retried, told as a `notice` to a client that takes notices.
 *
 * @module
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { exitWithin, spawnAgent } from "../_helpers/acp_client.ts";
import { RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: run_command streams its output into the tool call as it comes`, async () => {
    await using dir = await tempDir("acp-harness-progress-");
    const script = join(dir.path, "script.json");
    await writeFile(
      script,
      JSON.stringify([
        {
          toolCalls: [{
            id: "run1",
            name: "run_command",
            arguments: {
              command: "echo first; while [ ! -e go ]; do sleep 0.02; done; echo second",
              timeout_ms: 60_000,
            },
          }],
        },
        { text: "done" },
      ]),
    );
    const agent = spawnAgent(runtime.command, [
      ...runtime.args,
      ...["--model", "scripted", "--script", script, "--mode", "auto"],
    ], { cwd: dir.path, env: { ...Deno.env.toObject(), ACP_HARNESS_HOME: join(dir.path, "h") } });
    try {
      await agent.client.initialize();
      const sessionId = await agent.client.newSession(dir.path);
      const prompt = agent.client.prompt(sessionId, "run it");
      const texts = (): string[] =>
        agent.client.updates(sessionId).flatMap(({ update }) =>
          update.sessionUpdate === "tool_call_update" && update.status === "in_progress"
            ? ((update.content ?? []) as Array<{ content?: { text?: string } }>).map((part) =>
              part.content?.text ?? ""
            )
            : []
        );
      await pollUntil(() => texts().some((text) => text === "Running…\nfirst"), {
        what: "the command's first line in its tool call",
        timeoutMs: 30_000,
      });
      await writeFile(join(dir.path, "go"), "");
      assert.equal(await prompt, "end_turn");
      const last = agent.client.updates(sessionId).findLast(({ update }) =>
        update.sessionUpdate === "tool_call_update"
      );
      assert.equal(last?.update.status, "completed");
      assert.match(JSON.stringify(last?.update.content), /first\\nsecond/);
      assert.deepEqual(agent.client.problems, []);
      agent.end();
      assert.equal(await exitWithin(agent, 10_000), 0);
    } finally {
      agent.child.kill("SIGKILL");
    }
  });
}

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: a retried model request is told as a notice to a client that takes them`, async () => {
    await using dir = await tempDir("acp-harness-retry-notice-");
    const script = join(dir.path, "script.json");
    await writeFile(
      script,
      JSON.stringify([
        { error: { message: "upstream overloaded", kind: "server", status: 529, retryable: true } },
        { text: "recovered" },
      ]),
    );
    const agent = spawnAgent(runtime.command, [
      ...runtime.args,
      ...["--model", "scripted", "--script", script, "--log-level", "warn"],
    ], { cwd: dir.path, env: { ...Deno.env.toObject(), ACP_HARNESS_HOME: join(dir.path, "h") } });
    try {
      await agent.client.initialize({ session: { notices: {} } });
      const sessionId = await agent.client.newSession(dir.path);
      assert.equal(await agent.client.prompt(sessionId, "go"), "end_turn");
      const notices = agent.client.updates(sessionId).filter(({ update }) =>
        update.sessionUpdate === "notice"
      );
      assert.equal(notices.length, 1, JSON.stringify(notices));
      assert.match(
        String(notices[0]?.update.title),
        /^Model request failed; retrying in \d+\.\d s$/,
      );
      assert.match(String(notices[0]?.update.description), /attempt 1: .*upstream overloaded/);
      assert.match(agent.stderr(), /model request failed .*"retryInMs"/);
      assert.deepEqual(agent.client.problems, []);
      agent.end();
      assert.equal(await exitWithin(agent, 10_000), 0);
    } finally {
      agent.child.kill("SIGKILL");
    }
  });
}
