/**
 * `JsonlSessionStore.create` keeps the disk's flushes off its path, and the session's first
 * commit point makes the creation durable: the log, its directory entry and its index line.
 *
 * @module
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import type { AppendFileOptions, SyncOptions } from "../../src/host/host.ts";
import { JsonlSessionStore } from "../../src/store/jsonl_session_store.ts";
import { nullLogger } from "../../src/log/logger.ts";
import { ClockHost, header, sessionId, tempStore } from "./_helpers.ts";

/** A host that records every flush it is asked for, in order. */
class FlushRecordingHost extends ClockHost {
  readonly flushes: string[] = [];

  override async syncFile(file: string): Promise<void> {
    await super.syncFile(file);
    this.flushes.push(`file ${file}`);
  }

  override async syncDir(dir: string): Promise<void> {
    await super.syncDir(dir);
    this.flushes.push(`dir ${dir}`);
  }
}

Deno.test("create flushes nothing; the first commit point flushes the log, its directory entry and the index line", async () => {
  await using temp = await tempStore();
  const host = new FlushRecordingHost();
  const store = new JsonlSessionStore({ host, dataDir: temp.dir, logger: nullLogger });
  const id = sessionId(1);
  const lease = await store.acquire(id);
  await store.create(header(id, host));
  assert.deepEqual(host.flushes, [], "create waits for no flush");
  // Written all the same: another store (another process) lists and loads it.
  const other = temp.open();
  assert.deepEqual((await other.list({ limit: 10 })).sessions.map((session) => session.id), [id]);
  assert.equal((await other.load(id))?.header.id, id);
  // Nothing flushes it before a commit point asks.
  await store.append(id, [{ type: "turn_start" }], { sync: false });
  assert.deepEqual(host.flushes, []);
  await store.append(id, [{ type: "title", title: "first" }], { sync: true });
  assert.deepEqual(
    new Set(host.flushes),
    new Set([
      `file ${temp.dir}/sessions/${id}.jsonl`,
      `dir ${temp.dir}/sessions`,
      `file ${temp.dir}/index.jsonl`,
    ]),
  );
  // Later commit points flush the log alone (and the index when a line is due).
  host.flushes.length = 0;
  await store.append(id, [{ type: "turn_start" }], { sync: true });
  assert.deepEqual(host.flushes, [`file ${temp.dir}/sessions/${id}.jsonl`]);
  await lease.release();
});

Deno.test("an empty append with sync is a commit point: it makes a new session durable", async () => {
  await using temp = await tempStore();
  const host = new FlushRecordingHost();
  const store = new JsonlSessionStore({ host, dataDir: temp.dir, logger: nullLogger });
  const id = sessionId(2);
  const lease = await store.acquire(id);
  await store.create(header(id, host));
  await store.append(id, [], { sync: true });
  assert.ok(host.flushes.includes(`dir ${temp.dir}/sessions`), String(host.flushes));
  assert.ok(host.flushes.includes(`file ${temp.dir}/sessions/${id}.jsonl`));
  assert.deepEqual((await store.load(id))?.records, []);
  await lease.release();
});

Deno.test("sessions whose logs are created at once share one index write", async () => {
  await using temp = await tempStore();
  const ids = [3, 4, 5, 6].map(sessionId);
  const host = new IndexWriteCountingHost(ids.length);
  const store = new JsonlSessionStore({ host, dataDir: temp.dir, logger: nullLogger });
  const leases = await Promise.all(ids.map((id) => store.acquire(id)));
  await store.list({ limit: 1 });
  host.indexWrites = 0;
  await Promise.all(ids.map((id) => store.create(header(id, host))));
  assert.equal(host.indexWrites, 1, "one write for the four lines");
  const text = await Deno.readTextFile(`${temp.dir}/index.jsonl`);
  const lines = text.trim().split("\n").slice(1).map((line) => JSON.parse(line));
  assert.deepEqual(lines.map((line) => line.id).sort(), ids);
  await Promise.all(leases.map((lease) => lease.release()));
});

/**
 * A host that counts the appends to `index.jsonl`, and holds each log's creation until `logs`
 * of them are created, so that they end in one task.
 */
class IndexWriteCountingHost extends ClockHost {
  indexWrites = 0;
  readonly #logs: number;
  readonly #allCreated = Promise.withResolvers<void>();
  #created = 0;

  constructor(logs: number) {
    super();
    this.#logs = logs;
  }

  override async createExclusive(
    file: string,
    data: string | Uint8Array,
    options?: SyncOptions,
  ): Promise<boolean> {
    const created = await super.createExclusive(file, data, options);
    if (!file.endsWith(".jsonl")) return created;
    if (++this.#created === this.#logs) this.#allCreated.resolve();
    await this.#allCreated.promise;
    return created;
  }

  override appendFile(
    file: string,
    data: string | Uint8Array,
    options: AppendFileOptions,
  ): Promise<void> {
    if (file.endsWith("/index.jsonl")) this.indexWrites++;
    return super.appendFile(file, data, options);
  }
}

/** The child: creates a session, prints its id, then waits to be killed. */
const CHILD = `
const [storeUrl, hostUrl, dir, id] = Deno.args;
const { JsonlSessionStore } = await import(storeUrl);
const { NodeHost } = await import(hostUrl);
const store = new JsonlSessionStore({ host: new NodeHost(), dataDir: dir });
await store.acquire(id);
await store.create({ version: 1, id, cwd: "/work", additionalDirectories: [], createdAt: new Date().toISOString() });
console.log("created");
setInterval(() => {}, 60_000);
`;

Deno.test("a session survives SIGKILL right after create resolves: listed and loadable", async () => {
  await using temp = await tempStore();
  const id = sessionId(7);
  const child = spawn(Deno.execPath(), [
    "eval",
    "--quiet",
    CHILD,
    new URL("../../src/store/jsonl_session_store.ts", import.meta.url).href,
    new URL("../../src/host/node_host.ts", import.meta.url).href,
    temp.dir,
    id,
  ], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  await new Promise<void>((resolve, reject) => {
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (text: string) => text.includes("created") && resolve());
    child.on("exit", (code) => reject(new Error(`child exited (${code}) before creating`)));
  });
  Deno.kill(child.pid as number, "SIGKILL");
  await exited;
  const after = temp.open();
  assert.deepEqual((await after.list({ limit: 10 })).sessions.map((session) => session.id), [id]);
  const lease = await after.acquire(id);
  assert.deepEqual((await after.load(id))?.header.cwd, "/work");
  await lease.release();
});
