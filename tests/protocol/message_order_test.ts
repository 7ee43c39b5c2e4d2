/**
 * Messages of one session take effect in the order the client sent them, even when they arrive
 * in one write and their handlers would otherwise start in another order (issue 7, defect 1).
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type MemoryServer, startServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { withoutSpend } from "../_helpers/acp_schema.ts";

type Frame = Record<string, unknown>;

async function withServer(
  script: unknown[],
  mode: "auto" | "ask" | "read-only",
  body: (server: MemoryServer, sessionId: string, cwd: string) => Promise<void>,
): Promise<void> {
  await using temp = await tempDir("acp-harness-order-");
  const cwd = temp.path;
  const server = startServer({ script, config: { model: "scripted", mode } });
  try {
    await server.client.initialize();
    const sessionId = await server.client.newSession(cwd);
    await body(server, sessionId, cwd);
  } finally {
    await server.disconnect();
  }
}

const writeStep = {
  toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "out.txt", content: "x" } }],
};

function responseTo(server: MemoryServer, id: number): Promise<Frame> {
  return server.client.waitFor((frames) =>
    frames.some((frame) => frame.id === id && !("method" in frame))
  ).then(() => server.client.frames.find((frame) => frame.id === id && !("method" in frame))!);
}

function prompt(sessionId: string, id: number, text = "write it"): Frame {
  return {
    jsonrpc: "2.0",
    id,
    method: "session/prompt",
    params: { sessionId, prompt: [{ type: "text", text }] },
  };
}

Deno.test("session/set_mode sent just before a prompt applies to that prompt", async () => {
  await withServer([writeStep, { text: "done" }], "auto", async (server, sessionId, cwd) => {
    const { client } = server;
    void client.sendRaw({
      jsonrpc: "2.0",
      id: 100,
      method: "session/set_mode",
      params: { sessionId, modeId: "read-only" },
    });
    void client.sendRaw(prompt(sessionId, 101));
    const answer = await responseTo(server, 101);
    assert.deepEqual(withoutSpend(answer.result), { stopReason: "end_turn" });
    assert.equal(existsSync(join(cwd, "out.txt")), false, "read-only mode was bypassed");
    const modeAnswer = client.frames.findIndex((frame) => frame.id === 100);
    const firstPromptUpdate = client.frames.findIndex((frame) =>
      frame.method === "session/update" &&
      (frame.params as { update: Frame }).update.sessionUpdate === "tool_call"
    );
    assert.ok(modeAnswer >= 0 && modeAnswer < firstPromptUpdate);
  });
});

Deno.test("session/set_config_option mode sent just before a prompt applies to it", async () => {
  await withServer([writeStep, { text: "done" }], "auto", async (server, sessionId, cwd) => {
    void server.client.sendRaw({
      jsonrpc: "2.0",
      id: 100,
      method: "session/set_config_option",
      params: { sessionId, configId: "mode", value: "read-only" },
    });
    void server.client.sendRaw(prompt(sessionId, 101));
    assert.deepEqual(withoutSpend((await responseTo(server, 101)).result), {
      stopReason: "end_turn",
    });
    assert.equal(existsSync(join(cwd, "out.txt")), false, "read-only mode was bypassed");
  });
});

Deno.test("an idle session/cancel does not cancel the prompt sent after it", async () => {
  await withServer([{ text: "hello" }], "auto", async (server, sessionId) => {
    void server.client.sendRaw({
      jsonrpc: "2.0",
      method: "session/cancel",
      params: { sessionId },
    });
    void server.client.sendRaw(prompt(sessionId, 101, "hi"));
    assert.deepEqual(withoutSpend((await responseTo(server, 101)).result), {
      stopReason: "end_turn",
    });
  });
});

Deno.test("a prompt sent just after session/close does not run", async () => {
  await withServer([writeStep, { text: "done" }], "auto", async (server, sessionId, cwd) => {
    void server.client.sendRaw({
      jsonrpc: "2.0",
      id: 100,
      method: "session/close",
      params: { sessionId },
    });
    void server.client.sendRaw(prompt(sessionId, 101));
    const answer = await responseTo(server, 101);
    assert.ok("error" in answer, "the prompt ran on a closed session");
    assert.deepEqual((await responseTo(server, 100)).result, {});
    assert.equal(existsSync(join(cwd, "out.txt")), false);
  });
});

Deno.test("a mode change sent during a prompt is answered while the prompt runs", async () => {
  const script = [{ delayMs: 60_000, text: "slow" }];
  await withServer(script, "auto", async (server, sessionId) => {
    const { client } = server;
    void client.sendRaw(prompt(sessionId, 101, "slow"));
    const mode = await client.request("session/set_mode", { sessionId, modeId: "ask" });
    assert.deepEqual(mode, {});
    assert.equal(client.frames.some((frame) => frame.id === 101), false);
    void client.notify("session/cancel", { sessionId });
    assert.deepEqual(withoutSpend((await responseTo(server, 101)).result), {
      stopReason: "cancelled",
    });
  });
});

Deno.test("$/cancel_request reaches a prompt that waits behind another message", async () => {
  await withServer([{ delayMs: 60_000, text: "slow" }], "auto", async (server, sessionId) => {
    const { client } = server;
    void client.sendRaw({
      jsonrpc: "2.0",
      id: 100,
      method: "session/set_mode",
      params: { sessionId, modeId: "ask" },
    });
    void client.sendRaw(prompt(sessionId, 101, "slow"));
    void client.sendRaw({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 101 } });
    const answer = await responseTo(server, 101);
    assert.deepEqual(withoutSpend(answer.result), { stopReason: "cancelled" });
  });
});

Deno.test("messages of different sessions do not wait for each other", async () => {
  await withServer([{ delayMs: 60_000, text: "slow" }], "auto", async (server, sessionId, cwd) => {
    const { client } = server;
    const other = await client.newSession(cwd);
    void client.sendRaw(prompt(sessionId, 101, "slow"));
    assert.deepEqual(
      await client.request("session/set_mode", { sessionId: other, modeId: "ask" }),
      {},
    );
    void client.notify("session/cancel", { sessionId });
    assert.deepEqual(withoutSpend((await responseTo(server, 101)).result), {
      stopReason: "cancelled",
    });
  });
});
