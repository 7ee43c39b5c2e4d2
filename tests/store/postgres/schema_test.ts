/**
 * The PostgreSQL store's schema: migrations raced by concurrent starts apply once, a newer schema
 * is refused naming both versions, a later migration applies to an older schema, and a failed
 * open never shows the password.
 *
 * @module
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import type { Logger } from "../../../src/log/logger.ts";
import { nullLogger } from "../../../src/log/logger.ts";
import { openPostgresStore } from "../../../src/store/postgres/postgres_store.ts";
import { PostgresStoreError } from "../../../src/store/postgres/postgres_store_error.ts";
import {
  migrate,
  MIGRATIONS,
  SCHEMA_VERSION,
  SchemaVersionError,
} from "../../../src/store/postgres/schema.ts";
import { postgresTest, withTestDatabase } from "../../_helpers/postgres.ts";

function collecting(messages: string[]): Logger {
  return { ...nullLogger, info: (message) => messages.push(message) };
}

postgresTest("openPostgresStore(): five concurrent opens apply each migration once", async () => {
  await using database = await withTestDatabase();
  const messages: string[] = [];
  const stores = await Promise.all(
    Array.from({ length: 5 }, (_, n) =>
      openPostgresStore({
        url: database.url,
        logger: collecting(messages),
        instanceId: `racer-${n}`,
      })),
  );
  try {
    assert.equal(messages.filter((m) => m.includes("schema migrated")).length, 1);
    await using sql = client(database.url);
    const rows = await sql<{ version: number }[]>`
      SELECT version FROM acp_harness.schema_migrations ORDER BY version`;
    assert.deepEqual(rows.map((row) => row.version), MIGRATIONS.map((m) => m.version));
    // Every racer works on the one schema.
    const { store } = stores[4]!;
    await stores[0]!.store.create({
      version: 1,
      id: "s1",
      cwd: "/w",
      additionalDirectories: [],
      createdAt: new Date().toISOString(),
    });
    assert.equal(await store.exists("s1"), true);
  } finally {
    await Promise.all(stores.map((store) => store.close()));
  }
});

postgresTest(
  "openPostgresStore(): a schema newer than the code is refused, naming both versions",
  async () => {
    await using database = await withTestDatabase();
    await (await openPostgresStore({ url: database.url, logger: nullLogger })).close();
    {
      await using sql = client(database.url);
      await sql`INSERT INTO acp_harness.schema_migrations (version, description)
      VALUES (${SCHEMA_VERSION + 1}, 'from the future')`;
    }
    const error = await openPostgresStore({ url: database.url, logger: nullLogger }).then(
      () => assert.fail("opened a newer schema"),
      (error: unknown) => error,
    );
    assert.ok(error instanceof SchemaVersionError);
    assert.equal(error.found, SCHEMA_VERSION + 1);
    assert.equal(error.known, SCHEMA_VERSION);
    assert.match(
      error.message,
      new RegExp(`schema is version ${SCHEMA_VERSION + 1}, newer than version ${SCHEMA_VERSION}`),
    );
  },
);

postgresTest("migrate(): a later migration applies to an older schema, once", async () => {
  await using database = await withTestDatabase();
  await using sql = client(database.url);
  assert.deepEqual(await migrate(sql), { from: 0, to: SCHEMA_VERSION });
  const next = [...MIGRATIONS, {
    version: SCHEMA_VERSION + 1,
    description: "a test column",
    statements: ["ALTER TABLE acp_harness.sessions ADD COLUMN pinned boolean"],
  }];
  const results = await Promise.all([migrate(sql, next), migrate(sql, next)]);
  assert.deepEqual(
    results.map((r) => r.from).sort(),
    [SCHEMA_VERSION, SCHEMA_VERSION + 1],
    "one of the two applied it",
  );
  const [column] = await sql`
    SELECT 1 FROM information_schema.columns
    WHERE table_schema = 'acp_harness' AND table_name = 'sessions' AND column_name = 'pinned'`;
  assert.ok(column);
});

postgresTest("migrate(): version 2 gives the sessions stored before it their parent", async () => {
  await using database = await withTestDatabase();
  {
    await using sql = client(database.url);
    assert.deepEqual(await migrate(sql, MIGRATIONS.slice(0, 1)), { from: 0, to: 1 });
    const row = (id: string, parent?: unknown) =>
      insertOldSession(sql, id, parent === undefined ? {} : { parent });
    await row("top");
    await row("kid", { sessionId: "top", toolCallId: "call-1" });
    await row("odd", { sessionId: 7 });
    assert.deepEqual(await migrate(sql), { from: 1, to: SCHEMA_VERSION });
  }
  const opened = await openPostgresStore({ url: database.url, logger: nullLogger });
  try {
    const ids = async (parent: string | null) =>
      (await opened.store.list({ limit: 10, parent })).sessions.map((s) => [s.id, s.parent]);
    assert.deepEqual(await ids(null), [["odd", undefined], ["top", undefined]]);
    assert.deepEqual(await ids("top"), [["kid", { sessionId: "top", toolCallId: "call-1" }]]);
    await opened.store.delete("top");
    assert.equal(await opened.store.exists("kid"), false);
  } finally {
    await opened.close();
  }
});

postgresTest("migrate(): version 3 gives the sessions stored before it their tenant", async () => {
  await using database = await withTestDatabase();
  {
    await using sql = client(database.url);
    assert.deepEqual(await migrate(sql, MIGRATIONS.slice(0, 2)), { from: 0, to: 2 });
    const row = (id: string, tenant?: unknown) =>
      insertOldSession(sql, id, tenant === undefined ? {} : { tenant });
    await row("ci-1", "ci");
    await row("none");
    await row("odd", 7);
    assert.deepEqual(await migrate(sql), { from: 2, to: SCHEMA_VERSION });
  }
  const opened = await openPostgresStore({ url: database.url, logger: nullLogger });
  try {
    const ids = async (tenant?: string) =>
      (await opened.store.list({ limit: 10, ...(tenant ? { tenant } : {}) })).sessions.map((
        s,
      ) => [s.id, s.tenant]);
    assert.deepEqual(await ids("ci"), [["ci-1", "ci"]]);
    assert.deepEqual(await ids(), [["ci-1", "ci"], ["none", undefined], ["odd", undefined]]);
  } finally {
    await opened.close();
  }
});

postgresTest(
  "openPostgresStore(): an unreachable server rejects without the password",
  async () => {
    const url = "postgres://acp:s3cret-word@127.0.0.1:1/nowhere";
    const error = await openPostgresStore({ url, logger: nullLogger }).then(
      () => assert.fail("connected to port 1"),
      (error: unknown) => error,
    );
    assert.ok(error instanceof PostgresStoreError);
    assert.ok(!error.message.includes("s3cret-word"), error.message);
    assert.match(error.message, /postgres:\/\/acp:\*\*\*@127\.0\.0\.1:1\/nowhere/);
  },
);

/** A client of the test database, closed on dispose. */
function client(url: string): postgres.Sql & AsyncDisposable {
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  return Object.assign(sql, {
    [Symbol.asyncDispose]: () => sql.end({ timeout: 5 }),
  });
}

/** Writes a session row as an older schema held it: a header with `extra`, nothing else. */
function insertOldSession(
  sql: ReturnType<typeof client>,
  id: string,
  extra: Record<string, unknown>,
): Promise<unknown> {
  const header = JSON.stringify({
    version: 1,
    id,
    cwd: "/w",
    additionalDirectories: [],
    createdAt: "2025-01-01T00:00:00.000Z",
    ...extra,
  });
  return sql`INSERT INTO acp_harness.sessions
    (id, header, cwd, additional_directories, created_at, updated_at)
    VALUES (${id}, ${header}::text::json, '/w', '{}', '2025-01-01T00:00:00Z',
      '2025-01-01T00:00:00Z')`;
}
