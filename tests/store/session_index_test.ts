import assert from "node:assert/strict";
import { InvalidCursorError, type SessionSummary } from "../../src/store/session_store.ts";
import { at, EPOCH, header, sessionId, tempStore, warned } from "./_helpers.ts";

/** All pages of a listing. */
async function listAll(
  list: (cursor?: string) => Promise<{ sessions: readonly SessionSummary[]; nextCursor?: string }>,
): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await list(cursor);
    pages++;
    ids.push(...page.sessions.map((session) => session.id));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return { ids, pages };
}

function indexLines(text: string): Record<string, unknown>[] {
  return text.trimEnd().split("\n").map((line) => JSON.parse(line));
}

Deno.test("JsonlSessionStore.list(): newest creation first, ties by id, title and summary fields", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  // Created in the order 3, 1, 2 at the same instant, then 4 later; 1 gets an append later still.
  for (const n of [3, 1, 2]) await store.create(header(sessionId(n), host));
  host.tick(1_000);
  await store.create({
    ...header(sessionId(4), host, "/work/other"),
    additionalDirectories: ["/work/lib"],
  });
  host.tick(1_000);
  await store.append(sessionId(1), [{ type: "title", title: "Fix the build" }], { sync: true });

  const { sessions, nextCursor } = await store.list({ limit: 10 });
  assert.equal(nextCursor, undefined);
  // An update does not move a session: the order is by creation, which never changes.
  assert.deepEqual(sessions, [
    {
      id: sessionId(4),
      cwd: "/work/other",
      additionalDirectories: ["/work/lib"],
      updatedAt: at(1_000),
    },
    {
      id: sessionId(1),
      cwd: "/work/project",
      additionalDirectories: [],
      title: "Fix the build",
      updatedAt: at(2_000),
    },
    { id: sessionId(2), cwd: "/work/project", additionalDirectories: [], updatedAt: at(0) },
    { id: sessionId(3), cwd: "/work/project", additionalDirectories: [], updatedAt: at(0) },
  ]);

  // The cwd filter is exact.
  const filtered = await store.list({ cwd: "/work/other", limit: 10 });
  assert.deepEqual(filtered.sessions.map((session) => session.id), [sessionId(4)]);
  assert.deepEqual((await store.list({ cwd: "/work", limit: 10 })).sessions, []);
  assert.deepEqual((await store.list({ cwd: "/work/other/", limit: 10 })).sessions, []);

  // A later title replaces the earlier one; other appends keep it.
  host.tick(1_000);
  await store.append(sessionId(1), [{ type: "title", title: "Fix the build on CI" }], {
    sync: false,
  });
  host.tick(1_000);
  await store.append(sessionId(1), [{ type: "turn_start" }], { sync: false });
  const first = (await store.list({ cwd: "/work/project", limit: 1 })).sessions[0];
  assert.equal(first?.title, "Fix the build on CI");
  assert.equal(first?.updatedAt, at(4_000));
  // …and another process sees the same.
  assert.deepEqual(
    (await temp.open().list({ cwd: "/work/project", limit: 1 })).sessions[0]?.title,
    "Fix the build on CI",
  );
});

Deno.test("JsonlSessionStore.list(): pages through 250 sessions 100 at a time without gaps or duplicates", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  const expected: string[] = [];
  // Groups of five share a time, so the tie-break is exercised at page boundaries.
  for (let n = 0; n < 250; n++) {
    if (n % 5 === 0) host.tick(1_000);
    await store.create(header(sessionId(n), host, n % 2 === 0 ? "/even" : "/odd"));
  }
  for (let group = 49; group >= 0; group--) {
    for (let n = group * 5; n < group * 5 + 5; n++) expected.push(sessionId(n));
  }
  const all = await listAll((cursor) =>
    store.list({ limit: 100, ...(cursor === undefined ? {} : { cursor }) })
  );
  assert.equal(all.pages, 3);
  assert.deepEqual(all.ids, expected);
  assert.equal(new Set(all.ids).size, 250);

  const even = await listAll((cursor) =>
    store.list({ cwd: "/even", limit: 100, ...(cursor === undefined ? {} : { cursor }) })
  );
  assert.equal(even.pages, 2);
  assert.deepEqual(
    even.ids,
    expected.filter((_, index) => Number(expected[index]?.slice(-3)) % 2 === 0),
  );

  // Exactly a page: no cursor on it.
  const exact = await store.list({ cwd: "/odd", limit: 125 });
  assert.equal(exact.sessions.length, 125);
  assert.equal(exact.nextCursor, undefined);

  // A cursor stays valid when its session is deleted (keyset, exclusive).
  const page = await store.list({ limit: 100 });
  await store.delete(page.sessions[99]?.id as string);
  const next = await store.list({ limit: 100, cursor: page.nextCursor as string });
  assert.equal(next.sessions[0]?.id, expected[100]);
});

