import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { RpcError } from "../_helpers/acp_client.ts";
import { withoutSpend } from "../_helpers/acp_schema.ts";
import { type MemoryServer, type StartOptions, startServer } from "../_helpers/server.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";

type Update = Record<string, unknown>;
const updatesOf = (server: MemoryServer, sessionId: string): Update[] =>
  server.client.updates(sessionId).map(({ update }) => update);
const toolUpdates = (server: MemoryServer, sessionId: string, id: string): Update[] =>
  updatesOf(server, sessionId).filter((update) => update.toolCallId === id);

/** Starts a scripted server in `cwd`, answering permission requests with `answer`. */
async function start(
  cwd: string,
  script: unknown[],
  options: StartOptions & { answer?: string | ((params: unknown) => unknown) } = {},
): Promise<{ server: MemoryServer; sessionId: string; asked: unknown[] }> {
  const server = startServer({
    ...options,
    script,
    config: { model: "scripted", ...options.config },
  });
  const asked: unknown[] = [];
  server.client.handlers.set("session/request_permission", (params) => {
    asked.push(params);
    const answer = options.answer ?? "allow_once";
    if (typeof answer === "function") return answer(params);
    return { outcome: { outcome: "selected", optionId: answer } };
  });
  await server.client.initialize();
  const sessionId = await server.client.newSession(cwd);
  return { server, sessionId, asked };
}

const write = (id: string, path: string, content: string) => ({
  toolCalls: [{ id, name: "write_file", arguments: { path, content } }],
});

Deno.test("ask mode: a write asks first, runs once allowed, and shows a diff", async () => {
  await using workspaces = new TempDirs("acp-harness-tools-");
  const cwd = await workspaces.make();
  const { server, sessionId, asked } = await start(cwd, [
    write("w1", "notes.txt", "hello\n"),
    { text: "written" },
  ]);
  assert.equal(await server.client.prompt(sessionId, "write it"), "end_turn");
  assert.equal(await readFile(join(cwd, "notes.txt"), "utf8"), "hello\n");
  assert.equal(asked.length, 1);
  const question = asked[0] as {
    toolCall: Update;
    options: Array<{ optionId: string; kind: string }>;
  };
  assert.equal(question.toolCall.toolCallId, "w1");
  assert.deepEqual(question.options.map((option) => option.kind), [
    "allow_once",
    "allow_always",
    "reject_once",
    "reject_always",
  ]);
  // The tool_call went out before the permission request.
  const frames = server.client.frames;
  const announced = frames.findIndex((frame) =>
    (frame.params as { update?: Update })?.update?.sessionUpdate === "tool_call"
  );
  const requested = frames.findIndex((frame) => frame.method === "session/request_permission");
  assert.ok(announced !== -1 && announced < requested, "tool_call precedes the request");
  const updates = toolUpdates(server, sessionId, "w1");
  assert.deepEqual(updates.map((update) => update.status), ["pending", "in_progress", "completed"]);
  assert.equal(updates[0]?.kind, "edit");
  const content = updates[2]?.content as Array<Record<string, unknown>>;
  assert.deepEqual(content[0], {
    type: "diff",
    path: join(cwd, "notes.txt"),
    oldText: null,
    newText: "hello\n",
  });
  assert.deepEqual(server.client.problems, []);
  await server.disconnect();
});

Deno.test("ask mode: a rejected write leaves the file alone and fails the tool call", async () => {
  await using workspaces = new TempDirs("acp-harness-tools-");
  const cwd = await workspaces.make();
  await writeFile(join(cwd, "keep.txt"), "original\n");
  const { server, sessionId } = await start(cwd, [
    write("w1", "keep.txt", "changed\n"),
    { text: "ok, I will not" },
  ], { answer: "reject_once" });
  assert.equal(await server.client.prompt(sessionId, "change it"), "end_turn");
  assert.equal(await readFile(join(cwd, "keep.txt"), "utf8"), "original\n");
  const updates = toolUpdates(server, sessionId, "w1");
  assert.deepEqual(updates.map((update) => update.status), ["pending", "failed"]);
  assert.deepEqual(server.client.problems, []);
  await server.disconnect();
});

