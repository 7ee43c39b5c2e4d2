/**
 * Lock files: `{pid, hostname, time, nonce}` created with `O_EXCL` (or, for a holder's further
 * locks, as hard links to one it holds: the same content without a new file). A lock whose
 * process is dead (same host) is taken over under a second exclusive "takeover" file, so two
 * processes never both win the same stale lock; the lock path itself never disappears during a
 * takeover (temp + rename).
 *
 * @module
 */
import type { FileIdentity, Host } from "../host/host.ts";
import { abortableDelay } from "../util/abortable_delay.ts";
import { isRecord } from "../util/json.ts";
import { isNotFound } from "./_common.ts";

/** An unparsable lock younger than this is being written (create, then write): wait for it. */
const UNPARSABLE_GRACE_MS = 3_000;
/** A takeover guard older than this belongs to a taker that died. */
const TAKEOVER_STALE_MS = 5_000;
const ATTEMPTS = 5;

/** What a lock file says. */
export interface LockOwner {
  readonly pid: number;
  readonly hostname: string;
  /** ISO 8601 time it was taken. */
  readonly time: string;
  /** Distinguishes two holders within one process (same pid). */
  readonly nonce: string;
}

/** The outcome of {@link tryLock}. */
export type LockAttempt =
  | { readonly acquired: true; readonly lock: HeldLock }
  | { readonly acquired: false; readonly holder: LockOwner | undefined };

/** Options for {@link tryLock}. */
export interface TryLockOptions {
  /** Also treat a live holder's lock as stale after this long (for locks held only briefly). */
  readonly staleAfterMs?: number;
  /**
   * A lock this holder has: the new lock is made a hard link to its file (same owner, no new
   * file), falling back to a file of its own when that cannot be done. With `staleAfterMs`, the
   * file's modification time is set to now first, so the new lock does not look old.
   */
  readonly sameAs?: HeldLock;
}

interface ReadLock {
  readonly raw: string;
  readonly owner: LockOwner | undefined;
  readonly mtimeMs: number;
}

/** A lock this process holds. */
export class HeldLock {
  readonly #host: Host;
  readonly #path: string;
  readonly #raw: string;
  /** What the lock file says. */
  readonly owner: LockOwner;
  /** The lock file's device and inode, when known (a hard link of a template's). */
  file: FileIdentity | undefined;

  /**
   * @param host File access
   * @param path The lock file
   * @param owner What was written into it
   * @param file The lock file's device and inode, when known
   */
  constructor(host: Host, path: string, owner: LockOwner, file?: FileIdentity) {
    this.#host = host;
    this.#path = path;
    this.owner = owner;
    this.#raw = JSON.stringify(owner);
    this.file = file;
  }

  /** The lock file. */
  get path(): string {
    return this.#path;
  }