Deno.test("JsonlSessionStore.list(): rejects malformed and foreign cursors", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  await store.create(header(sessionId(1), host));
  await store.create(header(sessionId(2), host));
  const { nextCursor } = await store.list({ limit: 1 });
  assert.ok(nextCursor !== undefined);
  assert.equal((await store.list({ limit: 1, cursor: nextCursor })).sessions[0]?.id, sessionId(2));

  const b64 = (value: string): string =>
    btoa(value).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
  const bad = [
    "",
    "not a cursor!",
    "%%%%",
    "a",
    nextCursor + "=",
    btoa(JSON.stringify({ c: at(0), i: sessionId(1) })).replace(/=+$/, "") + "==",
    b64(JSON.stringify({ u: at(0), i: sessionId(1) })), // the updatedAt-ordered cursor of old
    b64("{"),
    b64("[]"),
    b64("null"),
    b64('"x"'),
    b64(JSON.stringify({ c: at(0) })),
    b64(JSON.stringify({ c: at(0), i: sessionId(1), x: 1 })),
    b64(JSON.stringify({ c: "2025-01-01", i: sessionId(1) })),
    b64(JSON.stringify({ c: EPOCH, i: sessionId(1) })),
    b64(JSON.stringify({ c: at(0), i: "../x" })),
    b64(JSON.stringify({ i: sessionId(1), c: at(0) })), // not in the issued form
    b64(JSON.stringify({ offset: 100 })), // another server's cursor
    "x".repeat(5_000),
  ];
  for (const cursor of bad) {
    await assert.rejects(
      store.list({ limit: 1, cursor }),
      (error: unknown) =>
        error instanceof InvalidCursorError && error.message.startsWith("Cannot use cursor"),
      JSON.stringify(cursor),
    );
  }
});

Deno.test("JsonlSessionStore: delete writes a tombstone and the session leaves every listing", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  for (const n of [1, 2, 3]) {
    host.tick(10);
    await store.create(header(sessionId(n), host));
  }
  const other = temp.open();
  assert.equal((await other.list({ limit: 10 })).sessions.length, 3);
  await store.delete(sessionId(2));
  await store.delete(sessionId(2));
  await store.delete(sessionId(99));
  assert.deepEqual((await store.list({ limit: 10 })).sessions.map((s) => s.id), [
    sessionId(3),
    sessionId(1),
  ]);
  assert.deepEqual((await other.list({ limit: 10 })).sessions.map((s) => s.id), [
    sessionId(3),
    sessionId(1),
  ]);
  assert.equal(await store.load(sessionId(2)), undefined);
  const lines = indexLines(await Deno.readTextFile(`${temp.dir}/index.jsonl`));
  assert.deepEqual(lines.at(-1), { id: sessionId(2), deleted: true });
  // A fresh reader of the same file agrees.
  assert.equal((await temp.open().list({ limit: 10 })).sessions.length, 2);
  // Deleting frees the lock too.
  const lease = await store.acquire(sessionId(2));
  await lease.release();
});

