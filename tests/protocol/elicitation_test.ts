/**
 * Elicitation end to end in memory: `ask_user` and an MCP server's questions reach a client that
 * advertised `elicitation` as `elicitation/create` under the asking call's id (every frame checked
 * against the ACP schema), their answers come back, a cancelled turn withdraws the question
 * (`$/cancel_request`), failures decline, and a client without the capability gets no `ask_user`
 * while its MCP servers' questions are declined. Questions and answers are in the session log.
 *
 * @module
 */
import assert from "node:assert/strict";
import { fakeServer, hostPath, recordsOf } from "../mcp/_session_helpers.ts";
import type { Frame } from "../_helpers/acp_client.ts";
import { RpcError } from "../_helpers/acp_client.ts";
import { type MemoryServer, startServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { killProcessesWithMarker } from "../_helpers/mcp_servers.ts";

type Update = Record<string, unknown>;

const FORM = { form: {} };

/** A server with the scripted model and a client advertising `capabilities`. */
async function start(
  script: unknown,
  capabilities: Record<string, unknown>,
  dataDir?: string,
): Promise<MemoryServer & AsyncDisposable> {
  const server = startServer({
    config: { model: "scripted", mode: "ask" },
    script,
    env: hostPath(),
    ...(dataDir ? { dataDir } : {}),
  });
  await server.client.initialize(capabilities);
  return { ...server, [Symbol.asyncDispose]: () => server.disconnect() };
}

/** The `elicitation/create` requests the client got. */
function questions(server: MemoryServer): Frame[] {
  return server.client.frames.filter((frame) => frame.method === "elicitation/create");
}

/** The last update of tool call `id`. */
function outcome(server: MemoryServer, sessionId: string, id: string): Update {
  const updates = server.client.updates(sessionId).map(({ update }) => update)
    .filter((update) => update.toolCallId === id);
  const last = updates.at(-1);
  assert.ok(last, `updates of tool call ${id}`);
  return last;
}

/** The text of an update's content blocks. */
function textOf(update: Update): string {
  const content = (update.content ?? []) as Array<{ content?: { text?: string } }>;
  return content.map((item) => item.content?.text ?? "").join("\n");
}

const ASK = {
  toolCalls: [{
    id: "q1",
    name: "ask_user",
    arguments: { question: "Which database?", options: ["SQLite", "Postgres"] },
  }],
};

Deno.test("ask_user reaches a client that shows forms, under its call's id; the answer reaches the model and the log", async () => {
  await using dir = await tempDir("acp-harness-elicitation-");
  await using server = await start([ASK, { text: "done" }], { elicitation: FORM }, dir.path);
  server.client.handlers.set("elicitation/create", () => ({
    action: "accept",
    content: { answer: "Postgres" },
  }));
  const sessionId = await server.client.newSession(dir.path);
  assert.equal(await server.client.prompt(sessionId, "pick one"), "end_turn");
  const [question] = questions(server);
  assert.deepEqual(question?.params, {
    sessionId,
    toolCallId: "q1",
    mode: "form",
    message: "Which database?",
    requestedSchema: {
      type: "object",
      properties: { answer: { type: "string", title: "Answer", enum: ["SQLite", "Postgres"] } },
      required: ["answer"],
    },
  });
  const done = outcome(server, sessionId, "q1");
  assert.equal(done.status, "completed");
  assert.equal(textOf(done), 'The user answered: "Postgres"');
  assert.deepEqual(done.rawOutput, { action: "accept", content: { answer: "Postgres" } });
  // The question follows its call's announcement.
  const announced = server.client.frames.findIndex((frame) =>
    frame.method === "session/update" &&
    (frame.params as { update: Update }).update.toolCallId === "q1"
  );
  assert.ok(announced < server.client.frames.indexOf(question!));
  await server.client.request("session/close", { sessionId });
  const records = await recordsOf(dir.path, sessionId);
  assert.deepEqual(records.filter((record) => record.type === "elicitation").map(withoutTime), [{
    type: "elicitation",
    toolCallId: "q1",
    tool: "ask_user",
    mode: "form",
    message: "Which database?",
    action: "accept",
    content: { answer: "Postgres" },
  }]);
  assert.deepEqual(server.client.problems, []);
});

Deno.test("ask_user is not offered to a client without elicitation forms (a run's client, say)", async () => {
  for (const capabilities of [{}, { elicitation: {} }, { elicitation: { url: {} } }]) {
    await using dir = await tempDir("acp-harness-elicitation-");
    await using server = await start([ASK, { text: "done" }], capabilities);
    const sessionId = await server.client.newSession(dir.path);
    assert.equal(await server.client.prompt(sessionId, "pick one"), "end_turn");
    const failed = outcome(server, sessionId, "q1");
    assert.equal(failed.status, "failed");
    assert.match(textOf(failed), /Unknown tool "ask_user"/, JSON.stringify(capabilities));
    assert.deepEqual(questions(server), []);
    assert.deepEqual(server.client.problems, []);
  }
});

Deno.test("a cancelled turn withdraws its question; a client error or a malformed answer declines", async () => {
  await using dir = await tempDir("acp-harness-elicitation-");
  const ask = (id: string): unknown => ({
    toolCalls: [{ ...ASK.toolCalls[0], id }],
  });
  await using server = await start(
    [ask("q1"), ask("q2"), { text: "declined" }, ask("q3"), { text: "declined" }],
    { elicitation: FORM },
  );
  const asked = Promise.withResolvers<void>();
  server.client.handlers.set("elicitation/create", () => {
    asked.resolve();
    return new Promise(() => {});
  });
  const sessionId = await server.client.newSession(dir.path);
  const prompt = server.client.prompt(sessionId, "pick one");
  await asked.promise;
  await server.client.notify("session/cancel", { sessionId });
  assert.equal(await prompt, "cancelled");
  const [question] = questions(server);
  await server.client.waitFor((frames) =>
    frames.some((frame) =>
      frame.method === "$/cancel_request" &&
      (frame.params as { requestId: unknown }).requestId === question?.id
    )
  );
  server.client.handlers.set("elicitation/create", () => {
    throw new RpcError({ code: -32603, message: "cannot show forms today" });
  });
  assert.equal(await server.client.prompt(sessionId, "again"), "end_turn");
  assert.equal(textOf(outcome(server, sessionId, "q2")), "The user declined to answer.");
  server.client.handlers.set("elicitation/create", () => ({ action: "accept", content: { x: 1 } }));
  assert.equal(await server.client.prompt(sessionId, "and again"), "end_turn");
  assert.equal(textOf(outcome(server, sessionId, "q3")), "The user declined to answer.");
  assert.ok(server.logs.some((line) => line.includes("elicitation request failed; declining")));
  assert.ok(server.logs.some((line) => line.includes("malformed elicitation answer; declining")));
  assert.deepEqual(server.client.problems, []);
});

Deno.test("an MCP server's question during its tool call reaches the client under the call's id", async () => {
  await using dir = await tempDir("acp-harness-elicitation-");
  const marker = `elicitation-test-${crypto.randomUUID()}`;
  const call = {
    toolCalls: [{
      id: "m1",
      name: "mcp__fake__elicit",
      arguments: { message: "Who are you?" },
    }],
  };
  await using server = await start(
    [call, { text: "done" }],
    { elicitation: FORM },
    dir.path,
  );
  try {
    server.client.handlers.set("elicitation/create", () => ({
      action: "accept",
      content: { name: "Ada" },
    }));
    const sessionId = await server.client.newSession(dir.path, {
      mcpServers: [fakeServer("fake", ["--elicit", `--marker=${marker}`])],
    });
    assert.equal(await server.client.prompt(sessionId, "ask"), "end_turn");
    assert.deepEqual(questions(server).map((frame) => frame.params), [{
      sessionId,
      toolCallId: "m1",
      mode: "form",
      message: "Who are you?",
      requestedSchema: {
        type: "object",
        properties: { name: { type: "string" } },
        required: ["name"],
      },
    }]);
    const done = outcome(server, sessionId, "m1");
    assert.equal(done.status, "completed");
    assert.deepEqual(JSON.parse(textOf(done)), { action: "accept", content: { name: "Ada" } });
    await server.client.request("session/close", { sessionId });
    const records = await recordsOf(dir.path, sessionId);
    assert.deepEqual(
      records.filter((record) => record.type === "elicitation").map(withoutTime),
      [{
        type: "elicitation",
        toolCallId: "m1",
        tool: "mcp__fake__elicit",
        mode: "form",
        message: "Who are you?",
        action: "accept",
        content: { name: "Ada" },
      }],
    );
    assert.deepEqual(server.client.problems, []);
  } finally {
    await killProcessesWithMarker(marker);
  }
});

Deno.test("without the client's capability an MCP server's question is declined; URL questions need elicitation.url", async () => {
  await using dir = await tempDir("acp-harness-elicitation-");
  const marker = `elicitation-test-${crypto.randomUUID()}`;
  const url = "https://login.example.test/start";
  const script = [
    { toolCalls: [{ id: "f1", name: "mcp__fake__elicit", arguments: {} }] },
    { text: "declined" },
    {
      toolCalls: [{
        id: "u1",
        name: "mcp__fake__elicit",
        arguments: { mode: "url", url, elicitationId: "flow-9", complete: true },
      }],
    },
    { text: "url" },
  ];
  try {
    // No capability: declined, nothing asked.
    {
      await using server = await start(script, {});
      const sessionId = await server.client.newSession(dir.path, {
        mcpServers: [fakeServer("fake", ["--elicit", `--marker=${marker}`])],
      });
      assert.equal(await server.client.prompt(sessionId, "ask"), "end_turn");
      assert.deepEqual(JSON.parse(textOf(outcome(server, sessionId, "f1"))), {
        action: "decline",
      });
      assert.equal(await server.client.prompt(sessionId, "url"), "end_turn");
      // The MCP client refuses the URL question: the server was not told URLs can be opened.
      assert.match(textOf(outcome(server, sessionId, "u1")), /URL-mode/);
      assert.deepEqual(questions(server), []);
      assert.deepEqual(server.client.problems, []);
    }
    // Forms and URLs: the URL question is asked, and its completion told.
    {
      await using server = await start(script, { elicitation: { form: {}, url: {} } });
      server.client.handlers.set(
        "elicitation/create",
        (params) =>
          (params as { mode: string }).mode === "url"
            ? { action: "accept" }
            : { action: "decline" },
      );
      const sessionId = await server.client.newSession(dir.path, {
        mcpServers: [fakeServer("fake", ["--elicit", `--marker=${marker}`])],
      });
      assert.equal(await server.client.prompt(sessionId, "ask"), "end_turn");
      assert.equal(await server.client.prompt(sessionId, "url"), "end_turn");
      assert.deepEqual(questions(server).map((frame) => frame.params), [
        {
          sessionId,
          toolCallId: "f1",
          mode: "form",
          message: "Your name?",
          requestedSchema: {
            type: "object",
            properties: { name: { type: "string" } },
            required: ["name"],
          },
        },
        {
          sessionId,
          toolCallId: "u1",
          mode: "url",
          message: "Your name?",
          url,
          elicitationId: "flow-9",
        },
      ]);
      assert.deepEqual(JSON.parse(textOf(outcome(server, sessionId, "u1"))), { action: "accept" });
      await server.client.waitFor((frames) =>
        frames.some((frame) => frame.method === "elicitation/complete")
      );
      assert.deepEqual(
        server.client.frames.filter((frame) => frame.method === "elicitation/complete")
          .map((frame) => frame.params),
        [{ elicitationId: "flow-9" }],
      );
      assert.deepEqual(server.client.problems, []);
    }
  } finally {
    await killProcessesWithMarker(marker);
  }
});

/** A record without its sequence number and time. */
function withoutTime(record: Update): Update {
  const { seq: _seq, time: _time, ...rest } = record;
  return rest;
}
