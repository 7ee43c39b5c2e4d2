/**
 * The PostgreSQL store's schema: versioned migrations, applied at start-up under an advisory lock
 * so that instances starting together migrate once, and a refusal to run on a schema newer than
 * this code knows.
 *
 * Everything lives in the `acp_harness` schema (namespace) of the database, so the tables never
 * collide with an application's own `sessions` table:
 *
 * - `schema_migrations (version, applied_at)`: one row per applied migration; the schema version
 *   is the highest.
 * - `sessions (id, header, cwd, additional_directories, title, created_at, updated_at, last_seq,
 *   parent_id, tenant)`: one row per session. `header` is the header exactly as created (JSON text);
 *   `created_at` (the header's creation time) and `id` are the list order, indexed overall and
 *   per `cwd`, and for the sessions without a parent overall, per `cwd` and (the others) per
 *   parent; `last_seq` is the sequence number of the session's last event; `parent_id` the
 *   header's `parent.sessionId` (migration 2); `tenant` the header's `tenant`, the tenant that
 *   owns the session, indexed with the list order (migration 3).
 * - `events (session_id, seq, time, event)`: `PRIMARY KEY (session_id, seq)`, so a lost or a
 *   doubled event cannot be stored. `event` is `json`, not `jsonb`: the exact text is kept, and a
 *   tool result may hold `\u0000`, which `jsonb` refuses.
 * - `session_attachments (session_id, sha256)`: which sessions reference which attachment.
 * - `attachments (sha256, mime_type, bytes, created_at)`: image bytes by their sha256.
 * - `leases (session_id, instance, owner, lease_id, acquired_at, heartbeat_at, expires_at)`: the
 *   instance that has a session open, until `expires_at` unless its heartbeat moves it on.
 *
 * @module
 */
import type postgres from "postgres";

/** The schema (namespace) that holds the store's tables. */
export const SCHEMA_NAME = "acp_harness";

/** One migration: the statements that take the schema from `version - 1` to `version`. */
export interface Migration {
  /** The schema version it leads to: 1, 2, … without gaps. */
  readonly version: number;
  /** What it does, recorded in `schema_migrations`. */
  readonly description: string;
  /** The SQL statements, run in order in the migration transaction. */
  readonly statements: readonly string[];
}

/** The migrations, in order; append new ones, never edit an applied one. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "sessions, events, attachments and leases",
    statements: [
      `CREATE TABLE acp_harness.sessions (
        id text COLLATE "C" PRIMARY KEY,
        header json NOT NULL,
        cwd text NOT NULL,
        additional_directories text[] NOT NULL,
        title text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        last_seq integer NOT NULL DEFAULT 0 CHECK (last_seq >= 0)
      )`,
      `CREATE INDEX sessions_list ON acp_harness.sessions (created_at DESC, id)`,
      `CREATE INDEX sessions_cwd_list ON acp_harness.sessions (cwd, created_at DESC, id)`,
      `CREATE TABLE acp_harness.events (
        session_id text COLLATE "C" NOT NULL REFERENCES acp_harness.sessions ON DELETE CASCADE,
        seq integer NOT NULL CHECK (seq >= 1),
        time timestamptz NOT NULL,
        event json NOT NULL,
        PRIMARY KEY (session_id, seq)
      )`,
      `CREATE TABLE acp_harness.session_attachments (
        session_id text COLLATE "C" NOT NULL REFERENCES acp_harness.sessions ON DELETE CASCADE,
        sha256 text NOT NULL,
        PRIMARY KEY (session_id, sha256)
      )`,
      `CREATE INDEX session_attachments_sha256 ON acp_harness.session_attachments (sha256)`,
      `CREATE TABLE acp_harness.attachments (
        sha256 text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
        mime_type text NOT NULL,
        bytes bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`,
      `CREATE TABLE acp_harness.leases (
        session_id text COLLATE "C" PRIMARY KEY,
        instance text NOT NULL,
        owner uuid NOT NULL,
        lease_id uuid NOT NULL,
        acquired_at timestamptz NOT NULL,
        heartbeat_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL
      )`,
      `CREATE INDEX leases_owner ON acp_harness.leases (owner)`,
    ],
  },
  {
    version: 2,
    description: "sessions.parent_id: the session that started a session, listed and filtered",
    statements: [
      `ALTER TABLE acp_harness.sessions ADD COLUMN parent_id text COLLATE "C"`,
      `UPDATE acp_harness.sessions SET parent_id = header->'parent'->>'sessionId'
        WHERE json_typeof(header->'parent'->'sessionId') = 'string'`,
      `CREATE INDEX sessions_top_list ON acp_harness.sessions (created_at DESC, id)
        WHERE parent_id IS NULL`,
      `CREATE INDEX sessions_top_cwd_list ON acp_harness.sessions (cwd, created_at DESC, id)
        WHERE parent_id IS NULL`,
      `CREATE INDEX sessions_parent_list ON acp_harness.sessions (parent_id, created_at DESC, id)
        WHERE parent_id IS NOT NULL`,
    ],
  },
  {
    version: 3,
    description: "sessions.tenant: the tenant that owns a session, listed by it",
    statements: [
      `ALTER TABLE acp_harness.sessions ADD COLUMN tenant text COLLATE "C"`,
      `UPDATE acp_harness.sessions SET tenant = header->>'tenant'
        WHERE json_typeof(header->'tenant') = 'string'`,
      `CREATE INDEX sessions_tenant_list ON acp_harness.sessions (tenant, created_at DESC, id)
        WHERE tenant IS NOT NULL`,
    ],
  },
];

/** The schema version this code writes and reads. */
export const SCHEMA_VERSION: number = MIGRATIONS.at(-1)?.version ?? 0;

