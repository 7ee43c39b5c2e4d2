/**
 * A process that holds a session lease until it is killed: opens the PostgreSQL store at
 * `args[0]` as instance `args[1]` with lease time `args[2]` ms, creates and acquires session
 * `args[3]`, appends one event, prints `held`, and waits.
 *
 * @module
 */
import { nullLogger } from "../../../src/log/logger.ts";
import { openPostgresStore } from "../../../src/store/postgres/postgres_store.ts";

const [url, instanceId, ttl, id] = Deno.args as [string, string, string, string];
const pg = await openPostgresStore({
  url,
  logger: nullLogger,
  instanceId,
  leaseTtlMs: Number(ttl),
});
await pg.store.acquire(id);
await pg.store.create({
  version: 1,
  id,
  cwd: "/work",
  additionalDirectories: [],
  createdAt: new Date().toISOString(),
});
await pg.store.append(id, [{ type: "turn_start" }], { sync: true });
await Deno.stdout.write(new TextEncoder().encode("held\n"));
// Held until SIGKILL: the heartbeat keeps the lease alive meanwhile.
await new Promise(() => {});
