import assert from "node:assert/strict";
import { recordText } from "../../src/store/_session_log.ts";
import type { StoredEvent } from "../../src/store/session_store.ts";
import {
  CorruptSessionLogError,
  InvalidSessionIdError,
  SessionExistsError,
  SessionNotFoundError,
} from "../../src/store/store_errors.ts";
import { at, header, sessionId, tempStore, warned } from "./_helpers.ts";

const USER: StoredEvent = {
  type: "user",
  messageId: "m1",
  content: [{ type: "text", text: "hello" }],
};
const ANSWER: StoredEvent = { type: "assistant", messageId: "m2", text: "hi there" };

Deno.test("JsonlSessionStore: create, append and load round-trip with seq and time", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  const id = sessionId(1);
  const head = header(id, host);
  await store.create(head);
  host.tick(10);
  await store.append(id, [{ type: "turn_start" }, USER], { sync: true });
  host.tick(10);
  await store.append(id, [ANSWER, { type: "turn_end", stopReason: "end_turn" }], { sync: false });

  const loaded = await store.load(id);
  assert.deepEqual(loaded, {
    header: head,
    records: [
      { type: "turn_start", seq: 1, time: at(10) },
      { ...USER, seq: 2, time: at(10) },
      { ...ANSWER, seq: 3, time: at(20) },
      { type: "turn_end", stopReason: "end_turn", seq: 4, time: at(20) },
    ],
  });
  const text = await Deno.readTextFile(`${temp.dir}/sessions/${id}.jsonl`);
  const lines = text.split("\n");
  assert.equal(lines.length, 6, "header, four records, final newline");
  assert.deepEqual(JSON.parse(lines[0] as string), head);
  assert.equal(lines[5], "");

  // Another instance (a restarted process) continues the sequence.
  const again = temp.open();
  await again.append(id, [{ type: "title", title: "Greeting" }], { sync: true });
  const records = (await again.load(id))?.records ?? [];
  assert.deepEqual(records.map((record) => record.seq), [1, 2, 3, 4, 5]);
  assert.deepEqual(temp.warnings, []);
});

Deno.test("JsonlSessionStore: load of an unknown or impossible id is undefined", async () => {
  await using temp = await tempStore();
  assert.equal(await temp.store.load(sessionId(9)), undefined);
  assert.equal(await temp.store.load("../etc/passwd"), undefined);
  assert.equal(await temp.store.load(""), undefined);
});

Deno.test("JsonlSessionStore: ids that could escape the data directory are rejected", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  for (const bad of ["../x", "a/b", "a\\b", ".hidden", "", "a".repeat(129), "a b", "..", "x.y"]) {
    await assert.rejects(store.create(header(bad, host)), InvalidSessionIdError, bad);
    await assert.rejects(store.append(bad, [USER], { sync: false }), InvalidSessionIdError, bad);
    await assert.rejects(store.acquire(bad), InvalidSessionIdError, bad);
    await store.delete(bad);
  }
  const entries = [];
  for await (const entry of Deno.readDir(temp.dir)) entries.push(entry.name);
  assert.ok(!entries.includes("x"), "nothing was written outside the layout");
});

Deno.test("JsonlSessionStore: create twice and append to an unknown session fail clearly", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  const id = sessionId(1);
  await store.create(header(id, host));
  await assert.rejects(store.create(header(id, host)), SessionExistsError);
  await assert.rejects(
    store.append(sessionId(2), [USER], { sync: false }),
    (error: unknown) =>
      error instanceof SessionNotFoundError && error.message.includes(sessionId(2)),
  );
  await assert.rejects(
    store.create({ ...header(sessionId(3), host), createdAt: "yesterday" }),
    TypeError,
  );
  await assert.rejects(store.list({ limit: 0 }), RangeError);
  await assert.rejects(store.list({ limit: 1.5 }), RangeError);
});

