/**
 * `SessionManager.fork()` and `copyForFork()` on every store (memory, JSONL, PostgreSQL): the
 * fork is a new session whose log starts with the source's committed records and whose header
 * names the source; the model sees the copied conversation; a restart loads and resumes it; the
 * source is untouched (even while it runs); attachments stay alive while the fork references them.
 *
 * @module
 */
import assert from "node:assert/strict";
import { appendFile, readFile } from "node:fs/promises";
import { join } from "node:path";
import { NodeHost } from "../../mod.ts";
import type { LlmEvent, LlmMessage, LlmProvider, LlmRequest } from "../../src/llm/provider.ts";
import { nullLogger } from "../../src/log/logger.ts";
import { copyForFork } from "../../src/session/session_fork.ts";
import { SessionManager, SessionNotFoundError } from "../../src/session/session_manager.ts";
import type { SessionUpdate } from "../../src/transport/acp_types.ts";
import { JsonlSessionStore } from "../../src/store/jsonl_session_store.ts";
import { MemorySessionStore } from "../../src/store/memory_session_store.ts";
import { openPostgresStore } from "../../src/store/postgres/postgres_store.ts";
import type { AttachmentStore, SessionStore, StoredEvent } from "../../src/store/session_store.ts";
import { HostWorkspace } from "../../src/tools/host_workspace.ts";
import { postgresTest, withTestDatabase } from "../_helpers/postgres.ts";
import { sessionServices } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { fakeCatalog, gate, GatedProvider, modelInfo } from "./_fakes.ts";

/** Answers `answer <n>` and keeps what each request's conversation was, as `role:text`. */
class RecordingProvider implements LlmProvider {
  readonly id = "fake";
  readonly requests: string[][] = [];

  async *stream(request: LlmRequest): AsyncIterable<LlmEvent> {
    this.requests.push(request.messages.map(summary));
    await Promise.resolve();
    yield { type: "text-delta", text: `answer ${this.requests.length}` };
    yield { type: "usage", usage: { input: 10, output: 2 } };
    yield { type: "finish", reason: "stop" };
  }
}

function summary(message: LlmMessage): string {
  if (message.role === "user") {
    return `user:${
      message.content.map((part) => part.type === "text" ? part.text : `[${part.type}]`).join("")
    }`;
  }
  return message.role === "assistant" ? `assistant:${message.text}` : `tool:${message.content}`;
}

/** A store to fork on, and how to open it again (a restart). */
interface Backend extends AsyncDisposable {
  readonly store: SessionStore;
  readonly attachments: AttachmentStore;
  reopen(): Promise<{ store: SessionStore; attachments: AttachmentStore } & AsyncDisposable>;
}

function manager(
  backend: { store: SessionStore; attachments: AttachmentStore },
  provider: LlmProvider,
) {
  const host = new NodeHost({});
  const updates: Array<{ sessionId: string; update: SessionUpdate }> = [];
  const sessions = new SessionManager({
    services: sessionServices({
      catalog: fakeCatalog(provider, modelInfo({ image: true })),
      settings: { model: "fake/model" },
      host,
      store: backend.store,
      attachments: backend.attachments,
    }),
    logger: nullLogger,
    sinkFor: (sessionId) => (update) => {
      updates.push({ sessionId, update });
      return Promise.resolve();
    },
    workspaceFor: () => new HostWorkspace(host),
    ask: () => Promise.resolve("reject_once"),
  });
  return { sessions, updates };
}

const signal = new AbortController().signal;
const text = (value: string) => [{ type: "text" as const, text: value }];
const SOURCE_ROOTS = { cwd: "/work", additionalDirectories: [] };
const FORK_ROOTS = { cwd: "/elsewhere", additionalDirectories: ["/extra"] };

function memoryBackend(): Promise<Backend> {
  const store = new MemorySessionStore();
  const backend = { store, attachments: store.attachments };
  return Promise.resolve({
    ...backend,
    reopen: () => Promise.resolve({ ...backend, [Symbol.asyncDispose]: () => Promise.resolve() }),
    [Symbol.asyncDispose]: () => Promise.resolve(),
  });
}

async function jsonlBackend(): Promise<Backend & { readonly dataDir: string }> {
  const dir = await tempDir("acp-harness-fork-");
  const dataDir = join(dir.path, "data");
  const open = () => {
    const store = new JsonlSessionStore({ host: new NodeHost({}), dataDir });
    return { store, attachments: store.attachments };
  };
  return {
    ...open(),
    dataDir,
    reopen: () => Promise.resolve({ ...open(), [Symbol.asyncDispose]: () => Promise.resolve() }),
    [Symbol.asyncDispose]: () => dir[Symbol.asyncDispose](),
  };
}

async function postgresBackend(url: string): Promise<Backend> {
  const database = await withTestDatabase(url);
  const open = async () => {
    const pg = await openPostgresStore({
      url: database.url,
      logger: nullLogger,
      leaseTtlMs: 3_000,
    });
    return {
      store: pg.store,
      attachments: pg.attachments,
      [Symbol.asyncDispose]: () => pg.close(),
    };
  };
  const first = await open();
  return {
    store: first.store,
    attachments: first.attachments,
    reopen: open,
    async [Symbol.asyncDispose]() {
      try {
        await first[Symbol.asyncDispose]();
      } finally {
        await database[Symbol.asyncDispose]();
      }
    },
  };
}