Deno.test("ask mode: always answers are remembered for the tool in that session", async () => {
  await using workspaces = new TempDirs("acp-harness-tools-");
  const cwd = await workspaces.make();
  const { server, sessionId, asked } = await start(cwd, [
    write("w1", "a.txt", "1"),
    write("w2", "b.txt", "2"),
    { text: "done" },
  ], { answer: "allow_always" });
  assert.equal(await server.client.prompt(sessionId, "write two"), "end_turn");
  assert.equal(asked.length, 1, "the second write did not ask");
  assert.equal(await readFile(join(cwd, "b.txt"), "utf8"), "2");

  const cwd2 = await workspaces.make();
  const rejecting = await start(cwd2, [
    write("w1", "a.txt", "1"),
    write("w2", "b.txt", "2"),
    { text: "done" },
  ], { answer: "reject_always" });
  assert.equal(await rejecting.server.client.prompt(rejecting.sessionId, "write two"), "end_turn");
  assert.equal(rejecting.asked.length, 1);
  assert.deepEqual(
    toolUpdates(rejecting.server, rejecting.sessionId, "w2").map((update) => update.status),
    ["pending", "failed"],
  );
  await server.disconnect();
  await rejecting.server.disconnect();
});

Deno.test("read-only mode refuses edits and commands without asking; reads run", async () => {
  await using workspaces = new TempDirs("acp-harness-tools-");
  const cwd = await workspaces.make();
  await writeFile(join(cwd, "a.txt"), "alpha\n");
  const { server, sessionId, asked } = await start(cwd, [
    {
      toolCalls: [
        { id: "r1", name: "read_file", arguments: { path: "a.txt" } },
        { id: "w1", name: "write_file", arguments: { path: "a.txt", content: "x" } },
        { id: "c1", name: "run_command", arguments: { command: "touch made.txt" } },
      ],
    },
    { text: "done" },
  ], { config: { mode: "read-only" } });
  assert.equal(await server.client.prompt(sessionId, "try"), "end_turn");
  assert.equal(asked.length, 0);
  assert.equal(toolUpdates(server, sessionId, "r1").at(-1)?.status, "completed");
  for (const id of ["w1", "c1"]) {
    const last = toolUpdates(server, sessionId, id).at(-1);
    assert.equal(last?.status, "failed");
    assert.match(JSON.stringify(last?.content), /read-only permission mode refused/);
  }
  assert.equal(await readFile(join(cwd, "a.txt"), "utf8"), "alpha\n");
  await assert.rejects(readFile(join(cwd, "made.txt")));
  await server.disconnect();
});

Deno.test("auto mode runs edits and commands without asking", async () => {
  await using workspaces = new TempDirs("acp-harness-tools-");
  const cwd = await workspaces.make();
  const { server, sessionId, asked } = await start(cwd, [
    { toolCalls: [{ id: "c1", name: "run_command", arguments: { command: "echo hi > out.txt" } }] },
    { text: "done" },
  ], { config: { mode: "auto" } });
  assert.equal(await server.client.prompt(sessionId, "run"), "end_turn");
  assert.equal(asked.length, 0);
  assert.equal(await readFile(join(cwd, "out.txt"), "utf8"), "hi\n");
  await server.disconnect();
});

