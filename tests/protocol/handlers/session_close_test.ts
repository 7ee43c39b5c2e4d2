/**
 * `session/delete` of a session with descendants (the sessions it started, theirs, …): they go
 * with it, those open on the deleting connection are closed first, and one open on another
 * connection or in another process stops the delete before anything is removed.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createMemoryPair } from "../../../mod.ts";
import { type AcpTestClient, memoryClient, RpcError } from "../../_helpers/acp_client.ts";
import { createTestAgentServer, startServer } from "../../_helpers/server.ts";
import { tempDir, TempDirs } from "../../_helpers/temp_dir.ts";

type Page = { sessions: Array<{ sessionId: string }> };

const CHILDREN = { _meta: { "acp-harness": { children: true } } };

function parentMeta(sessionId: string): Record<string, unknown> {
  return { _meta: { "acp-harness": { parent: { sessionId, toolCallId: "call_1" } } } };
}

/** Every session id the client lists, children included. */
async function listed(client: AcpTestClient): Promise<string[]> {
  const page = await client.request<Page>("session/list", CHILDREN);
  return page.sessions.map((session) => session.sessionId).sort();
}

/** A parent, its child and its grandchild, in `cwd`. */
async function family(client: AcpTestClient, cwd: string): Promise<string[]> {
  const parent = await client.newSession(cwd);
  const child = await client.newSession(cwd, parentMeta(parent));
  const grandchild = await client.newSession(cwd, parentMeta(child));
  return [parent, child, grandchild];
}

async function refused(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof RpcError, `expected an RpcError, got ${String(error)}`);
    assert.equal(error.code, -32602, error.message);
    assert.match(error.message, pattern);
    return true;
  });
}

for (const store of ["memory", "JSONL"]) {
  Deno.test(`session/delete (${store}): a parent goes with its descendants, open ones here closed first`, async () => {
    await using workspaces = new TempDirs("acp-harness-lineage-");
    const cwd = await workspaces.make();
    await using data = await tempDir("acp-harness-data-");
    const server = startServer(store === "JSONL" ? { dataDir: data.path } : {});
    const { client } = server;
    await client.initialize();
    try {
      const [parent, child, grandchild] = await family(client, cwd);
      const other = await client.newSession(cwd);
      assert.equal(await client.prompt(child!, "hello"), "end_turn");
      assert.deepEqual(await client.request("session/delete", { sessionId: parent }), {});
      assert.deepEqual(await listed(client), [other]);
      for (const sessionId of [parent, child, grandchild]) {
        await assert.rejects(
          client.request("session/load", { sessionId, cwd, mcpServers: [] }),
          (error: unknown) => error instanceof RpcError && error.code === -32002,
        );
      }
      // The closed child takes no more prompts.
      await assert.rejects(client.prompt(child!, "again"), RpcError);
      // Deleting a child leaves its parent.
      const [kept, gone] = await family(client, cwd);
      await client.request("session/delete", { sessionId: gone });
      assert.deepEqual(await listed(client), [kept, other].sort());
      assert.deepEqual(client.problems, []);
    } finally {
      await server.disconnect();
    }
  });
}

Deno.test("session/delete: a descendant open on another connection stops it; nothing is removed", async () => {
  await using workspaces = new TempDirs("acp-harness-lineage-");
  const cwd = await workspaces.make();
  const { server } = createTestAgentServer();
  const connect = () => {
    const [serverSide, clientSide] = createMemoryPair();
    return { connection: server.connect(serverSide), client: memoryClient(clientSide) };
  };
  const mine = connect();
  const theirs = connect();
  try {
    await mine.client.initialize();
    await theirs.client.initialize();
    const [parent, child] = await family(mine.client, cwd);
    await mine.client.request("session/close", { sessionId: child });
    await theirs.client.request("session/resume", { sessionId: child, cwd });
    await refused(
      mine.client.request("session/delete", { sessionId: parent }),
      new RegExp(
        `^Invalid params: sessionId: cannot delete: session ${child}, started by session ${parent} ` +
          "or one of its descendants, is open on another connection of this server; close it " +
          "there first$",
      ),
    );
    assert.equal((await listed(mine.client)).length, 3);
    assert.equal(await mine.client.prompt(parent!, "still open"), "end_turn");
    await theirs.client.request("session/close", { sessionId: child });
    await mine.client.request("session/delete", { sessionId: parent });
    assert.deepEqual(await listed(mine.client), []);
    assert.deepEqual([...mine.client.problems, ...theirs.client.problems], []);
  } finally {
    for (const side of [mine, theirs]) {
      await (side.client as unknown as { close: () => Promise<void> }).close();
      await side.connection.closed;
    }
    await server.close();
  }
});

Deno.test("session/delete: a descendant open in another process stops it; nothing is removed", async () => {
  await using workspaces = new TempDirs("acp-harness-lineage-");
  const cwd = await workspaces.make();
  await using data = await tempDir("acp-harness-data-");
  const first = startServer({ dataDir: data.path });
  const second = startServer({ dataDir: data.path });
  try {
    await first.client.initialize();
    await second.client.initialize();
    const [parent, child, grandchild] = await family(first.client, cwd);
    await first.client.request("session/close", { sessionId: grandchild });
    await second.client.request("session/resume", { sessionId: grandchild, cwd });
    await refused(
      first.client.request("session/delete", { sessionId: parent }),
      new RegExp(
        `sessionId: cannot delete: session ${grandchild} is (already )?open in .*close it there first$`,
      ),
    );
    assert.deepEqual(await listed(first.client), [parent, child, grandchild].sort());
    assert.equal(await first.client.prompt(child!, "still open"), "end_turn");
    await second.client.request("session/close", { sessionId: grandchild });
    await first.client.request("session/delete", { sessionId: parent });
    assert.deepEqual(await listed(second.client), []);
  } finally {
    await first.disconnect();
    await second.disconnect();
  }
});

Deno.test("session/delete of a malformed or unknown id answers {} on every store (no internal error)", async () => {
  // A regression the torture frames scenario found: the cascade asked the store for the lease of
  // an id no store can keep, and the store's refusal came back as -32603.
  await using dir = await tempDir("acp-harness-delete-ids-");
  for (const dataDir of [undefined, dir.path]) {
    const server = startServer(dataDir ? { dataDir } : {});
    await server.client.initialize();
    for (const sessionId of ["/", "x".repeat(300), "../etc", crypto.randomUUID()]) {
      assert.deepEqual(await server.client.request("session/delete", { sessionId }), {});
    }
    assert.deepEqual(server.client.problems, []);
    await server.disconnect();
  }
});