/** What the fork tests check on one store. */
async function forkCopiesAndRestarts(backend: Backend): Promise<void> {
  const provider = new RecordingProvider();
  const first = manager(backend, provider);
  const source = await first.sessions.create(SOURCE_ROOTS);
  assert.equal(await source.prompt(text("one"), signal), "end_turn");
  assert.equal(await source.prompt(text("two"), signal), "end_turn");
  const before = await backend.store.load(source.id);
  assert.ok(before);

  const fork = await first.sessions.fork(source.id, FORK_ROOTS);
  assert.notEqual(fork.id, source.id);
  assert.equal(fork.cwd, "/elsewhere");
  assert.deepEqual(fork.additionalDirectories, ["/extra"]);
  assert.equal(first.sessions.get(fork.id), fork, "the fork is open in this manager");
  assert.equal(await fork.prompt(text("three"), signal), "end_turn");
  assert.deepEqual(provider.requests.at(-1), [
    "user:one",
    "assistant:answer 1",
    "user:two",
    "assistant:answer 2",
    "user:three",
  ]);
  // The source goes on by itself: it never sees the fork's turn.
  assert.equal(await source.prompt(text("four"), signal), "end_turn");
  assert.deepEqual(provider.requests.at(-1)?.slice(-2), ["assistant:answer 2", "user:four"]);

  const stored = await backend.store.load(fork.id);
  assert.ok(stored);
  assert.deepEqual(stored.header.forkedFrom, {
    sessionId: source.id,
    seq: before.records.at(-1)?.seq,
  });
  assert.equal(stored.header.cwd, "/elsewhere");
  assert.deepEqual(stored.header.additionalDirectories, ["/extra"]);
  const copied = stored.records.slice(0, before.records.length);
  assert.deepEqual(
    copied.map(({ seq: _seq, time: _time, ...event }) => event),
    before.records.map(({ seq: _seq, time: _time, ...event }) => event),
  );
  assert.deepEqual(copied.map((record) => record.seq), before.records.map((record) => record.seq));
  const after = await backend.store.load(source.id);
  assert.deepEqual(after?.records.slice(0, before.records.length), before.records);
  assert.equal(after?.header.forkedFrom, undefined);
  const listed = await backend.store.list({ limit: 10 });
  assert.equal(listed.sessions.find((entry) => entry.id === fork.id)?.title, "one");
  await first.sessions.closeAll();

  // A restart: the fork loads with its copied history and its own turn, then resumes.
  await using reopened = await backend.reopen();
  const second = manager(reopened, provider);
  const loaded = await second.sessions.open(fork.id, { cwd: "/elsewhere", replay: true });
  const replayed = second.updates.filter((entry) => entry.sessionId === fork.id)
    .map(({ update }) => update)
    .filter((update) => update.sessionUpdate.endsWith("message_chunk"))
    .map((update) => (update as { content: { text: string } }).content.text);
  assert.deepEqual(replayed, ["one", "answer 1", "two", "answer 2", "three", "answer 3"]);
  assert.deepEqual(loaded.additionalDirectories, ["/extra"]);
  assert.equal(await loaded.prompt(text("five"), signal), "end_turn");
  assert.deepEqual(provider.requests.at(-1)?.slice(-3), [
    "user:three",
    "assistant:answer 3",
    "user:five",
  ]);
  await second.sessions.closeAll();
}

/** A source whose user message holds an image; the fork keeps it once the source is deleted. */
async function forkKeepsAttachments(backend: Backend): Promise<void> {
  const bytes = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3, 4]);
  const sha256 = await backend.attachments.put(bytes, "image/png");
  const sourceId = crypto.randomUUID();
  const events: StoredEvent[] = [
    { type: "config", model: "fake/model", mode: "ask" },
    { type: "turn_start" },
    {
      type: "user",
      messageId: "u1",
      content: [{ type: "text", text: "look" }, { type: "image", mimeType: "image/png", sha256 }],
    },
    { type: "assistant", messageId: "a1", text: "a picture" },
    { type: "turn_end", stopReason: "end_turn" },
  ];
  await backend.store.create({
    version: 1,
    id: sourceId,
    cwd: "/work",
    additionalDirectories: [],
    createdAt: new Date().toISOString(),
  }, { events });
  const provider = new RecordingProvider();
  const first = manager(backend, provider);
  const fork = await first.sessions.fork(sourceId, SOURCE_ROOTS);
  await first.sessions.closeAll();
  await backend.store.delete(sourceId);
  assert.equal(await backend.store.exists(sourceId), false);
  assert.deepEqual(await backend.attachments.get(sha256), bytes, "the fork still references it");

  const second = manager(backend, provider);
  const loaded = await second.sessions.open(fork.id, { cwd: "/work", replay: true });
  const images = second.updates.map(({ update }) => update).filter((update) =>
    update.sessionUpdate === "user_message_chunk" &&
    (update as { content: { type: string } }).content.type === "image"
  );
  assert.equal(images.length, 1, "the image is replayed");
  assert.equal(await loaded.prompt(text("again"), signal), "end_turn");
  assert.deepEqual(provider.requests.at(-1), [
    "user:look[image]",
    "assistant:a picture",
    "user:again",
  ]);
  await second.sessions.closeAll();
  await backend.store.delete(fork.id);
  assert.equal(await backend.attachments.get(sha256), undefined, "released with the last session");
}

