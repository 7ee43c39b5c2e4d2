/**
 * `SessionManager` on the in-memory store (and the JSONL one for shutdown): the lifecycle of the
 * sessions of one connection, their tool sets and disposers, without a protocol layer in between.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { mergeConfig, NodeHost } from "../../mod.ts";
import { createCatalog } from "../../src/cli/cli.ts";
import { nullLogger } from "../../src/log/logger.ts";
import type { SessionUpdate } from "../../src/transport/acp_types.ts";
import { SessionStateError } from "../../src/session/session.ts";
import { SessionManager, SessionNotFoundError } from "../../src/session/session_manager.ts";
import type { SessionToolsInfo } from "../../src/session/tool_set_factory.ts";
import type { AppendFileOptions, AppendFileSyncOptions } from "../../src/host/host.ts";
import { JsonlSessionStore } from "../../src/store/jsonl_session_store.ts";
import { MemorySessionStore } from "../../src/store/memory_session_store.ts";
import { DeferredCreationStore } from "../../src/store/deferred_creation_store.ts";
import type { SessionStore } from "../../src/store/session_store.ts";
import { HostWorkspace } from "../../src/tools/host_workspace.ts";
import { builtinTools } from "../../src/tools/builtin_tools.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { sessionServices } from "../_helpers/server.ts";

function manager(
  store: SessionStore & Pick<MemorySessionStore, "attachments"> = new MemorySessionStore(),
) {
  const config = mergeConfig({});
  const host = new NodeHost({});
  const updates: Array<{ sessionId: string; update: SessionUpdate }> = [];
  const toolCalls: SessionToolsInfo[] = [];
  const disposed: string[] = [];
  const sessions = new SessionManager({
    services: sessionServices({
      catalog: createCatalog(config, host),
      toolsFor: (info) => {
        toolCalls.push(info);
        info.disposer.defer(() => void disposed.push(info.sessionId));
        return builtinTools();
      },
      host,
      store,
      attachments: store.attachments,
    }),
    logger: nullLogger,
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

/** A host that counts the session index's writes and the appends to session logs. */
class IndexWritesHost extends NodeHost {
  indexWrites = 0;
  logAppends = 0;

  override appendFile(
    path: string,
    data: string | Uint8Array,
    options: AppendFileOptions,
  ): Promise<void> {
    if (path.endsWith("/index.jsonl")) this.indexWrites++;
    return super.appendFile(path, data, options);
  }

  override appendFileSync(
    path: string,
    data: string | Uint8Array,
    options?: AppendFileSyncOptions,
  ): void {
    if (path.includes("/sessions/")) this.logAppends++;
    super.appendFileSync(path, data, options);
  }
}

Deno.test("SessionManager.closeAll() on a JSONL store: every session's final index line in a shared write, every lock removed", async () => {
  await using dir = await tempDir("acp-harness-close-all-");
  const host = new IndexWritesHost({});
  const store = new JsonlSessionStore({ host, dataDir: dir.path });
  const { sessions } = manager(store);
  const ids: string[] = [];
  for (let n = 0; n < 300; n++) ids.push((await sessions.create(ROOTS)).id);
  // A turn in some: their last record is later than their creation.
  for (const id of ids.filter((_, n) => n % 30 === 0)) {
    assert.equal(await sessions.get(id)!.prompt(text("hello"), signal), "end_turn");
  }
  const before = host.indexWrites;
  await sessions.closeAll();
  // The sessions with a turn had a line due: one write took them all, or two when some sessions
  // finished closing after the first write began.
  assert.ok(host.indexWrites - before >= 1, "the due lines were written");
  assert.ok(host.indexWrites - before <= 2, `${host.indexWrites - before} index writes`);
  assert.deepEqual(await readdir(`${dir.path}/locks`), []);
  const names = await readdir(dir.path);
  assert.ok(!names.includes("index.lock"));
  const updatedAt = new Map<string, string>();
  for (
    const line of (await readFile(`${dir.path}/index.jsonl`, "utf8")).trimEnd().split("\n").slice(1)
  ) {
    const entry = JSON.parse(line) as { id: string; updatedAt: string };
    updatedAt.set(entry.id, entry.updatedAt);
  }
  for (const id of ids) {
    const log = (await readFile(`${dir.path}/sessions/${id}.jsonl`, "utf8")).trimEnd().split("\n");
    assert.equal(updatedAt.get(id), JSON.parse(log.at(-1)!).time, `updatedAt of ${id}`);
  }
});

