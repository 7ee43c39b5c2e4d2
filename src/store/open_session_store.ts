/**
 * Opening the session store a location names: a `postgres://` or `postgresql://` URL selects
 * PostgreSQL (its module is loaded only then), `memory:` keeps sessions in this process only
 * (gone when it exits), anything else is a JSONL data directory.
 *
 * @module
 */
import { ConfigError } from "../config/value_types.ts";
import type { Host } from "../host/host.ts";
import { type Logger, nullLogger } from "../log/logger.ts";
import { JsonlSessionStore } from "./jsonl_session_store.ts";
import { MemoryAttachmentStore } from "./memory_attachment_store.ts";
import { MemorySessionStore } from "./memory_session_store.ts";
import type * as PostgresStore from "./postgres/postgres_store.ts";
import type { AttachmentStore, SessionStore } from "./session_store.ts";
import { lazyImport } from "../util/lazy_import.ts";

/** A session store and its attachment store, open until {@link OpenedSessionStore.close}. */
export interface OpenedSessionStore {
  /** The sessions. */
  readonly store: SessionStore;
  /** The attachments the sessions reference. */
  readonly attachments: AttachmentStore;
  /** How messages name the store: the directory, or the URL without its password. */
  readonly description: string;
  /** Whether it is the PostgreSQL store. */
  readonly postgres: boolean;
  /** Releases what the store holds (the PostgreSQL pool, leases and heartbeats). */
  close(): Promise<void>;
}

/** Options for {@link openSessionStore}. */
export interface OpenSessionStoreOptions {
  /** A `postgres://` URL, {@link MEMORY_STORE}, or an absolute JSONL data directory. */
  readonly location: string;
  /** The operating system (the JSONL store's files). */
  readonly host: Host;
  /** Where the store reports; never sees a password. @default {nullLogger} */
  readonly logger?: Logger;
  /** PostgreSQL: how long a lease outlives its holder's last heartbeat. @default {30_000} */
  readonly leaseTtlMs?: number;
  /**
   * PostgreSQL: how long a batch that cannot reach the database is retried before the session's
   * log is given up. @default {30_000}
   */
  readonly commitTimeoutMs?: number;
  /** PostgreSQL: aborts connecting. */
  readonly signal?: AbortSignal;
  /** PostgreSQL and memory: the clock that times records (the JSONL store uses `host.now()`). */
  readonly now?: () => number;
}

/** The store location that keeps sessions in memory, for this process only. */
export const MEMORY_STORE = "memory:";

/**
 * Whether a store location is a PostgreSQL connection URL.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isPostgresUrl } from "./open_session_store.ts";
 * assert.equal(isPostgresUrl("postgres://acp@db:5432/acp"), true);
 * assert.equal(isPostgresUrl("/var/lib/acp-harness"), false);
 * ```
 *
 * @param location A `--store` value
 * @returns `true` for `postgres://…` and `postgresql://…`
 */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/**
 * Opens the store a location names. PostgreSQL is connected and migrated before this resolves.
 *
 * @example A JSONL data directory
 * ```ts ignore
 * const opened = await openSessionStore({ location: "/tmp/acp-data", host });
 * const page = await opened.store.list({ limit: 10 });
 * await opened.close();
 * ```
 *
 * @param options The location, the host, the logger and the lease expiry
 * @returns The open store
 * @throws {ConfigError} PostgreSQL cannot be reached or its schema is newer than this code
 *   (rejects); the message names the URL without its password
 */
export async function openSessionStore(
  options: OpenSessionStoreOptions,
): Promise<OpenedSessionStore> {
  const logger = options.logger ?? nullLogger;
  if (options.location === MEMORY_STORE) {
    const attachments = new MemoryAttachmentStore();
    const store = new MemorySessionStore({
      attachments,
      ...(options.now ? { now: options.now } : {}),
    });
    return {
      store,
      attachments,
      description: "memory (not kept after exit)",
      postgres: false,
      close: () => Promise.resolve(),
    };
  }
  if (!isPostgresUrl(options.location)) {
    const store = new JsonlSessionStore({ host: options.host, dataDir: options.location, logger });
    return {
      store,
      attachments: store.attachments,
      description: options.location,
      postgres: false,
      close: () => Promise.resolve(),
    };
  }
  const { openPostgresStore, redactUrl } = await loadPostgresStore();
  const description = redactUrl(options.location);
  try {
    const opened = await openPostgresStore({
      url: options.location,
      logger,
      ...(options.leaseTtlMs === undefined ? {} : { leaseTtlMs: options.leaseTtlMs }),
      ...(options.commitTimeoutMs === undefined
        ? {}
        : { commitTimeoutMs: options.commitTimeoutMs }),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.now ? { now: options.now } : {}),
      host: options.host,
    });
    return {
      store: opened.store,
      attachments: opened.attachments,
      description,
      postgres: true,
      close: () => opened.close(),
    };
  } catch (error) {
    // The store's messages name the URL without its password; a stray full URL is redacted too.
    const message = String((error as Error).message ?? error).replaceAll(
      options.location,
      description,
    );
    throw new ConfigError(
      message.includes(description)
        ? message
        : `Cannot open the PostgreSQL store at ${description}: ${message}`,
    );
  }
}

/** The PostgreSQL store and its driver, loaded by the first `postgres://` location. */
function loadPostgresStore(): Promise<typeof PostgresStore> {
  return lazyImport<typeof PostgresStore>(import("./postgres/postgres_store" + ".ts"));
}
