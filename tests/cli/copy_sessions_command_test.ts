import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { JsonlSessionStore, NodeHost } from "../../mod.ts";
import { runCopySessions } from "../../src/cli/copy_sessions_command.ts";
import type { LoadedSession, StoredEvent } from "../../src/store/session_store.ts";
import { exitWithin, spawnAgent } from "../_helpers/acp_client.ts";
import { postgresTest, withTestDatabase } from "../_helpers/postgres.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

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

/**
 * Runs `acp-harness copy-sessions` (on the Node build unless told otherwise); resolves with its
 * exit code and stderr.
 */
function copyCli(
  from: string,
  to: string,
  runtime: Runtime = NODE,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const args = [...runtime.args, "copy-sessions", "--from", from, "--to", to];
    const child = spawn(runtime.command, args, { stdio: ["ignore", "pipe", "pipe"] });
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
  assert.deepEqual(first, { total: 3, copied: 3, completed: 0, skipped: 0, unreadable: [] });
  assert.ok(
    lines.includes("3/3 listed sessions done: 3 copied, 0 completed, 0 already there\n"),
    lines.join(""),
  );
  assert.deepEqual(await loadAll(to), await loadAll(from));
  const copied = new JsonlSessionStore({ host: new NodeHost({}), dataDir: to });
  const image = (await copied.load(ids[0]!))!.records[1]!;
  assert.equal(image.type, "user");
  const part = image.type === "user" ? image.content[1] : undefined;
  assert.deepEqual(part?.type === "image" ? await copied.attachments.get(part.sha256) : 0, PNG);

  lines.length = 0;
  const again = await runCopySessions(options);
  assert.deepEqual(again, { total: 3, copied: 0, completed: 0, skipped: 3, unreadable: [] });
  // Progress says what was done: nothing was copied.
  assert.ok(
    lines.includes("3/3 listed sessions done: 0 copied, 0 completed, 3 already there\n"),
    lines.join(""),
  );
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
    assert.match(there.stderr, /^3\/3 listed sessions done: 3 copied, 0 completed, 0 /m);
    assert.match(there.stderr, /3 copied, 0 completed, 0 already at/);
    assert.ok(!there.stderr.includes("undefined"), there.stderr);

    const rerun = await copyCli(from, database.url);
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.match(rerun.stderr, /0 copied, 0 completed, 3 already at/);

    const home = await copyCli(database.url, back);
    assert.equal(home.code, 0, home.stderr);
    assert.match(home.stderr, /^3\/3 listed sessions done: 3 copied, 0 completed, 0 /m);
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

Deno.test("copy-sessions on every runtime: names the logs it cannot read and exits 1; a repaired log is listed over stdio and copied", async () => {
  await using dir = await tempDir("acp-harness-copy-unreadable-");
  for (const runtime of RUNTIMES) {
    const from = join(dir.path, runtime.name, "from");
    const to = join(dir.path, runtime.name, "to");
    const ids = await seed(from, 6);
    const [garbled, cut] = [ids[2]!, ids[4]!];
    const log = (id: string): string => join(from, "sessions", `${id}.jsonl`);
    const original = await readFile(log(garbled), "utf8");
    const lines = original.split("\n");
    lines[2] = "garbage";
    await writeFile(log(garbled), lines.join("\n"));
    await writeFile(log(cut), (await readFile(log(cut), "utf8")).slice(0, 30));
    // The index is rebuilt from the logs (the case that forgot the unreadable ones).
    await rm(join(from, "index.jsonl"));

    const first = await copyCli(from, to, runtime);
    assert.equal(first.code, 1, `${runtime.name}: ${first.stderr}`);
    assert.match(first.stderr, /^4\/4 listed sessions done: 4 copied, 0 completed, 0 already /m);
    assert.match(first.stderr, /copy-sessions: 4 copied, 0 completed, 0 already at /);
    assert.match(first.stderr, /copy-sessions: 2 of 6 sessions could not be read and were not/);
    assert.ok(first.stderr.includes(`  ${garbled}: line 3 is not valid JSON\n`), first.stderr);
    assert.ok(first.stderr.includes(`  ${cut}: has no complete header line\n`), first.stderr);
    assert.equal((await loadAll(to)).size, 4);

    // Repaired: a server lists it again.
    await writeFile(log(garbled), original);
    const agent = spawnAgent(runtime.command, [...runtime.args, "--data-dir", from], {
      cwd: dir.path,
    });
    try {
      await agent.client.initialize();
      const listed = await agent.client.request<{ sessions: { sessionId: string }[] }>(
        "session/list",
        {},
      );
      const listedIds = listed.sessions.map((session) => session.sessionId);
      assert.ok(listedIds.includes(garbled), `${runtime.name}: ${listedIds}`);
      assert.equal(listedIds.length, 5, `${runtime.name}: ${listedIds}`);
    } finally {
      agent.end();
      await exitWithin(agent, 20_000);
    }

    // And a second copy copies it; the cut one is still named.
    const second = await copyCli(from, to, runtime);
    assert.equal(second.code, 1, `${runtime.name}: ${second.stderr}`);
    assert.match(second.stderr, /copy-sessions: 1 copied, 0 completed, 4 already at /);
    assert.match(second.stderr, /copy-sessions: 1 of 6 sessions could not be read/);
    assert.ok(second.stderr.includes(`  ${cut}: has no complete header line\n`), second.stderr);
    const source = await loadAll(from);
    assert.deepEqual((await loadAll(to)).get(garbled), source.get(garbled));
    assert.equal(source.size, 5);
  }
});

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
