/**
 * The PostgreSQL store never skips a failed batch: one that cannot reach the database is retried
 * in place until the server is back (on a private cluster, stopped with `pg_ctl stop -m immediate`
 * and started again), one that fails for good refuses every later append of the session until it
 * is loaded again, and a session whose stored events fell behind what this store committed (a
 * database crash lost asynchronous commits) is not written after the hole.
 *
 * @module
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { createLogger, nullLogger } from "../../../src/log/logger.ts";
import { openPostgresStore } from "../../../src/store/postgres/postgres_store.ts";
import type { SessionHeader, StoredEvent } from "../../../src/store/session_store.ts";
import { SessionLogFailedError } from "../../../src/store/store_errors.ts";
import { PrivateCluster } from "../../../torture/scenarios/postgres.ts";
import { postgresTest, withTestDatabase } from "../../_helpers/postgres.ts";
import { pollUntil } from "../../_helpers/wait.ts";

const ID = "00000000-0000-4000-8000-000000000001";
const HEADER: SessionHeader = {
  version: 1,
  id: ID,
  cwd: "/work",
  additionalDirectories: [],
  createdAt: "2025-01-01T00:00:00.000Z",
};

const title = (text: string): StoredEvent => ({ type: "title", title: text });

postgresTest(
  "PostgresSessionStore: a batch sent while the database is down is retried in place, never skipped",
  async () => {
    const cluster = await PrivateCluster.start(
      `${Deno.env.get("TMPDIR") ?? "/tmp"}/acp-test-pg-${crypto.randomUUID().slice(0, 8)}`,
    );
    try {
      const lines: string[] = [];
      const pg = await openPostgresStore({
        url: cluster.url,
        logger: createLogger("info", (line) => lines.push(line)),
        commitTimeoutMs: 60_000,
      });
      try {
        const { store } = pg;
        const lease = await store.acquire(ID);
        await store.create(HEADER);
        await store.append(ID, [title("before")], { sync: true });
        await cluster.pgCtl("stop");
        // Queued while the server is down: held and retried, in order, not dropped.
        const during = [
          store.append(ID, [{ type: "turn_start" }, title("during")], { sync: true }),
          store.append(ID, [title("async")], { sync: false }),
          store.append(ID, [{ type: "turn_end", stopReason: "end_turn" }], { sync: true }),
        ];
        let settled = false;
        void Promise.allSettled(during).then(() => settled = true);
        await pollUntil(() => lines.some((line) => line.includes("session log: retrying")), {
          what: "the store retrying the batch",
        });
        assert.equal(settled, false, "nothing is answered while the database is down");
        await cluster.pgCtl("start");
        await Promise.all(during);
        assert.ok(lines.some((line) => line.includes("wrote the session log again")));
        const loaded = await store.load(ID);
        assert.deepEqual(loaded?.records.map((record) => [record.seq, record.type]), [
          [1, "title"],
          [2, "turn_start"],
          [3, "title"],
          [4, "title"],
          [5, "turn_end"],
        ]);
        await lease.release();
      } finally {
        await pg.close();
      }
    } finally {
      await cluster.remove();
    }
  },
);

postgresTest(
  "PostgresSessionStore: events the database lost are not papered over by the next batch",
  async () => {
    await using database = await withTestDatabase();
    await using pg = await openPostgresStore({ url: database.url, logger: nullLogger });
    const { store } = pg;
    const lease = await store.acquire(ID);
    await store.create(HEADER);
    await store.append(ID, [title("one")], { sync: true });
    await store.append(ID, [title("two"), title("three")], { sync: false });
    // What a crash of the database does to an asynchronous commit: gone, and last_seq with it.
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      await sql`DELETE FROM acp_harness.events WHERE session_id = ${ID} AND seq > 1`;
      await sql`UPDATE acp_harness.sessions SET last_seq = 1 WHERE id = ${ID}`;
    } finally {
      await sql.end({ timeout: 5 });
    }
    await assert.rejects(
      store.append(ID, [{ type: "turn_end", stopReason: "end_turn" }], { sync: true }),
      (error) => error instanceof SessionLogFailedError && /holds 1 events/.test(error.message),
    );
    await assert.rejects(store.append(ID, [title("later")], { sync: true }), SessionLogFailedError);
    // Loaded again, the session goes on from what is stored, without a gap.
    assert.deepEqual((await store.load(ID))?.records.map((record) => record.seq), [1]);
    await store.append(ID, [title("again")], { sync: true });
    assert.deepEqual((await store.load(ID))?.records.map((record) => record.seq), [1, 2]);
    await lease.release();
  },
);
