/**
 * Budgets hold over HTTP as over stdio: the server's `maxToolCalls` stops a turn of three calls
 * after one, and a client's higher `_meta` budget is refused.
 *
 * @module
 */
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import assert from "node:assert/strict";
import { type AcpTestClient, memoryClient } from "../../_helpers/acp_client.ts";
import { startHttpServer } from "../../_helpers/http_server.ts";
import { tempDir } from "../../_helpers/temp_dir.ts";

async function closeClient(client: AcpTestClient): Promise<void> {
  await (client as unknown as { close(): Promise<void> }).close().catch(() => {});
}

Deno.test("over HTTP, --max-tool-calls 1 runs one of three calls and ends max_turn_requests", async () => {
  await using cwd = await tempDir("acp-harness-http-budget-");
  const entries = [{ content: "x", status: "pending" }];
  await using http = await startHttpServer({
    config: { model: "scripted", maxToolCalls: 1 },
    script: [
      {
        toolCalls: ["p1", "p2", "p3"].map((id) => ({
          id,
          name: "update_plan",
          arguments: { entries },
        })),
      },
      { text: "not reached" },
    ],
  });
  const client = memoryClient(createHttpStream(`${http.url}/acp`, {}));
  try {
    await client.initialize();
    await assert.rejects(
      client.newSession(cwd.path, { _meta: { "acp-harness": { budgets: { maxToolCalls: 2 } } } }),
      (error: Error & { code?: number }) =>
        error.code === -32602 && /budgets\.maxToolCalls/.test(error.message),
    );
    const sessionId = await client.newSession(cwd.path);
    assert.equal(await client.prompt(sessionId, "Plan"), "max_turn_requests");
    const ends = client.updates(sessionId).map(({ update }) => update).filter((update) =>
      update.sessionUpdate === "tool_call_update" && update.status !== "in_progress"
    ).map((update) => `${update.toolCallId} ${update.status}`);
    assert.deepEqual(ends.sort(), ["p1 completed", "p2 failed", "p3 failed"]);
    assert.deepEqual(client.problems, []);
  } finally {
    await closeClient(client);
  }
});