Deno.test("unknown options, client errors and cancelled answers never grant", async () => {
  await using workspaces = new TempDirs("acp-harness-tools-");
  const answers: Array<[string, (params: unknown) => unknown, RegExp]> = [
    [
      "unknown option",
      () => ({ outcome: { outcome: "selected", optionId: "yes-please" } }),
      /refused/,
    ],
    ["client error", () => {
      throw new Error("no UI");
    }, /refused/],
    ["cancelled", () => ({ outcome: { outcome: "cancelled" } }), /cancelled/],
  ];
  for (const [label, answer, reason] of answers) {
    const cwd = await workspaces.make();
    const { server, sessionId } = await start(cwd, [write("w1", "x.txt", "x"), { text: "ok" }], {
      answer,
    });
    assert.equal(await server.client.prompt(sessionId, "write"), "end_turn", label);
    await assert.rejects(readFile(join(cwd, "x.txt")), label);
    const last = toolUpdates(server, sessionId, "w1").at(-1);
    assert.equal(last?.status, "failed", label);
    assert.match(JSON.stringify(last?.content), reason, label);
    await server.disconnect();
  }
});

Deno.test("cancelling while a permission request is pending ends the turn cancelled", async () => {
  await using workspaces = new TempDirs("acp-harness-tools-");
  const cwd = await workspaces.make();
  let release: (value: unknown) => void = () => {};
  const { server, sessionId } = await start(cwd, [write("w1", "x.txt", "x"), { text: "never" }], {
    answer: () => new Promise((resolve) => release = resolve),
  });
  const prompt = server.client.prompt(sessionId, "write");
  await server.client.waitFor((frames) =>
    frames.some((frame) => frame.method === "session/request_permission")
  );
  await server.client.notify("session/cancel", { sessionId });
  assert.equal(await prompt, "cancelled");
  release({ outcome: { outcome: "selected", optionId: "allow_once" } });
  await server.client.answersSent();
  // disconnect() drains the session: a tool the late answer let through would have run.
  await server.disconnect();
  await assert.rejects(readFile(join(cwd, "x.txt")), "the tool did not run");
  assert.deepEqual(server.client.problems, []);
});

Deno.test("reads, writes and commands go through the client when it offers fs and terminal", async () => {
  await using workspaces = new TempDirs("acp-harness-tools-");
  const cwd = await workspaces.make();
  await writeFile(join(cwd, "disk.txt"), "on disk\n");
  const server = startServer({
    config: { model: "scripted", mode: "auto" },
    script: [
      {
        toolCalls: [
          { id: "r1", name: "read_file", arguments: { path: "disk.txt" } },
          { id: "w1", name: "write_file", arguments: { path: "new.txt", content: "via client" } },
          { id: "c1", name: "run_command", arguments: { command: "echo hi" } },
        ],
      },
      { text: "done" },
    ],
  });
  const calls: string[] = [];
  const written: Record<string, string> = {};
  const { handlers } = server.client;
  handlers.set("fs/read_text_file", (params) => {
    calls.push("fs/read_text_file");
    assert.equal((params as { path: string }).path, join(cwd, "disk.txt"));
    return { content: "from the editor buffer\n" };
  });
  handlers.set("fs/write_text_file", (params) => {
    calls.push("fs/write_text_file");
    const { path, content } = params as { path: string; content: string };
    written[path] = content;
    return {};
  });
  for (const method of ["create", "wait_for_exit", "output", "release", "kill"]) {
    handlers.set(`terminal/${method}`, (params) => {
      calls.push(`terminal/${method}`);
      if (method === "create") {
        assert.deepEqual((params as { args: string[] }).args, ["-c", "echo hi"]);
        return { terminalId: "t1" };
      }
      if (method === "wait_for_exit") return { exitCode: 0 };
      if (method === "output") {
        return { output: "hi\n", truncated: false, exitStatus: { exitCode: 0 } };
      }
      return {};
    });
  }
  await server.client.initialize({
    fs: { readTextFile: true, writeTextFile: true },
    terminal: true,
  });
  const sessionId = await server.client.newSession(cwd);
  assert.equal(await server.client.prompt(sessionId, "go"), "end_turn");
  assert.deepEqual(written, { [join(cwd, "new.txt")]: "via client" });
  await assert.rejects(readFile(join(cwd, "new.txt")), "the host did not write it");
  for (
    const method of [
      "fs/read_text_file",
      "fs/write_text_file",
      "terminal/create",
      "terminal/release",
    ]
  ) {
    assert.ok(calls.includes(method), `${method} was called: ${calls.join(", ")}`);
  }
  const read = toolUpdates(server, sessionId, "r1").at(-1);
  assert.match(JSON.stringify(read?.content), /from the editor buffer/);
  const command = toolUpdates(server, sessionId, "c1").at(-1);
  assert.deepEqual((command?.content as unknown[])[0], { type: "terminal", terminalId: "t1" });
  assert.deepEqual(server.client.problems, []);
  await server.disconnect();
});

