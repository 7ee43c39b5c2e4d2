/**
 * Tool calls of one step that touch the same path run in the order the model gave them (issue 7,
 * defect 5).
 *
 * @module
 */
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { startServer } from "../_helpers/server.ts";
import { makeTempDir, removeTempDir } from "../_helpers/temp_dir.ts";

type Update = Record<string, unknown>;

async function runStep(
  calls: unknown[],
  prepare: (cwd: string) => Promise<void> = async () => {},
): Promise<{ results: Map<string, Update>; cwd: string; cleanup: () => Promise<void> }> {
  const cwd = await makeTempDir("acp-harness-order-");
  await prepare(cwd);
  const server = startServer({
    script: [{ toolCalls: calls }, { text: "done" }],
    config: { model: "scripted", mode: "auto" },
  });
  const cleanup = async (): Promise<void> => {
    await server.disconnect();
    await removeTempDir(cwd);
  };
  try {
    await server.client.initialize();
    const sessionId = await server.client.newSession(cwd);
    assert.equal(await server.client.prompt(sessionId, "go"), "end_turn");
    const results = new Map<string, Update>();
    for (const { update } of server.client.updates(sessionId)) {
      if (update.sessionUpdate === "tool_call_update" && update.status !== "in_progress") {
        results.set(update.toolCallId as string, update);
      }
    }
    return { results, cwd, cleanup };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

Deno.test("a read after a write of the same file in one step sees the write", async () => {
  for (let round = 0; round < 5; round++) {
    const { results, cleanup } = await runStep([
      { id: "w", name: "write_file", arguments: { path: "new.txt", content: "fresh\n" } },
      { id: "r", name: "read_file", arguments: { path: "new.txt" } },
      { id: "l", name: "search_text", arguments: { pattern: "fresh" } },
    ]);
    try {
      assert.equal(results.get("w")?.status, "completed");
      assert.equal(results.get("r")?.status, "completed", JSON.stringify(results.get("r")));
      assert.match(JSON.stringify(results.get("r")?.content), /fresh/);
      assert.match(JSON.stringify(results.get("l")?.content), /new\.txt/);
    } finally {
      await cleanup();
    }
  }
});

Deno.test("a read before an edit of the same file sees the old content", async () => {
  const { results, cwd, cleanup } = await runStep([
    { id: "r", name: "read_file", arguments: { path: "a.txt" } },
    {
      id: "e",
      name: "edit_file",
      arguments: { path: "a.txt", old_text: "old", new_text: "new" },
    },
    { id: "r2", name: "read_file", arguments: { path: "a.txt" } },
  ], (cwd) => writeFile(join(cwd, "a.txt"), "old\n"));
  try {
    assert.match(JSON.stringify(results.get("r")?.content), /old/);
    assert.equal(results.get("e")?.status, "completed", JSON.stringify(results.get("e")));
    assert.match(JSON.stringify(results.get("r2")?.content), /new/);
    assert.equal(await readFile(join(cwd, "a.txt"), "utf8"), "new\n");
  } finally {
    await cleanup();
  }
});

Deno.test("a command after a write sees the file, and a read after the command sees its output", async () => {
  const { results, cleanup } = await runStep([
    { id: "w", name: "write_file", arguments: { path: "in.txt", content: "abc" } },
    { id: "c", name: "run_command", arguments: { command: "cat in.txt > out.txt" } },
    { id: "r", name: "read_file", arguments: { path: "out.txt" } },
  ]);
  try {
    assert.equal(results.get("c")?.status, "completed", JSON.stringify(results.get("c")));
    assert.match(JSON.stringify(results.get("r")?.content), /abc/);
  } finally {
    await cleanup();
  }
});
