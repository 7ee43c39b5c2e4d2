import assert from "node:assert/strict";
import { TempDirs } from "../_helpers/temp_dir.ts";
import {
  commandsUpdateIndex,
  contentText,
  fakeServer,
  lastToolUpdate,
  type McpStartOptions,
  responseIndex,
  startMcpServer,
} from "./_session_helpers.ts";

const echo = (id: string, text: string) => ({
  toolCalls: [{ id, name: "mcp__fake__echo", arguments: { text } }],
});

Deno.test("session/load and session/resume connect the MCP servers given in that request", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const dataDir = await dirs.make();
  const options: McpStartOptions = {
    dataDir,
    config: { mode: "auto" },
    // The scripted model goes on from the number of assistant messages already recorded.
    script: [echo("l1", "after load"), { text: "loaded" }, echo("r1", "after resume"), {
      text: "resumed",
    }],
  };

  // Created without servers.
  const first = await startMcpServer(options);
  const sessionId = await first.server.client.newSession(cwd);
  await first.server.client.request("session/close", { sessionId });
  const offered = first.server.client.updates(sessionId).flatMap(({ update }) =>
    update.sessionUpdate === "available_commands_update"
      ? (update.availableCommands as { name: string }[]).map((command) => command.name)
      : []
  );
  assert.deepEqual(offered, ["compact", "model", "mode", "clear"], "only the built-in commands");
  await first.disconnect();

  // Loaded with the fake server, on a new server process.
  {
    await using second = await startMcpServer(options);
    const { server } = second;
    const requestId = server.client.nextId;
    await server.client.request("session/load", { sessionId, cwd, mcpServers: [fakeServer()] });
    await server.client.waitForUpdate(sessionId, "available_commands_update");
    const answered = responseIndex(server, requestId);
    assert.ok(answered !== -1 && answered < commandsUpdateIndex(server, sessionId));
    assert.equal(await server.client.prompt(sessionId, "echo"), "end_turn");
    const last = lastToolUpdate(server, sessionId, "l1");
    assert.equal(last.status, "completed");
    assert.equal(contentText(last), "echo: after load");
    assert.deepEqual(server.client.problems, []);
  }

  // Resumed with the fake server, on another.
  {
    await using third = await startMcpServer(options);
    const { server } = third;
    const requestId = server.client.nextId;
    await server.client.request("session/resume", {
      sessionId,
      cwd,
      mcpServers: [fakeServer()],
    });
    await server.client.waitForUpdate(sessionId, "available_commands_update");
    const answered = responseIndex(server, requestId);
    assert.ok(answered !== -1 && answered < commandsUpdateIndex(server, sessionId));
    assert.equal(await server.client.prompt(sessionId, "echo again"), "end_turn");
    const last = lastToolUpdate(server, sessionId, "r1");
    assert.equal(last.status, "completed");
    assert.equal(contentText(last), "echo: after resume");
    assert.deepEqual(server.client.problems, []);
  }
});

Deno.test("session/load without servers leaves out the servers the session had before", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const dataDir = await dirs.make();
  const options: McpStartOptions = {
    dataDir,
    config: { mode: "auto" },
    script: [echo("e1", "with"), { text: "ok" }, echo("e2", "without"), { text: "ok" }],
  };
  const first = await startMcpServer(options);
  const sessionId = await first.server.client.newSession(cwd, { mcpServers: [fakeServer()] });
  assert.equal(await first.server.client.prompt(sessionId, "echo"), "end_turn");
  assert.equal(lastToolUpdate(first.server, sessionId, "e1").status, "completed");
  await first.disconnect();

  await using second = await startMcpServer(options);
  await second.server.client.request("session/load", { sessionId, cwd, mcpServers: [] });
  assert.equal(await second.server.client.prompt(sessionId, "echo"), "end_turn");
  assert.equal(lastToolUpdate(second.server, sessionId, "e2").status, "failed");
  assert.deepEqual(second.server.client.problems, []);
});
