import assert from "node:assert/strict";
import { TempDirs } from "../_helpers/temp_dir.ts";
import {
  contentText,
  fakeServer,
  lastToolUpdate,
  startMcpServer,
  toolUpdates,
} from "./_session_helpers.ts";

const call = (id: string, tool: string, args: Record<string, unknown> = {}) => ({
  toolCalls: [{ id, name: `mcp__fake__${tool}`, arguments: args }],
});

Deno.test("MCP tools get their kind from annotations: read, delete, other", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  await using running = await startMcpServer({
    config: { mode: "auto" },
    script: [
      {
        toolCalls: [
          { id: "e1", name: "mcp__fake__echo", arguments: { text: "x" } },
          { id: "d1", name: "mcp__fake__delete_everything", arguments: {} },
          { id: "w1", name: "mcp__fake__write_note", arguments: { note: "x" } },
        ],
      },
      { text: "done" },
    ],
  });
  const { server } = running;
  const sessionId = await server.client.newSession(cwd, { mcpServers: [fakeServer()] });
  assert.equal(await server.client.prompt(sessionId, "go"), "end_turn");
  const kindOf = (id: string): unknown => toolUpdates(server, sessionId, id)[0]?.kind;
  assert.equal(kindOf("e1"), "read");
  assert.equal(kindOf("d1"), "delete");
  assert.equal(kindOf("w1"), "other");
  for (const id of ["e1", "d1", "w1"]) {
    assert.equal(lastToolUpdate(server, sessionId, id).status, "completed", id);
  }
  assert.deepEqual(server.client.problems, []);
});

Deno.test("read-only mode runs read-only MCP tools and refuses the others without asking", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  await using running = await startMcpServer({
    config: { mode: "read-only" },
    script: [
      {
        toolCalls: [
          { id: "e1", name: "mcp__fake__echo", arguments: { text: "fine" } },
          { id: "w1", name: "mcp__fake__write_note", arguments: { note: "no" } },
          { id: "d1", name: "mcp__fake__delete_everything", arguments: {} },
        ],
      },
      { text: "done" },
    ],
  });
  const { server, asked } = running;
  const sessionId = await server.client.newSession(cwd, { mcpServers: [fakeServer()] });
  assert.equal(await server.client.prompt(sessionId, "try"), "end_turn");
  assert.equal(asked.length, 0);
  const echo = lastToolUpdate(server, sessionId, "e1");
  assert.equal(echo.status, "completed");
  assert.equal(contentText(echo), "echo: fine");
  for (const id of ["w1", "d1"]) {
    const updates = toolUpdates(server, sessionId, id);
    assert.deepEqual(updates.map((update) => update.status), ["pending", "failed"], id);
    assert.match(contentText(updates.at(-1)!), /read-only permission mode refused/, id);
  }
  assert.deepEqual(server.client.problems, []);
});

Deno.test("ask mode asks for a non-read-only MCP tool with the four options; allow_always is remembered", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  await using running = await startMcpServer({
    config: { mode: "ask" },
    answer: "allow_always",
    script: [
      call("e1", "echo", { text: "no question" }),
      call("w1", "write_note", { note: "one" }),
      call("w2", "write_note", { note: "two" }),
      { text: "done" },
    ],
  });
  const { server, asked } = running;
  const sessionId = await server.client.newSession(cwd, { mcpServers: [fakeServer()] });
  assert.equal(await server.client.prompt(sessionId, "write twice"), "end_turn");
  assert.equal(asked.length, 1, "only the first write_note asked");
  const question = asked[0]!;
  assert.equal(question.toolCall.toolCallId, "w1");
  assert.equal(question.toolCall.kind, "other");
  assert.deepEqual(question.options.map((option) => option.kind), [
    "allow_once",
    "allow_always",
    "reject_once",
    "reject_always",
  ]);
  for (const id of ["e1", "w1", "w2"]) {
    assert.equal(lastToolUpdate(server, sessionId, id).status, "completed", id);
  }
  assert.equal(contentText(lastToolUpdate(server, sessionId, "w2")), "noted");
  // The tool_call went out before the permission request.
  const frames = server.client.frames;
  const announced = frames.findIndex((frame) =>
    (frame.params as { update?: { toolCallId?: string } })?.update?.toolCallId === "w1"
  );
  const requested = frames.findIndex((frame) => frame.method === "session/request_permission");
  assert.ok(announced !== -1 && announced < requested);
  assert.deepEqual(server.client.problems, []);
});

Deno.test("ask mode: reject_always on an MCP tool is remembered", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  await using running = await startMcpServer({
    config: { mode: "ask" },
    answer: "reject_always",
    script: [
      call("w1", "write_note", { note: "one" }),
      call("w2", "write_note", { note: "two" }),
      call("e1", "echo", { text: "still fine" }),
      { text: "done" },
    ],
  });
  const { server, asked } = running;
  const sessionId = await server.client.newSession(cwd, { mcpServers: [fakeServer()] });
  assert.equal(await server.client.prompt(sessionId, "write twice"), "end_turn");
  assert.equal(asked.length, 1);
  for (const id of ["w1", "w2"]) {
    assert.deepEqual(
      toolUpdates(server, sessionId, id).map((update) => update.status),
      ["pending", "failed"],
      id,
    );
  }
  assert.equal(lastToolUpdate(server, sessionId, "e1").status, "completed");
  assert.deepEqual(server.client.problems, []);
});
