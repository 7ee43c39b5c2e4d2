/**
 * The contract every {@link SessionStore} meets (with its {@link AttachmentStore}), as one suite
 * a store's test file runs: `storeContract("MyStore", makeStore)`.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type AttachmentStore,
  InvalidCursorError,
  type ListOptions,
  type SessionHeader,
  SessionLockedError,
  type SessionStore,
  type StoredEvent,
} from "../../src/store/session_store.ts";
import {
  InvalidSessionIdError,
  SessionExistsError,
  SessionLogFailedError,
  SessionNotFoundError,
} from "../../src/store/store_errors.ts";

/** A store under test, on fresh data; disposing it removes whatever it made. */
export interface StoreUnderTest extends AsyncDisposable {
  readonly store: SessionStore;
  /** The attachment store the session store releases attachments to. */
  readonly attachments: AttachmentStore;
  /** Moves the store's clock forward (the time of appended records). */
  tick(ms: number): void;
  /**
   * Another store on the same data, as another process would open it; absent for a store that
   * serves one process only.
   */
  readonly reopen?: () => SessionStore;
  /**
   * `false` for a store whose non-sync appends survive a crash of the process only once their
   * promise resolved, not already when `append` returned (PostgreSQL: a commit point is a
   * committed transaction, and nothing is committed synchronously).
   */
  readonly durableOnReturn?: false;
}

/** Options for {@link storeContract}. */
export interface StoreContractOptions {
  /** Registers the tests as ignored (a store whose server is not available). */
  readonly ignore?: boolean;
}

const T0 = Date.UTC(2025, 0, 1);
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 7, 7]);
const GIF = new Uint8Array([0x47, 0x49, 0x46, 0x38, 9, 9]);

function id(n: number): string {
  return `00000000-0000-4000-8000-${n.toString().padStart(12, "0")}`;
}

function header(n: number, createdMs = n, cwd = "/work/project"): SessionHeader {
  return {
    version: 1,
    id: id(n),
    cwd,
    additionalDirectories: ["/work/shared"],
    createdAt: new Date(T0 + createdMs).toISOString(),
  };
}

/** The header of session `n`, started by tool call `call-<n>` of session `parent`. */
function child(n: number, parent: number, createdMs = n, cwd = "/work/project"): SessionHeader {
  return {
    ...header(n, createdMs, cwd),
    parent: { sessionId: id(parent), toolCallId: `call-${n}` },
  };
}

function title(text: string): StoredEvent {
  return { type: "title", title: text };
}

function image(sha256: string): StoredEvent {
  return {
    type: "user",
    messageId: crypto.randomUUID(),
    content: [{ type: "text", text: "look" }, { type: "image", mimeType: "image/png", sha256 }],
  };
}

function aborted(): { signal: AbortSignal; reason: Error } {
  const controller = new AbortController();
  const reason = new Error("stop");
  controller.abort(reason);
  return { signal: controller.signal, reason };
}

/** Lists every page of `limit` sessions, running `between` after each page. */
async function listAll(
  store: SessionStore,
  limit: number,
  between: (page: number) => Promise<void> = () => Promise.resolve(),
  cwd?: string,
  filter: Pick<ListOptions, "parent" | "tenant"> = {},
): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let page = 0;; page++) {
    const result = await store.list({
      limit,
      ...(cursor ? { cursor } : {}),
      ...(cwd ? { cwd } : {}),
      ...filter,
    });
    assert.ok(result.sessions.length <= limit);
    seen.push(...result.sessions.map((session) => session.id));
    if (result.nextCursor === undefined) return seen;
    cursor = result.nextCursor;
    await between(page);
  }
}

/**
 * Registers the contract's tests for a store.
 *
 * @param name Prefixes the test names
 * @param make Makes a store on fresh data
 * @param options `ignore`: register the tests as ignored
 */