Deno.test("paths outside the workspace are refused as failed tool results", async () => {
  await using workspaces = new TempDirs("acp-harness-tools-");
  const cwd = await workspaces.make();
  const { server, sessionId } = await start(cwd, [
    {
      toolCalls: [
        { id: "a", name: "read_file", arguments: { path: "../outside.txt" } },
        { id: "b", name: "read_file", arguments: { path: "/etc/hostname" } },
        { id: "c", name: "write_file", arguments: { path: "/tmp/escape.txt", content: "x" } },
      ],
    },
    { text: "done" },
  ], { config: { mode: "auto" } });
  assert.equal(await server.client.prompt(sessionId, "escape"), "end_turn");
  for (const id of ["a", "b", "c"]) {
    const last = toolUpdates(server, sessionId, id).at(-1);
    assert.equal(last?.status, "failed", id);
    assert.match(JSON.stringify(last?.content), /outside/i, id);
  }
  await server.disconnect();
});

Deno.test("usage_update reports the latest request's tokens, the window and cumulative cost", async () => {
  await using workspaces = new TempDirs("acp-harness-tools-");
  const cwd = await workspaces.make();
  const { server, sessionId } = await start(cwd, [
    { text: "one", usage: { input: 1000, output: 200, cacheRead: 400 } },
    { text: "two", usage: { input: 3000, output: 100 } },
  ], {
    config: {
      models: {
        scripted: {
          contextWindow: 100_000,
          pricing: { input: 2, output: 10, cacheRead: 0.5 },
        },
      },
    },
  });
  await server.client.prompt(sessionId, "first");
  await server.client.prompt(sessionId, "second");
  const usage = updatesOf(server, sessionId).filter((update) =>
    update.sessionUpdate === "usage_update"
  );
  // (600 × 2 + 400 × 0.5 + 200 × 10) / 1e6 = 0.0034; then + (3000 × 2 + 100 × 10) / 1e6 = 0.007
  assert.deepEqual(usage, [
    {
      sessionUpdate: "usage_update",
      used: 1200,
      size: 100_000,
      cost: { amount: 0.0034, currency: "USD" },
    },
    {
      sessionUpdate: "usage_update",
      used: 3100,
      size: 100_000,
      cost: { amount: 0.0104, currency: "USD" },
    },
  ]);
  assert.deepEqual(server.client.problems, []);
  await server.disconnect();
});

Deno.test("reasoning_effort is offered for models with efforts and validated", async () => {
  await using workspaces = new TempDirs("acp-harness-tools-");
  const cwd = await workspaces.make();
  const { server, sessionId } = await start(cwd, [{ text: "a" }], {
    config: {
      models: { scripted: { reasoningEfforts: ["low", "high"], defaultReasoningEffort: "high" } },
    },
  });
  const set = (configId: string, value: string) =>
    server.client.request<{ configOptions: Array<{ id: string; currentValue: string }> }>(
      "session/set_config_option",
      { sessionId, configId, value },
    );
  const result = await set("reasoning_effort", "low");
  assert.deepEqual(result.configOptions.map((o) => [o.id, o.currentValue]), [
    ["model", "scripted"],
    ["mode", "ask"],
    ["reasoning_effort", "low"],
  ]);
  await assert.rejects(set("reasoning_effort", "extreme"), (error: unknown) => {
    assert.ok(error instanceof RpcError);
    assert.equal(error.code, -32602);
    assert.match(error.message, /expected one of low, high/);
    return true;
  });
  // Echo declares no efforts: switching to it removes the option.
  const echo = await set("model", "echo");
  assert.deepEqual(echo.configOptions.map((o) => o.id), ["model", "mode"]);
  await server.disconnect();
});

