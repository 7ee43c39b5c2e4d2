import assert from "node:assert/strict";
import { readdir, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { RpcError } from "../_helpers/acp_client.ts";
import { startFakeLlmServer } from "../_helpers/fake_llm_server.ts";
import { openAiTurn } from "../_helpers/llm_fixtures.ts";
import { type MemoryServer, type StartOptions, startServer } from "../_helpers/server.ts";
import { tempDir, TempDirs } from "../_helpers/temp_dir.ts";

async function rejects(promise: Promise<unknown>, code: number, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof RpcError, `expected an RpcError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    assert.match(error.message, pattern);
    return true;
  });
}

async function started(
  options: StartOptions & { readonly allowedRoots?: readonly string[] } = {},
): Promise<MemoryServer> {
  const server = startServer(options);
  await server.client.initialize();
  return server;
}

type Update = Record<string, unknown>;
const kinds = (updates: Update[]): string[] =>
  updates.map((update) => update.sessionUpdate as string);

Deno.test("session/list pages newest first with a cursor and filters by cwd", async () => {
  await using workspaces = new TempDirs("acp-harness-life-");
  const cwd = await workspaces.make();
  const other = await workspaces.make();
  // A clock that steps a second on every reading orders the sessions without waiting.
  let clock = Date.parse("2026-01-01T00:00:00Z");
  const server = await started({ config: { sessionListPageSize: 2 }, now: () => clock += 1_000 });
  const { client } = server;
  const ids: string[] = [];
  for (const [index, dir] of [cwd, other, cwd, cwd].entries()) {
    const id = await client.newSession(dir);
    await client.prompt(id, `prompt number ${index}`);
    ids.push(id);
  }
  const first = await client.request<{ sessions: Update[]; nextCursor?: string }>(
    "session/list",
    {},
  );
  assert.deepEqual(first.sessions.map((s) => s.sessionId), [ids[3], ids[2]]);
  assert.equal(first.sessions[0]?.title, "prompt number 3");
  assert.equal(first.sessions[0]?.cwd, cwd);
  assert.match(first.sessions[0]?.updatedAt as string, /^\d{4}-\d\d-\d\dT/);
  assert.ok(first.nextCursor);
  const second = await client.request<{ sessions: Update[]; nextCursor?: string }>("session/list", {
    cursor: first.nextCursor,
  });
  assert.deepEqual(second.sessions.map((s) => s.sessionId), [ids[1], ids[0]]);
  assert.equal(second.nextCursor, undefined);
  // The filter matches after resolving symlinks.
  const link = join(await workspaces.make(), "link");
  await symlink(cwd, link);
  const filtered = await client.request<{ sessions: Update[] }>("session/list", { cwd: link });
  assert.deepEqual(filtered.sessions.map((s) => s.sessionId), [ids[3], ids[2]]);
  await rejects(client.request("session/list", { cursor: "not a cursor!" }), -32602, /cursor/);
  await rejects(client.request("session/list", { cursor: btoa('{"u":1}') }), -32602, /cursor/);
  await rejects(
    client.request("session/list", { cwd: "relative" }),
    -32602,
    /cwd: must be an absolute path/,
  );
  const none = await client.request<{ sessions: Update[] }>("session/list", {
    cwd: join(cwd, "gone"),
  });
  assert.deepEqual(none.sessions, []);
  assert.deepEqual(client.problems, []);
  await server.disconnect();
});

Deno.test("session/load replays the conversation; resume restores it silently; both continue it", async () => {
  await using data = await tempDir("acp-harness-data-");
  await using workspaces = new TempDirs("acp-harness-life-");
  const llm = await startFakeLlmServer();
  const cwd = await workspaces.make();
  const options: StartOptions = {
    config: {
      model: "fake/coder",
      mode: "auto",
      providers: { fake: { api: "openai-chat", baseUrl: `${llm.url}/v1` } },
      models: { "fake/coder": { contextWindow: 10_000 } },
    },
    dataDir: data.path,
  };
  const first = await started(options);
  const sessionId = await first.client.newSession(cwd);
  llm.enqueue(
    openAiTurn({
      reasoning: ["Look first."],
      text: ["Listing."],
      toolCalls: [{ id: "l1", name: "list_directory", arguments: { path: "." } }],
    }),
    openAiTurn({ text: ["Empty directory."], usage: { prompt: 300, completion: 7 } }),
  );
  assert.equal(await first.client.prompt(sessionId, "What is here?"), "end_turn");
  await first.client.request("session/set_config_option", {
    sessionId,
    configId: "mode",
    value: "read-only",
  });
  const live = first.client.updates(sessionId).map(({ update }) => update);
  await first.disconnect();

  // A restarted server on the same data directory.
  const second = await started(options);
  const loaded = await second.client.request<
    { configOptions: Array<{ id: string; currentValue: string }> }
  >(
    "session/load",
    { sessionId, cwd, mcpServers: [] },
  );
  assert.deepEqual(loaded.configOptions.map((o) => [o.id, o.currentValue]), [
    ["model", "fake/coder"],
    ["mode", "read-only"],
  ]);
  const replayed = second.client.updates(sessionId).map(({ update }) => update);
  assert.deepEqual(kinds(replayed), [
    "user_message_chunk",
    "session_info_update",
    "agent_thought_chunk",
    "agent_message_chunk",
    "tool_call",
    "tool_call_update",
    "agent_message_chunk",
    "usage_update",
  ]);
  assert.deepEqual((replayed[0]?.content as { text: string }).text, "What is here?");
  const liveMessages = live.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) =>
    u.messageId
  );
  const replayedMessages = replayed.filter((u) => u.sessionUpdate === "agent_message_chunk").map((
    u,
  ) => u.messageId);
  assert.deepEqual(replayedMessages, liveMessages, "original messageIds");
  assert.equal(replayed[5]?.status, "completed");
  assert.deepEqual(replayed.at(-1), { sessionUpdate: "usage_update", used: 307, size: 10_000 });
  // The load response came after every replayed update.
  const responseAt = second.client.frames.findIndex((f) =>
    "result" in f && (f.result as Update)?.configOptions
  );
  const lastUpdateAt = second.client.frames.findLastIndex((f) => f.method === "session/update");
  assert.ok(lastUpdateAt < responseAt);

  // The next prompt sends the whole history to the model.
  llm.enqueue(openAiTurn({ text: ["Still empty."] }));
  assert.equal(await second.client.prompt(sessionId, "And now?"), "end_turn");
  const body = llm.requests.at(-1)!.body as { messages: Array<{ role: string }> };
  assert.deepEqual(body.messages.map((m) => m.role), [
    "system",
    "user",
    "assistant",
    "tool",
    "assistant",
    "user",
  ]);
  assert.deepEqual(second.client.problems, []);
  await second.disconnect();

  // resume: the same restoration without replay.
  const third = await started(options);
  const resumed = await third.client.request<{ modes: { currentModeId: string } }>(
    "session/resume",
    {
      sessionId,
      cwd,
    },
  );
  assert.equal(resumed.modes.currentModeId, "read-only");
  assert.deepEqual(third.client.updates(sessionId), []);
  llm.enqueue(openAiTurn({ text: ["ok"] }));
  assert.equal(await third.client.prompt(sessionId, "third"), "end_turn");
  const roles =
    (llm.requests.at(-1)!.body as { messages: Array<{ role: string }> }).messages.length;
  assert.equal(roles, 8, "system, 2 × (user, assistant), tool, assistant, user");
  await third.disconnect();
  await llm.close();
});

Deno.test("load and resume check the id, the cwd and whether the session is active", async () => {
  await using workspaces = new TempDirs("acp-harness-life-");
  const cwd = await workspaces.make();
  await using data = await tempDir("acp-harness-data-");
  const server = await started({ dataDir: data.path });
  const { client } = server;
  const sessionId = await client.newSession(cwd);
  await rejects(
    client.request("session/load", { sessionId, cwd, mcpServers: [] }),
    -32602,
    /already open in this process/,
  );
  await client.request("session/close", { sessionId });
  const elsewhere = await workspaces.make();
  await rejects(
    client.request("session/resume", { sessionId, cwd: elsewhere }),
    -32602,
    new RegExp(`cwd: "${elsewhere}" does not match the session's cwd "${cwd}"`),
  );
  await rejects(
    client.request("session/load", { sessionId: crypto.randomUUID(), cwd, mcpServers: [] }),
    -32002,
    /Resource not found/,
  );
  // A second server (another store instance) cannot open what the first holds.
  await client.request("session/resume", { sessionId, cwd });
  const other = await started({ dataDir: data.path });
  await client.request("session/resume", { sessionId, cwd }).catch(() => {});
  await rejects(
    other.client.request("session/resume", { sessionId, cwd }),
    -32602,
    /session .* is already open in this acp-harness process \(pid \d+\)/,
  );
  assert.deepEqual(client.problems, []);
  await other.disconnect();
  await server.disconnect();
});

