/**
 * Opens the PostgreSQL store: a connection pool, the schema migrated under an advisory lock, a
 * {@link SessionStore} and an {@link AttachmentStore} on it, and the heartbeat of this instance's
 * session leases. Loaded only when the PostgreSQL store is chosen (the client library comes with
 * it).
 *
 * @module
 */
import postgres from "postgres";
import type { HostEnvironment } from "../../host/host.ts";
import type { Logger } from "../../log/logger.ts";
import type { AttachmentStore, SessionStore } from "../session_store.ts";
import { PostgresLeases } from "./_leases.ts";
import { PostgresAttachmentStore } from "./postgres_attachment_store.ts";
import { PostgresSessionStore } from "./postgres_session_store.ts";
import { PostgresStoreError } from "./postgres_store_error.ts";
import { migrate } from "./schema.ts";

/** Options for {@link openPostgresStore}. */
export interface PostgresStoreOptions {
  /** `postgres://user:pass@host:port/db` (also `postgresql://`, with query parameters). */
  readonly url: string;
  /** Where the store reports what it does; the password is never logged. */
  readonly logger: Logger;
  /**
   * Names this process in lease rows, and so in the errors of other instances.
   * @default {"<hostname>:<pid>:<random>" with `host`, else "acp-harness:<random>"}
   */
  readonly instanceId?: string;
  /**
   * How long a session lease lives without a heartbeat (the heartbeat runs every third of it):
   * the bound on how long a session of a dead instance stays locked.
   * @default {30_000}
   */
  readonly leaseTtlMs?: number;
  /**
   * How long a session's batch that cannot reach the database is retried before the session's
   * log is given up (see `PostgresSessionStore`).
   * @default {30_000}
   */
  readonly commitTimeoutMs?: number;
  /** Aborts opening (connecting and migrating). */
  readonly signal?: AbortSignal;
  /** The process and machine, for the default instance id. */
  readonly host?: Pick<HostEnvironment, "hostname" | "pid">;
  /**
   * The clock that times records, in ms since the epoch (leases use the database's clock).
   * @default {Date.now}
   */
  readonly now?: () => number;
  /**
   * Most connections of the pool.
   * @default {10}
   */
  readonly maxConnections?: number;
}

/** An open PostgreSQL store. */
export interface PostgresStore extends AsyncDisposable {
  /** The sessions. */
  readonly store: SessionStore;
  /** The attachments the sessions reference (the session store releases them on `delete`). */
  readonly attachments: AttachmentStore;
  /** The name of this instance in lease rows. */
  readonly instanceId: string;
  /** Stops heartbeats, releases this instance's leases, closes the pool. */
  close(): Promise<void>;
}

/** The default lease time. */
export const DEFAULT_LEASE_TTL_MS = 30_000;