Deno.test("JsonlSessionStore: a missing index is rebuilt from the logs, with a warning", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  const sha = "ab".repeat(32);
  await store.create(header(sessionId(1), host));
  host.tick(5_000);
  await store.create(header(sessionId(2), host, "/elsewhere"));
  host.tick(5_000);
  await store.append(sessionId(1), [
    { type: "title", title: "Old" },
    {
      type: "user",
      messageId: "m",
      content: [{ type: "image", mimeType: "image/png", sha256: sha }],
    },
    { type: "title", title: "New" },
  ], { sync: true });
  const before = (await store.list({ limit: 10 })).sessions;

  await Deno.remove(`${temp.dir}/index.jsonl`);
  temp.warnings.length = 0;
  const fresh = temp.open();
  assert.deepEqual((await fresh.list({ limit: 10 })).sessions, before);
  assert.ok(warned(temp, "was missing; rebuilt"));
  const lines = indexLines(await Deno.readTextFile(`${temp.dir}/index.jsonl`));
  assert.equal(lines[0]?.acpHarnessIndex, 1);
  assert.deepEqual(lines.find((line) => line.id === sessionId(1))?.attachments, [sha]);

  // The store that had the index in memory notices the rewritten file.
  host.tick(1_000);
  await store.append(sessionId(2), [{ type: "turn_start" }], { sync: false });
  assert.equal((await fresh.list({ limit: 1 })).sessions[0]?.id, sessionId(2));
});

Deno.test("JsonlSessionStore: a corrupt index is rebuilt from the logs; a torn index tail is not corruption", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  await store.create(header(sessionId(1), host));
  host.tick(10);
  await store.append(sessionId(1), [{ type: "title", title: "Kept" }], { sync: true });
  const path = `${temp.dir}/index.jsonl`;

  // A torn final line is somebody's write in progress (or a crash): not a reason to rebuild.
  await Deno.writeTextFile(path, '{"id":"00000000-0000', { append: true });
  temp.warnings.length = 0;
  const reader = temp.open();
  assert.equal((await reader.list({ limit: 10 })).sessions[0]?.title, "Kept");
  assert.deepEqual(temp.warnings, []);
  // The next writer cuts it off before appending.
  host.tick(10);
  await store.create(header(sessionId(2), host));
  assert.ok(warned(temp, "torn tail of the session index"));
  const text = await Deno.readTextFile(path);
  assert.ok(!text.includes('"00000000-0000\n') && !text.includes('0000{"'));
  assert.equal((await reader.list({ limit: 10 })).sessions.length, 2);

  for (
    const corrupt of [
      "garbage\n",
      '{"id":"x"}\n' + text,
      text + '{"id":"' + sessionId(7) +
      '","cwd":"/","additionalDirectories":[],"updatedAt":"soon"}\n',
      text + "not json\n",
      "",
    ]
  ) {
    await Deno.writeTextFile(path, corrupt);
    temp.warnings.length = 0;
    const fresh = temp.open();
    const { sessions } = await fresh.list({ limit: 10 });
    assert.deepEqual(sessions.map((s) => [s.id, s.title]), [
      [sessionId(2), undefined],
      [sessionId(1), "Kept"],
    ], JSON.stringify(corrupt));
    assert.ok(
      warned(temp, "was corrupt; rebuilt"),
      JSON.stringify(corrupt),
    );
  }
});