Deno.test("session/close cancels the prompt, waits for it, and leaves the session resumable", async () => {
  await using workspaces = new TempDirs("acp-harness-life-");
  const cwd = await workspaces.make();
  const server = await started({
    config: { model: "scripted" },
    script: [{ delayMs: 60_000, text: "never" }, { text: "later" }],
  });
  const { client } = server;
  const sessionId = await client.newSession(cwd);
  const prompt = client.prompt(sessionId, "hang");
  await client.waitForUpdate(sessionId, "session_info_update");
  const closes = [
    client.request("session/close", { sessionId }),
    client.request("session/close", { sessionId }),
  ];
  // Messages of a session apply in order: a prompt sent after the close finds it closed.
  const during = rejects(client.prompt(sessionId, "during close"), -32002, /Resource not found/);
  assert.equal(await prompt, "cancelled");
  assert.deepEqual(await Promise.all(closes), [{}, {}]);
  await during;
  await rejects(client.prompt(sessionId, "after close"), -32002, /Resource not found/);
  const list = await client.request<{ sessions: Update[] }>("session/list", {});
  assert.equal(list.sessions[0]?.sessionId, sessionId);
  await client.request("session/resume", { sessionId, cwd });
  assert.equal(await client.prompt(sessionId, "again"), "end_turn");
  assert.deepEqual(await client.request("session/close", { sessionId: "not-open" }), {});
  assert.deepEqual(client.problems, []);
  await server.disconnect();
});

