/**
 * Races around a session's lifecycle found in review: a prompt settling before its turn is
 * registered, a failed admission record, sessions created or opened while the connection drains,
 * close and delete during a load, a list in flight at input end, a log removed behind the host's
 * back.
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import {
  type AnyMessage,
  createAgentServer,
  createLogger,
  createMemoryPair,
  mergeConfig,
  NodeHost,
  type Stream,
} from "../../mod.ts";
import { parseScript } from "../../llm.ts";
import { createCatalog } from "../../src/cli/cli.ts";
import { settingsOf } from "../../src/cli/cli_settings.ts";
import { JsonlSessionStore } from "../../src/store/jsonl_session_store.ts";
import type { SessionStore } from "../../src/store/session_store.ts";
import { memoryClient } from "../_helpers/acp_client.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { pollUntil, settle } from "../_helpers/wait.ts";
import { withoutSpend } from "../_helpers/acp_schema.ts";

type Hooks = Partial<SessionStore>;

/**
 * The server's end of a memory pair, with a tap: `received(method)` resolves once the server
 * has read a request with that method from the stream.
 */
function tapped(stream: Stream): { stream: Stream; received: (method: string) => Promise<void> } {
  const reader = stream.readable.getReader();
  const seen: string[] = [];
  const waiters = new Set<() => void>();
  const readable = new ReadableStream<AnyMessage>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      controller.enqueue(value);
      if ("method" in value) seen.push(value.method);
      for (const wake of waiters) wake();
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
  const received = (method: string): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => {
        if (!seen.includes(method)) return;
        waiters.delete(check);
        resolve();
      };
      waiters.add(check);
      check();
    });
  return { stream: { readable, writable: stream.writable }, received };
}

/**
 * A server whose store can be intercepted method by method, in a temporary workspace and data
 * directory that disposing it removes (after disconnecting).
 */
async function serverWith(
  hooks: (inner: JsonlSessionStore) => Hooks,
  options: { script?: unknown; config?: Record<string, unknown> } = {},
) {
  const workspaceDir = await tempDir("acp-harness-review-");
  const data = await tempDir("acp-harness-review-data-");
  const [serverEnd, clientSide] = createMemoryPair();
  const { stream: serverSide, received } = tapped(serverEnd);
  const logs: string[] = [];
  const config = mergeConfig(options.config ?? {});
  const host = new NodeHost({});
  const dataDir = data.path;
  const logger = createLogger("debug", (line) => logs.push(line));
  const inner = new JsonlSessionStore({ host, dataDir, logger });
  const overrides = hooks(inner);
  const store: SessionStore = {
    create: (header) => (overrides.create ?? inner.create.bind(inner))(header),
    append: (id, events, opts) => (overrides.append ?? inner.append.bind(inner))(id, events, opts),
    exists: (id) => inner.exists(id),
    load: (id) => (overrides.load ?? inner.load.bind(inner))(id),
    list: (opts) => (overrides.list ?? inner.list.bind(inner))(opts),
    delete: (id) => (overrides.delete ?? inner.delete.bind(inner))(id),
    acquire: (id) => (overrides.acquire ?? inner.acquire.bind(inner))(id),
  };
  const script = options.script === undefined ? undefined : parseScript(options.script);
  const connection = createAgentServer({
    settings: settingsOf(config).server,
    catalog: createCatalog(config, host, { script }),
    host,
    logger,
    store,
    attachments: inner.attachments,
    retry: { attempts: 2, baseDelayMs: 5, maxDelayMs: 20 },
  }).connect(serverSide);
  const client = memoryClient(clientSide);
  const disconnect = async (): Promise<void> => {
    await (client as unknown as { close: () => Promise<void> }).close().catch(() => {});
    await connection.closed;
  };
  return {
    client,
    connection,
    logs,
    dataDir,
    workspace: workspaceDir.path,
    inner,
    received,
    disconnect,
    async [Symbol.asyncDispose]() {
      await disconnect();
      await data[Symbol.asyncDispose]();
      await workspaceDir[Symbol.asyncDispose]();
    },
  };
}

function gate(): { wait: Promise<void>; open: () => void } {
  let open = (): void => {};
  const wait = new Promise<void>((resolve) => open = resolve);
  return { wait, open };
}

// ------------------------------------------------------------------------------------------------
// 1. Session.prompt: #runPrompt can settle synchronously (no await before its `finally`), which
//    clears `#turn` BEFORE prompt() assigns it, so the slot stays taken forever.

