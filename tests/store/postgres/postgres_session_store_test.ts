/**
 * The PostgreSQL session store beyond the contract: pages stay exact over 2,000 sessions, what
 * one instance writes shows in another's list at once, events round-trip exactly (NUL
 * characters and lone surrogates included), and hundreds of unawaited appends keep call order.
 *
 * @module
 */
import assert from "node:assert/strict";
import { nullLogger } from "../../../src/log/logger.ts";
import { openPostgresStore } from "../../../src/store/postgres/postgres_store.ts";
import type { SessionHeader, SessionStore, StoredEvent } from "../../../src/store/session_store.ts";
import { postgresTest, withTestDatabase } from "../../_helpers/postgres.ts";

const T0 = Date.UTC(2025, 0, 1);

function header(n: number, cwd = "/work"): SessionHeader {
  return {
    version: 1,
    id: `s${n.toString().padStart(5, "0")}`,
    cwd,
    additionalDirectories: [],
    // Ten sessions per creation time: ties are ordered by id.
    createdAt: new Date(T0 + Math.floor(n / 10) * 1_000).toISOString(),
  };
}

async function listAll(store: SessionStore, limit: number, cwd?: string): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.list({
      limit,
      ...(cursor === undefined ? {} : { cursor }),
      ...(cwd === undefined ? {} : { cwd }),
    });
    assert.ok(page.sessions.length <= limit);
    seen.push(...page.sessions.map((session) => session.id));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return seen;
}

postgresTest(
  "PostgresSessionStore.list(): keyset pages stay exact over 2,000 sessions",
  async () => {
    await using database = await withTestDatabase();
    await using pg = await openPostgresStore({ url: database.url, logger: nullLogger });
    const { store } = pg;
    const count = 2_000;
    for (let start = 0; start < count; start += 100) {
      await Promise.all(
        Array.from(
          { length: 100 },
          (_, i) => store.create(header(start + i, (start + i) % 2 ? "/odd" : "/even")),
        ),
      );
    }
    const expected = Array.from({ length: count }, (_, n) => header(n))
      .sort((a, b) =>
        b.createdAt.localeCompare(a.createdAt) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
      )
      .map((h) => h.id);
    assert.deepEqual(await listAll(store, 100), expected);
    assert.deepEqual(await listAll(store, 7), expected);
    const odd = expected.filter((id) => Number(id.slice(1)) % 2 === 1);
    assert.deepEqual(await listAll(store, 64, "/odd"), odd);
    // A page deep in the list reads as many rows as the first: the cursor is a key, not an offset.
    const first = await store.list({ limit: 50 });
    let cursor = first.nextCursor;
    for (let page = 0; page < 30 && cursor !== undefined; page++) {
      cursor = (await store.list({ limit: 50, cursor })).nextCursor;
    }
    const deep = await store.list({ limit: 50, ...(cursor ? { cursor } : {}) });
    assert.equal(deep.sessions.length, 50);
    assert.equal(deep.sessions[0]?.id, expected[31 * 50]);
  },
);

postgresTest("PostgresSessionStore.list(): another instance's writes show at once", async () => {
  await using database = await withTestDatabase();
  await using a = await openPostgresStore({ url: database.url, logger: nullLogger });
  await using b = await openPostgresStore({ url: database.url, logger: nullLogger });
  assert.deepEqual((await b.store.list({ limit: 10 })).sessions, []);
  await a.store.create(header(1));
  assert.deepEqual((await b.store.list({ limit: 10 })).sessions.map((s) => s.id), ["s00001"]);
  await a.store.append("s00001", [{ type: "title", title: "Fresh" }], { sync: false });
  const [summary] = (await b.store.list({ limit: 10 })).sessions;
  assert.equal(summary?.title, "Fresh");
  await a.store.delete("s00001");
  assert.deepEqual((await b.store.list({ limit: 10 })).sessions, []);
});

postgresTest(
  "PostgresSessionStore.load(): events round-trip exactly, NUL and lone surrogates too",
  async () => {
    await using database = await withTestDatabase();
    await using pg = await openPostgresStore({ url: database.url, logger: nullLogger });
    const { store } = pg;
    await store.create(header(1));
    const events: StoredEvent[] = [
      {
        type: "tool_result",
        toolCallId: "t1",
        name: "read",
        content: "binary\u0000bytes \ud800 and \udfff, emoji 🎉, quotes \"'\\",
        isError: false,
        display: [{ nested: { deep: [1, 2.5, -0.125, 1e21, null, true] } }],
      },
      {
        type: "assistant",
        text: "",
        providerState: { big: 12345678901234567890, list: [] },
      },
    ];
    await store.append("s00001", events, { sync: false });
    await store.append("s00001", [{ type: "title", title: "a\u0000b" }], { sync: true });
    events.push({ type: "title", title: "a\u0000b" });
    const loaded = await store.load("s00001");
    assert.deepEqual(
      loaded?.records.map(({ seq: _seq, time: _time, ...event }) => event),
      JSON.parse(JSON.stringify(events)),
    );
    assert.deepEqual(loaded?.header, header(1));
    // A PostgreSQL text column cannot hold NUL: the listed title shows U+FFFD in its place.
    assert.equal((await store.list({ limit: 1 })).sessions[0]?.title, "a\ufffdb");
  },
);

postgresTest(
  "PostgresSessionStore.append(): 500 unawaited appends commit in call order",
  async () => {
    await using database = await withTestDatabase();
    await using pg = await openPostgresStore({ url: database.url, logger: nullLogger });
    await using other = await openPostgresStore({ url: database.url, logger: nullLogger });
    const { store } = pg;
    await store.create(header(1));
    const appends: Promise<void>[] = [];
    for (let n = 0; n < 500; n++) {
      const events: StoredEvent[] = Array.from(
        { length: 1 + (n % 3) },
        (_, part) => ({ type: "title", title: `${n}.${part}` }),
      );
      appends.push(store.append("s00001", events, { sync: n % 50 === 49 }));
    }
    // A synced append resolves only after every earlier one committed: another instance sees them.
    await appends[99];
    const early = await other.store.load("s00001");
    assert.ok((early?.records.length ?? 0) >= 200);
    await Promise.all(appends);
    const titles = (await other.store.load("s00001"))?.records.map((record, index) => {
      assert.equal(record.seq, index + 1);
      return record.type === "title" ? record.title : "";
    });
    const expected: string[] = [];
    for (let n = 0; n < 500; n++) for (let p = 0; p <= n % 3; p++) expected.push(`${n}.${p}`);
    assert.deepEqual(titles, expected);
    assert.equal((await other.store.list({ limit: 1 })).sessions[0]?.title, "499.1");
  },
);