Deno.test("session/delete removes the log, the index entry and unshared attachments", async () => {
  await using workspaces = new TempDirs("acp-harness-life-");
  const cwd = await workspaces.make();
  const PNG =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
  await using data = await tempDir("acp-harness-data-");
  const server = await started({
    config: { models: { echo: { image: true } } },
    dataDir: data.path,
  });
  const { client } = server;
  const sessionId = await client.newSession(cwd);
  await client.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "see" }, { type: "image", mimeType: "image/png", data: PNG }],
  });
  const attachments = async () => {
    try {
      return (await readdir(join(data.path, "attachments"), { recursive: true })).filter((f) =>
        /[0-9a-f]{64}$/.test(f)
      );
    } catch {
      return [];
    }
  };
  assert.equal((await attachments()).length, 1);
  assert.deepEqual(await client.request("session/delete", { sessionId }), {});
  assert.deepEqual((await client.request<{ sessions: Update[] }>("session/list", {})).sessions, []);
  await rejects(client.request("session/resume", { sessionId, cwd }), -32002, /Resource not found/);
  assert.deepEqual(await attachments(), []);
  assert.deepEqual(await client.request("session/delete", { sessionId: crypto.randomUUID() }), {});
  assert.deepEqual(client.problems, []);
  await server.disconnect();
});

Deno.test("images replay from attachments; a missing attachment degrades to a marker", async () => {
  await using workspaces = new TempDirs("acp-harness-life-");
  const cwd = await workspaces.make();
  const PNG =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
  await using data = await tempDir("acp-harness-data-");
  const options: StartOptions = {
    config: { models: { echo: { image: true } } },
    dataDir: data.path,
  };
  const first = await started(options);
  const sessionId = await first.client.newSession(cwd);
  await first.client.request("session/prompt", {
    sessionId,
    prompt: [{ type: "image", mimeType: "image/png", data: PNG }, {
      type: "text",
      text: "what is it",
    }],
  });
  await first.disconnect();
  const second = await started(options);
  await second.client.request("session/load", { sessionId, cwd, mcpServers: [] });
  const image = second.client.updates(sessionId)[0]?.update;
  assert.deepEqual(image, {
    sessionUpdate: "user_message_chunk",
    messageId: image?.messageId,
    content: { type: "image", mimeType: "image/png", data: PNG },
  });
  await second.disconnect();
  await rm(join(data.path, "attachments"), { recursive: true });
  const third = await started(options);
  await third.client.request("session/load", { sessionId, cwd, mcpServers: [] });
  const marker = third.client.updates(sessionId)[0]?.update.content as {
    type: string;
    text: string;
  };
  assert.equal(marker.type, "text");
  assert.match(marker.text, /is missing from the attachment store/);
  assert.ok(third.logs.some((line) => /attachment missing/.test(line)));
  assert.deepEqual(third.client.problems, []);
  await third.disconnect();
});

