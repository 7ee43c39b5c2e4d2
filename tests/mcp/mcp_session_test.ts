import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { startFakeLlmServer } from "../_helpers/fake_llm_server.ts";
import { openAiTurn } from "../_helpers/llm_fixtures.ts";
import { startServer } from "../_helpers/server.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";
import {
  contentText,
  fakeServer,
  lastToolUpdate,
  recordsOf,
  startMcpServer,
  toolUpdates,
  type Update,
  updatesOf,
} from "./_session_helpers.ts";

const PNG_1X1 =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

Deno.test("MCP tools join as mcp__fake__<tool>: text, structured, rich and failed results", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const dataDir = await dirs.make();
  await using running = await startMcpServer({
    dataDir,
    config: { mode: "ask" },
    script: [
      {
        toolCalls: [
          { id: "e1", name: "mcp__fake__echo", arguments: { text: "hi there" } },
          { id: "a1", name: "mcp__fake__add", arguments: { a: 2, b: 3 } },
          { id: "i1", name: "mcp__fake__image", arguments: {} },
          { id: "f1", name: "mcp__fake__fail", arguments: {} },
        ],
      },
      { text: "done" },
    ],
  });
  const { server, asked } = running;
  const sessionId = await server.client.newSession(cwd, { mcpServers: [fakeServer()] });
  assert.equal(await server.client.prompt(sessionId, "use the tools"), "end_turn");
  assert.equal(asked.length, 0, "read-only MCP tools are not asked about");

  const echo = toolUpdates(server, sessionId, "e1");
  assert.deepEqual(echo.map((update) => update.status), ["pending", "in_progress", "completed"]);
  assert.equal(echo[0]?.sessionUpdate, "tool_call");
  assert.equal(echo[0]?.title, "echo (MCP fake)");
  assert.deepEqual(echo[0]?.rawInput, { text: "hi there" });
  assert.equal(contentText(echo[2]!), "echo: hi there");

  const add = lastToolUpdate(server, sessionId, "a1");
  assert.equal(add.status, "completed");
  assert.deepEqual(add.rawOutput, { sum: 5 });
  assert.equal(contentText(add), "5");

  const image = lastToolUpdate(server, sessionId, "i1");
  assert.equal(image.status, "completed");
  assert.deepEqual(image.content, [
    { type: "content", content: { type: "image", mimeType: "image/png", data: PNG_1X1 } },
    {
      type: "content",
      content: {
        type: "resource_link",
        uri: "file:///note.txt",
        name: "note.txt",
        mimeType: "text/plain",
      },
    },
    {
      type: "content",
      content: {
        type: "resource",
        resource: { uri: "file:///note.txt", mimeType: "text/plain", text: "embedded text" },
      },
    },
  ]);

  const fail = lastToolUpdate(server, sessionId, "f1");
  assert.equal(fail.status, "failed");
  assert.equal(contentText(fail), "it failed on purpose");

  // What the model gets back is what the log records (a restored history is rebuilt from it):
  // the structured result as JSON, since no text block of `add` carries it.
  await running.disconnect();
  const results = (await recordsOf(dataDir, sessionId)).filter((record) =>
    record.type === "tool_result"
  );
  const resultOf = (id: string): Update | undefined =>
    results.find((record) => record.toolCallId === id);
  assert.equal(resultOf("e1")?.content, "echo: hi there");
  assert.match(String(resultOf("a1")?.content), /\{"sum":5\}/);
  assert.deepEqual(resultOf("a1")?.rawOutput, { sum: 5 });
  assert.match(String(resultOf("i1")?.content), /embedded text/);
  assert.equal(resultOf("f1")?.isError, true);
  assert.deepEqual(server.client.problems, []);
});

Deno.test("the model's next request carries an MCP tool's structured result as JSON", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  await using llm = await startFakeLlmServer();
  const cwd = await dirs.make();
  await using running = await startMcpServer({
    config: {
      model: "fake/coder",
      mode: "auto",
      providers: { fake: { api: "openai-chat", baseUrl: `${llm.url}/v1` } },
      models: { "fake/coder": { contextWindow: 100_000 } },
    },
  });
  const { server } = running;
  llm.enqueue(
    openAiTurn({ toolCalls: [{ id: "a1", name: "mcp__fake__add", arguments: { a: 4, b: 5 } }] }),
    openAiTurn({ text: ["nine"] }),
  );
  const sessionId = await server.client.newSession(cwd, { mcpServers: [fakeServer()] });
  assert.equal(await server.client.prompt(sessionId, "add"), "end_turn");
  assert.equal(llm.requests.length, 2);
  const first = llm.requests[0]?.body as { tools: Array<{ function: { name: string } }> };
  const offered = first.tools.map((tool) => tool.function.name);
  for (const name of ["mcp__fake__echo", "mcp__fake__add", "mcp__fake__slow"]) {
    assert.ok(offered.includes(name), `${name} is offered to the model`);
  }
  const second = llm.requests[1]?.body as { messages: Array<Record<string, unknown>> };
  const toolMessage = second.messages.find((message) => message.role === "tool");
  assert.equal(toolMessage?.tool_call_id, "a1");
  assert.match(JSON.stringify(toolMessage?.content), /9/);
  assert.match(JSON.stringify(toolMessage?.content), /\{\\"sum\\":9\}/);
  assert.deepEqual(server.client.problems, []);
});