Deno.test("JsonlSessionStore: an index without parents (an older version's) is rebuilt with them", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  await store.create(header(sessionId(1), host));
  host.tick(10);
  const parent = { sessionId: sessionId(1), toolCallId: "call-1" };
  await store.create({ ...header(sessionId(2), host), parent });
  const path = `${temp.dir}/index.jsonl`;
  const lines = indexLines(await Deno.readTextFile(path));
  assert.equal(lines[0]?.parents, 1);
  assert.deepEqual(lines.find((line) => line.id === sessionId(2))?.parent, parent);
  // As an older version rewrites it: no mark, no parents.
  const old = [{ acpHarnessIndex: 1, generation: "old" }, ...lines.slice(1)]
    .map(({ parent: _, ...line }) => JSON.stringify(line) + "\n").join("");
  await Deno.writeTextFile(path, old);
  const fresh = temp.open();
  const ids = async (parent: string | null): Promise<string[]> =>
    (await fresh.list({ limit: 10, parent })).sessions.map((session) => session.id);
  assert.deepEqual(await ids(null), [sessionId(1)]);
  assert.deepEqual(await ids(sessionId(1)), [sessionId(2)]);
  assert.equal(indexLines(await Deno.readTextFile(path))[0]?.parents, 1, "rewritten");
  // A line an older version appends (no parent) keeps the parent an earlier line gave.
  const line = lines.find((line) => line.id === sessionId(2)) as Record<string, unknown>;
  const update: Record<string, unknown> = { ...line, title: "Old" };
  delete update.parent;
  await Deno.writeTextFile(path, JSON.stringify(update) + "\n", { append: true });
  assert.deepEqual(await ids(null), [sessionId(1)]);
  const [child] = (await fresh.list({ limit: 10, parent: sessionId(1) })).sessions;
  assert.deepEqual([child?.title, child?.parent], ["Old", parent]);
});

Deno.test("JsonlSessionStore: a rebuilt index keeps unreadable logs counted and reads them again once repaired", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  for (const n of [1, 2, 3, 4]) {
    await store.create(header(sessionId(n), host));
    host.tick(1_000);
    await store.append(sessionId(n), [
      { type: "title", title: `session ${n}` },
      { type: "turn_start" },
      { type: "turn_end", stopReason: "end_turn" },
    ], { sync: true });
  }
  const log = (n: number): string => `${temp.dir}/sessions/${sessionId(n)}.jsonl`;
  const original = new Map<number, string>();
  for (const n of [2, 3]) original.set(n, await Deno.readTextFile(log(n)));
  const lines = original.get(2)!.split("\n");
  lines[2] = "garbage";
  await Deno.writeTextFile(log(2), lines.join("\n"));
  await Deno.writeTextFile(log(3), original.get(3)!.slice(0, 40));
  const expected = [
    { id: sessionId(2), reason: "line 3 is not valid JSON" },
    { id: sessionId(3), reason: "has no complete header line" },
  ];
  const listed = async (): Promise<string[]> =>
    (await temp.open().list({ limit: 10 })).sessions.map((session) => session.id);

  await Deno.remove(`${temp.dir}/index.jsonl`);
  temp.warnings.length = 0;
  const rebuilt = temp.open();
  assert.deepEqual((await rebuilt.list({ limit: 10 })).sessions.map((s) => s.id), [
    sessionId(4),
    sessionId(1),
  ]);
  assert.ok(warned(temp, "cannot index an unreadable session log"), temp.warnings.join("\n"));
  assert.deepEqual(await rebuilt.unreadable(), expected);
  // Kept in the index: another process counts them without reading every log.
  assert.deepEqual(await temp.open().unreadable(), expected);
  const text = await Deno.readTextFile(`${temp.dir}/index.jsonl`);
  assert.equal(indexLines(text).filter((line) => "unreadable" in line).length, 2);
  // A second rebuild still counts them.
  await Deno.remove(`${temp.dir}/index.jsonl`);
  assert.deepEqual(await listed(), [sessionId(4), sessionId(1)]);
  assert.deepEqual(await temp.open().unreadable(), expected);

  // Repaired: the first page of a list reads it again and lists it, everywhere.
  await Deno.writeTextFile(log(2), original.get(2)!);
  assert.deepEqual(await listed(), [sessionId(4), sessionId(2), sessionId(1)]);
  assert.equal((await rebuilt.list({ limit: 10 })).sessions[1]?.title, "session 2");
  assert.deepEqual(await temp.open().unreadable(), [expected[1]]);

  // Repaired, then loaded by id (no lease) before any list: the load lists it.
  await Deno.writeTextFile(log(3), original.get(3)!);
  assert.equal((await temp.open().load(sessionId(3)))?.records.length, 3);
  const after = indexLines(await Deno.readTextFile(`${temp.dir}/index.jsonl`));
  assert.equal(after.at(-1)?.id, sessionId(3));
  assert.equal(after.at(-1)?.title, "session 3");
  assert.deepEqual(await temp.open().unreadable(), []);
  assert.equal((await listed()).length, 4);
});

