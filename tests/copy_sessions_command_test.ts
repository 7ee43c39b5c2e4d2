import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { JsonlSessionStore, NodeHost } from "../mod.ts";
import { runCopySessions } from "../src/copy_sessions_command.ts";
import type { LoadedSession, StoredEvent } from "../src/store/session_store.ts";
import { postgresTest, withTestDatabase } from "./_helpers/postgres.ts";
import { RUNTIMES } from "./_helpers/runtimes.ts";
import { tempDir } from "./_helpers/temp_dir.ts";

const NODE = RUNTIMES.find((runtime) => runtime.name === "node")!;
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);

/** Fills a JSONL data directory with `count` sessions, one with an image; returns their ids. */
async function seed(dataDir: string, count: number): Promise<string[]> {
  const store = new JsonlSessionStore({ host: new NodeHost({}), dataDir });
  const sha256 = await store.attachments.put(PNG, "image/png");
  const ids: string[] = [];
  for (let index = 0; index < count; index++) {
    const id = crypto.randomUUID();
    const lease = await store.acquire(id);
    await store.create({
      version: 1,
      id,
      cwd: `/work/project-${index % 2}`,
      additionalDirectories: index === 0 ? ["/work/shared"] : [],
      createdAt: new Date(Date.UTC(2026, 0, 1, 0, index)).toISOString(),
    });
    const events: StoredEvent[] = [
      { type: "turn_start" },
      {
        type: "user",
        messageId: `m${index}`,
        content: [
          { type: "text", text: `question ${index}` },
          ...(index === 0 ? [{ type: "image" as const, mimeType: "image/png", sha256 }] : []),
        ],
      },
      { type: "title", title: `session ${index}` },
      { type: "assistant", text: `answer ${index}` },
      { type: "turn_end", stopReason: "end_turn" },
    ];
    await store.append(id, events.slice(0, 3), { sync: false });
    await store.append(id, events.slice(3), { sync: true });
    await lease.release();
    ids.push(id);
  }
  return ids;
}

/** Every session of a JSONL data directory, loaded, by id. */
async function loadAll(dataDir: string): Promise<Map<string, LoadedSession>> {
  const store = new JsonlSessionStore({ host: new NodeHost({}), dataDir });
  const page = await store.list({ limit: 1000 });
  const loaded = new Map<string, LoadedSession>();
  for (const { id } of page.sessions) loaded.set(id, (await store.load(id))!);
  return loaded;
}

/** Runs `acp-harness copy-sessions` on the Node build; resolves with its exit code and stderr. */
function copyCli(from: string, to: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE.command, [...NODE.args, "copy-sessions", "--from", from, "--to", to], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (text: string) => stderr += text);
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000); // a bound on a hung process
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

Deno.test("copy-sessions between JSONL directories keeps every record and attachment; a re-run copies nothing", async () => {
  await using dir = await tempDir("acp-harness-copy-");
  const from = join(dir.path, "from");
  const to = join(dir.path, "to");
  const ids = await seed(from, 3);
  const lines: string[] = [];
  const options = {
    from,
    to,
    host: new NodeHost({}),
    logger: { error() {}, warn() {}, info() {}, debug() {} },
    leaseTtlMs: 30_000,
    writeStderr: (text: string) => lines.push(text),
  };
  const first = await runCopySessions(options);
  assert.deepEqual(first, { total: 3, copied: 3, completed: 0, skipped: 0 });
  assert.ok(lines.includes("copied 3/3 sessions\n"), lines.join(""));
  assert.deepEqual(await loadAll(to), await loadAll(from));
  const copied = new JsonlSessionStore({ host: new NodeHost({}), dataDir: to });
  const image = (await copied.load(ids[0]!))!.records[1]!;
  assert.equal(image.type, "user");
  const part = image.type === "user" ? image.content[1] : undefined;
  assert.deepEqual(part?.type === "image" ? await copied.attachments.get(part.sha256) : 0, PNG);

  const again = await runCopySessions(options);
  assert.deepEqual(again, { total: 3, copied: 0, completed: 0, skipped: 3 });
  assert.deepEqual(await loadAll(to), await loadAll(from));
});

postgresTest(
  "copy-sessions: JSONL → PostgreSQL → JSONL keeps every record; a re-run copies nothing",
  async () => {
    await using dir = await tempDir("acp-harness-copy-pg-");
    await using database = await withTestDatabase();
    const from = join(dir.path, "from");
    const back = join(dir.path, "back");
    await seed(from, 3);

    const there = await copyCli(from, database.url);
    assert.equal(there.code, 0, there.stderr);
    assert.match(there.stderr, /^copied 3\/3 sessions$/m);
    assert.match(there.stderr, /3 copied, 0 completed, 0 already at/);
    assert.ok(!there.stderr.includes("undefined"), there.stderr);

    const rerun = await copyCli(from, database.url);
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.match(rerun.stderr, /0 copied, 0 completed, 3 already at/);

    const home = await copyCli(database.url, back);
    assert.equal(home.code, 0, home.stderr);
    assert.match(home.stderr, /^copied 3\/3 sessions$/m);
    const original = await loadAll(from);
    const returned = await loadAll(back);
    assert.deepEqual(
      [...returned.values()],
      [...original.values()],
      "every header and record comes back, in order, with its sequence number and time",
    );
    const store = new JsonlSessionStore({ host: new NodeHost({}), dataDir: back });
    const [first] = [...original.values()].filter((session) =>
      session.header.additionalDirectories.length > 0
    );
    const user = (await store.load(first!.header.id))!.records[1]!;
    const image = user.type === "user" ? user.content[1] : undefined;
    assert.deepEqual(image?.type === "image" ? await store.attachments.get(image.sha256) : 0, PNG);
  },
);

Deno.test("copy-sessions without --to is a usage error", async () => {
  await using dir = await tempDir("acp-harness-copy-usage-");
  const child = spawn(NODE.command, [...NODE.args, "copy-sessions", "--from", dir.path], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (text: string) => stderr += text);
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  assert.equal(code, 2);
  assert.match(stderr, /needs --from <url-or-dir> and --to <url-or-dir>/);
});