Deno.test("a declared variable reaches the MCP server; host secrets do not; its cwd is the session's", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  await using running = await startMcpServer({
    config: { mode: "auto" },
    env: { ...{ PATH: process.env.PATH ?? "" }, SECRET_API_KEY: "sk-host-only-value" },
    script: [
      {
        toolCalls: [
          { id: "d1", name: "mcp__fake__env", arguments: { name: "DECLARED_VAR" } },
          { id: "s1", name: "mcp__fake__env", arguments: { name: "SECRET_API_KEY" } },
          { id: "p1", name: "mcp__fake__env", arguments: { name: "PATH" } },
          { id: "c1", name: "mcp__fake__cwd", arguments: {} },
        ],
      },
      { text: "done" },
    ],
  });
  const { server } = running;
  const sessionId = await server.client.newSession(cwd, {
    mcpServers: [fakeServer("fake", [], { DECLARED_VAR: "declared-value" })],
  });
  assert.equal(await server.client.prompt(sessionId, "look around"), "end_turn");
  const text = (id: string): string => contentText(lastToolUpdate(server, sessionId, id));
  assert.equal(text("d1"), "declared-value");
  assert.equal(text("s1"), "(unset)");
  assert.equal(text("p1"), process.env.PATH, "allow-listed host variables are inherited");
  assert.equal(text("c1"), cwd);
  assert.deepEqual(server.client.problems, []);
});

Deno.test("list_changed: a tool the server adds is callable in the next step", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  await using running = await startMcpServer({
    config: { mode: "auto" },
    script: [
      { toolCalls: [{ id: "t1", name: "mcp__fake__add_tool", arguments: { name: "fresh" } }] },
      { toolCalls: [{ id: "t2", name: "mcp__fake__fresh", arguments: { text: "new" } }] },
      { text: "done" },
    ],
  });
  const { server } = running;
  const sessionId = await server.client.newSession(cwd, { mcpServers: [fakeServer()] });
  assert.equal(await server.client.prompt(sessionId, "grow"), "end_turn");
  assert.equal(lastToolUpdate(server, sessionId, "t1").status, "completed");
  const fresh = toolUpdates(server, sessionId, "t2");
  assert.equal(fresh[0]?.kind, "read");
  assert.equal(fresh.at(-1)?.status, "completed");
  assert.equal(contentText(fresh.at(-1)!), "fresh: new");
  assert.deepEqual(server.client.problems, []);
});

Deno.test("session/cancel during an MCP call cancels the turn and tells the server", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const events = join(await dirs.make(), "events.log");
  await writeFile(events, "");
  await using running = await startMcpServer({
    config: { mode: "auto" },
    script: [
      { toolCalls: [{ id: "s1", name: "mcp__fake__slow", arguments: {} }] },
      { text: "never" },
    ],
  });
  const { server } = running;
  const sessionId = await server.client.newSession(cwd, {
    mcpServers: [fakeServer("fake", [], { FAKE_MCP_EVENTS: events })],
  });
  const prompt = server.client.prompt(sessionId, "wait");
  await server.client.waitFor(() =>
    toolUpdates(server, sessionId, "s1").some((update) => update.status === "in_progress")
  );
  await server.client.notify("session/cancel", { sessionId });
  assert.equal(await prompt, "cancelled");
  // The fake server appends to this file from its own process: no event reaches this one.
  await pollUntil(async () => /^cancelled \S+$/m.test(await readFile(events, "utf8")), {
    what: "the fake server to record the cancelled call",
  });
  const last = lastToolUpdate(server, sessionId, "s1");
  assert.notEqual(last.status, "completed");
  assert.ok(
    !updatesOf(server, sessionId).some((update) => update.sessionUpdate === "agent_message_chunk"),
    "the turn did not go on",
  );
  assert.deepEqual(server.client.problems, []);
});

Deno.test("an MCP call past mcpCallTimeout fails naming the timeout and the turn goes on", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  await using running = await startMcpServer({
    config: { mode: "auto", mcpCallTimeout: 1 },
    script: [
      { toolCalls: [{ id: "s1", name: "mcp__fake__slow", arguments: {} }] },
      { text: "moving on" },
    ],
  });
  const { server } = running;
  const sessionId = await server.client.newSession(cwd, { mcpServers: [fakeServer()] });
  assert.equal(await server.client.prompt(sessionId, "wait"), "end_turn");
  const last = lastToolUpdate(server, sessionId, "s1");
  assert.equal(last.status, "failed");
  assert.match(contentText(last), /did not answer tools\/call slow within 1 s/);
  const said = updatesOf(server, sessionId).filter((update) =>
    update.sessionUpdate === "agent_message_chunk"
  );
  assert.deepEqual(said.map((update) => (update.content as { text: string }).text), [
    "moving on",
  ]);
  assert.deepEqual(server.client.problems, []);
});

Deno.test("a session without MCP servers offers no MCP tools", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const server = startServer({
    config: { model: "scripted", mode: "auto" },
    script: [
      { toolCalls: [{ id: "e1", name: "mcp__fake__echo", arguments: { text: "x" } }] },
      { text: "ok" },
    ],
  });
  await server.client.initialize();
  const sessionId = await server.client.newSession(cwd);
  assert.equal(await server.client.prompt(sessionId, "try"), "end_turn");
  assert.equal(lastToolUpdate(server, sessionId, "e1").status, "failed");
  await server.disconnect();
});
