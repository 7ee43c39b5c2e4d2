/**
 * `session/fork` over the in-memory transport: its answer (like `session/new`'s, checked against
 * the unstable schema), the fork open and owned by the requesting connection, its errors (as
 * `session/new` and `session/load` give them), and a fork of a session running on another
 * connection.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createMemoryPair } from "../../../mod.ts";
import { forkRequest } from "../../../src/protocol/handlers/session_fork.ts";
import { type AcpTestClient, memoryClient, RpcError } from "../../_helpers/acp_client.ts";
import { createTestAgentServer, startServer } from "../../_helpers/server.ts";
import { TempDirs } from "../../_helpers/temp_dir.ts";

type Update = Record<string, unknown>;

async function rejects(promise: Promise<unknown>, code: number, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof RpcError, `expected an RpcError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    assert.match(error.message, pattern);
    return true;
  });
}

/** The texts of a session's message chunks, in order. */
function texts(client: AcpTestClient, sessionId: string): string[] {
  return client.updates(sessionId).map(({ update }) => update)
    .filter((update) => String(update.sessionUpdate).endsWith("message_chunk"))
    .map((update) => (update.content as { text: string }).text);
}

Deno.test("session/fork answers like session/new with a new open session of this connection", async () => {
  await using dirs = new TempDirs("acp-harness-fork-");
  const cwd = await dirs.make();
  const other = await dirs.make();
  const extra = await dirs.make();
  const server = startServer();
  const { client } = server;
  await client.initialize();
  const sourceId = await client.newSession(cwd);
  assert.equal(await client.prompt(sourceId, "one"), "end_turn");
  await client.request("session/set_mode", { sessionId: sourceId, modeId: "read-only" });

  const fork = await client.request<{
    sessionId: string;
    modes: { currentModeId: string };
    configOptions: Array<{ id: string; currentValue: unknown }>;
  }>("session/fork", {
    sessionId: sourceId,
    cwd: other,
    additionalDirectories: [extra],
    mcpServers: [],
  });
  assert.notEqual(fork.sessionId, sourceId);
  assert.equal(fork.modes.currentModeId, "read-only", "the source's mode is copied");
  assert.equal(
    fork.configOptions.find((option) => option.id === "mode")?.currentValue,
    "read-only",
  );
  // The fork is open here: its commands and its spend so far follow the answer, and it prompts.
  await client.waitForUpdate(fork.sessionId, "available_commands_update");
  assert.equal(await client.prompt(fork.sessionId, "two"), "end_turn");
  assert.deepEqual(texts(client, fork.sessionId), ["Echo: two"], "no replay: like session/new");
  assert.deepEqual(texts(client, sourceId), ["Echo: one"]);

  const list = await client.request<{ sessions: Update[] }>("session/list", {});
  const listed = list.sessions.find((entry) => entry.sessionId === fork.sessionId);
  assert.deepEqual([listed?.cwd, listed?.title], [other, "one"]);
  assert.deepEqual(listed?.additionalDirectories, [extra]);

  // Reopened, it replays the copied conversation, then its own turn.
  await client.request("session/close", { sessionId: fork.sessionId });
  const before = client.updates(fork.sessionId).length;
  await client.request("session/load", { sessionId: fork.sessionId, cwd: other, mcpServers: [] });
  const replayed = client.updates(fork.sessionId).slice(before).map(({ update }) => update)
    .filter((update) => String(update.sessionUpdate).endsWith("message_chunk"))
    .map((update) => (update.content as { text: string }).text);
  assert.deepEqual(replayed, ["one", "Echo: one", "two", "Echo: two"]);
  assert.deepEqual(client.problems, []);
  await server.disconnect();
});

