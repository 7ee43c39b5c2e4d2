/**
 * Issue 7, defect 6: a client paging through `session/list` sees every session that existed when
 * it started exactly once, whatever is updated, deleted or created between its pages, and in
 * whichever process sharing the data directory it asks for each page.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { JsonlSessionStore } from "../../src/store/jsonl_session_store.ts";
import type { SessionPage } from "../../src/store/session_store.ts";
import { at, header, sessionId, type TempStore, tempStore } from "./_helpers.ts";

const SESSIONS = 150;

/** Creates sessions 0…count-1, one millisecond apart (two per cwd in turn), newest last. */
async function createSessions(temp: TempStore, count = SESSIONS): Promise<string[]> {
  const ids: string[] = [];
  for (let n = 0; n < count; n++) {
    temp.host.tick(1);
    const id = sessionId(n);
    await temp.store.create(header(id, temp.host, n % 2 === 0 ? "/work/even" : "/work/odd"));
    ids.push(id);
  }
  return ids;
}

/** A small deterministic generator (so a failure repeats). */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

function next(store: JsonlSessionStore, page: SessionPage, limit: number): Promise<SessionPage> {
  assert.ok(page.nextCursor !== undefined);
  return store.list({ limit, cursor: page.nextCursor });
}

Deno.test("JsonlSessionStore.list(): a session updated between pages is listed exactly once", async () => {
  await using temp = await tempStore();
  const ids = await createSessions(temp);
  const { store, host } = temp;
  const first = await store.list({ limit: 50 });
  // Prompt the oldest (on the last page) and the newest (already seen on the first).
  host.tick(1_000);
  await store.append(ids[0] as string, [{ type: "turn_start" }], { sync: false });
  await store.append(ids.at(-1) as string, [{ type: "title", title: "Seen" }], { sync: false });
  const second = await next(store, first, 50);
  const third = await next(store, second, 50);
  assert.equal(third.nextCursor, undefined);
  const listed = [...first.sessions, ...second.sessions, ...third.sessions];
  assert.deepEqual(listed.map((s) => s.id), [...ids].reverse());
  // Reported as it is when its page is read: the oldest with its new time.
  assert.equal(third.sessions.at(-1)?.updatedAt, at(SESSIONS + 1_000));
});

Deno.test("JsonlSessionStore.list(): many updates between and during pages, from two processes, lose and repeat nothing", async () => {
  await using temp = await tempStore({ indexUpdateIntervalMs: 0, indexCompactSlack: 20 });
  const ids = await createSessions(temp);
  const { host } = temp;
  const writer = temp.open();
  const readers = [temp.store, temp.open()];
  const next = random(7);
  const pick = (): string => ids[Math.floor(next() * ids.length)] as string;
  for (let walk = 0; walk < 12; walk++) {
    const cwd = walk % 3 === 0 ? "/work/odd" : undefined;
    const expected = ids.filter((_, n) => cwd === undefined || n % 2 === 1).reverse();
    const limit = 3 + walk % 11;
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0;; page++) {
      // Updates land before, while and after the page is read; pages alternate processes.
      const updates: Promise<void>[] = [];
      for (let n = 0; n < 3; n++) {
        host.tick(1);
        updates.push(writer.append(pick(), [{ type: "turn_start" }], { sync: false }));
      }
      const reader = readers[page % 2] as JsonlSessionStore;
      const listing = reader.list({
        limit,
        ...(cwd === undefined ? {} : { cwd }),
        ...(cursor === undefined ? {} : { cursor }),
      });
      host.tick(1);
      updates.push(writer.append(pick(), [{ type: "turn_end", stopReason: "end_turn" }], {
        sync: false,
      }));
      const [result] = await Promise.all([listing, ...updates]);
      seen.push(...result.sessions.map((s) => s.id));
      cursor = result.nextCursor;
      if (cursor === undefined) break;
      assert.ok(page < SESSIONS, "the walk ends");
    }
    assert.deepEqual(seen, expected, `walk ${walk}`);
  }
  assert.deepEqual(temp.warnings, []);
});

Deno.test("JsonlSessionStore.list(): sessions deleted between pages are skipped, the rest listed once", async () => {
  await using temp = await tempStore();
  const ids = await createSessions(temp);
  const { store } = temp;
  const newestFirst = [...ids].reverse();
  const first = await store.list({ limit: 40 });
  // Delete one already listed, the one the cursor names, and two not yet reached.
  const gone = [newestFirst[5], newestFirst[39], newestFirst[40], newestFirst[120]] as string[];
  for (const id of gone) await temp.open().delete(id);
  const rest: string[] = [];
  let page = first;
  while (page.nextCursor !== undefined) {
    page = await next(store, page, 40);
    rest.push(...page.sessions.map((s) => s.id));
  }
  assert.deepEqual(rest, newestFirst.slice(40).filter((id) => !gone.includes(id)));
});

Deno.test("JsonlSessionStore.list(): sessions created between pages are not on the later pages", async () => {
  await using temp = await tempStore();
  const ids = await createSessions(temp);
  const { store, host } = temp;
  const first = await store.list({ limit: 50 });
  host.tick(1_000);
  const created = [sessionId(1_000), sessionId(1_001)];
  for (const id of created) await temp.open().create(header(id, host));
  const second = await next(store, first, 50);
  const third = await next(store, second, 50);
  const listed = [...first.sessions, ...second.sessions, ...third.sessions].map((s) => s.id);
  assert.deepEqual(listed, [...ids].reverse());
  // A new listing starts with them.
  const fresh = await store.list({ limit: 2 });
  assert.deepEqual(fresh.sessions.map((s) => s.id), created, "created together: by id");
});

Deno.test("JsonlSessionStore: an index of an earlier version (no creation times) is upgraded from the logs", async () => {
  await using temp = await tempStore();
  const ids = await createSessions(temp, 5);
  const { host } = temp;
  host.tick(1_000);
  await temp.store.append(ids[0] as string, [{ type: "title", title: "Oldest" }], { sync: true });
  // The index as the earlier version wrote it: no createdAt, the oldest session updated last.
  const path = `${temp.dir}/index.jsonl`;
  const lines = (await Deno.readTextFile(path)).trimEnd().split("\n").map((line) => {
    const { createdAt: _, ...rest } = JSON.parse(line);
    return JSON.stringify(rest);
  });
  await Deno.writeTextFile(path, lines.join("\n") + "\n");
  const store = temp.open();
  const listed = (await store.list({ limit: 10 })).sessions;
  assert.deepEqual(listed.map((s) => s.id), [...ids].reverse());
  assert.equal(listed.at(-1)?.title, "Oldest");
  assert.deepEqual(temp.warnings, [], "an upgrade is not a warning");
  const rewritten = (await Deno.readTextFile(path)).trimEnd().split("\n").slice(1);
  assert.ok(rewritten.every((line) => typeof JSON.parse(line).createdAt === "string"));
  // A line of the earlier version appended later (its create line: updatedAt is the creation
  // time) is placed by that time, without another rebuild.
  host.tick(1_000);
  const late = sessionId(99);
  await Deno.writeTextFile(
    `${temp.dir}/sessions/${late}.jsonl`,
    JSON.stringify(header(late, host)) + "\n",
  );
  await Deno.writeTextFile(
    path,
    JSON.stringify({ id: late, cwd: "/work/x", additionalDirectories: [], updatedAt: at(2_005) }) +
      "\n",
    { append: true },
  );
  assert.deepEqual((await store.list({ limit: 2 })).sessions.map((s) => s.id), [late, ids[4]]);
  assert.deepEqual(temp.warnings, []);
});
