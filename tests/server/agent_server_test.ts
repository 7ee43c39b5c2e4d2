import assert from "node:assert/strict";
import { symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RpcError } from "../_helpers/acp_client.ts";
import { startServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

function kinds(updates: Array<{ update: Record<string, unknown> }>): string[] {
  return updates.map(({ update }) => update.sessionUpdate as string);
}

async function rejects(promise: Promise<unknown>, code: number, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof RpcError, `expected an RpcError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    assert.match(error.message, pattern);
    return true;
  });
}

Deno.test("initialize answers version 1 with exact capabilities whatever is asked", async () => {
  for (const asked of [0, 1, 7]) {
    const server = startServer();
    const result = await server.client.request("initialize", { protocolVersion: asked });
    assert.deepEqual(result, {
      protocolVersion: 1,
      agentInfo: {
        name: "acp-harness",
        title: "acp-harness",
        version: result.agentInfo && (result.agentInfo as { version: string }).version,
      },
      agentCapabilities: {
        _meta: {
          claudeCode: { promptQueueing: true },
          "acp-harness": { observe: { maxObservers: 8 } },
        },
        loadSession: true,
        promptCapabilities: { image: false, audio: false, embeddedContext: true },
        mcpCapabilities: { http: true, sse: true },
        sessionCapabilities: {
          additionalDirectories: {},
          list: {},
          resume: {},
          close: {},
          delete: {},
          fork: {},
        },
      },
      authMethods: result.authMethods,
      _meta: { steering: { supported: true }, "acp-harness": { promptQueue: 8 } },
    });
    assert.deepEqual(
      (result.authMethods as Array<{ id: string }>).map((method) => method.id),
      ["env:OPENAI_API_KEY", "env:ANTHROPIC_API_KEY", "env:DEEPSEEK_API_KEY"],
    );
    assert.match((result.agentInfo as { version: string }).version, /^\d+\.\d+\.\d+/);
    await rejects(
      server.client.request("authenticate", { methodId: "none" }),
      -32602,
      /methodId: expected one of "env:OPENAI_API_KEY", .*got "none"/,
    );
    assert.deepEqual(server.client.problems, []);
    await server.disconnect();
  }
});

Deno.test("requests before initialize, unknown methods and schema violations get errors", async () => {
  await using workspaceDir = await tempDir("acp-harness-ws-");
  const workspace = workspaceDir.path;
  const { client, disconnect } = startServer();
  await rejects(
    client.request("session/new", { cwd: workspace, mcpServers: [] }),
    -32600,
    /initialize/,
  );
  await client.initialize();
  await rejects(
    client.request("session/archive", { sessionId: "x" }),
    -32601,
    /session\/archive/,
  );
  await rejects(client.request("nope/nothing", {}), -32601, /nope\/nothing/);
  await rejects(client.request("session/new", { cwd: 42, mcpServers: [] }), -32602, /cwd/);
  await rejects(
    client.request("session/prompt", { sessionId: "s", prompt: [{ type: "text" }] }),
    -32602,
    /prompt\.0/,
  );
  // The server keeps serving after every one of them.
  const sessionId = await client.newSession(workspace);
  assert.equal(await client.prompt(sessionId, "still here"), "end_turn");
  assert.deepEqual(client.problems, []);
  await disconnect();
});

for (const blocking of [false, true]) {
  Deno.test(`session/new validates cwd, additionalDirectories and mcpServers (paths checked ${blocking ? "synchronously, as on stdio" : "asynchronously"})`, async () => {
    await using workspaceDir = await tempDir("acp-harness-ws-");
    const workspace = workspaceDir.path;
    const { client, disconnect } = startServer({ blockingPathChecks: blocking });
    await client.initialize();
    await rejects(client.newSession("relative/dir"), -32602, /cwd: must be an absolute path/);
    await rejects(client.newSession(join(workspace, "missing")), -32602, /cwd: .*does not exist/);
    const file = join(workspace, "file.txt");
    await writeFile(file, "x");
    await rejects(client.newSession(file), -32602, /cwd: .*is not a directory/);
    await rejects(client.newSession(join(file, "sub")), -32602, /cwd: .*does not exist/);
    await rejects(
      client.newSession(workspace, { additionalDirectories: [tmpdir(), "rel"] }),
      -32602,
      /additionalDirectories\[1\]: must be an absolute path/,
    );
    // Paths the file system refuses are named, not an internal error (issue 7, defect 8).
    await rejects(client.newSession(`${workspace}/a\0b`), -32602, /cwd: must not contain a NUL/);
    await rejects(
      client.newSession(`/${"x".repeat(5000)}`),
      -32602,
      /cwd: must be at most 4096 characters long/,
    );
    await rejects(
      client.newSession(`/${"x".repeat(300)}/y`),
      -32602,
      /cwd: cannot be used as a directory: a component of the path is too long/,
    );
    await rejects(
      client.newSession(workspace, { additionalDirectories: [`${workspace}\0`] }),
      -32602,
      /additionalDirectories\[0\]: must not contain a NUL/,
    );
    await rejects(
      client.request("session/load", {
        sessionId: "00000000-0000-0000-0000-000000000000",
        cwd: `/${"x".repeat(5000)}`,
        mcpServers: [],
      }),
      -32602,
      /cwd: must be at most/,
    );
    await rejects(
      client.request("session/list", { cwd: "/a\0b" }),
      -32602,
      /cwd: must not contain a NUL/,
    );
    await rejects(
      client.newSession(workspace, {
        mcpServers: [{ name: "x", command: "bin/true", args: [], env: [] }],
      }),
      -32602,
      /mcpServers\[0\]\.command: must be an absolute path or a program name without a slash/,
    );
    const link = join(workspace, "link");
    await symlink(workspace, link);
    const result = await client.request<Record<string, unknown>>("session/new", {
      cwd: link,
      mcpServers: [],
      additionalDirectories: [tmpdir()],
    });
    assert.match(result.sessionId as string, /^[0-9a-f-]{36}$/);
    const options = result.configOptions as Array<{ id: string; currentValue: string }>;
    assert.deepEqual(options.map((option) => [option.id, option.currentValue]), [
      ["model", "echo"],
      ["mode", "ask"],
    ]);
    assert.equal((result.modes as { currentModeId: string }).currentModeId, "ask");
    assert.deepEqual(client.problems, []);
    await disconnect();
  });
}

Deno.test("the echo model answers with one thought and one message containing the prompt", async () => {
  await using workspaceDir = await tempDir("acp-harness-ws-");
  const workspace = workspaceDir.path;
  const { client, disconnect } = startServer();
  await client.initialize();
  const sessionId = await client.newSession(workspace);
  const text = "Fix the bug in ünïcödé.ts\nplease";
  assert.equal(await client.prompt(sessionId, text), "end_turn");
  const updates = client.updates(sessionId);
  assert.deepEqual(kinds(updates), [
    // The slash commands, once the session/new answer is out.
    "available_commands_update",
    "session_info_update",
    "agent_thought_chunk",
    "agent_message_chunk",
  ]);
  const [, , thought, message] = updates.map(({ update }) => update);
  assert.equal(typeof thought?.messageId, "string");
  assert.equal(typeof message?.messageId, "string");
  assert.notEqual(thought?.messageId, message?.messageId);
  assert.ok((message?.content as { text: string }).text.includes(text));
  assert.equal(updates[1]?.update.title, "Fix the bug in ünïcödé.ts");
  assert.deepEqual(client.problems, []);
  await disconnect();
});

Deno.test("stream mode relays deltas in order under one messageId", async () => {
  await using workspaceDir = await tempDir("acp-harness-ws-");
  const workspace = workspaceDir.path;
  const { client, disconnect } = startServer({
    config: { model: "scripted", stream: true },
    script: [{ thought: ["a", "b"], text: ["one ", "two ", "three"] }],
  });
  await client.initialize();
  const sessionId = await client.newSession(workspace);
  assert.equal(await client.prompt(sessionId, "go"), "end_turn");
  const chunks = client.updates(sessionId).map(({ update }) => update)
    .filter((update) => update.sessionUpdate === "agent_message_chunk");
  assert.deepEqual(chunks.map((chunk) => (chunk.content as { text: string }).text), [
    "one ",
    "two ",
    "three",
  ]);
  assert.equal(new Set(chunks.map((chunk) => chunk.messageId)).size, 1);
  assert.deepEqual(client.problems, []);
  await disconnect();
});

Deno.test("scripted steps map to stop reasons, tool calls and errors", async () => {
  await using workspaceDir = await tempDir("acp-harness-ws-");
  const workspace = workspaceDir.path;
  const { client, disconnect } = startServer({
    config: { model: "scripted", maxSteps: 3 },
    script: [
      { text: "calling", toolCalls: [{ id: "c1", name: "missing_tool", arguments: { a: 1 } }] },
      { text: "done" },
      { text: "cut off", finish: "max-tokens" },
      { text: "no", finish: "refusal" },
      { text: "partial output", error: { message: "upstream exploded", status: 500 } },
      { toolCalls: [{ name: "x" }] },
      { toolCalls: [{ name: "x" }] },
      { toolCalls: [{ name: "x" }] },
    ],
  });
  await client.initialize();
  const sessionId = await client.newSession(workspace);
  assert.equal(await client.prompt(sessionId, "one"), "end_turn");
  const first = client.updates(sessionId).map(({ update }) => update);
  assert.deepEqual(kinds(client.updates(sessionId)), [
    "available_commands_update",
    "session_info_update",
    "agent_message_chunk",
    "tool_call",
    "tool_call_update",
    "agent_message_chunk",
  ]);
  assert.deepEqual(first[3], {
    sessionUpdate: "tool_call",
    toolCallId: "c1",
    title: "missing_tool",
    kind: "other",
    status: "pending",
    rawInput: { a: 1 },
  });
  assert.equal(first[4]?.status, "failed");
  assert.equal(await client.prompt(sessionId, "two"), "max_tokens");
  assert.equal(await client.prompt(sessionId, "three"), "refusal");
  const before = client.updates(sessionId).length;
  await rejects(client.prompt(sessionId, "four"), -32603, /scripted\/scripted.*upstream exploded/);
  assert.equal(client.updates(sessionId).length, before, "no partial output in committed mode");
  assert.equal(await client.prompt(sessionId, "five"), "max_turn_requests");
  await rejects(client.prompt(sessionId, "six"), -32603, /script has no step 9/);
  assert.deepEqual(client.problems, []);
  await disconnect();
});

Deno.test("prompt content is validated before anything happens", async () => {
  await using workspaceDir = await tempDir("acp-harness-ws-");
  const workspace = workspaceDir.path;
  const { client, disconnect } = startServer();
  await client.initialize();
  const sessionId = await client.newSession(workspace);
  const cases: Array<[unknown[], RegExp]> = [
    [[], /prompt: must contain at least one content block/],
    [[{ type: "text", text: "  \n" }], /prompt: is empty/],
    [
      [{ type: "text", text: "a" }, { type: "image", data: "AAAA", mimeType: "image/png" }],
      /prompt\[1\]: image content is not supported/,
    ],
    [
      [{ type: "audio", data: "AAAA", mimeType: "audio/wav" }],
      /prompt\[0\]: audio content is not supported/,
    ],
    [
      [{ type: "resource", resource: { uri: "file:///x.bin", blob: "AAAA" } }],
      /prompt\[0\]: embedded resource "file:\/\/\/x.bin" has binary/,
    ],
  ];
  for (const [prompt, pattern] of cases) {
    await rejects(client.request("session/prompt", { sessionId, prompt }), -32602, pattern);
  }
  assert.deepEqual(
    client.updates(sessionId).filter(({ update }) =>
      update.sessionUpdate !== "available_commands_update"
    ),
    [],
    "a rejected prompt writes nothing",
  );
  const result = await client.request("session/prompt", {
    sessionId,
    prompt: [
      { type: "text", text: "Look at" },
      { type: "resource_link", name: "a.txt", uri: "file:///w/a.txt" },
      { type: "resource", resource: { uri: "file:///w/b.txt", text: "B body" } },
    ],
  });
  assert.equal(result.stopReason, "end_turn");
  const message = client.updates(sessionId).find(({ update }) =>
    update.sessionUpdate === "agent_message_chunk"
  );
  const text = (message?.update.content as { text: string }).text;
  assert.ok(text.includes('[resource_link name="a.txt" uri="file:///w/a.txt"]'), text);
  assert.ok(text.includes("B body"), text);
  await rejects(client.prompt("no-such-session", "hi"), -32002, /Resource not found/);
  assert.deepEqual(client.problems, []);
  await disconnect();
});

Deno.test("with --prompt-queue 0 a second prompt while one is in flight is rejected; the first is unaffected", async () => {
  await using workspaceDir = await tempDir("acp-harness-ws-");
  const workspace = workspaceDir.path;
  const { client, disconnect } = startServer({
    config: { model: "scripted", promptQueue: 0 },
    script: [{ delayMs: 100, text: "slow" }, { text: "next" }],
  });
  await client.initialize();
  const sessionId = await client.newSession(workspace);
  const first = client.prompt(sessionId, "one");
  await rejects(
    client.prompt(sessionId, "two"),
    -32602,
    new RegExp(`a prompt is already in flight for session ${sessionId}`),
  );
  assert.equal(await first, "end_turn");
  assert.equal(await client.prompt(sessionId, "three"), "end_turn");
  assert.deepEqual(client.problems, []);
  await disconnect();
});

Deno.test("config options and modes change from the next turn and are announced", async () => {
  await using workspaceDir = await tempDir("acp-harness-ws-");
  const workspace = workspaceDir.path;
  const { client, disconnect } = startServer({
    config: { model: "scripted" },
    script: [{ delayMs: 50, text: "scripted answer" }],
  });
  await client.initialize();
  const sessionId = await client.newSession(workspace);
  const running = client.prompt(sessionId, "first");
  const result = await client.request<
    { configOptions: Array<{ id: string; currentValue: string }> }
  >(
    "session/set_config_option",
    { sessionId, configId: "model", value: "echo" },
  );
  assert.deepEqual(result.configOptions.map((o) => [o.id, o.currentValue]), [["model", "echo"], [
    "mode",
    "ask",
  ]]);
  assert.equal(await running, "end_turn");
  const messages = () =>
    client.updates(sessionId).filter(({ update }) => update.sessionUpdate === "agent_message_chunk")
      .map(({ update }) => (update.content as { text: string }).text);
  assert.deepEqual(messages(), ["scripted answer"], "the running turn kept its model");
  assert.equal(await client.prompt(sessionId, "second"), "end_turn");
  assert.equal(messages()[1], "Echo: second");

  await client.request("session/set_config_option", { sessionId, configId: "mode", value: "auto" });
  assert.deepEqual(
    await client.request("session/set_mode", { sessionId, modeId: "read-only" }),
    {},
  );
  const modeUpdates = client.updates(sessionId).map(({ update }) => update)
    .filter((update) => update.sessionUpdate === "current_mode_update")
    .map((update) => update.currentModeId);
  assert.deepEqual(modeUpdates, ["auto", "read-only"]);
  const configUpdates = client.updates(sessionId)
    .filter(({ update }) => update.sessionUpdate === "config_option_update");
  assert.equal(configUpdates.length, 3);

  await rejects(
    client.request("session/set_config_option", { sessionId, configId: "colour", value: "red" }),
    -32602,
    /configId: unknown config option "colour"/,
  );
  await rejects(
    client.request("session/set_config_option", { sessionId, configId: "mode", value: "yolo" }),
    -32602,
    /"yolo" is not a value of "mode"; expected one of ask, auto, read-only/,
  );
  await rejects(client.request("session/set_mode", { sessionId, modeId: "yolo" }), -32602, /yolo/);
  await rejects(
    client.request("session/set_mode", { sessionId: "nope", modeId: "ask" }),
    -32002,
    /Resource not found/,
  );
  assert.deepEqual(client.problems, []);
  await disconnect();
});