Deno.test("JsonlSessionStore: a torn tail is ignored, then repaired before the next append", async (t) => {
  for (
    const [name, tail] of [
      ["a partial line", '{"type":"assistant","text":"cut o'],
      ["a complete line without its newline", '{"type":"turn_start","seq":3,"time":"x"}'],
      ["an unparsable last line", '{"type":"assis\u0000\n'],
    ] as const
  ) {
    await t.step(name, async () => {
      await using temp = await tempStore();
      const { store, host } = temp;
      const id = sessionId(1);
      await store.create(header(id, host));
      await store.append(id, [{ type: "turn_start" }, USER], { sync: true });
      const path = `${temp.dir}/sessions/${id}.jsonl`;
      const clean = await Deno.readFile(path);
      await Deno.writeTextFile(path, tail, { append: true });

      const reader = temp.open();
      const loaded = await reader.load(id);
      assert.deepEqual(loaded?.records.map((record) => record.seq), [1, 2]);
      assert.ok(warned(temp, "torn tail"));
      assert.equal(
        (await Deno.stat(path)).size,
        clean.byteLength + new TextEncoder().encode(tail).byteLength,
        "load alone does not write",
      );

      const lease = await reader.acquire(id);
      await reader.load(id);
      await reader.append(id, [ANSWER], { sync: true });
      const text = await Deno.readTextFile(path);
      assert.ok(text.startsWith(new TextDecoder().decode(clean)));
      assert.ok(!text.includes("\u0000") && !text.includes("cut o") && !text.includes('"x"'));
      temp.warnings.length = 0;
      const reloaded = await temp.open().load(id);
      assert.deepEqual(reloaded?.records.map((record) => [record.seq, record.type]), [
        [1, "turn_start"],
        [2, "user"],
        [3, "assistant"],
      ]);
      assert.deepEqual(temp.warnings, [], "the repaired log is clean");
      await lease.release();
    });
  }
});

Deno.test("JsonlSessionStore: an append without a prior load repairs a torn tail too", async () => {
  await using temp = await tempStore();
  const { host } = temp;
  const id = sessionId(1);
  await temp.store.create(header(id, host));
  const path = `${temp.dir}/sessions/${id}.jsonl`;
  await Deno.writeTextFile(path, '{"type":"us', { append: true });
  const other = temp.open();
  await other.append(id, [USER], { sync: true });
  assert.deepEqual((await other.load(id))?.records.map((record) => record.seq), [1]);
});

Deno.test("JsonlSessionStore: a corrupt line before the last is an error naming file and line", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  const id = sessionId(1);
  await store.create(header(id, host));
  await store.append(id, [{ type: "turn_start" }, USER, ANSWER], { sync: true });
  const path = `${temp.dir}/sessions/${id}.jsonl`;
  const lines = (await Deno.readTextFile(path)).split("\n");
  lines[2] = "{not json";
  await Deno.writeTextFile(path, lines.join("\n"));
  await assert.rejects(
    temp.open().load(id),
    (error: unknown) =>
      error instanceof CorruptSessionLogError && error.line === 3 && error.path === path &&
      error.message === `Cannot load session log "${path}": line 3 is not valid JSON`,
  );

  // A broken sequence (e.g. a clobbered log) is corrupt too.
  lines[2] = JSON.stringify({ ...USER, seq: 7, time: at(0) });
  await Deno.writeTextFile(path, lines.join("\n"));
  await assert.rejects(temp.open().load(id), /line 3 has seq 7 \(expected 2\)/);

  // So is a header for another session.
  await Deno.writeTextFile(path, JSON.stringify(header(sessionId(2), host)) + "\n");
  await assert.rejects(temp.open().load(id), /line 1 names session/);
});

Deno.test("JsonlSessionStore: a log torn inside its header does not exist", async () => {
  await using temp = await tempStore();
  const id = sessionId(1);
  await Deno.mkdir(`${temp.dir}/sessions`, { recursive: true });
  await Deno.writeTextFile(`${temp.dir}/sessions/${id}.jsonl`, '{"version":1,"id":"00');
  assert.equal(await temp.store.load(id), undefined);
  assert.ok(warned(temp, "without a complete header"));
});