Deno.test("SessionManager.fork() on the memory store copies the conversation and reopens", async () => {
  await using backend = await memoryBackend();
  await forkCopiesAndRestarts(backend);
});

Deno.test("SessionManager.fork() on the JSONL store copies the conversation and reopens", async () => {
  await using backend = await jsonlBackend();
  await forkCopiesAndRestarts(backend);
});

postgresTest(
  "SessionManager.fork() on the PostgreSQL store copies the conversation and reopens",
  async (url) => {
    await using backend = await postgresBackend(url);
    await forkCopiesAndRestarts(backend);
  },
);

Deno.test("a fork on the memory store keeps the attachments it references", async () => {
  await using backend = await memoryBackend();
  await forkKeepsAttachments(backend);
});

Deno.test("a fork on the JSONL store keeps the attachments it references", async () => {
  await using backend = await jsonlBackend();
  await forkKeepsAttachments(backend);
});

postgresTest("a fork on the PostgreSQL store keeps the attachments it references", async (url) => {
  await using backend = await postgresBackend(url);
  await forkKeepsAttachments(backend);
});

Deno.test("SessionManager.fork() of a running session copies its finished turns only", async () => {
  await using backend = await memoryBackend();
  const provider = new GatedProvider();
  const { sessions } = manager(backend, provider);
  const source = await sessions.create(SOURCE_ROOTS);
  provider.next.open();
  assert.equal(await source.prompt(text("done"), signal), "end_turn");
  const finished = await backend.store.load(source.id);
  provider.next = gate();
  provider.started = gate();
  const running = source.prompt(text("under way"), signal);
  await provider.started.wait;
  const stored = await backend.store.load(source.id);
  assert.ok(stored && finished);
  assert.ok(stored.records.length > finished.records.length, "the turn under way is in the log");

  const fork = await sessions.fork(source.id, SOURCE_ROOTS);
  const forked = await backend.store.load(fork.id);
  assert.deepEqual(forked?.header.forkedFrom?.seq, finished.records.at(-1)?.seq);
  assert.deepEqual(
    forked?.records.map((record) => record.type),
    finished.records.map((record) => record.type),
  );
  provider.next.open();
  assert.equal(await running, "end_turn", "the source finishes its turn");
  assert.equal((await backend.store.load(source.id))?.records.at(-1)?.type, "turn_end");
  await sessions.closeAll();
});

Deno.test("SessionManager.fork() reads a JSONL log with a torn tail and leaves it as it is", async () => {
  await using backend = await jsonlBackend();
  const { sessions } = manager(backend, new RecordingProvider());
  const source = await sessions.create(SOURCE_ROOTS);
  assert.equal(await source.prompt(text("one"), signal), "end_turn");
  await sessions.closeAll();
  const log = join(backend.dataDir, "sessions", `${source.id}.jsonl`);
  await appendFile(log, '{"seq":99,"time":"2026-01-01T00:00:00.000Z","type":"assist');
  const bytes = await readFile(log);
  // Another process's store (the source's owner could be running there).
  await using other = await backend.reopen();
  const elsewhere = manager(other, new RecordingProvider());
  const fork = await elsewhere.sessions.fork(source.id, SOURCE_ROOTS);
  const forked = await other.store.load(fork.id);
  assert.equal(forked?.records.at(-1)?.type, "turn_end");
  assert.deepEqual(await readFile(log), bytes, "the source's log is not touched");
  await elsewhere.sessions.closeAll();
});

Deno.test("SessionManager.fork() of an unknown session fails and records nothing", async () => {
  await using backend = await memoryBackend();
  const { sessions } = manager(backend, new RecordingProvider());
  await assert.rejects(sessions.fork(crypto.randomUUID(), SOURCE_ROOTS), SessionNotFoundError);
  assert.deepEqual((await backend.store.list({ limit: 10 })).sessions, []);
  assert.equal(sessions.size, 0);
});

Deno.test("copyForFork() of an empty session copies nothing, with seq 0", async () => {
  const store = new MemorySessionStore();
  const id = crypto.randomUUID();
  await store.create({
    version: 1,
    id,
    cwd: "/work",
    additionalDirectories: [],
    createdAt: new Date().toISOString(),
  });
  const copy = await copyForFork(store, id);
  assert.deepEqual(copy && { events: copy.events, seq: copy.seq }, { events: [], seq: 0 });
  assert.equal(await copyForFork(store, crypto.randomUUID()), undefined);
});