Deno.test("SessionManager.create() on a JSONL store: a new session is one file written with its selection, and an idle one closes without another write", async () => {
  await using dir = await tempDir("acp-harness-one-write-");
  const host = new IndexWritesHost({});
  const store = new JsonlSessionStore({ host, dataDir: dir.path });
  const { sessions } = manager(store);
  const ids: string[] = [];
  for (let n = 0; n < 3; n++) ids.push((await sessions.create(ROOTS)).id);
  const indexWrites = host.indexWrites;
  await sessions.closeAll();
  assert.equal(host.logAppends, 0, "no append to any log");
  assert.equal(host.indexWrites, indexWrites, "nothing due in the index at close");
  for (const id of ids) {
    const log = (await readFile(`${dir.path}/sessions/${id}.jsonl`, "utf8")).trimEnd().split("\n");
    assert.deepEqual(log.slice(1).map((line) => JSON.parse(line).type), ["config"]);
  }
  // Reopened, each has its selection.
  const again = manager(new JsonlSessionStore({ host, dataDir: dir.path }));
  const reopened = await again.sessions.open(ids[0]!, { cwd: ROOTS.cwd, replay: false });
  assert.equal(
    reopened.configOptions().find((option) => option.id === "mode")?.currentValue,
    "ask",
  );
  await again.sessions.closeAll();
});

/** A manager on a {@link DeferredCreationStore} whose deferred tasks run when the test says. */
function deferredManager(inner = new MemorySessionStore()) {
  const tasks: Array<() => void> = [];
  const deferred = new DeferredCreationStore(inner, (task) => tasks.push(task));
  const made = manager(Object.assign(deferred, { attachments: inner.attachments }));
  return {
    ...made,
    inner,
    run(): void {
      for (const task of tasks.splice(0)) task();
    },
  };
}

Deno.test("SessionManager.create() on a DeferredCreationStore: the session is written after, and a prompt and the list wait for it", async () => {
  const { sessions, inner, updates, run } = deferredManager();
  const session = await sessions.create(ROOTS);
  assert.equal(await inner.exists(session.id), false, "not written yet");
  assert.ok(session.created, "its creation is pending");
  const prompted = session.prompt(text("written first"), signal);
  const listed = sessions.list({ limit: 10 });
  await Promise.resolve();
  assert.deepEqual(updates, [], "nothing shown before the session is written");
  run();
  assert.equal(await prompted, "end_turn");
  assert.equal(session.created, undefined);
  assert.deepEqual((await listed).sessions.map((summary) => summary.id), [session.id]);
  const records = (await inner.load(session.id))?.records.map((record) => record.type);
  assert.deepEqual(records?.slice(0, 3), ["config", "turn_start", "user"]);
  await sessions.closeAll();
});

Deno.test("SessionManager: a prompt waiting for its session to be written is cancelled by a cancel, recording nothing", async () => {
  const { sessions, inner, run } = deferredManager();
  const session = await sessions.create(ROOTS);
  const prompted = session.prompt(text("never admitted"), signal);
  session.cancel();
  assert.equal(await prompted, "cancelled");
  run();
  await sessions.closeAll();
  const records = (await inner.load(session.id))?.records.map((record) => record.type);
  assert.deepEqual(records, ["config"]);
});

Deno.test("SessionManager: when a session cannot be written, its first prompt fails with the store's error", async () => {
  const inner = new MemorySessionStore();
  const { sessions, run } = deferredManager(
    Object.assign(inner, {
      create: () => Promise.reject(new Error("disk full")),
    }),
  );
  const session = await sessions.create(ROOTS);
  const prompted = session.prompt(text("lost"), signal);
  run();
  await assert.rejects(prompted, /disk full/);
  await sessions.closeAll();
});

Deno.test("SessionManager.stateOf() follows a session's lifecycle: loading, open, prompting, then gone once closed", async () => {
  const { sessions } = manager();
  const session = await sessions.create(ROOTS);
  assert.equal(sessions.stateOf(session.id), "open");
  const turn = session.prompt(text("hello"), signal);
  assert.equal(sessions.stateOf(session.id), "prompting");
  assert.equal(await turn, "end_turn");
  assert.equal(session.state, "open");
  await sessions.close(session.id);
  assert.equal(session.state, "closed");
  assert.equal(sessions.stateOf(session.id), undefined);
  const opening = sessions.open(session.id, { cwd: "/work", replay: false });
  assert.equal(sessions.stateOf(session.id), "loading");
  const reopened = await opening;
  assert.equal(sessions.stateOf(reopened.id), "open");
  await sessions.closeAll();
  assert.equal(reopened.state, "closed");
});
