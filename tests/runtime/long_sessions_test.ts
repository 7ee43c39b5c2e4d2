/**
 * Long sessions end to end, on every runtime: a real server process talking to a fake
 * OpenAI-compatible provider on loopback compacts its conversation when the provider's count
 * nears the window, shows it to a client that takes compaction updates, replays it on load in a
 * new process that continues from the compacted history, and recovers from the provider's
 * "context too long" error with one compaction and one retry; and the built-in slash commands over
 * stdio.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import {
  type CapturedRequest,
  type FakeLlmServer,
  jsonResponse,
  startFakeLlmServer,
} from "../_helpers/fake_llm_server.ts";
import { openAiTurn } from "../_helpers/llm_fixtures.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const SUMMARY = "The user gave three tasks; the first two are done.";

interface Setup {
  readonly cwd: string;
  readonly home: string;
  readonly configFile: string;
}

async function setup(dir: string, server: FakeLlmServer): Promise<Setup> {
  const cwd = join(dir, "ws");
  await mkdir(cwd);
  const configFile = join(dir, "config.json");
  await writeFile(
    configFile,
    JSON.stringify({
      providers: {
        fake: { api: "openai-chat", baseUrl: `${server.url}/v1`, apiKeyEnv: "FAKE_API_KEY" },
      },
      models: { "fake/coder": { contextWindow: 8_000 } },
    }),
  );
  return { cwd, home: join(dir, "home"), configFile };
}

function spawn(runtime: Runtime, setup: Setup): StdioAgent {
  return spawnAgent(runtime.command, [
    ...runtime.args,
    "--config",
    setup.configFile,
    "--model",
    "fake/coder",
  ], {
    cwd: setup.cwd,
    env: { ...Deno.env.toObject(), FAKE_API_KEY: "sk-test", ACP_HARNESS_HOME: setup.home },
  });
}

type ChatMessage = { role: string; content?: unknown };

function messagesOf(request: CapturedRequest | undefined): ChatMessage[] {
  return (request?.body as { messages: ChatMessage[] }).messages;
}

function isSummaryRequest(request: CapturedRequest | undefined): boolean {
  const body = request?.body as { tools?: unknown[]; messages: ChatMessage[] };
  return body.tools === undefined && String(body.messages[0]?.content).startsWith("You compact");
}

/** The text of a chat message (a string or text parts). */
function textOf(message: ChatMessage | undefined): string {
  const content = message?.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => part.text ?? "").join("");
  return "";
}

