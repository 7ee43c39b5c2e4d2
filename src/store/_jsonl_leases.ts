/**
 * The leases of {@link JsonlSessionStore}: `locks/<id>.lock`, one per session held by this
 * process, taken over from dead processes (see `_lock_file.ts`).
 *
 * @module
 */
import type { Host } from "../host/host.ts";
import { type HeldLock, type LockOwner, LockReleaser, tryLock } from "./_lock_file.ts";
import { type SessionLease, SessionLockedError } from "./session_store.ts";

/** What happens around taking and giving up a lease. */
export interface LeaseHooks {
  /** Runs once the lock is held, before the lease is handed out; a failure gives the lock back. */
  readonly acquired: () => Promise<void>;
  /** Runs on release, before the lock file goes. */
  readonly releasing: () => Promise<void>;
}

/** The leases this store holds, by session. */
export class JsonlLeases {
  readonly #host: Host;
  readonly #dir: string;
  readonly #ensureDirs: () => Promise<void>;
  /** Leases of this store; `null` while an acquire is in flight. */
  readonly #leases = new Map<string, JsonlSessionLease | null>();
  /** Removes the lock files of leases released together in one burst. */
  readonly #releaser = new LockReleaser();
  /** The locks held, by session: a new lock is a hard link to one of them (no new file). */
  readonly #locks = new Map<string, HeldLock>();

  /**
   * @param host File access and process checks
   * @param dir The `locks` directory
   * @param ensureDirs Creates it
   */
  constructor(host: Host, dir: string, ensureDirs: () => Promise<void>) {
    this.#host = host;
    this.#dir = dir;
    this.#ensureDirs = ensureDirs;
  }

  /**
   * A lock file this store holds (any), for a new lock to be a hard link to: the same owner
   * without a new file.
   */
  template(): HeldLock | undefined {
    return this.#locks.values().next().value;
  }

  /** The lease this store holds on a session (`null` while it is being taken). */
  held(id: string): SessionLease | null | undefined {
    return this.#leases.get(id);
  }

  /**
   * Takes a session's lock file for this store.
   *
   * @param id A valid session id
   * @param hooks What to do once held, and on release
   * @param signal Checked once the lock is held (the lock is given back when it fired)
   * @returns The lease; `release()` runs `hooks.releasing`, then removes the lock
   * @throws {SessionLockedError} Another live process, or this store already, holds it
   */
  async acquire(id: string, hooks: LeaseHooks, signal?: AbortSignal): Promise<SessionLease> {
    if (this.#leases.has(id)) {
      throw lockedError(id, { pid: this.#host.pid(), hostname: this.#host.hostname() }, this.#host);
    }
    this.#leases.set(id, null);
    let lock: HeldLock | undefined;
    try {
      await this.#ensureDirs();
      const template = this.template();
      const attempt = await tryLock(
        this.#host,
        `${this.#dir}/${id}.lock`,
        template ? { sameAs: template } : {},
      );
      if (!attempt.acquired) throw lockedError(id, attempt.holder, this.#host);
      lock = attempt.lock;
      this.#locks.set(id, lock);
      signal?.throwIfAborted();
      await hooks.acquired();
      const held = lock;
      const lease: JsonlSessionLease = new JsonlSessionLease(() =>
        this.#release(id, lease, held, hooks)
      );
      this.#leases.set(id, lease);
      return lease;
    } catch (error) {
      this.#leases.delete(id);
      this.#locks.delete(id);
      await lock?.release();
      throw error;
    }
  }

  async #release(
    id: string,
    lease: JsonlSessionLease,
    lock: HeldLock,
    hooks: LeaseHooks,
  ): Promise<void> {
    try {
      await hooks.releasing();
      // No longer a template for new locks: its file goes now.
      if (this.#locks.get(id) === lock) this.#locks.delete(id);
      await this.#releaser.release(lock);
    } finally {
      if (this.#leases.get(id) === lease) this.#leases.delete(id);
    }
  }
}

/** The lease handed out by {@link JsonlLeases.acquire}; `release` is idempotent. */
class JsonlSessionLease implements SessionLease {
  readonly #release: () => Promise<void>;
  #released: Promise<void> | undefined;

  constructor(release: () => Promise<void>) {
    this.#release = release;
  }

  release(): Promise<void> {
    this.#released ??= this.#release();
    return this.#released;
  }
}

function lockedError(
  id: string,
  holder: Pick<LockOwner, "pid" | "hostname"> | undefined,
  host: Host,
): SessionLockedError {
  if (holder === undefined) {
    return new SessionLockedError(
      `session ${id} is open in another acp-harness process (pid unknown)`,
    );
  }
  if (holder.hostname !== host.hostname()) {
    return new SessionLockedError(
      `session ${id} is open in another acp-harness process (pid ${holder.pid} on ${holder.hostname})`,
    );
  }
  if (holder.pid === host.pid()) {
    return new SessionLockedError(
      `session ${id} is already open in this acp-harness process (pid ${holder.pid})`,
    );
  }
  return new SessionLockedError(
    `session ${id} is open in another acp-harness process (pid ${holder.pid})`,
  );
}
