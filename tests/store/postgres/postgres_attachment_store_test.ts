/**
 * The PostgreSQL attachment store beyond the contract: bytes are verified against their sha256 on
 * read, a corrupt copy is replaced by the next put, and release keeps what a session references.
 *
 * @module
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { type Logger, nullLogger } from "../../../src/log/logger.ts";
import { openPostgresStore } from "../../../src/store/postgres/postgres_store.ts";
import { postgresTest, withTestDatabase } from "../../_helpers/postgres.ts";

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);

postgresTest("PostgresAttachmentStore.get() verifies the bytes against their sha256", async () => {
  await using database = await withTestDatabase();
  const warnings: string[] = [];
  const logger: Logger = { ...nullLogger, warn: (message) => warnings.push(message) };
  await using pg = await openPostgresStore({ url: database.url, logger });
  const { attachments } = pg;
  const sha = await attachments.put(PNG, "image/png");
  assert.equal(sha, await attachments.put(PNG.slice(), "image/png"), "same bytes, same address");
  assert.deepEqual(await attachments.get(sha), PNG);
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  try {
    await sql`UPDATE acp_harness.attachments SET bytes = '\\x00ff'::bytea WHERE sha256 = ${sha}`;
    assert.equal(await attachments.get(sha), undefined, "corrupt bytes are never returned");
    assert.ok(warnings.some((w) => w.includes("corrupt")));
    await attachments.put(PNG, "image/png");
    assert.deepEqual(await attachments.get(sha), PNG, "a put replaces a corrupt copy");
    const [{ count }] = await sql<[{ count: number }]>`
      SELECT count(*)::int AS count FROM acp_harness.attachments`;
    assert.equal(count, 1, "stored once");
  } finally {
    await sql.end({ timeout: 5 });
  }
  assert.equal(await attachments.get("0".repeat(64)), undefined);
  assert.equal(await attachments.get("../etc/passwd"), undefined);
  await assert.rejects(attachments.put(PNG, "not a type"), TypeError);
});

postgresTest(
  "PostgresAttachmentStore.release() keeps bytes a stored session references",
  async () => {
    await using database = await withTestDatabase();
    await using pg = await openPostgresStore({ url: database.url, logger: nullLogger });
    const { store, attachments } = pg;
    const sha = await attachments.put(PNG, "image/png");
    await store.create({
      version: 1,
      id: "s1",
      cwd: "/w",
      additionalDirectories: [],
      createdAt: new Date().toISOString(),
    });
    await store.append("s1", [{
      type: "user",
      messageId: "m1",
      content: [{ type: "image", mimeType: "image/png", sha256: sha }],
    }], { sync: true });
    await attachments.release([sha, "nope"]);
    assert.deepEqual(await attachments.get(sha), PNG, "session s1 references it");
    await store.delete("s1");
    assert.equal(await attachments.get(sha), undefined, "released with its last session");
  },
);