async function stop(agent: StdioAgent): Promise<void> {
  agent.end();
  await agent.exited;
}

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: a long session compacts, is shown, replays and continues after a restart`, async () => {
    await using dir = await tempDir("acp-harness-compaction-");
    await using server = await startFakeLlmServer();
    const paths = await setup(dir.path, server);
    const first = spawn(runtime, paths);
    try {
      await first.client.initialize({ session: { compaction: {} } });
      const sessionId = await first.client.newSession(paths.cwd);
      // The provider's counts: the second answer leaves the context at 6,510 of 8,000 tokens,
      // past the 80 % threshold for the third request.
      server.enqueue(
        openAiTurn({ text: ["one done"], usage: { prompt: 2_000, completion: 10 } }),
        openAiTurn({ text: ["two done"], usage: { prompt: 6_500, completion: 10 } }),
        openAiTurn({ text: [SUMMARY.slice(0, 20), SUMMARY.slice(20)] }),
        openAiTurn({ text: ["three done"], usage: { prompt: 1_500, completion: 10 } }),
      );
      assert.equal(await first.client.prompt(sessionId, "first task"), "end_turn");
      assert.equal(await first.client.prompt(sessionId, "second task"), "end_turn");
      assert.equal(await first.client.prompt(sessionId, "third task"), "end_turn");
      assert.equal(server.requests.length, 4);
      assert.ok(isSummaryRequest(server.requests[2]), "the third request writes the summary");
      assert.match(textOf(messagesOf(server.requests[2]).at(-1)), /## User\nfirst task/);
      const after = messagesOf(server.requests[3]);
      assert.match(
        textOf(after[1]),
        new RegExp(`^\\[Summary of the earlier conversation[^]*${SUMMARY}`),
      );
      assert.equal(textOf(after.at(-1)), "third task");
      assert.ok(!after.some((message) => textOf(message) === "first task"));

      const shown = first.client.updates(sessionId).map(({ update }) => update)
        .filter((update) => String(update.sessionUpdate).startsWith("compaction"));
      // In progress, the summary as it streams (however the deltas were cut), then completed.
      assert.equal(shown[0]?.sessionUpdate, "compaction_update");
      assert.equal(shown[0]?.status, "in_progress");
      const chunks = shown.slice(1, -1);
      assert.ok(chunks.length > 0);
      assert.ok(chunks.every((update) => update.sessionUpdate === "compaction_summary_chunk"));
      assert.equal(
        chunks.map((update) => (update.content as { text: string }).text).join(""),
        SUMMARY,
      );
      assert.equal(shown.at(-1)?.status, "completed");
      assert.deepEqual(shown.at(-1)?.summary, [{ type: "text", text: SUMMARY }]);
      assert.deepEqual(first.client.problems, []);
      await stop(first);

      // A new process: the load replays the compaction, and the next request continues from the
      // compacted history.
      const second = spawn(runtime, paths);
      try {
        await second.client.initialize({ session: { compaction: {} } });
        await second.client.request("session/load", {
          sessionId,
          cwd: paths.cwd,
          mcpServers: [],
        });
        const replayed = second.client.updates(sessionId).map(({ update }) => update);
        const compaction = replayed.find((update) => update.sessionUpdate === "compaction_update");
        assert.equal(compaction?.status, "completed");
        assert.deepEqual(compaction?.summary, [{ type: "text", text: SUMMARY }]);
        server.enqueue(openAiTurn({ text: ["four done"] }));
        assert.equal(await second.client.prompt(sessionId, "fourth task"), "end_turn");
        const continued = messagesOf(server.requests[4]);
        assert.match(textOf(continued[1]), /^\[Summary of the earlier conversation/);
        assert.deepEqual(
          continued.slice(2).map((message) => textOf(message)),
          ["one done", "second task", "two done", "third task", "three done", "fourth task"],
        );
        assert.deepEqual(second.client.problems, []);
      } finally {
        await stop(second);
      }
    } finally {
      if (first.child.exitCode === null) await stop(first);
    }
  });
}

Deno.test("a context-too-long error compacts once and the turn goes on; a client without compaction is told in a message", async () => {
  const node = RUNTIMES.find((runtime) => runtime.name === "node")!;
  await using dir = await tempDir("acp-harness-compaction-");
  await using server = await startFakeLlmServer();
  const paths = await setup(dir.path, server);
  const agent = spawn(node, paths);
  try {
    await agent.client.initialize();
    const sessionId = await agent.client.newSession(paths.cwd);
    server.enqueue(
      openAiTurn({ text: ["one done"] }),
      openAiTurn({ text: ["two done"] }),
      jsonResponse(400, {
        error: { message: "This model's maximum context length is 8000 tokens." },
      }),
      openAiTurn({ text: [SUMMARY] }),
      openAiTurn({ text: ["three done"] }),
    );
    await agent.client.prompt(sessionId, "first task");
    await agent.client.prompt(sessionId, "second task");
    assert.equal(await agent.client.prompt(sessionId, "third task"), "end_turn");
    assert.equal(server.requests.length, 5);
    assert.ok(isSummaryRequest(server.requests[3]));
    assert.match(textOf(messagesOf(server.requests[4])[1]), /^\[Summary of the earlier/);
    const messages = agent.client.updates(sessionId).map(({ update }) => update)
      .filter((update) => update.sessionUpdate === "agent_message_chunk")
      .map((update) => (update.content as { text: string }).text);
    assert.ok(
      messages.some((text) => text.startsWith("Context compacted (the model's context was full)")),
      messages.join(" | "),
    );
    assert.ok(
      !agent.client.updates(sessionId).some(({ update }) =>
        String(update.sessionUpdate).startsWith("compaction") || update.sessionUpdate === "notice"
      ),
      "nothing the client did not advertise",
    );
    assert.deepEqual(agent.client.problems, []);
  } finally {
    await stop(agent);
  }
});

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: the built-in slash commands over stdio`, async () => {
    await using dir = await tempDir("acp-harness-commands-");
    await using server = await startFakeLlmServer();
    const paths = await setup(dir.path, server);
    const agent = spawn(runtime, paths);
    try {
      await agent.client.initialize();
      const sessionId = await agent.client.newSession(paths.cwd);
      await agent.client.waitForUpdate(sessionId, "available_commands_update");
      const offered = agent.client.updates(sessionId).find(({ update }) =>
        update.sessionUpdate === "available_commands_update"
      )?.update.availableCommands as { name: string }[];
      // The CLI has a data directory: the checkpoint commands are offered too.
      assert.deepEqual(offered.map((command) => command.name), [
        "compact",
        "model",
        "mode",
        "clear",
        "checkpoints",
        "undo",
        "restore",
      ]);
      assert.equal(await agent.client.prompt(sessionId, "/mode read-only"), "end_turn");
      assert.ok(
        agent.client.updates(sessionId).some(({ update }) =>
          update.sessionUpdate === "current_mode_update" && update.currentModeId === "read-only"
        ),
      );
      await assert.rejects(
        agent.client.prompt(sessionId, "/model nope/none"),
        (error: { code?: number; message?: string }) =>
          error.code === -32602 && /nope\/none/.test(String(error.message)),
      );
      server.enqueue(openAiTurn({ text: ["noted"] }), openAiTurn({ text: ["fresh"] }));
      assert.equal(await agent.client.prompt(sessionId, "/remember the number 7"), "end_turn");
      assert.equal(await agent.client.prompt(sessionId, "/clear"), "end_turn");
      assert.equal(await agent.client.prompt(sessionId, "what number?"), "end_turn");
      // No command reached the model; the unknown /word did, and /clear left nothing before.
      assert.equal(server.requests.length, 2);
      assert.equal(textOf(messagesOf(server.requests[0]).at(-1)), "/remember the number 7");
      assert.deepEqual(
        messagesOf(server.requests[1]).slice(1).map((message) => textOf(message)),
        ["what number?"],
      );
      assert.deepEqual(agent.client.problems, []);
    } finally {
      await stop(agent);
    }
  });
}
