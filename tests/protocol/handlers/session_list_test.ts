/**
 * `session/list` and session lineage: `session/new` records `_meta["acp-harness"].parent`
 * (validated), the list leaves the sessions with a parent out unless its `_meta` asks for them
 * (every session, or one session's children), and an entry with a parent names it in `_meta`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { RpcError } from "../../_helpers/acp_client.ts";
import { type MemoryServer, startServer } from "../../_helpers/server.ts";
import { tempDir, TempDirs } from "../../_helpers/temp_dir.ts";

type Entry = Record<string, unknown> & { sessionId: string };
type Page = { sessions: Entry[]; nextCursor?: string };

async function rejects(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof RpcError, `expected an RpcError, got ${String(error)}`);
    assert.equal(error.code, -32602, error.message);
    assert.match(error.message, pattern);
    return true;
  });
}

function parentMeta(sessionId: string, toolCallId = "call_1"): Record<string, unknown> {
  return { _meta: { "acp-harness": { parent: { sessionId, toolCallId } } } };
}

/** Every page of `session/list` with `params`. */
async function listAll(server: MemoryServer, params: Record<string, unknown> = {}) {
  const entries: Entry[] = [];
  let cursor: string | undefined;
  do {
    const page: Page = await server.client.request<Page>("session/list", {
      ...params,
      ...(cursor ? { cursor } : {}),
    });
    entries.push(...page.sessions);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return entries;
}

for (const store of ["memory", "JSONL"]) {
  Deno.test(`session/list (${store}): children are left out unless asked for, paging stays exact`, async () => {
    await using workspaces = new TempDirs("acp-harness-lineage-");
    const cwd = await workspaces.make();
    await using data = await tempDir("acp-harness-data-");
    let clock = Date.parse("2026-01-01T00:00:00Z");
    const server = startServer({
      config: { sessionListPageSize: 2 },
      now: () => clock += 1_000,
      ...(store === "JSONL" ? { dataDir: data.path } : {}),
    });
    const { client } = server;
    await client.initialize();
    try {
      const top = [await client.newSession(cwd), await client.newSession(cwd)];
      const children = [
        await client.newSession(cwd, parentMeta(top[0]!, "call_a")),
        await client.newSession(cwd, parentMeta(top[0]!, "call_b")),
        await client.newSession(cwd, parentMeta(top[1]!)),
      ];
      const grandchild = await client.newSession(cwd, parentMeta(children[0]!, "call_c"));
      const third = await client.newSession(cwd);

      // The default: the sessions without a parent, pages still full.
      const first = await client.request<Page>("session/list", {});
      assert.deepEqual(first.sessions.map((s) => s.sessionId), [third, top[1]]);
      assert.deepEqual((await listAll(server)).map((s) => s.sessionId), [third, top[1], top[0]]);
      assert.ok((await listAll(server)).every((entry) => entry._meta === undefined));

      // Every session, an entry with a parent naming it.
      const all = await listAll(server, { _meta: { "acp-harness": { children: true } } });
      assert.deepEqual(
        all.map((s) => s.sessionId),
        [third, grandchild, children[2], children[1], children[0], top[1], top[0]],
      );
      assert.deepEqual(all[1]?._meta, {
        "acp-harness": { parent: { sessionId: children[0], toolCallId: "call_c" } },
      });
      assert.equal(all[0]?._meta, undefined);

      // One session's children (not its grandchildren), with the cwd filter too.
      const mine = await listAll(server, { _meta: { "acp-harness": { parent: top[0] } } });
      assert.deepEqual(mine.map((s) => s.sessionId), [children[1], children[0]]);
      assert.deepEqual(mine.map((s) => s._meta), [
        { "acp-harness": { parent: { sessionId: top[0], toolCallId: "call_b" } } },
        { "acp-harness": { parent: { sessionId: top[0], toolCallId: "call_a" } } },
      ]);
      const elsewhere = await workspaces.make();
      assert.deepEqual(
        await listAll(server, { cwd: elsewhere, _meta: { "acp-harness": { parent: top[0] } } }),
        [],
      );
      assert.deepEqual(
        (await listAll(server, { cwd, _meta: { "acp-harness": { children: false } } }))
          .map((s) => s.sessionId),
        [third, top[1], top[0]],
      );

      // A child session loads like any other.
      await client.request("session/close", { sessionId: grandchild });
      await client.request("session/load", { sessionId: grandchild, cwd, mcpServers: [] });
      assert.deepEqual(client.problems, []);
    } finally {
      await server.disconnect();
    }
  });
}

Deno.test("session/new and session/list: a bad lineage value gets -32602 naming the field", async () => {
  await using workspaces = new TempDirs("acp-harness-lineage-");
  const cwd = await workspaces.make();
  const server = startServer();
  const { client } = server;
  await client.initialize();
  try {
    const bad: Array<[unknown, RegExp]> = [
      ["s", /_meta\["acp-harness"\]\.parent: must be an object/],
      [{ toolCallId: "c" }, /_meta\["acp-harness"\]\.parent\.sessionId: must be a string/],
      [{ sessionId: "", toolCallId: "c" }, /parent\.sessionId: must be a string of 1 to 256/],
      [{ sessionId: "x".repeat(257), toolCallId: "c" }, /parent\.sessionId: .*257 characters/],
      [{ sessionId: "s", toolCallId: 7 }, /_meta\["acp-harness"\]\.parent\.toolCallId: .*got 7/],
    ];
    for (const [parent, pattern] of bad) {
      await rejects(
        client.request("session/new", {
          cwd,
          mcpServers: [],
          _meta: { "acp-harness": { parent } },
        }),
        pattern,
      );
    }
    const list = (own: unknown) =>
      client.request("session/list", { _meta: { "acp-harness": own } });
    await rejects(list("yes"), /_meta\["acp-harness"\]: must be an object/);
    await rejects(list({ children: "yes" }), /_meta\["acp-harness"\]\.children: must be true or/);
    await rejects(list({ parent: 5 }), /_meta\["acp-harness"\]\.parent: must be a session id/);
    await rejects(list({ parent: "a", children: true }), /give children or parent, not both/);
    assert.deepEqual((await client.request<Page>("session/list", {})).sessions, []);
    assert.deepEqual(client.problems, []);
  } finally {
    await server.disconnect();
  }
});
