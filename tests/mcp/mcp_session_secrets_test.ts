import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { RpcError } from "../_helpers/acp_client.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";
import { contentText, fakeServer, lastToolUpdate, startMcpServer } from "./_session_helpers.ts";

/** Every file under `dir`, recursively. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile()).map((entry) =>
    join(entry.parentPath, entry.name)
  );
}

Deno.test("a declared MCP env secret reaches no log line and no file of the data directory", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const dataDir = await dirs.make();
  const secret = `s3cr3t-${crypto.randomUUID()}`;
  await using running = await startMcpServer({
    dataDir,
    config: { mode: "ask", mcpStrict: true },
    script: [
      {
        toolCalls: [
          { id: "e1", name: "mcp__fake__echo", arguments: { text: "public" } },
          { id: "w1", name: "mcp__fake__write_note", arguments: { note: "public" } },
        ],
      },
      { text: "done" },
    ],
  });
  const { server } = running;
  const declared = fakeServer("fake", [], { TOKEN: secret });
  const sessionId = await server.client.newSession(cwd, { mcpServers: [declared] });
  assert.equal(await server.client.prompt(sessionId, "go"), "end_turn");
  assert.equal(lastToolUpdate(server, sessionId, "e1").status, "completed");
  assert.equal(contentText(lastToolUpdate(server, sessionId, "w1")), "noted");
  // A failed start with the same secret: its error and logs carry none of it either.
  await assert.rejects(
    server.client.request("session/new", {
      cwd,
      mcpServers: [fakeServer("dying", ["--exit-at-start"], { TOKEN: secret })],
    }),
    (error: unknown) => {
      assert.ok(error instanceof RpcError, String(error));
      assert.ok(!error.message.includes(secret), error.message);
      assert.ok(!JSON.stringify(error.data ?? null).includes(secret));
      return true;
    },
  );
  await server.client.request("session/close", { sessionId });
  await running.disconnect();

  assert.ok(server.logs.some((line) => line.includes("MCP server connected")), "logs exist");
  assert.ok(server.logs.some((line) => line.includes("TOKEN")), "the variable is named");
  for (const line of server.logs) assert.ok(!line.includes(secret), line);
  const files = await filesUnder(dataDir);
  assert.ok(files.some((file) => file.endsWith(`${sessionId}.jsonl`)), files.join(", "));
  for (const file of files) {
    assert.ok(!(await readFile(file, "latin1")).includes(secret), file);
  }
  for (const frame of server.client.frames) {
    assert.ok(!JSON.stringify(frame).includes(secret), JSON.stringify(frame).slice(0, 200));
  }
  assert.deepEqual(server.client.problems, []);
});