Deno.test("JsonlSessionStore.unreadable(): reads logs no index line names; delete forgets an unreadable one", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  await store.create(header(sessionId(1), host));
  // Logs the index never heard of (copied in by hand): one readable, one not.
  const readable = JSON.stringify(header(sessionId(2), host)) + "\n";
  await Deno.writeTextFile(`${temp.dir}/sessions/${sessionId(2)}.jsonl`, readable);
  await Deno.writeTextFile(`${temp.dir}/sessions/${sessionId(3)}.jsonl`, readable + "x\ny\n");
  const fresh = temp.open();
  assert.deepEqual((await fresh.list({ limit: 10 })).sessions.map((s) => s.id), [sessionId(1)]);
  assert.deepEqual(await fresh.unreadable(), [
    { id: sessionId(3), reason: 'line 1 names session "' + sessionId(2) + '"' },
  ]);
  assert.deepEqual(
    (await temp.open().list({ limit: 10 })).sessions.map((s) => s.id).sort(),
    [sessionId(1), sessionId(2)],
  );
  await fresh.delete(sessionId(3));
  assert.deepEqual(await fresh.unreadable(), []);
  assert.deepEqual(await temp.open().unreadable(), []);
});

Deno.test("JsonlSessionStore: a second instance on the same data directory is seen incrementally", async () => {
  await using temp = await tempStore({ indexUpdateIntervalMs: 0 });
  const { host } = temp;
  const a = temp.store;
  const b = temp.open();
  await a.create(header(sessionId(1), host));
  assert.deepEqual((await b.list({ limit: 10 })).sessions.map((s) => s.id), [sessionId(1)]);
  host.tick(100);
  await b.create(header(sessionId(2), host));
  assert.deepEqual((await a.list({ limit: 10 })).sessions.map((s) => s.id), [
    sessionId(2),
    sessionId(1),
  ]);
  host.tick(100);
  await b.append(sessionId(1), [{ type: "title", title: "From B" }], { sync: false });
  const seen = (await a.list({ limit: 10 })).sessions;
  assert.deepEqual(seen.map((s) => [s.id, s.title, s.updatedAt]), [
    [sessionId(2), undefined, at(100)],
    [sessionId(1), "From B", at(200)],
  ]);
  await b.delete(sessionId(2));
  assert.deepEqual((await a.list({ limit: 10 })).sessions.map((s) => s.id), [sessionId(1)]);
});

Deno.test("JsonlSessionStore: updatedAt-only index lines are coalesced, exact in memory, flushed on release", async () => {
  await using temp = await tempStore({ indexUpdateIntervalMs: 1_000 });
  const { store, host } = temp;
  const id = sessionId(1);
  const lease = await store.acquire(id);
  await store.create(header(id, host));
  const path = `${temp.dir}/index.jsonl`;
  const count = async (): Promise<number> => indexLines(await Deno.readTextFile(path)).length;
  const start = await count();
  for (let n = 0; n < 10; n++) {
    host.tick(10);
    await store.append(id, [{ type: "turn_start" }], { sync: false });
    assert.equal((await store.list({ limit: 1 })).sessions[0]?.updatedAt, at(10 * (n + 1)));
  }
  assert.equal(await count(), start, "no line within the interval");
  host.tick(1_000);
  await store.append(id, [{ type: "turn_start" }], { sync: false });
  assert.equal(await count(), start + 1, "one line once the interval passed");
  host.tick(10);
  await store.append(id, [{ type: "turn_start" }], { sync: false });
  assert.equal((await temp.open().list({ limit: 1 })).sessions[0]?.updatedAt, at(1_100));
  await lease.release();
  assert.equal((await temp.open().list({ limit: 1 })).sessions[0]?.updatedAt, at(1_110));
});