/**
 * Connects, applies migrations under an advisory lock (refusing a newer schema), starts the
 * lease heartbeat.
 *
 * @example Opening and closing
 * ```ts ignore
 * import { openPostgresStore } from "./postgres_store.ts";
 * const pg = await openPostgresStore({ url: "postgres://acp@127.0.0.1:5432/acp", logger });
 * try {
 *   const { sessions } = await pg.store.list({ limit: 10 });
 * } finally {
 *   await pg.close();
 * }
 * ```
 *
 * @param options URL, logger, instance name, lease time, signal
 * @returns The open store
 * @throws {PostgresStoreError} The database cannot be reached or migrated (the URL in the message
 *   without its password)
 * @throws {SchemaVersionError} The database's schema is newer than this code knows
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const { url, logger, signal } = options;
  signal?.throwIfAborted();
  const leaseTtlMs = options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
  if (!Number.isSafeInteger(leaseTtlMs) || leaseTtlMs < 3) {
    throw new RangeError(`Cannot open the PostgreSQL store: bad leaseTtlMs ${leaseTtlMs}`);
  }
  const instanceId = options.instanceId ?? defaultInstanceId(options.host);
  const where = redactUrl(url);
  let sql: postgres.Sql;
  try {
    sql = postgres(url, {
      max: options.maxConnections ?? 10,
      onnotice: () => {},
      connect_timeout: 10,
      idle_timeout: 60,
      connection: {
        application_name: `acp-harness ${instanceId}`.replace(/[^\x20-\x7e]/g, "?").slice(0, 63),
      },
    });
  } catch (error) {
    throw new PostgresStoreError(`open the PostgreSQL store at ${where}`, scrub(error, url));
  }
  let migrated: { from: number; to: number };
  try {
    migrated = await abortable(migrate(sql), signal);
  } catch (error) {
    await sql.end({ timeout: 1 }).catch(() => {});
    if (signal?.aborted && error === signal.reason) throw error;
    if (error instanceof Error && error.name === "SchemaVersionError") throw error;
    throw new PostgresStoreError(`open the PostgreSQL store at ${where}`, scrub(error, url));
  }
  if (migrated.from !== migrated.to) {
    logger.info("PostgreSQL store schema migrated", { url: where, ...migrated });
  }
  const leases = new PostgresLeases({ sql, instance: instanceId, ttlMs: leaseTtlMs, logger });
  const attachments = new PostgresAttachmentStore({ sql, logger });
  const store = new PostgresSessionStore({
    sql,
    attachments,
    leases,
    logger,
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(options.commitTimeoutMs === undefined ? {} : { commitTimeoutMs: options.commitTimeoutMs }),
  });
  leases.start();
  logger.info("PostgreSQL store open", { url: where, instance: instanceId, leaseTtlMs });
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      try {
        await store.drain();
        await leases.close();
      } catch (error) {
        logger.warn("PostgreSQL store: could not release this instance's leases", {
          error: scrub(error, url),
        });
      } finally {
        await sql.end({ timeout: 5 });
      }
    })();
    return closed;
  };
  return { store, attachments, instanceId, close, [Symbol.asyncDispose]: close };
}

/**
 * The URL with its password replaced by `***`, for messages and logs. A string that is not a URL
 * comes back as `<unparsable URL>` (it might hold a password in a form this cannot find).
 *
 * @example Hiding the password
 * ```ts
 * import assert from "node:assert/strict";
 * import { redactUrl } from "./postgres_store.ts";
 * assert.equal(redactUrl("postgres://acp:s3cret@db:5432/acp"), "postgres://acp:***@db:5432/acp");
 * assert.equal(redactUrl("postgres://acp@db/acp"), "postgres://acp@db/acp");
 * ```
 *
 * @param url A connection string
 * @returns The same without its password (also one given as a `password` query parameter)
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "<unparsable URL>";
  }
  if (parsed.password !== "") parsed.password = "***";
  for (const key of [...parsed.searchParams.keys()]) {
    if (/^(password|pass|sslpassword)$/i.test(key)) parsed.searchParams.set(key, "***");
  }
  return parsed.href.replaceAll("%2A%2A%2A", "***");
}

function defaultInstanceId(host: Pick<HostEnvironment, "hostname" | "pid"> | undefined): string {
  const random = crypto.randomUUID().slice(0, 8);
  return host === undefined
    ? `acp-harness:${random}`
    : `${host.hostname()}:${host.pid()}:${random}`;
}

/** An error whose message cannot carry the URL's password. */
function scrub(error: unknown, url: string): unknown {
  let password = "";
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {
    return error;
  }
  if (password === "" || !(error instanceof Error) || !error.message.includes(password)) {
    return error;
  }
  const clean = new Error(error.message.replaceAll(password, "***"));
  clean.name = error.name;
  return clean;
}

/** `promise`, or a rejection with the signal's reason when it fires first. */
async function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return await promise;
  // Abandoned when the signal wins: its later failure must not go unhandled.
  promise.catch(() => {});
  signal.throwIfAborted();
  let onAbort: (() => void) | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        onAbort = () => reject(signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
      }),
    ]);
  } finally {
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}
