/**
 * Session leases across instances of the PostgreSQL store: a live lease refuses another instance
 * with the holder's name, the heartbeat keeps it alive past its first expiry, a dead holder's
 * lease is taken over once it expires, a holder that lost its lease cannot append any more, and
 * `close` gives the leases back.
 *
 * @module
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { type Logger, nullLogger } from "../../../src/log/logger.ts";
import {
  openPostgresStore,
  type PostgresStore,
} from "../../../src/store/postgres/postgres_store.ts";
import { type SessionHeader, SessionLockedError } from "../../../src/store/session_store.ts";
import { postgresTest, withTestDatabase } from "../../_helpers/postgres.ts";
import { pollUntil } from "../../_helpers/wait.ts";

function header(id: string): SessionHeader {
  return {
    version: 1,
    id,
    cwd: "/work",
    additionalDirectories: [],
    createdAt: new Date().toISOString(),
  };
}

async function open(
  url: string,
  instanceId: string,
  extra: { leaseTtlMs?: number; logger?: Logger } = {},
): Promise<PostgresStore> {
  return await openPostgresStore({ url, logger: nullLogger, instanceId, ...extra });
}

postgresTest("acquire(): instance A's live lease refuses B, naming A", async () => {
  await using database = await withTestDatabase();
  await using a = await open(database.url, "instance-a");
  await using b = await open(database.url, "instance-b");
  const lease = await a.store.acquire("s1");
  await a.store.create(header("s1"));
  await assert.rejects(b.store.acquire("s1"), (error: unknown) => {
    assert.ok(error instanceof SessionLockedError);
    assert.match(
      error.message,
      /session s1 is open in another acp-harness instance \("instance-a"\)/,
    );
    return true;
  });
  await assert.rejects(b.store.delete("s1"), /instance-a/);
  await lease.release();
  const taken = await b.store.acquire("s1");
  await assert.rejects(a.store.acquire("s1"), /instance-b/);
  await taken.release();
});

postgresTest("acquire(): the heartbeat keeps a lease alive past its first expiry", async () => {
  await using database = await withTestDatabase();
  await using a = await open(database.url, "beating", { leaseTtlMs: 300 });
  await using b = await open(database.url, "waiting");
  await a.store.acquire("s1");
  await using sql = client(database.url);
  const [first] = await sql<{ expires: Date }[]>`
    SELECT expires_at AS expires FROM acp_harness.leases WHERE session_id = 's1'`;
  // The database's clock, not ours, decides expiry: wait until it is past the first expiry.
  await pollUntil(async () => {
    const [row] = await sql<{ past: boolean }[]>`SELECT clock_timestamp() > ${
      first!.expires
    } AS past`;
    return row!.past;
  }, { what: "the first expiry of the lease to pass", intervalMs: 50 });
  await assert.rejects(b.store.acquire("s1"), /"beating"/);
});

postgresTest("acquire(): a killed holder's lease is taken over once it expires", async () => {
  await using database = await withTestDatabase();
  const ttl = 1_000;
  const holder = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("./_lease_holder.ts", import.meta.url).pathname,
      database.url,
      "doomed",
      String(ttl),
      "s1",
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  let killed = false;
  try {
    const reader = holder.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    while (!out.includes("held\n")) {
      const { value, done } = await reader.read();
      assert.ok(!done, `the holder ended before holding the lease: ${out}`);
      out += value;
    }
    reader.releaseLock();
    await using b = await open(database.url, "survivor");
    await assert.rejects(b.store.acquire("s1"), /"doomed"/);
    holder.kill("SIGKILL");
    killed = true;
    await holder.status;
    const started = Date.now();
    // Another process's lease: nothing announces its expiry but the database's clock.
    let lease: Awaited<ReturnType<typeof b.store.acquire>> | undefined;
    await pollUntil(async () => {
      lease = await b.store.acquire("s1").catch((error: unknown) => {
        if (error instanceof SessionLockedError) return undefined;
        throw error;
      });
      return lease !== undefined;
    }, { what: "the dead holder's lease to expire", intervalMs: 50 });
    assert.ok(Date.now() - started < ttl + 5_000, "taken over within the lease time and a margin");
    await b.store.append("s1", [{ type: "turn_end", stopReason: "end_turn" }], { sync: true });
    const loaded = await b.store.load("s1");
    assert.deepEqual(loaded?.records.map((r) => [r.seq, r.type]), [
      [1, "turn_start"],
      [2, "turn_end"],
    ]);
    await lease?.release();
  } finally {
    if (!killed) {
      holder.kill("SIGKILL");
      await holder.status;
    }
    await holder.stdout.cancel().catch(() => {});
  }
});

postgresTest(
  "append(): an instance whose lease was taken over cannot append any more",
  async () => {
    await using database = await withTestDatabase();
    const errors: string[] = [];
    const lost = Promise.withResolvers<void>();
    const logger: Logger = {
      ...nullLogger,
      error: (message) => {
        errors.push(message);
        if (message.includes("lease lost")) lost.resolve();
      },
    };
    await using a = await open(database.url, "stalled", { leaseTtlMs: 600, logger });
    await using b = await open(database.url, "successor");
    await a.store.acquire("s1");
    await a.store.create(header("s1"));
    await a.store.append("s1", [{ type: "turn_start" }], { sync: true });
    let lease: Awaited<ReturnType<typeof b.store.acquire>> | undefined;
    {
      // As if A had stalled past its lease time without a heartbeat. A's heartbeat (every 200 ms)
      // renews a lease nobody took yet, and under load it can land between the expiry and B's
      // acquire: expire it again until B has it.
      await using sql = client(database.url);
      for (let attempt = 1; lease === undefined; attempt++) {
        await sql`UPDATE acp_harness.leases SET expires_at = clock_timestamp() - interval '1 second'`;
        try {
          lease = await b.store.acquire("s1");
        } catch (error) {
          if (!(error instanceof SessionLockedError) || attempt === 20) throw error;
        }
      }
    }
    await assert.rejects(
      a.store.append("s1", [{ type: "turn_end", stopReason: "end_turn" }], { sync: false }),
      (error: unknown) => error instanceof SessionLockedError && /"successor"/.test(error.message),
    );
    await lost.promise;
    assert.deepEqual((await b.store.load("s1"))?.records.map((r) => r.seq), [1]);
    await lease.release();
  },
);

postgresTest("close(): the instance's leases are released", async () => {
  await using database = await withTestDatabase();
  const a = await open(database.url, "leaving");
  await using b = await open(database.url, "staying");
  await a.store.acquire("s1");
  await a.store.acquire("s2");
  await a.close();
  await (await b.store.acquire("s1")).release();
  await (await b.store.acquire("s2")).release();
});

/** A client of the test database, closed on dispose. */
function client(url: string): postgres.Sql & AsyncDisposable {
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  return Object.assign(sql, { [Symbol.asyncDispose]: () => sql.end({ timeout: 5 }) });
}