Deno.test("JsonlSessionStore: concurrent appends in one process keep their order", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  const id = sessionId(1);
  await store.create(header(id, host));
  await Promise.all(
    Array.from(
      { length: 20 },
      (_, n) => store.append(id, [{ type: "title", title: `t${n}` }], { sync: n % 5 === 0 }),
    ),
  );
  const records = (await store.load(id))?.records ?? [];
  assert.deepEqual(
    records.map((record) => [record.seq, (record as { title?: string }).title]),
    Array.from({ length: 20 }, (_, n) => [n + 1, `t${n}`]),
  );
  const { sessions } = await store.list({ limit: 10 });
  assert.equal(sessions[0]?.title, "t19");
});

Deno.test("JsonlSessionStore.append(): the records are written before it returns", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  const id = sessionId(1);
  const path = `${temp.dir}/sessions/${id}.jsonl`;
  const lines = async (): Promise<string[]> => (await Deno.readTextFile(path)).split("\n");
  // The session manager's order for a new session: create, acquire, then record.
  await store.create(header(id, host));
  const lease = await store.acquire(id);
  const first = store.append(id, [{ type: "turn_start" }], { sync: true });
  const second = store.append(id, [USER], { sync: false });
  // Nothing was awaited: both records are already in the file, in call order.
  const written = await lines();
  await Promise.all([first, second]);
  assert.deepEqual(written.slice(1, 3).map((line) => JSON.parse(line).seq), [1, 2]);
  await lease.release();

  // The order for a stored session: acquire, load (which repairs a torn tail at once), record.
  await Deno.writeTextFile(path, '{"type":"TORN', { append: true });
  const other = temp.open();
  const again = await other.acquire(id);
  assert.equal((await other.load(id))?.records.length, 2);
  assert.ok(!(await Deno.readTextFile(path)).includes("TORN"), "repaired by the load");
  const third = other.append(id, [ANSWER], { sync: true });
  assert.equal(JSON.parse((await lines())[3] as string).seq, 3);
  await third;
  await again.release();
});

Deno.test("JsonlSessionStore.acquire(): re-reads a log another process appended to meanwhile", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  const id = sessionId(1);
  await store.create(header(id, host));
  await store.load(id);
  // Another process takes the session, appends, lets go.
  const other = temp.open();
  const theirs = await other.acquire(id);
  await other.load(id);
  await other.append(id, [USER, ANSWER], { sync: true });
  await theirs.release();
  // This process's knowledge (seq 0) is stale: acquire notices the size change.
  const mine = await store.acquire(id);
  await store.append(id, [{ type: "turn_start" }], { sync: true });
  assert.deepEqual((await store.load(id))?.records.map((record) => record.seq), [1, 2, 3]);
  await mine.release();
});

Deno.test("recordText writes what the spread of the event with seq and time would", () => {
  const time = "2026-01-02T03:04:05.678Z";
  const events: StoredEvent[] = [
    { type: "turn_start" },
    { type: "user", messageId: "m", content: [{ type: "text", text: 'a "quoted"\nline' }] },
    { type: "assistant", text: "", providerState: { n: 1, u: undefined } },
    { type: "title", title: "\u2028 and \ud83d\ude00" },
  ];
  for (const [index, event] of events.entries()) {
    const text = recordText(event, index + 1, time);
    assert.equal(text, JSON.stringify({ ...event, seq: index + 1, time }));
    assert.deepEqual(
      JSON.parse(text),
      JSON.parse(JSON.stringify({ ...event, seq: index + 1, time })),
    );
  }
  // A record copied from elsewhere: its own seq and time are replaced, once each.
  const copied = { type: "turn_start", seq: 9, time: "old" } as unknown as StoredEvent;
  assert.equal(recordText(copied, 2, time), `{"type":"turn_start","seq":2,"time":"${time}"}`);
  // Anything JSON cannot hold throws, as JSON.stringify does.
  assert.throws(() => recordText({ type: "title", title: 1n } as unknown as StoredEvent, 1, time));
});