Deno.test("a prompt whose admission record cannot be written does not wedge the session", async () => {
  let failNext = false;
  await using server = await serverWith((inner) => ({
    append: (id, events, opts) => {
      if (failNext && events.some((event) => event.type === "turn_start")) {
        failNext = false;
        throw new Error("ENOSPC: no space left on device (simulated)");
      }
      return inner.append(id, events, opts);
    },
  }));
  const { client, workspace } = server;
  await client.initialize();
  const sessionId = await client.newSession(workspace);
  failNext = true;
  await assert.rejects(client.prompt(sessionId, "first"));
  // The disk is fine again: the next prompt must run.
  let second: string;
  try {
    second = await client.prompt(sessionId, "second");
  } catch (error) {
    second = `error: ${(error as Error).message}`;
  }
  await server.disconnect();
  // Not wedged: answered at once, refused, as nothing is appended after a failed append until
  // the session is loaded again.
  assert.match(second, /^error: Internal error/);
});

Deno.test("a prompt cancelled before it starts does not wedge the session", async () => {
  await using server = await serverWith(() => ({}));
  const { client, workspace } = server;
  await client.initialize();
  const sessionId = await client.newSession(workspace);
  // prompt + $/cancel_request back to back: the handler may see an already aborted signal.
  const id = client.nextId;
  const first = client.requestRaw("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "first" }],
  });
  void client.notify("$/cancel_request", { requestId: id });
  const firstFrame = await first;
  let second: string;
  try {
    second = await client.prompt(sessionId, "second");
  } catch (error) {
    second = `error: ${(error as Error).message}`;
  }
  await server.disconnect();
  assert.deepEqual(withoutSpend(firstFrame.result), { stopReason: "cancelled" });
  assert.equal(second, "end_turn");
});

// ------------------------------------------------------------------------------------------------
// 2. SessionManager.closeAll (shutdown) snapshots the open sessions; a session/new or session/load
//    in flight registers its session afterwards, which is never closed: its lease (lock file)
//    leaks.

Deno.test("a session created while the connection drains is closed and its lock released", async () => {
  const creating = gate();
  const entered = gate();
  await using server = await serverWith((inner) => ({
    create: async (header) => {
      entered.open();
      await creating.wait;
      return await inner.create(header);
    },
  }));
  const { client, connection, dataDir, workspace } = server;
  await client.initialize();
  const pending = client.request<{ sessionId: string }>("session/new", {
    cwd: workspace,
    mcpServers: [],
  });
  await entered.wait;
  const drained = connection.drain();
  // drain() closes the sessions one macrotask after it begins; let that run first, so the
  // session/new finishes after the shutdown began (the race under test).
  await connection.disconnected;
  await settle();
  creating.open();
  // The late session/new is refused ("the server is shutting down") or, if it got through, its
  // session is closed with the rest; either way no lock is left behind.
  await pending.catch((error: Error) => assert.match(error.message, /shutting down/));
  await drained;
  await server.disconnect();
  const locks = existsSync(join(dataDir, "locks"))
    ? readdirSync(join(dataDir, "locks")).filter((name) => name.endsWith(".lock"))
    : [];
  assert.deepEqual(locks, [], "a session opened during shutdown left its lock behind");
});

// ------------------------------------------------------------------------------------------------
// 3. session/delete while a session/load of the same id is in flight: JsonlSessionStore.delete
//    uses (and releases) the lease the load holds, removes the log, and the load then registers
//    a live session with no log and no lock; its prompts are silently not recorded.

Deno.test("session/delete during session/load does not leave a live session without a log", async () => {
  const loading = gate();
  const armed = { on: false };
  const entered = gate();
  await using server = await serverWith((inner) => ({
    load: async (id) => {
      const loaded = await inner.load(id);
      if (armed.on) {
        entered.open();
        await loading.wait;
      }
      return loaded;
    },
  }));
  const { client, dataDir, workspace } = server;
  await client.initialize();
  const sessionId = await client.newSession(workspace);
  assert.equal(await client.prompt(sessionId, "hello"), "end_turn");
  await client.request("session/close", { sessionId });
  armed.on = true;
  const load = client.requestRaw("session/load", { sessionId, cwd: workspace, mcpServers: [] });
  await entered.wait;
  const deleting = client.requestRaw("session/delete", { sessionId });
  await server.received("session/delete");
  loading.open();
  const [loaded, deleted] = await Promise.all([load, deleting]);
  const logExists = existsSync(join(dataDir, "sessions", `${sessionId}.jsonl`));
  // Never a live session whose log is gone: if both succeeded, the delete came second and the
  // session is no longer open.
  if (!("error" in loaded) && !("error" in deleted)) {
    const after = await client.requestRaw("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "after delete" }],
    });
    assert.equal((after.error as { code: number } | undefined)?.code, -32002);
    assert.equal(logExists, false);
  }
  await server.disconnect();
});