export function storeContract(
  name: string,
  make: () => Promise<StoreUnderTest>,
  options: StoreContractOptions = {},
): void {
  const test = (what: string, fn: (subject: StoreUnderTest) => Promise<void>): void => {
    Deno.test({
      name: `${name} (contract): ${what}`,
      ignore: options.ignore === true,
      fn: async () => {
        await using subject = await make();
        await fn(subject);
      },
    });
  };

  test("events are loaded in call order, numbered from 1, timed by their append", async (t) => {
    const { store } = t;
    await store.create(header(1));
    t.tick(5);
    const first = store.append(id(1), [{ type: "turn_start" }, title("one")], { sync: false });
    t.tick(5);
    const second = store.append(id(1), [title("two")], { sync: true });
    const third = store.append(id(1), [{ type: "turn_end", stopReason: "end_turn" }], {
      sync: false,
    });
    // Called after the appends returned, before they settled: their events are in place.
    const early = await store.load(id(1));
    await Promise.all([first, second, third]);
    const loaded = await store.load(id(1));
    assert.deepEqual(early, loaded);
    assert.deepEqual(loaded?.header, header(1));
    assert.deepEqual(loaded?.records.map((record) => [record.seq, record.type]), [
      [1, "turn_start"],
      [2, "title"],
      [3, "title"],
      [4, "turn_end"],
    ]);
    const times = loaded?.records.map((record) => Date.parse(record.time) - T0);
    assert.equal(times?.[0], times?.[1], "one append, one time");
    assert.ok((times?.[2] ?? 0) > (times?.[1] ?? 0));
    assert.deepEqual(await store.load(id(2)), undefined);
    assert.equal(await store.exists(id(1)), true);
    assert.equal(await store.exists(id(2)), false);
    assert.equal(await store.exists("../x"), false);
  });

  test("create stores its first events after the header, as an append right after it would", async (t) => {
    const { store } = t;
    t.tick(100);
    const events: StoredEvent[] = [{ type: "config", model: "m", mode: "ask" }, title("first")];
    await store.create(header(1), { events });
    await store.create(header(2), { events: [] });
    const readers = t.reopen ? [store, t.reopen()] : [store];
    for (const reader of readers) {
      // Listed with what the events say, by every process.
      const listed = (await reader.list({ limit: 10 })).sessions.find((s) => s.id === id(1));
      assert.equal(listed?.title, "first");
      assert.equal(listed?.updatedAt, new Date(T0 + 100).toISOString());
    }
    t.tick(5);
    await store.append(id(1), [{ type: "turn_start" }], { sync: true });
    for (const reader of readers) {
      const loaded = await reader.load(id(1));
      assert.deepEqual(loaded?.header, header(1));
      assert.deepEqual(loaded?.records.map((record) => [record.seq, record.type]), [
        [1, "config"],
        [2, "title"],
        [3, "turn_start"],
      ]);
      const [config, named, started] = loaded?.records ?? [];
      assert.deepEqual(config, { ...events[0], seq: 1, time: new Date(T0 + 100).toISOString() });
      assert.equal(named?.time, config?.time, "one write, one time");
      assert.equal(started?.time, new Date(T0 + 105).toISOString());
      assert.deepEqual((await reader.load(id(2)))?.records, []);
    }
    // The id is taken: the events of a second create are not stored.
    await assert.rejects(
      store.create(header(1), { events: [title("second")] }),
      SessionExistsError,
    );
    assert.equal((await store.load(id(1)))?.records.length, 3);
    // Events that cannot be stored (not JSON): nothing is.
    const unwritable = { type: "title", title: 1n } as unknown as StoredEvent;
    await assert.rejects(store.create(header(3), { events: [unwritable] }));
    assert.equal(await store.exists(id(3)), false);
    assert.equal((await store.list({ limit: 10 })).sessions.some((s) => s.id === id(3)), false);
  });

  test("append never throws: every failure rejects its promise", async (t) => {
    const { store } = t;
    const calls: Promise<void>[] = [];
    assert.doesNotThrow(() => {
      calls.push(store.append(id(9), [title("x")], { sync: true }));
      calls.push(store.append("../x", [title("x")], { sync: false }));
    });
    const [unknown, bad] = await Promise.allSettled(calls);
    assert.ok(unknown?.status === "rejected" && unknown.reason instanceof SessionNotFoundError);
    assert.ok(bad?.status === "rejected" && bad.reason instanceof InvalidSessionIdError);
    await store.create(header(1));
    await assert.rejects(store.create(header(1)), SessionExistsError);
    await assert.rejects(store.create({ ...header(2), id: "a/b" }), InvalidSessionIdError);
    await store.append(id(1), [], { sync: true });
    assert.deepEqual((await store.load(id(1)))?.records, []);
  });

  test("a synced append is read back by the same data opened afresh", async (t) => {
    const { store } = t;
    await store.create(header(1));
    const pending = store.append(id(1), [title("kept")], { sync: false });
    if (t.reopen && t.durableOnReturn !== false) {
      // Returned, not yet awaited: already out of this store's hands (a process crash keeps it).
      assert.equal((await t.reopen().load(id(1)))?.records.length, 1);
    }
    await pending;
    await store.append(id(1), [title("synced")], { sync: true });
    const again = t.reopen ? t.reopen() : store;
    assert.deepEqual((await again.load(id(1)))?.records.map((r) => r.seq), [1, 2]);
  });

  test("acknowledgements: written means stored, as a fresh reader sees it", async (t) => {
    const { store } = t;
    await store.create(header(1));
    const appends = [
      store.append(id(1), [{ type: "turn_start" }], { sync: true }),
      store.append(id(1), [title("answer")], { sync: false }),
      store.append(id(1), [{ type: "turn_end", stopReason: "end_turn" }], { sync: true }),
    ];
    // What the session layer waits for before it answers a prompt.
    await (store.written?.(id(1)) ?? Promise.all(appends));
    const reader = t.reopen ? t.reopen() : store;
    assert.deepEqual((await reader.load(id(1)))?.records.map((r) => r.type), [
      "turn_start",
      "title",
      "turn_end",
    ]);
    await Promise.all(appends);
  });

  test("a failed append leaves no hole that a later append closes up", async (t) => {
    const { store } = t;
    await store.create(header(1));
    await store.append(id(1), [title("kept")], { sync: true });
    // Events that cannot be stored (not JSON): a failure every store reports.
    const unwritable = { type: "title", title: 1n } as unknown as StoredEvent;
    await assert.rejects(store.append(id(1), [unwritable], { sync: false }));
    // Refused, however healthy the store is: storing it would skip what failed.
    await assert.rejects(
      store.append(id(1), [title("after the hole")], { sync: true }),
      SessionLogFailedError,
    );
    await assert.rejects(store.append(id(1), [], { sync: true }), SessionLogFailedError);
    // Loaded again: the session goes on from what is stored.
    assert.deepEqual((await store.load(id(1)))?.records.map((r) => [r.seq, r.type]), [
      [1, "title"],
    ]);
    await store.append(id(1), [title("again")], { sync: true });
    const reader = t.reopen ? t.reopen() : store;
    assert.deepEqual((await reader.load(id(1)))?.records.map((r) => r.seq), [1, 2]);
  });

  test("list: newest creation first, ties by id, paging exact while sessions change", async (t) => {
    const { store } = t;
    // Creation times 0, 10, 10, 10, 20, …: ties ordered by id.
    const created = [0, 10, 10, 10, 20, 30, 30, 40, 50, 60];
    for (const [n, ms] of created.entries()) await store.create(header(n, ms));
    const expected = created.map((ms, n) => ({ ms, id: id(n) }))
      .sort((a, b) => b.ms - a.ms || (a.id < b.id ? -1 : 1))
      .map((entry) => entry.id);
    assert.deepEqual(await listAll(store, 100), expected);
    for (const limit of [1, 3, 4, 10]) assert.deepEqual(await listAll(store, limit), expected);

    // Between pages: every session is updated (the newest and the oldest retitled), one deleted,
    // one created newer than all: each session that existed is seen once, the deleted one is
    // skipped if not yet seen, the new one is not on later pages.
    const seen = await listAll(store, 3, async (page) => {
      t.tick(1_000);
      for (const n of created.keys()) {
        await store.append(id(n), [title(`page ${page}`)], { sync: false }).catch(() => {});
      }
      if (page === 0) {
        await store.delete(id(0));
        await store.create(header(99, 1_000));
      }
    });
    assert.deepEqual(seen, expected.filter((entry) => entry !== id(0)));
    const { sessions } = await store.list({ limit: 1 });
    assert.equal(sessions[0]?.id, id(99), "a fresh list starts with the new session");
    const updated = (await store.list({ limit: 100 })).sessions.find((s) => s.id === id(5));
    assert.equal(updated?.title, "page 1", "two pages followed the first");
    assert.equal(updated?.cwd, "/work/project");
    assert.deepEqual(updated?.additionalDirectories, ["/work/shared"]);
    assert.ok(Date.parse(updated?.updatedAt ?? "") > T0 + 30);
  });

  test("list: a cwd filter matches exactly; bad cursors and limits reject", async (t) => {
    const { store } = t;
    for (let n = 0; n < 6; n++) await store.create(header(n, n, n % 2 ? "/odd" : "/even"));
    assert.deepEqual(await listAll(store, 2, undefined, "/odd"), [id(5), id(3), id(1)]);
    assert.deepEqual(await listAll(store, 2, undefined, "/even"), [id(4), id(2), id(0)]);
    assert.deepEqual((await store.list({ limit: 5, cwd: "/od" })).sessions, []);
    const first = await store.list({ limit: 2 });
    assert.ok(first.nextCursor);
    for (const cursor of ["", "nope", `${first.nextCursor}x`, btoa("{}")]) {
      await assert.rejects(store.list({ limit: 2, cursor }), InvalidCursorError, cursor);
    }
    await assert.rejects(store.list({ limit: 0 }), RangeError);
    await assert.rejects(store.list({ limit: 1.5 }), RangeError);
  });

  test("list: a lineage filter lists the sessions without a parent, or one session's children", async (t) => {
    const { store } = t;
    // Roots 0-5; 10, 11, 12 children of 1 (12 in /other); 13 a child of 2; 20 a child of 10.
    for (let n = 0; n < 6; n++) await store.create(header(n));
    await store.create(child(10, 1));
    await store.create(child(11, 1));
    await store.create(child(12, 1, 12, "/other"));
    await store.create(child(13, 2));
    await store.create(child(20, 10));
    const roots = [5, 4, 3, 2, 1, 0].map(id);
    for (const limit of [1, 2, 4, 100]) {
      assert.deepEqual(await listAll(store, limit, undefined, undefined, { parent: null }), roots);
      assert.deepEqual(
        await listAll(store, limit, undefined, undefined, { parent: id(1) }),
        [12, 11, 10].map(id),
      );
    }
    assert.equal((await listAll(store, 3)).length, 11, "no filter: every session");
    assert.deepEqual(await listAll(store, 1, undefined, "/other", { parent: id(1) }), [id(12)]);
    assert.deepEqual(
      await listAll(store, 1, undefined, "/work/project", { parent: id(1) }),
      [11, 10].map(id),
    );
    assert.deepEqual(await listAll(store, 2, undefined, "/other", { parent: null }), []);
    assert.deepEqual(await listAll(store, 2, undefined, undefined, { parent: id(10) }), [id(20)]);
    assert.deepEqual(await listAll(store, 2, undefined, undefined, { parent: id(0) }), []);
    const [listed] = (await store.list({ limit: 1, parent: id(10) })).sessions;
    assert.deepEqual(listed?.parent, { sessionId: id(10), toolCallId: "call-20" });
    assert.equal((await store.list({ limit: 1, parent: null })).sessions[0]?.parent, undefined);
    assert.deepEqual((await store.load(id(20)))?.header.parent, listed?.parent);
    // Updates keep the lineage; another process sees it too.
    await store.append(id(11), [title("eleven")], { sync: true });
    const other = t.reopen?.();
    for (const reader of other ? [store, other] : [store]) {
      assert.deepEqual(
        (await reader.list({ limit: 10, parent: id(1) })).sessions.map((s) => [s.id, s.title]),
        [[id(12), undefined], [id(11), "eleven"], [id(10), undefined]],
      );
      assert.deepEqual(await listAll(reader, 2, undefined, undefined, { parent: null }), roots);
    }
    const bad = { sessionId: "", toolCallId: "call" };
    await assert.rejects(store.create({ ...header(30), parent: bad }), TypeError);
    assert.equal(await store.exists(id(30)), false);
  });

  test("unreadable (optional): none while every session reads back; honours its signal", async (t) => {
    const { store } = t;
    if (store.unreadable === undefined) return;
    assert.deepEqual(await store.unreadable(), []);
    await store.create(header(1));
    await store.create(header(2));
    await store.append(id(2), [title("two")], { sync: true });
    assert.deepEqual(await store.unreadable(), []);
    assert.deepEqual((await store.list({ limit: 10 })).sessions.map((s) => s.id), [id(2), id(1)]);
    const { signal, reason } = aborted();
    await assert.rejects(store.unreadable({ signal }), (e) => e === reason);
  });

  test("delete: the session goes, unknown ids are fine, unreferenced attachments are released", async (t) => {
    const { store, attachments } = t;
    const shared = await attachments.put(PNG, "image/png");
    const own = await attachments.put(GIF, "image/gif");
    assert.deepEqual(await attachments.get(shared), PNG);
    await store.create(header(1));
    await store.create(header(2));
    await store.append(id(1), [image(shared), image(own)], { sync: true });
    await store.append(id(2), [image(shared)], { sync: true });

    await store.delete(id(1));
    assert.equal(await store.exists(id(1)), false);
    assert.equal(await store.load(id(1)), undefined);
    assert.deepEqual((await store.list({ limit: 10 })).sessions.map((s) => s.id), [id(2)]);
    assert.equal(await attachments.get(own), undefined, "only session 1 referenced it");
    assert.deepEqual(await attachments.get(shared), PNG, "session 2 still references it");
    await assert.rejects(store.append(id(1), [title("x")], { sync: false }), SessionNotFoundError);

    const lease = await store.acquire(id(2));
    await store.delete(id(2)); // with this store's own lease: released when done
    assert.equal(await attachments.get(shared), undefined);
    await lease.release();
    await store.delete(id(7));
    await store.delete("../x");
    await (await store.acquire(id(2))).release();
  });

  test("tenants: the header's tenant is kept, listed and filtered before paging", async (t) => {
    const { store } = t;
    // 0-5 alternate ci and web; 6 has none; 7 a child of 0 of ci, 8 a child of 0 of web.
    for (let n = 0; n < 6; n++) {
      await store.create({ ...header(n), tenant: n % 2 === 0 ? "ci" : "web" });
    }
    await store.create(header(6));
    await store.create({ ...child(7, 0), tenant: "ci" });
    await store.create({ ...child(8, 0), tenant: "web" });
    for (const limit of [1, 2, 100]) {
      assert.deepEqual(
        await listAll(store, limit, undefined, undefined, { tenant: "ci", parent: null }),
        [4, 2, 0].map(id),
      );
      assert.deepEqual(
        await listAll(store, limit, undefined, undefined, { tenant: "ci" }),
        [
          7,
          4,
          2,
          0,
        ].map(id),
      );
      assert.deepEqual(
        await listAll(store, limit, undefined, "/work/project", { tenant: "web", parent: id(0) }),
        [id(8)],
      );
    }
    assert.deepEqual(await listAll(store, 2, undefined, undefined, { tenant: "ops" }), []);
    assert.equal((await listAll(store, 3)).length, 9, "no filter: every tenant's and none's");
    const [listed] = (await store.list({ limit: 1, tenant: "web" })).sessions;
    assert.equal(listed?.tenant, "web");
    assert.equal((await store.load(id(5)))?.header.tenant, "web");
    assert.equal((await store.load(id(6)))?.header.tenant, undefined);
    // Another process sees the tenants too, updates keep them.
    await store.append(id(4), [title("four")], { sync: true });
    const other = t.reopen?.();
    for (const reader of other ? [store, other] : [store]) {
      assert.deepEqual(
        (await reader.list({ limit: 10, tenant: "ci", parent: null })).sessions.map((s) => [
          s.id,
          s.title,
        ]),
        [[id(4), "four"], [id(2), undefined], [id(0), undefined]],
      );
    }
    // A delete for a tenant takes its descendants of that tenant only.
    await store.delete(id(0), { tenant: "ci" });
    assert.equal(await store.exists(id(7)), false);
    assert.equal(await store.exists(id(8)), true);
    await assert.rejects(store.create({ ...header(30), tenant: "Not Safe" }), TypeError);
    assert.equal(await store.exists(id(30)), false);
  });

  test("delete: a parent goes with its descendants, their attachments released", async (t) => {
    const { store, attachments } = t;
    const own = await attachments.put(GIF, "image/gif");
    const shared = await attachments.put(PNG, "image/png");
    await store.create(header(1));
    await store.create(child(2, 1));
    await store.create(child(3, 2));
    await store.create(child(4, 1));
    await store.create(header(5));
    await store.create(child(6, 5));
    await store.append(id(3), [image(own), image(shared)], { sync: true });
    await store.append(id(5), [image(shared)], { sync: true });
    const held = await store.acquire(id(4)); // this store's own lease: used, released when done
    await store.delete(id(1));
    for (const n of [1, 2, 3, 4]) assert.equal(await store.exists(id(n)), false, `session ${n}`);
    assert.deepEqual(await listAll(store, 10), [id(6), id(5)]);
    assert.equal(await attachments.get(own), undefined, "the grandchild's own image");
    assert.deepEqual(await attachments.get(shared), PNG, "session 5 still references it");
    await held.release();
    await (await store.acquire(id(4))).release();
    // Deleting a child leaves its parent.
    await store.delete(id(6));
    assert.deepEqual(await listAll(store, 10), [id(5)]);

    // A descendant another holder has open: nothing is deleted.
    const other = t.reopen?.();
    if (other === undefined) return;
    await store.create(child(7, 5));
    await store.create(child(8, 7));
    const elsewhere = await other.acquire(id(8));
    await assert.rejects(store.delete(id(5)), SessionLockedError);
    for (const n of [5, 7, 8]) assert.equal(await store.exists(id(n)), true, `session ${n}`);
    await (await store.acquire(id(5))).release(); // the leases taken were given back
    await (await store.acquire(id(7))).release();
    await elsewhere.release();
    await store.delete(id(5));
    for (const n of [5, 7, 8]) assert.equal(await store.exists(id(n)), false, `session ${n}`);
    assert.equal(await attachments.get(shared), undefined);
  });

  test("leases: exclusive, released once, taken again after release", async (t) => {
    const { store } = t;
    const lease = await store.acquire(id(1));
    await assert.rejects(store.acquire(id(1)), SessionLockedError);
    await assert.rejects(store.acquire("a b"), InvalidSessionIdError);
    const other = t.reopen?.();
    if (other) {
      await store.create(header(1));
      await assert.rejects(other.acquire(id(1)), SessionLockedError);
      await assert.rejects(other.delete(id(1)), SessionLockedError);
      assert.equal(await other.exists(id(1)), true);
    }
    await lease.release();
    await lease.release();
    const again = await store.acquire(id(1));
    await lease.release(); // an old lease does not release the new one
    await assert.rejects(store.acquire(id(1)), SessionLockedError);
    await again.release();
    if (other) await (await other.acquire(id(1))).release();
  });

  test("an aborted signal rejects with its reason and changes nothing", async (t) => {
    const { store, attachments } = t;
    const { signal, reason } = aborted();
    await assert.rejects(store.create(header(1), { signal }), (e) => e === reason);
    assert.equal(await store.exists(id(1)), false);
    await assert.rejects(store.acquire(id(1), { signal }), (e) => e === reason);
    await (await store.acquire(id(1))).release();
    await store.create(header(1));
    await assert.rejects(store.load(id(1), { signal }), (e) => e === reason);
    await assert.rejects(store.list({ limit: 1, signal }), (e) => e === reason);
    await assert.rejects(store.delete(id(1), { signal }), (e) => e === reason);
    assert.equal(await store.exists(id(1)), true);
    await assert.rejects(attachments.put(PNG, "image/png", { signal }), (e) => e === reason);
    const sha = await attachments.put(PNG, "image/png");
    await assert.rejects(attachments.get(sha, { signal }), (e) => e === reason);
    // A signal that fires while the call waits for the session's earlier operations.
    const controller = new AbortController();
    const load = store.load(id(1), { signal: controller.signal });
    controller.abort(reason);
    await load.then(
      (loaded) => assert.ok(loaded, "finished before the abort"),
      (error) => assert.equal(error, reason),
    );
  });
}