const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

Deno.test("images are advertised, validated and passed on when the model accepts them", async () => {
  await using workspaces = new TempDirs("acp-harness-tools-");
  const cwd = await workspaces.make();
  const { server, sessionId } = await start(cwd, [{ text: "a cat" }, { text: "more" }], {
    config: { models: { scripted: { image: true } } },
  });
  const init = await server.client.request<
    { agentCapabilities: { promptCapabilities: { image: boolean } } }
  >(
    "initialize",
    { protocolVersion: 1 },
  );
  assert.equal(init.agentCapabilities.promptCapabilities.image, true);
  const prompt = (blocks: unknown[]) =>
    server.client.request("session/prompt", { sessionId, prompt: blocks });
  const bad: Array<[unknown, RegExp]> = [
    [{ type: "image", mimeType: "image/bmp", data: PNG }, /mimeType must be/],
    [{ type: "image", mimeType: "image/png", data: PNG.replace("=", "") }, /canonical base64/],
    [{ type: "image", mimeType: "image/png", data: ` ${PNG}` }, /canonical base64/],
    [{ type: "image", mimeType: "image/jpeg", data: PNG }, /signature does not match/],
  ];
  for (const [block, pattern] of bad) {
    await assert.rejects(prompt([{ type: "text", text: "see" }, block]), (error: unknown) => {
      assert.ok(error instanceof RpcError);
      assert.equal(error.code, -32602);
      assert.match(error.message, /prompt\[1\]/);
      assert.match(error.message, pattern);
      return true;
    });
  }
  const many = Array.from(
    { length: 21 },
    () => ({ type: "image", mimeType: "image/png", data: PNG }),
  );
  await assert.rejects(prompt(many), /at most 20/);
  assert.deepEqual(
    withoutSpend(await prompt([{ type: "image", mimeType: "image/png", data: PNG }])),
    {
      stopReason: "end_turn",
    },
  );
  await server.client.request("session/set_config_option", {
    sessionId,
    configId: "model",
    value: "echo",
  });
  await assert.rejects(
    prompt([{ type: "image", mimeType: "image/png", data: PNG }]),
    /model "echo" does not accept images/,
  );
  await server.disconnect();
});

Deno.test("a client's fs error reaches the model and the user with the client's reason", async () => {
  await using workspaces = new TempDirs("acp-harness-tools-");
  const cwd = await workspaces.make();
  const server = startServer({
    config: { model: "scripted", mode: "auto" },
    script: [write("w1", "hello.txt", "hi"), { text: "done" }],
  });
  server.client.handlers.set("fs/write_text_file", () => {
    throw new RpcError({
      code: -32603,
      message: "Internal error",
      data: { details: "Permission denied for fs/write_text_file" },
    });
  });
  await server.client.initialize({ fs: { readTextFile: true, writeTextFile: true } });
  const sessionId = await server.client.newSession(cwd);
  assert.equal(await server.client.prompt(sessionId, "go"), "end_turn");
  const last = toolUpdates(server, sessionId, "w1").at(-1);
  assert.equal(last?.status, "failed");
  assert.match(JSON.stringify(last?.content), /Permission denied for fs\/write_text_file/);
  assert.match(JSON.stringify(last?.content), /client error -32603/);
  await server.disconnect();
});