  /** Removes the lock file if it still says it is ours (a takeover may have replaced it). */
  async release(): Promise<void> {
    const current = await readRaw(this.#host, this.#path);
    if (current === this.#raw) await this.#host.remove(this.#path);
  }

  /**
   * {@link release}, synchronously (for {@link LockReleaser}): by the file's identity when it is
   * known (no read), else by its content.
   */
  releaseSync(): void {
    if (this.file) this.#host.removeIfSameFileSync(this.#path, this.file);
    else this.#host.removeIfContentSync(this.#path, this.#raw);
  }
}

/** Longest a burst of synchronous lock removals holds the event loop, in milliseconds. */
const RELEASE_BURST_MS = 4;

interface PendingRelease {
  readonly lock: HeldLock;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Releases held locks in bursts: the locks released in one go (a shutdown with many sessions
 * open) are removed synchronously, a few milliseconds' worth at a time with the event loop free in
 * between, instead of each costing an asynchronous read and remove.
 *
 * @example Releasing many locks at once
 * ```ts ignore
 * const releaser = new LockReleaser();
 * await Promise.all(locks.map((lock) => releaser.release(lock)));
 * ```
 */
export class LockReleaser {
  #pending: PendingRelease[] = [];
  #scheduled = false;

  /**
   * Removes the lock file if it still says it is ours, with the other locks released meanwhile.
   *
   * @param lock The lock
   * @returns Settles once it is removed; rejects with the removal's error
   */
  release(lock: HeldLock): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#pending.push({ lock, resolve, reject });
      if (this.#scheduled) return;
      this.#scheduled = true;
      // In a task of its own: every release made until then goes with it, and each burst is
      // bounded on its own.
      afterPendingEvents(() => this.#sweep());
    });
  }

  #sweep(): void {
    const pending = this.#pending;
    const deadline = performance.now() + RELEASE_BURST_MS;
    let done = 0;
    while (done < pending.length) {
      const { lock, resolve, reject } = pending[done++]!;
      try {
        lock.releaseSync();
        resolve();
      } catch (error) {
        reject(error);
      }
      if (performance.now() >= deadline) break;
    }
    this.#pending = pending.slice(done);
    if (this.#pending.length === 0) this.#scheduled = false;
    else afterPendingEvents(() => this.#sweep());
  }
}

/**
 * Runs `task` in a task of its own once the events already waiting (I/O) have run: a message to
 * itself, without a timer's minimum delay (1 ms and more, more still once timers nest).
 */
function afterPendingEvents(task: () => void): void {
  const { port1, port2 } = new MessageChannel();
  port1.onmessage = () => {
    port1.close();
    port2.close();
    task();
  };
  port2.postMessage(null);
}

/**
 * Takes the lock at `path` if it is free or stale.
 *
 * @example Taking and releasing a lock
 * ```ts ignore
 * const attempt = await tryLock(host, "/data/locks/abc.lock");
 * if (attempt.acquired) await attempt.lock.release();
 * else console.error(`held by pid ${attempt.holder?.pid}`);
 * ```
 *
 * @param host File access and process checks
 * @param path The lock file (its directory must exist)
 * @param options When a live holder's lock also counts as stale
 * @returns The held lock, or who holds it (`undefined` when unknown)
 */
export async function tryLock(
  host: Host,
  path: string,
  options: TryLockOptions = {},
): Promise<LockAttempt> {
  const template = options.sameAs;
  const owner: LockOwner = template?.owner ?? {
    pid: host.pid(),
    hostname: host.hostname(),
    time: new Date(host.now()).toISOString(),
    nonce: crypto.randomUUID(),
  };
  const raw = JSON.stringify(owner);
  let holder: LockOwner | undefined;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const made = await create(host, path, raw, template, options.staleAfterMs !== undefined);
    if (made !== false) {
      return {
        acquired: true,
        lock: new HeldLock(host, path, owner, made === true ? undefined : made),
      };
    }
    const existing = await readLock(host, path);
    if (existing === undefined) continue; // released meanwhile
    holder = existing.owner;
    const state = staleness(host, existing, options.staleAfterMs);
    if (state === "held") return { acquired: false, holder };
    if (state === "writing") {
      await abortableDelay(5 * (attempt + 1));
      continue;
    }
    if (await takeOver(host, path, existing.raw, raw)) {
      return { acquired: true, lock: new HeldLock(host, path, owner) };
    }
    await abortableDelay(1 + attempt * 2);
  }
  return { acquired: false, holder };
}

/**
 * Creates the lock file exclusively: as a hard link to `template`'s file when there is one and
 * that works (its content is `raw` too; `fresh`: its modification time set to now first), else as
 * a file of its own.
 *
 * @returns `false` when the lock file exists; for a link, the file's identity when known
 */
async function create(
  host: Host,
  path: string,
  raw: string,
  template: HeldLock | undefined,
  fresh: boolean,
): Promise<boolean | FileIdentity> {
  if (template !== undefined) {
    try {
      if (template.file === undefined) {
        const info = await host.stat(template.path);
        if (info?.ino !== undefined && info.dev !== undefined) {
          template.file = { dev: info.dev, ino: info.ino };
        }
      }
      if (fresh) await host.touch(template.path);
      if (!await host.linkExclusive(template.path, path)) return false;
      return template.file ?? true;
    } catch {
      // The template was released meanwhile, or the file system has no hard links.
    }
  }
  return await host.createExclusive(path, raw);
}

function staleness(
  host: Host,
  lock: ReadLock,
  staleAfterMs: number | undefined,
): "held" | "stale" | "writing" {
  const now = host.now();
  const { owner } = lock;
  if (owner === undefined) {
    return now - lock.mtimeMs > UNPARSABLE_GRACE_MS ? "stale" : "writing";
  }
  if (owner.hostname === host.hostname() && !host.isProcessAlive(owner.pid)) return "stale";
  if (staleAfterMs !== undefined) {
    const since = Date.parse(owner.time);
    const age = now - (Number.isFinite(since) ? Math.max(since, lock.mtimeMs) : lock.mtimeMs);
    if (age > staleAfterMs) return "stale";
  }
  return "held";
}

/** Replaces a stale lock whose content is still `stale` with `mine`; `false` when someone else won. */
async function takeOver(host: Host, path: string, stale: string, mine: string): Promise<boolean> {
  const guard = `${path}.takeover`;
  if (!await host.createExclusive(guard, mine)) {
    const other = await readLock(host, guard);
    if (other !== undefined && staleness(host, other, TAKEOVER_STALE_MS) === "stale") {
      await host.remove(guard);
    }
    return false;
  }
  try {
    if (await readRaw(host, path) !== stale) return false;
    await host.writeFileAtomic(path, mine);
    return await readRaw(host, path) === mine;
  } finally {
    await host.remove(guard);
  }
}

async function readRaw(host: Host, path: string): Promise<string | undefined> {
  try {
    return await host.readTextFile(path);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

async function readLock(host: Host, path: string): Promise<ReadLock | undefined> {
  const info = await host.stat(path);
  const raw = await readRaw(host, path);
  if (raw === undefined || info === undefined) return undefined;
  return { raw, owner: parseOwner(raw), mtimeMs: info.mtimeMs };
}

function parseOwner(raw: string): LockOwner | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (
    !isRecord(value) || !Number.isSafeInteger(value.pid) || typeof value.hostname !== "string" ||
    typeof value.time !== "string"
  ) {
    return undefined;
  }
  return {
    pid: value.pid as number,
    hostname: value.hostname,
    time: value.time,
    nonce: typeof value.nonce === "string" ? value.nonce : "",
  };
}
