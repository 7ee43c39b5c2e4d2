/**
 * The `session/prompt` response's `usage` with the scripted model: every count a step reports,
 * a cancelled turn's spend, and no field when nothing was reported.
 *
 * @module
 */
import assert from "node:assert/strict";
import { withoutBudget } from "../_helpers/acp_schema.ts";
import { startServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

Deno.test("a cancelled turn's prompt response still carries what its requests spent", async () => {
  const { client, disconnect } = startServer({
    config: { model: "scripted", mode: "ask" },
    script: [
      {
        toolCalls: [{ name: "write_file", arguments: { path: "a.txt", content: "x" } }],
        usage: { input: 100, output: 10, cacheRead: 40, cacheWrite: 5, reasoning: 3 },
      },
      { text: "never" },
    ],
  });
  await using workspace = await tempDir("acp-harness-usage-");
  // The permission question stays unanswered until the cancel.
  client.handlers.set("session/request_permission", () => new Promise(() => {}));
  await client.initialize();
  const sessionId = await client.newSession(workspace.path);
  const prompt = client.requestRaw("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "write it" }],
  });
  await client.waitFor((frames) =>
    frames.some((frame) => frame.method === "session/request_permission")
  );
  await client.notify("session/cancel", { sessionId });
  const response = await prompt;
  assert.deepEqual(withoutBudget(response.result), {
    stopReason: "cancelled",
    usage: {
      totalTokens: 110,
      inputTokens: 100,
      outputTokens: 10,
      thoughtTokens: 3,
      cachedReadTokens: 40,
      cachedWriteTokens: 5,
    },
  });
  assert.deepEqual(client.problems, []);
  await disconnect();
});

Deno.test("a turn whose requests reported no usage answers without a usage field", async () => {
  const { client, disconnect } = startServer({
    config: { model: "scripted" },
    script: [{ text: "no usage here" }, { text: "spent", usage: { input: 7, output: 2 } }],
  });
  await using workspace = await tempDir("acp-harness-usage-");
  await client.initialize();
  const sessionId = await client.newSession(workspace.path);
  const first = await client.requestRaw("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "one" }],
  });
  assert.deepEqual(withoutBudget(first.result), { stopReason: "end_turn" });
  const second = await client.requestRaw("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "two" }],
  });
  assert.deepEqual(withoutBudget(second.result), {
    stopReason: "end_turn",
    usage: { totalTokens: 9, inputTokens: 7, outputTokens: 2 },
  });
  assert.deepEqual(client.problems, []);
  await disconnect();
});