Deno.test("always answers, the title and the cost survive a restart", async () => {
  await using data = await tempDir("acp-harness-data-");
  await using workspaces = new TempDirs("acp-harness-life-");
  const cwd = await workspaces.make();
  const script = [
    {
      toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "a.txt", content: "1" } }],
      usage: { input: 100, output: 10 },
    },
    { text: "one" },
    { toolCalls: [{ id: "w2", name: "write_file", arguments: { path: "b.txt", content: "2" } }] },
    { text: "two", usage: { input: 100, output: 10 } },
  ];
  const options: StartOptions = {
    config: {
      model: "scripted",
      models: { scripted: { contextWindow: 1000, pricing: { input: 1000, output: 1000 } } },
    },
    script,
    dataDir: data.path,
  };
  const first = await started(options);
  let asked = 0;
  first.client.handlers.set("session/request_permission", () => {
    asked++;
    return { outcome: { outcome: "selected", optionId: "allow_always" } };
  });
  const sessionId = await first.client.newSession(cwd);
  assert.equal(await first.client.prompt(sessionId, "Write the files"), "end_turn");
  assert.equal(asked, 1);
  await first.disconnect();
  const second = await started(options);
  second.client.handlers.set("session/request_permission", () => {
    asked++;
    return { outcome: { outcome: "selected", optionId: "reject_once" } };
  });
  await second.client.request("session/resume", { sessionId, cwd });
  assert.equal(await second.client.prompt(sessionId, "And another"), "end_turn");
  assert.equal(asked, 1, "the remembered answer was used");
  const list = await second.client.request<{ sessions: Update[] }>("session/list", {});
  assert.equal(list.sessions[0]?.title, "Write the files");
  const usage = second.client.updates(sessionId).map(({ update }) => update).filter((u) =>
    u.sessionUpdate === "usage_update"
  );
  assert.deepEqual(usage.at(-1)?.cost, { amount: 0.22, currency: "USD" });
  await second.disconnect();
});

Deno.test("an unknown id gets -32002 even when the cwd does not exist", async () => {
  const server = await started();
  for (const method of ["session/load", "session/resume"]) {
    await rejects(
      server.client.request(method, {
        sessionId: crypto.randomUUID(),
        cwd: "/no/such/directory",
        mcpServers: [],
      }),
      -32002,
      /Resource not found/,
    );
  }
  await server.disconnect();
});

Deno.test("session/delete of a session open elsewhere gets -32602 naming it and removes nothing", async () => {
  await using workspaces = new TempDirs("acp-harness-life-");
  const cwd = await workspaces.make();
  await using data = await tempDir("acp-harness-data-");
  const first = startServer({ dataDir: data.path });
  const second = startServer({ dataDir: data.path });
  try {
    await first.client.initialize();
    await second.client.initialize();
    const sessionId = await first.client.newSession(cwd);
    assert.equal(await first.client.prompt(sessionId, "keep me"), "end_turn");
    await rejects(
      second.client.request("session/delete", { sessionId }),
      -32602,
      /sessionId: cannot delete: session .* is (already )?open in .*close it there first$/,
    );
    assert.equal(await first.client.prompt(sessionId, "still here"), "end_turn");
    const list = await second.client.request<{ sessions: Update[] }>("session/list", {});
    assert.deepEqual(list.sessions.map((session) => session.sessionId), [sessionId]);
  } finally {
    await first.disconnect();
    await second.disconnect();
  }
});

for (const blocking of [false, true]) {
  Deno.test(`session/new reads the cwd's AGENTS.md through a symlinked path; with allowed roots, only from inside them (paths checked ${blocking ? "synchronously, as on stdio" : "asynchronously"})`, async () => {
    await using workspaces = new TempDirs("acp-harness-life-");
    const llm = await startFakeLlmServer();
    const cwd = await workspaces.make();
    await writeFile(join(cwd, "AGENTS.md"), "Answer in one word.\n");
    const link = join(await workspaces.make(), "link");
    await symlink(cwd, link);
    const config = {
      model: "fake/coder",
      providers: { fake: { api: "openai-chat" as const, baseUrl: `${llm.url}/v1` } },
    };
    const systemOf = (index: number): string =>
      (llm.requests[index]!.body as { messages: Array<{ content: string }> }).messages[0]!.content;
    const server = await started({ config, blockingPathChecks: blocking });
    const sessionId = await server.client.newSession(link);
    llm.enqueue(openAiTurn({ text: ["Yes."] }));
    assert.equal(await server.client.prompt(sessionId, "ok?"), "end_turn");
    assert.match(systemOf(0), /Answer in one word\./);
    await server.disconnect();
    // A cwd outside the allowed roots is refused, and the session inside still gets its AGENTS.md.
    const elsewhere = await workspaces.make();
    await writeFile(join(elsewhere, "AGENTS.md"), "Never seen.\n");
    const fenced = await started({ config, allowedRoots: [cwd], blockingPathChecks: blocking });
    await rejects(fenced.client.newSession(elsewhere), -32602, /cwd/);
    const inside = await fenced.client.newSession(cwd);
    llm.enqueue(openAiTurn({ text: ["Yes."] }));
    assert.equal(await fenced.client.prompt(inside, "ok?"), "end_turn");
    assert.match(systemOf(1), /Answer in one word\./);
    await fenced.disconnect();
    await llm.close();
  });
}
