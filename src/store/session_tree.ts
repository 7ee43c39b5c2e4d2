/**
 * Sessions as a tree: a session's descendants (the sessions whose header names it as `parent`,
 * theirs, and so on), found through {@link SessionStore.list}'s lineage filter, and the delete of
 * a session with them that every store does.
 *
 * @module
 */
import type { DeleteOptions, SessionLease, SessionStore } from "./session_store.ts";

/** Sessions read per `list` call while looking for descendants. */
const PAGE_SIZE = 500;

/**
 * The ids of a session's descendants: its children first, then theirs, each generation in list
 * order. A session met twice (parents that name each other) counts once; the session itself is
 * never among them.
 *
 * @example A child and a grandchild
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemorySessionStore } from "./memory_session_store.ts";
 * import { descendantIds } from "./session_tree.ts";
 * const store = new MemorySessionStore();
 * const header = (id: string, parent?: string) => ({
 *   version: 1 as const, id, cwd: "/work", additionalDirectories: [],
 *   createdAt: new Date().toISOString(),
 *   ...(parent ? { parent: { sessionId: parent, toolCallId: "call-1" } } : {}),
 * });
 * await store.create(header("a"));
 * await store.create(header("b", "a"));
 * await store.create(header("c", "b"));
 * assert.deepEqual(await descendantIds(store, "a"), ["b", "c"]);
 * ```
 *
 * @param store The store to look in
 * @param id The session
 * @param options An abort signal, honoured before each `list`
 * @returns The descendants' ids
 */
export async function descendantIds(
  store: Pick<SessionStore, "list">,
  id: string,
  options?: DeleteOptions,
): Promise<string[]> {
  const seen = new Set([id]);
  const found: string[] = [];
  for (let next = 0, parents = [id]; next < parents.length; next++) {
    const parent = parents[next] as string;
    let cursor: string | undefined;
    do {
      const page = await store.list({
        parent,
        limit: PAGE_SIZE,
        ...(cursor === undefined ? {} : { cursor }),
        ...(options?.signal ? { signal: options.signal } : {}),
        ...(options?.tenant === undefined ? {} : { tenant: options.tenant }),
      });
      for (const { id: child } of page.sessions) {
        if (seen.has(child)) continue;
        seen.add(child);
        found.push(child);
        parents.push(child);
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined);
  }
  return found;
}

/** What a store does for {@link deleteTree}. */
export interface TreeDeletion {
  /** Lists sessions (the store's own `list`). */
  readonly list: SessionStore["list"];
  /** The session's lease: the one this store holds, or one taken now. */
  readonly lease: (id: string) => Promise<SessionLease>;
  /** Removes one session under its lease, and releases what no other session references. */
  readonly remove: (id: string) => Promise<void>;
}

/**
 * Deletes a session with its descendants, as {@link SessionStore.delete} says: every lease first
 * (when one cannot be had, the ones taken are given back and nothing is removed), then the
 * descendants, deepest first, then the session; the leases are released when done.
 *
 * @param id The session
 * @param options An abort signal, honoured until the first removal starts
 * @param steps The store's parts
 * @returns Resolves once they are all gone
 * @throws {SessionLockedError} A lease another holder has (rejects)
 */
export async function deleteTree(
  id: string,
  options: DeleteOptions | undefined,
  steps: TreeDeletion,
): Promise<void> {
  const signal = options?.signal;
  const ids = [id, ...await descendantIds(steps, id, options)];
  const leases: SessionLease[] = [];
  try {
    for (const session of ids) {
      signal?.throwIfAborted();
      leases.push(await steps.lease(session));
    }
    signal?.throwIfAborted();
    for (const session of ids.toReversed()) await steps.remove(session);
  } finally {
    await Promise.all(leases.map((lease) => lease.release()));
  }
}
