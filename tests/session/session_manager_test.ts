/**
 * `SessionManager` on the in-memory store: the lifecycle of the sessions of one connection, their
 * tool sets and disposers, without a protocol layer in between.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mergeConfig, NodeHost } from "../../mod.ts";
import { createCatalog } from "../../src/cli.ts";
import { nullLogger } from "../../src/log/logger.ts";
import type { SessionUpdate } from "../../src/protocol/acp_types.ts";
import { SessionStateError } from "../../src/session/session.ts";
import { SessionManager, SessionNotFoundError } from "../../src/session/session_manager.ts";
import type { SessionToolsInfo } from "../../src/session/tool_set_factory.ts";
import { MemorySessionStore } from "../../src/store/memory_session_store.ts";
import { HostWorkspace } from "../../src/tools/host_workspace.ts";
import { builtinTools } from "../../src/tools/builtin_tools.ts";

function manager(store = new MemorySessionStore()) {
  const config = mergeConfig({});
  const host = new NodeHost({});
  const updates: Array<{ sessionId: string; update: SessionUpdate }> = [];
  const toolCalls: SessionToolsInfo[] = [];
  const disposed: string[] = [];
  const sessions = new SessionManager({
    config,
    catalog: createCatalog(config, host),
    toolsFor: (info) => {
      toolCalls.push(info);
      info.disposer.defer(() => void disposed.push(info.sessionId));
      return builtinTools();
    },
    host,
    logger: nullLogger,
    now: () => host.now(),
    store,
    attachments: store.attachments,
    sinkFor: (sessionId) => (update) => {
      updates.push({ sessionId, update });
      return Promise.resolve();
    },
    workspaceFor: () => new HostWorkspace(host),
    ask: () => Promise.resolve("reject_once"),
  });
  return { sessions, store, updates, toolCalls, disposed };
}

const ROOTS = { cwd: "/work", additionalDirectories: [] };
const signal = new AbortController().signal;
const text = (value: string) => [{ type: "text" as const, text: value }];

Deno.test("SessionManager.create() records a session, builds its tools and registers it", async () => {
  const { sessions, store, toolCalls } = manager();
  const session = await sessions.create(ROOTS);
  assert.equal(sessions.get(session.id), session);
  assert.equal(sessions.size, 1);
  assert.equal(await sessions.exists(session.id), true);
  assert.deepEqual(toolCalls.map((info) => [info.sessionId, info.cwd]), [[session.id, "/work"]]);
  const page = await store.list({ limit: 10 });
  assert.deepEqual(page.sessions.map((summary) => summary.id), [session.id]);
  await sessions.closeAll();
});

Deno.test("SessionManager.close() settles the session, runs its disposer and frees the lease", async () => {
  const { sessions, disposed } = manager();
  const session = await sessions.create(ROOTS);
  assert.equal(await session.prompt(text("hello"), signal), "end_turn");
  await Promise.all([sessions.close(session.id), sessions.close(session.id)]);
  assert.equal(sessions.get(session.id), undefined);
  assert.deepEqual(disposed, [session.id], "the disposer ran once");
  // The lease is free: the session opens again, with its conversation.
  const reopened = await sessions.open(session.id, { cwd: "/work", replay: false });
  assert.notEqual(reopened, session);
  assert.equal(await reopened.prompt(text("again"), signal), "end_turn");
  await sessions.close("not-open");
  await sessions.closeAll();
  assert.deepEqual(disposed, [session.id, session.id]);
});

Deno.test("SessionManager.open() replays on load, refuses a second open and unknown ids", async () => {
  const store = new MemorySessionStore();
  const first = manager(store);
  const session = await first.sessions.create(ROOTS);
  await session.prompt(text("remember me"), signal);
  await first.sessions.close(session.id);
  const second = manager(store);
  const opening = second.sessions.open(session.id, { cwd: "/work", replay: true });
  assert.throws(
    () => second.sessions.open(session.id, { cwd: "/work", replay: false }),
    SessionStateError,
  );
  await opening;
  const replayed = second.updates.filter(({ update }) =>
    update.sessionUpdate === "user_message_chunk"
  );
  assert.equal(replayed.length, 1);
  await assert.rejects(
    second.sessions.open("00000000-0000-4000-8000-000000000000", { cwd: "/work", replay: false }),
    SessionNotFoundError,
  );
  await second.sessions.closeAll();
});

Deno.test("SessionManager.delete() closes the session and removes it from the store", async () => {
  const { sessions, disposed } = manager();
  const session = await sessions.create(ROOTS);
  await sessions.delete(session.id);
  assert.equal(sessions.get(session.id), undefined);
  assert.equal(await sessions.exists(session.id), false);
  assert.deepEqual(disposed, [session.id]);
  await sessions.delete(session.id);
});

Deno.test("SessionManager.closeAll() closes every session and refuses new ones", async () => {
  const { sessions, disposed } = manager();
  const a = await sessions.create(ROOTS);
  const b = await sessions.create(ROOTS);
  await sessions.closeAll();
  assert.equal(sessions.size, 0);
  assert.deepEqual(new Set(disposed), new Set([a.id, b.id]));
  await assert.rejects(sessions.create(ROOTS), SessionStateError);
});