Deno.test("session/fork rejects bad params as session/new does, and an unknown source as session/load", async () => {
  await using dirs = new TempDirs("acp-harness-fork-");
  const cwd = await dirs.make();
  const server = startServer();
  const { client } = server;
  await client.initialize();
  const sourceId = await client.newSession(cwd);
  const unknown = crypto.randomUUID();
  const load = await client.requestRaw("session/load", { sessionId: unknown, cwd, mcpServers: [] });
  const fork = await client.requestRaw("session/fork", { sessionId: unknown, cwd });
  assert.deepEqual(fork.error, load.error, "the same not-found error as session/load");
  assert.equal((fork.error as { code: number }).code, -32002);

  const fail = (params: unknown, pattern: RegExp) =>
    rejects(client.request("session/fork", params), -32602, pattern);
  await fail(undefined, /params/);
  await fail({ cwd }, /sessionId/);
  await fail({ sessionId: sourceId }, /^cwd|cwd:/);
  await fail({ sessionId: sourceId, cwd: "relative/dir" }, /cwd: must be an absolute path/);
  await fail({ sessionId: sourceId, cwd: join(cwd, "missing") }, /cwd: must be an existing/);
  await fail(
    { sessionId: sourceId, cwd, additionalDirectories: [42] },
    /additionalDirectories\[0\]/,
  );
  await fail(
    { sessionId: sourceId, cwd, additionalDirectories: ["rel"] },
    /additionalDirectories\[0\]: must be an absolute path/,
  );
  await fail({ sessionId: sourceId, cwd, mcpServers: "none" }, /mcpServers/);
  await fail({ sessionId: sourceId, cwd, mcpServers: [{ name: "x" }] }, /mcpServers\[0\]/);
  await fail({ sessionId: sourceId, cwd, _meta: { "acp-harness": 3 } }, /_meta/);
  // Nothing was made by any of them.
  const list = await client.request<{ sessions: Update[] }>("session/list", {});
  assert.deepEqual(list.sessions.map((entry) => entry.sessionId), [sourceId]);
  assert.deepEqual(client.problems, []);
  await server.disconnect();
});

Deno.test("session/fork of a session running on another connection copies its finished turns", async () => {
  await using dirs = new TempDirs("acp-harness-fork-");
  const cwd = await dirs.make();
  const { server } = createTestAgentServer({
    config: { model: "scripted" },
    script: [
      { text: "first" },
      { toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "a.txt", content: "x" } }] },
      { text: "after" },
    ],
  });
  const connect = () => {
    const [serverSide, clientSide] = createMemoryPair();
    const connection = server.connect(serverSide);
    return { client: memoryClient(clientSide), connection };
  };
  const a = connect();
  const b = connect();
  await a.client.initialize();
  await b.client.initialize();
  const sourceId = await a.client.newSession(cwd);
  assert.equal(await a.client.prompt(sourceId, "one"), "end_turn");
  // The second turn waits for a permission answer: it is under way while the fork is made.
  const { promise: answered, resolve: answer } = Promise.withResolvers<unknown>();
  a.client.handlers.set("session/request_permission", () => answered);
  const running = a.client.prompt(sourceId, "two");
  await a.client.waitFor((frames) =>
    frames.some((frame) => frame.method === "session/request_permission")
  );

  const fork = await b.client.request<{ sessionId: string }>("session/fork", {
    sessionId: sourceId,
    cwd,
  });
  // Owned by the connection that asked: the other cannot prompt it.
  await rejects(a.client.prompt(fork.sessionId, "mine?"), -32002, /not found/i);
  answer({ outcome: { outcome: "selected", optionId: "reject_once" } });
  assert.equal(await running, "end_turn", "the source finishes its turn");

  await b.client.request("session/close", { sessionId: fork.sessionId });
  await b.client.request("session/load", { sessionId: fork.sessionId, cwd, mcpServers: [] });
  assert.deepEqual(texts(b.client, fork.sessionId), ["one", "first"]);
  assert.deepEqual([...a.client.problems, ...b.client.problems], []);
  await server.close();
});

Deno.test("forkRequest() checks the field types and keeps what was sent", () => {
  assert.deepEqual(forkRequest({ sessionId: "s", cwd: "/w", additionalDirectories: null }), {
    sessionId: "s",
    cwd: "/w",
    additionalDirectories: null,
  });
  assert.throws(() => forkRequest([]), /params/);
  assert.throws(() => forkRequest({ sessionId: 1, cwd: "/w" }), /sessionId/);
  assert.throws(() => forkRequest({ sessionId: "s", cwd: "/w", _meta: [] }), /_meta/);
  assert.throws(
    () => forkRequest({ sessionId: "s", cwd: "/w", additionalDirectories: "/x" }),
    /additionalDirectories/,
  );
});
