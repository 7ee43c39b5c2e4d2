import assert from "node:assert/strict";
import { RpcError } from "../_helpers/acp_client.ts";
import { startFakeLlmServer } from "../_helpers/fake_llm_server.ts";
import { openAiTurn } from "../_helpers/llm_fixtures.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";
import {
  commandsUpdateIndex,
  fakeServer,
  type McpStartOptions,
  responseIndex,
  startMcpServer,
  type Update,
  updatesOf,
} from "./_session_helpers.ts";

/** A server whose model is the fake OpenAI-compatible one at `url`. */
function withFakeModel(url: string, dataDir: string): McpStartOptions {
  return {
    dataDir,
    config: {
      model: "fake/coder",
      mode: "auto",
      providers: { fake: { api: "openai-chat", baseUrl: `${url}/v1` } },
      models: { "fake/coder": { contextWindow: 100_000 } },
    },
  };
}

/** The text of the last user message of a chat completions request body. */
function lastUserText(body: unknown): string {
  const messages = (body as { messages: Array<{ role: string; content: unknown }> }).messages;
  const user = messages.filter((message) => message.role === "user").at(-1);
  if (typeof user?.content === "string") return user.content;
  return (user?.content as Array<{ type: string; text?: string }>)
    .map((part) => part.text ?? "").join("\n");
}

Deno.test("MCP prompts are offered as commands right after the session/new answer", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  await using running = await startMcpServer();
  const { server } = running;
  const requestId = server.client.nextId;
  const sessionId = await server.client.newSession(cwd, { mcpServers: [fakeServer()] });
  await server.client.waitForUpdate(sessionId, "available_commands_update");
  const answered = responseIndex(server, requestId);
  const announced = commandsUpdateIndex(server, sessionId);
  assert.ok(answered !== -1 && answered < announced, "the update follows the answer");
  const update = updatesOf(server, sessionId).find((update) =>
    update.sessionUpdate === "available_commands_update"
  );
  // The built-in commands come first.
  const builtins = ["compact", "model", "mode", "clear"];
  assert.deepEqual(
    (update?.availableCommands as { name: string }[]).slice(0, 4).map((command) => command.name),
    builtins,
  );
  assert.deepEqual((update?.availableCommands as unknown[]).slice(4), [
    { name: "mcp__fake__greet", description: "Greets someone", input: { hint: "<name>" } },
    { name: "mcp__fake__review", description: "A two-message review conversation" },
  ]);
  assert.deepEqual(server.client.problems, []);
});

Deno.test("a prompt command becomes the user turn the model gets, and the one replayed", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  await using llm = await startFakeLlmServer();
  const cwd = await dirs.make();
  const dataDir = await dirs.make();
  const options = withFakeModel(llm.url, dataDir);
  const first = await startMcpServer(options);
  const sessionId = await first.server.client.newSession(cwd, { mcpServers: [fakeServer()] });
  llm.enqueue(
    openAiTurn({ text: ["Hello, Ada!"] }),
    openAiTurn({ text: ["Show me."] }),
    openAiTurn({ text: ["Looking at the tests."] }),
    openAiTurn({ text: ["That is not a command."] }),
  );
  assert.equal(await first.server.client.prompt(sessionId, "/mcp__fake__greet Ada"), "end_turn");
  assert.equal(lastUserText(llm.requests[0]?.body), "Say hello to Ada");
  assert.equal(await first.server.client.prompt(sessionId, "/mcp__fake__review"), "end_turn");
  assert.equal(
    lastUserText(llm.requests[1]?.body),
    "user: Please review my change.\n\nassistant: Sure: show me the diff.",
  );
  // A prompt without arguments: the words after the command follow its messages.
  assert.equal(
    await first.server.client.prompt(sessionId, "/mcp__fake__review focus on the tests"),
    "end_turn",
  );
  assert.equal(
    lastUserText(llm.requests[2]?.body),
    "user: Please review my change.\n\nassistant: Sure: show me the diff.\n\nfocus on the tests",
  );
  assert.equal(await first.server.client.prompt(sessionId, "/unknown thing"), "end_turn");
  assert.equal(lastUserText(llm.requests[3]?.body), "/unknown thing");
  assert.deepEqual(first.server.client.problems, []);
  await first.disconnect();

  // A new server on the same data: session/load replays the user turns as recorded.
  await using second = await startMcpServer(options);
  await second.server.client.request("session/load", { sessionId, cwd, mcpServers: [] });
  const said = updatesOf(second.server, sessionId)
    .filter((update) => update.sessionUpdate === "user_message_chunk")
    .map((update) => (update.content as { text: string }).text);
  assert.ok(said.includes("Say hello to Ada"), JSON.stringify(said));
  assert.ok(said.includes("/unknown thing"), JSON.stringify(said));
  assert.ok(!said.some((text) => text.startsWith("/mcp__fake__greet")), JSON.stringify(said));
  assert.deepEqual(second.server.client.problems, []);
});

Deno.test("a prompt command without its required argument is refused with -32602 naming it", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  await using running = await startMcpServer({ script: [{ text: "never" }] });
  const { server } = running;
  const sessionId = await server.client.newSession(cwd, { mcpServers: [fakeServer()] });
  await assert.rejects(
    server.client.prompt(sessionId, "/mcp__fake__greet"),
    (error: unknown) => {
      assert.ok(error instanceof RpcError, String(error));
      assert.equal(error.code, -32602);
      assert.match(error.message, /\bname\b/);
      return true;
    },
  );
  // Nothing ran: no turn, no model step.
  const kinds = updatesOf(server, sessionId).map((update: Update) => update.sessionUpdate);
  assert.ok(!kinds.includes("agent_message_chunk"), JSON.stringify(kinds));
  // The refused prompt leaves the session usable.
  assert.equal(await server.client.prompt(sessionId, "/unknown thing"), "end_turn");
  assert.deepEqual(server.client.problems, []);
});
