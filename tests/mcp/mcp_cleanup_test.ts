import assert from "node:assert/strict";
import { processesWithMarker } from "../_helpers/mcp_servers.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";
import {
  contentText,
  fakeServer,
  hostPath,
  lastToolUpdate,
  type McpTestServer,
  startMcpServer,
} from "./_session_helpers.ts";

/**
 * Opens a session whose fake server starts a grandchild (`sh -c 'sleep 1000'`) carrying `marker`;
 * returns the session id once the grandchild is known to run.
 */
async function sessionWithGrandchild(
  running: McpTestServer,
  cwd: string,
  marker: string,
): Promise<string> {
  const { server } = running;
  const sessionId = await server.client.newSession(cwd, {
    mcpServers: [fakeServer("fake", ["--spawn-grandchild", `--marker=${marker}`])],
  });
  assert.equal(await server.client.prompt(sessionId, "which pid?"), "end_turn");
  const pid = Number(contentText(lastToolUpdate(server, sessionId, "g1")));
  assert.ok(Number.isInteger(pid) && pid > 0);
  // The server and its grandchild are not this process's children: /proc is all there is.
  await pollUntil(async () => (await processesWithMarker(marker)).includes(pid), {
    what: "the grandchild to show up in /proc with the marker",
  });
  assert.ok((await processesWithMarker(marker)).length >= 2, "the server and its grandchild run");
  return sessionId;
}

/** A scripted server whose model asks for the grandchild's pid. */
function startWithGrandchild(marker: string): Promise<McpTestServer> {
  return startMcpServer({
    config: { mode: "auto" },
    env: hostPath(), // The grandchild's `sleep` is found on PATH.
    markers: [marker],
    script: [
      { toolCalls: [{ id: "g1", name: "mcp__fake__grandchild_pid", arguments: {} }] },
      { text: "got it" },
    ],
  });
}

/** Waits until no process carries `marker` (they are not our children: /proc is polled). */
async function allGone(marker: string, after: string): Promise<void> {
  await pollUntil(async () => (await processesWithMarker(marker)).length === 0, {
    what: `every process with the marker to end after ${after}`,
  });
}

Deno.test("session/close stops the MCP server and its grandchild", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const marker = crypto.randomUUID();
  await using running = await startWithGrandchild(marker);
  const sessionId = await sessionWithGrandchild(running, cwd, marker);
  await running.server.client.request("session/close", { sessionId });
  await allGone(marker, "session/close");
  assert.deepEqual(running.server.client.problems, []);
});

Deno.test("session/delete stops the MCP server and its grandchild", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const marker = crypto.randomUUID();
  await using running = await startWithGrandchild(marker);
  const sessionId = await sessionWithGrandchild(running, cwd, marker);
  await running.server.client.request("session/delete", { sessionId });
  await allGone(marker, "session/delete");
  const page = await running.server.client.request<{ sessions: unknown[] }>("session/list", {});
  assert.deepEqual(page.sessions, []);
  assert.deepEqual(running.server.client.problems, []);
});

Deno.test("a client disconnect stops the MCP server and its grandchild", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const marker = crypto.randomUUID();
  await using running = await startWithGrandchild(marker);
  await sessionWithGrandchild(running, cwd, marker);
  await running.disconnect();
  await allGone(marker, "the client disconnected");
  assert.deepEqual(running.server.client.problems, []);
});