Deno.test("JsonlSessionStore: the index is rewritten compactly once it holds more than twice the live entries", async () => {
  await using temp = await tempStore({ indexUpdateIntervalMs: 0, indexCompactSlack: 10 });
  const { store, host } = temp;
  await store.create(header(sessionId(1), host));
  await store.create(header(sessionId(2), host));
  const reader = temp.open();
  await reader.list({ limit: 10 });
  const path = `${temp.dir}/index.jsonl`;
  let generations = new Set<unknown>();
  for (let n = 0; n < 60; n++) {
    host.tick(1);
    await store.append(sessionId(1 + n % 2), [{ type: "title", title: `t${n}` }], { sync: false });
    const lines = indexLines(await Deno.readTextFile(path));
    assert.ok(lines.length - 1 <= 2 * 2 + 10, `${lines.length} lines`);
    generations.add(lines[0]?.generation);
    // The reader follows every rewrite.
    const seen = (await reader.list({ limit: 10 })).sessions;
    // Created at the same time: 1 before 2 (by id); 1 gets the even titles, 2 the odd ones.
    const latest = (odd: number): string | undefined => {
      const last = n % 2 === odd ? n : n - 1;
      return last < 0 ? undefined : `t${last}`;
    };
    assert.deepEqual(seen.map((s) => s.title), [latest(0), latest(1)]);
  }
  assert.ok(generations.size >= 4, `${generations.size} generations`);
  generations = new Set();
});

Deno.test("JsonlSessionStore.list(): 10,000 sessions from an existing index, first page and paging", async () => {
  await using temp = await tempStore();
  const count = 10_000;
  let text = JSON.stringify({ acpHarnessIndex: 1, generation: "g", parents: 1 }) + "\n";
  for (let n = 0; n < count; n++) {
    text += JSON.stringify({
      id: sessionId(n),
      cwd: `/work/p${n % 10}`,
      additionalDirectories: [],
      title: `Session ${n}`,
      createdAt: at(Math.floor(n / 3) * 1_000),
      updatedAt: at(Math.floor(n / 3) * 1_000 + 500),
    }) + "\n";
  }
  await Deno.writeTextFile(`${temp.dir}/index.jsonl`, text);
  const { host } = temp;
  const calls: string[] = [];
  const counting = new Proxy(host, {
    get(target, property, receiver): unknown {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]): unknown => {
        calls.push(String(property));
        return value.apply(target, args);
      };
    },
  });
  const store = temp.open({ host: counting });
  const first = await store.list({ limit: 100 });
  assert.equal(first.sessions.length, 100);
  assert.deepEqual(first.sessions.slice(0, 3).map((s) => s.id), [
    sessionId(9_999),
    sessionId(9_996),
    sessionId(9_997),
  ]);
  // Warm: further calls only stat the index.
  calls.length = 0;
  for (let n = 0; n < 20; n++) await store.list({ limit: 100 });
  assert.deepEqual(new Set(calls), new Set(["stat"]));
  assert.equal(calls.length, 20);
  const filtered = await store.list({ cwd: "/work/p3", limit: 100 });
  assert.ok(filtered.sessions.every((s) => s.cwd === "/work/p3"));
  assert.equal(filtered.sessions.length, 100);

  // A new session from this process goes to the front without a re-sort.
  host.ms = Date.parse(at(10_000_000));
  await store.create(header(sessionId(count), host));
  assert.equal((await store.list({ limit: 1 })).sessions[0]?.id, sessionId(count));
  // Another process's update costs a read of its bytes (and the generation line), not the file.
  await temp.open().append(sessionId(count), [{ type: "title", title: "Moved" }], { sync: false });
  calls.length = 0;
  const moved = await store.list({ limit: 1 });
  assert.equal(moved.sessions[0]?.title, "Moved");
  assert.deepEqual(calls.filter((call) => call.startsWith("read")), [
    "readFileRange",
    "readFileRange",
  ]);
  let seen = 0;
  let cursor: string | undefined;
  do {
    const page = await store.list({ limit: 1_000, ...(cursor ? { cursor } : {}) });
    seen += page.sessions.length;
    cursor = page.nextCursor;
  } while (cursor);
  assert.equal(seen, count + 1);
});
