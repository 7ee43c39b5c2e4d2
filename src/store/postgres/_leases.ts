/**
 * Session leases on PostgreSQL: a row per open session in `acp_harness.leases`, naming the
 * instance that holds it, renewed by a heartbeat every third of the lease time, taken over by
 * another instance once it has expired (its holder died or lost the database for that long).
 *
 * Times are the database's (`clock_timestamp()`), never an instance's clock, so clock skew between
 * machines does not shorten or stretch a lease.
 *
 * @module
 */
import type postgres from "postgres";
import type { Logger } from "../../log/logger.ts";
import { isValidSessionId } from "../_common.ts";
import { type SessionLease, SessionLockedError, type StoreCallOptions } from "../session_store.ts";
import { InvalidSessionIdError } from "../store_errors.ts";

/** Options for {@link PostgresLeases}. */
export interface PostgresLeasesOptions {
  /** The connection pool (migrated). */
  readonly sql: postgres.Sql;
  /** Names this instance in lease rows and in other instances' errors. */
  readonly instance: string;
  /** How long a lease lives without a heartbeat. */
  readonly ttlMs: number;
  /** Where heartbeat failures and lost leases are reported. */
  readonly logger: Logger;
}

/** Options for {@link PostgresLeases.acquire}. */
export interface LeaseAcquireOptions extends StoreCallOptions {
  /** Resolves once the session's pending writes of this store are done (before a release). */
  readonly settle: () => Promise<void>;
}

interface LeaseRow {
  readonly instance: string;
  readonly expires: string;
}

/** The leases one store object holds, and their heartbeat. */
export class PostgresLeases {
  /** This store object's identity in lease rows (instances may share a name; never an owner). */
  readonly owner: string = crypto.randomUUID();
  readonly #sql: postgres.Sql;
  readonly #instance: string;
  readonly #ttlMs: number;
  readonly #logger: Logger;
  /** Leases held or being acquired, by session id. */
  readonly #held = new Map<string, PostgresLease>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #beating: Promise<void> | undefined;
  #closed = false;

  /**
   * Creates the keeper; {@link start} starts the heartbeat.
   *
   * @param options Pool, instance name, lease time, logger
   */
  constructor(options: PostgresLeasesOptions) {
    this.#sql = options.sql;
    // A PostgreSQL text value cannot hold NUL.
    this.#instance = options.instance.replaceAll("\u0000", "\ufffd");
    this.#ttlMs = options.ttlMs;
    this.#logger = options.logger;
  }

  /** The instance name in lease rows. */
  get instance(): string {
    return this.#instance;
  }