/**
 * The two keys of the advisory lock that serializes migrations (`pg_advisory_xact_lock(int,
 * int)`): "acph" and 1.
 */
const MIGRATION_LOCK = [0x61637068, 1] as const;

/** The database holds a schema newer than this code knows: an older acp-harness met a newer one. */
export class SchemaVersionError extends Error {
  /** The database's schema version. */
  readonly found: number;
  /** The newest version this code knows. */
  readonly known: number;

  /**
   * Creates it.
   *
   * @param found The database's schema version
   * @param known The newest version this code knows
   */
  constructor(found: number, known: number) {
    super(
      `Cannot use the PostgreSQL store: its schema is version ${found}, newer than version ` +
        `${known} that this acp-harness knows; upgrade acp-harness (every instance on one ` +
        "database must run a version that knows its schema)",
    );
    this.name = "SchemaVersionError";
    this.found = found;
    this.known = known;
  }
}

/** What {@link migrate} did. */
export interface MigrationResult {
  /** The schema version before. */
  readonly from: number;
  /** The schema version now. */
  readonly to: number;
}

/**
 * Brings the database's schema to {@link SCHEMA_VERSION}, in one transaction that holds an
 * advisory lock: concurrent callers (instances starting together) wait for each other, and only
 * the first applies anything. A schema newer than this code knows is refused.
 *
 * @example Migrating at start-up
 * ```ts ignore
 * import postgres from "postgres";
 * import { migrate } from "./schema.ts";
 * const sql = postgres("postgres://acp@127.0.0.1:5432/acp");
 * const { from, to } = await migrate(sql, MIGRATIONS);
 * ```
 *
 * @param sql A connection pool
 * @param migrations The migrations to apply, in order (the store's own unless a test says)
 * @returns The versions before and after
 * @throws {SchemaVersionError} The database's schema is newer than the last migration
 */
export async function migrate(
  sql: postgres.Sql,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<MigrationResult> {
  const known = migrations.at(-1)?.version ?? 0;
  return await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK[0]}::int, ${MIGRATION_LOCK[1]}::int)`;
    // Under the lock: no other instance creates these concurrently.
    await tx`SET LOCAL client_min_messages = warning`;
    await tx.unsafe(`CREATE SCHEMA IF NOT EXISTS ${SCHEMA_NAME}`);
    await tx.unsafe(
      `CREATE TABLE IF NOT EXISTS ${SCHEMA_NAME}.schema_migrations (
        version integer PRIMARY KEY,
        description text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`,
    );
    const [row] = await tx<{ version: number | null }[]>`
      SELECT max(version) AS version FROM acp_harness.schema_migrations`;
    const from = row?.version ?? 0;
    if (from > known) throw new SchemaVersionError(from, known);
    for (const migration of migrations) {
      if (migration.version <= from) continue;
      for (const statement of migration.statements) await tx.unsafe(statement);
      await tx`INSERT INTO acp_harness.schema_migrations (version, description)
        VALUES (${migration.version}, ${migration.description})`;
    }
    return { from, to: Math.max(from, known) };
  });
}