// ------------------------------------------------------------------------------------------------
// 4. drain() waits only for tracked requests; session/list is not tracked, so a list in flight
//    when stdin ends is never answered (docs/protocol.md: shutdown "answers every request still in flight").

Deno.test("a session/list in flight at input end is answered", async () => {
  const listing = gate();
  const entered = gate();
  await using server = await serverWith((inner) => ({
    list: async (options) => {
      entered.open();
      await listing.wait;
      return await inner.list(options);
    },
  }));
  const { client, connection } = server;
  await client.initialize();
  const id = client.nextId;
  void client.requestRaw("session/list", {});
  await entered.wait;
  const drained = connection.drain();
  let drainedYet = false;
  void drained.then(() => drainedYet = true);
  await settle();
  assert.equal(drainedYet, false, "drain() finished while session/list was still unanswered");
  listing.open();
  await drained;
  // drain() promises every request in flight has been answered by now: let the answer cross
  // the memory stream.
  await settle();
  const answered = client.frames.some((frame) => frame.id === id && !("method" in frame));
  listing.open();
  await server.disconnect();
  assert.ok(answered, "session/list was not answered before the drain finished");
});

// ------------------------------------------------------------------------------------------------
// 5. session/close while a session/load of the same id is in flight answers at once ("not open")
//    and the load then registers the session: it stays open (lease held) after the client's
//    close was acknowledged.

Deno.test("session/close during session/load leaves the session closed", async () => {
  const loading = gate();
  const armed = { on: false };
  const entered = gate();
  await using server = await serverWith((inner) => ({
    load: async (id) => {
      const loaded = await inner.load(id);
      if (armed.on) {
        entered.open();
        await loading.wait;
      }
      return loaded;
    },
  }));
  const { client, dataDir, workspace } = server;
  await client.initialize();
  const sessionId = await client.newSession(workspace);
  await client.request("session/close", { sessionId });
  armed.on = true;
  const load = client.requestRaw("session/resume", { sessionId, cwd: workspace });
  await entered.wait;
  const closing = client.requestRaw("session/close", { sessionId });
  await server.received("session/close");
  loading.open();
  const [resumed, closed] = await Promise.all([load, closing]);
  assert.ok(!("error" in closed));
  if (!("error" in resumed)) {
    // The lock file is state on disk, announced by no event: poll for its removal (bounded).
    const lock = join(dataDir, "locks", `${sessionId}.lock`);
    await pollUntil(() => !existsSync(lock), {
      what: "close was acknowledged, yet the session is open afterwards (its lock is held)",
      timeoutMs: 2_000,
    });
  }
  await server.disconnect();
});

// ------------------------------------------------------------------------------------------------
// 6. NodeHost caches append descriptors by path. When the log is removed by anyone but this
//    NodeHost (another process, a user, a different Host instance), appends with
//    `create: false` keep "succeeding" into the unlinked inode: the store's contract ("throws
//    SessionNotFoundError when the session has no log") is not kept and the records are lost.

Deno.test("appending to a log removed behind the host's back does not silently succeed", async () => {
  const { unlinkSync } = await import("node:fs");
  const host = new NodeHost({});
  await using data = await tempDir("acp-harness-review-fd-");
  const dataDir = data.path;
  const store = new JsonlSessionStore({ host, dataDir });
  const id = crypto.randomUUID();
  const lease = await store.acquire(id);
  await store.create({
    version: 1,
    id,
    cwd: "/",
    additionalDirectories: [],
    createdAt: new Date().toISOString(),
  });
  await store.append(id, [{ type: "title", title: "one" }], { sync: true });
  unlinkSync(join(dataDir, "sessions", `${id}.jsonl`));
  let outcome = "succeeded";
  try {
    await store.append(id, [{ type: "title", title: "two" }], { sync: true });
  } catch (error) {
    outcome = `failed: ${(error as Error).name}`;
  }
  await lease.release();
  assert.notEqual(outcome, "succeeded", "the append went to an unlinked file and was lost");
});