  /** Starts renewing this store's leases every third of the lease time. */
  start(): void {
    this.#timer ??= setInterval(() => {
      if (this.#beating === undefined) {
        this.#beating = this.#heartbeat().finally(() => this.#beating = undefined);
      }
    }, Math.max(1, Math.floor(this.#ttlMs / 3)));
  }

  /** Whether this store holds (or is acquiring) the session's lease. */
  holds(id: string): boolean {
    return this.#held.has(id);
  }

  /** This store's lease on the session, if it holds one. */
  get(id: string): SessionLease | undefined {
    return this.#held.get(id);
  }

  /**
   * Takes a session's lease for this store: a new row, or the row of a holder whose lease has
   * expired (taken over in the same transaction, which also locks the session's row so that the
   * old holder's appends either committed before or are refused after).
   *
   * @param id The session
   * @param options Abort signal; `settle` waits for the session's pending writes on release
   * @returns The lease
   * @throws {SessionLockedError} Another live holder has it (named), or this store already
   */
  async acquire(id: string, options: LeaseAcquireOptions): Promise<SessionLease> {
    const signal = options.signal;
    signal?.throwIfAborted();
    if (!isValidSessionId(id)) throw new InvalidSessionIdError(String(id));
    if (this.#closed) throw new Error("Cannot acquire session lease: the store is closed");
    if (this.#held.has(id)) {
      throw new SessionLockedError(
        `session ${id} is already open in this acp-harness instance ("${this.#instance}")`,
      );
    }
    const leaseId = crypto.randomUUID();
    const lease = new PostgresLease(id, (lease) => this.#release(lease, leaseId, options.settle));
    this.#held.set(id, lease);
    try {
      const holder = await this.#sql.begin(async (tx) => {
        await tx`SELECT 1 FROM acp_harness.sessions WHERE id = ${id} FOR UPDATE`;
        const taken = await tx`
          INSERT INTO acp_harness.leases AS l
            (session_id, instance, owner, lease_id, acquired_at, heartbeat_at, expires_at)
          VALUES (${id}, ${this.#instance}, ${this.owner}, ${leaseId}, clock_timestamp(),
            clock_timestamp(), clock_timestamp() + ${this.#ttlMs} * interval '1 millisecond')
          ON CONFLICT (session_id) DO UPDATE SET
            instance = excluded.instance, owner = excluded.owner, lease_id = excluded.lease_id,
            acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at,
            expires_at = excluded.expires_at
          WHERE l.expires_at <= clock_timestamp() OR l.owner = excluded.owner
          RETURNING session_id`;
        if (taken.length > 0) return undefined;
        const [row] = await tx<LeaseRow[]>`
          SELECT instance,
            to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS expires
          FROM acp_harness.leases WHERE session_id = ${id}`;
        return row ?? { instance: "unknown", expires: "" };
      });
      if (holder !== undefined) throw lockedError(id, holder);
      lease.confirmed = true;
    } catch (error) {
      if (this.#held.get(id) === lease) this.#held.delete(id);
      throw error;
    }
    if (signal?.aborted) {
      await lease.release();
      throw signal.reason;
    }
    return lease;
  }

  /**
   * Stops the heartbeat and gives up every lease this store holds.
   *
   * @returns Resolves once the rows are gone
   */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#beating;
    this.#held.clear();
    await this.#sql`DELETE FROM acp_harness.leases WHERE owner = ${this.owner}`;
  }

  async #release(
    lease: PostgresLease,
    leaseId: string,
    settle: () => Promise<void>,
  ): Promise<void> {
    if (this.#held.get(lease.id) !== lease) return;
    try {
      await settle();
      await this.#sql`DELETE FROM acp_harness.leases WHERE lease_id = ${leaseId}`;
    } finally {
      // A row left behind by a failed delete is this store's: its next acquire takes it back,
      // and the heartbeat no longer renews it, so it expires for everyone else.
      if (this.#held.get(lease.id) === lease) this.#held.delete(lease.id);
    }
  }

  async #heartbeat(): Promise<void> {
    const ids = [...this.#held.keys()];
    if (ids.length === 0) return;
    try {
      const renewed = await this.#sql<{ sessionId: string }[]>`
        UPDATE acp_harness.leases
        SET heartbeat_at = clock_timestamp(),
          expires_at = clock_timestamp() + ${this.#ttlMs} * interval '1 millisecond'
        WHERE owner = ${this.owner} AND session_id = ANY(${ids}::text[])
        RETURNING session_id AS "sessionId"`;
      const kept = new Set(renewed.map((row) => row.sessionId));
      for (const id of ids) {
        // A lease being acquired has no row yet; one released meanwhile is gone from the map.
        const lease = this.#held.get(id);
        if (lease === undefined || kept.has(id) || !lease.confirmed) continue;
        if (!lease.lost) {
          lease.lost = true;
          this.#logger.error(
            "session lease lost: another instance took the session over after the lease expired",
            { session: id, instance: this.#instance },
          );
        }
      }
    } catch (error) {
      this.#logger.warn("session lease heartbeat failed; retrying", {
        error,
        leases: ids.length,
      });
    }
  }
}

/** A held lease; `release` is idempotent and never releases a later lease of the session. */
class PostgresLease implements SessionLease {
  readonly id: string;
  readonly #release: (lease: PostgresLease) => Promise<void>;
  #released: Promise<void> | undefined;
  /** Set once the lease row was written (a heartbeat before then finds no row). */
  confirmed = false;
  /** Set when a heartbeat found the row gone or taken. */
  lost = false;

  constructor(id: string, release: (lease: PostgresLease) => Promise<void>) {
    this.id = id;
    this.#release = release;
  }

  release(): Promise<void> {
    this.#released ??= this.#release(this);
    return this.#released;
  }
}

function lockedError(id: string, holder: LeaseRow): SessionLockedError {
  const until = holder.expires ? ` until ${holder.expires} unless it renews its lease` : "";
  return new SessionLockedError(
    `session ${id} is open in another acp-harness instance ("${holder.instance}")${until}`,
  );
}
