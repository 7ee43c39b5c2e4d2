/**
 * The store contract run against the PostgreSQL store, each test in a fresh database (dropped
 * after it): the store under test and a second one on the same database with another instance
 * name (`reopen`), as another acp-harness instance would open it.
 *
 * @module
 */
import { nullLogger } from "../../src/log/logger.ts";
import { openPostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { postgresAvailable, withTestDatabase } from "../_helpers/postgres.ts";
import { EPOCH } from "./_helpers.ts";
import { storeContract } from "./_session_store_contract.ts";

const available = postgresAvailable();

storeContract("PostgresSessionStore", async () => {
  const database = await withTestDatabase();
  let now = EPOCH;
  const mine = await openPostgresStore({
    url: database.url,
    logger: nullLogger,
    instanceId: "contract-a",
    now: () => now,
  });
  const other = await openPostgresStore({
    url: database.url,
    logger: nullLogger,
    instanceId: "contract-b",
  });
  return {
    store: mine.store,
    attachments: mine.attachments,
    tick: (ms) => now += ms,
    reopen: () => other.store,
    durableOnReturn: false,
    async [Symbol.asyncDispose](): Promise<void> {
      try {
        await mine.close();
        await other.close();
      } finally {
        await database[Symbol.asyncDispose]();
      }
    },
  };
}, { ignore: "skipped" in available });
