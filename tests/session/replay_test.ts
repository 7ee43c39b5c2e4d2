import assert from "node:assert/strict";
import type { SessionUpdate } from "../../src/transport/acp_types.ts";
import { nullLogger } from "../../src/log/logger.ts";
import { ReplayFrames, replayThrough, ReplayWriter } from "../../src/session/replay.ts";

const decoder = new TextDecoder();

/** A sink whose envelope has a non-ASCII session id, as a real one could not but a test may. */
function frames(sessionId: string): ReplayFrames {
  return new ReplayFrames({
    head: `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":${
      JSON.stringify(sessionId)
    },"update":`,
    tail: "}}\n",
  });
}

/** The notifications of some bytes, one per line. */
function notifications(bytes: Uint8Array): unknown[] {
  const text = decoder.decode(bytes);
  assert.ok(text.endsWith("\n"));
  return text.slice(0, -1).split("\n").map((line) => JSON.parse(line));
}

Deno.test("ReplayFrames: each update is one NDJSON notification, batch by batch", () => {
  const replay = frames("sé");
  assert.equal(replay.empty, true);
  const texts = [
    "plain",
    "é and ✓ and 𝄞",
    'quote " backslash \\ newline \n tab \t',
    "\ud800 alone",
  ];
  const updates: SessionUpdate[] = texts.map((text, index) => ({
    sessionUpdate: "agent_message_chunk",
    messageId: `m${index}`,
    content: { type: "text", text },
  }));
  for (const update of updates.slice(0, 3)) replay.update(update);
  assert.equal(replay.empty, false);
  const first = replay.take();
  assert.equal(replay.empty, true);
  replay.update(updates[3] as SessionUpdate);
  replay.update({ sessionUpdate: "session_info_update", title: "Fix it" });
  const second = replay.take();

  const expected = (update: SessionUpdate): unknown => ({
    jsonrpc: "2.0",
    method: "session/update",
    params: { sessionId: "sé", update },
  });
  assert.deepEqual(notifications(first), updates.slice(0, 3).map(expected));
  assert.deepEqual(notifications(second), [
    expected(updates[3] as SessionUpdate),
    expected({ sessionUpdate: "session_info_update", title: "Fix it" }),
  ]);
  // A lone surrogate is escaped by JSON, not replaced when encoded.
  assert.ok(decoder.decode(second).includes("\\ud800 alone"));
});

Deno.test("ReplayFrames: take() with nothing built gives no bytes", () => {
  const replay = frames("s1");
  assert.equal(replay.take().byteLength, 0);
  assert.equal(replay.empty, true);
});

Deno.test("ReplayFrames: a batch longer than a piece is the same bytes as encoding it whole", () => {
  const replay = frames("s1");
  const updates: SessionUpdate[] = [];
  let text = "";
  // About 300 KiB: several pieces, with non-ASCII text crossing their edges.
  for (let index = 0; index < 1000; index++) {
    const update: SessionUpdate = {
      sessionUpdate: "agent_message_chunk",
      messageId: `m${index}`,
      content: { type: "text", text: `${index} é✓𝄞 `.repeat(index % 40 + 1) },
    };
    updates.push(update);
    replay.update(update);
    text += `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":${
      JSON.stringify(update)
    }}}\n`;
  }
  assert.ok(text.length > 4 * 32 * 1024, "spans several pieces");
  const bytes = replay.take();
  assert.deepEqual(bytes, new TextEncoder().encode(text));
  assert.equal(replay.empty, true);
  assert.equal(notifications(bytes).length, updates.length);
  // The next batch starts afresh.
  replay.update(updates[0] as SessionUpdate);
  assert.equal(notifications(replay.take()).length, 1);
  assert.equal(replay.take().byteLength, 0);
});

/** A write that settles when the test says, recording what it was given. */
function heldWrites<T>() {
  const given: T[] = [];
  const pending: Array<{ resolve: () => void; reject: (error: unknown) => void }> = [];
  const write = (value: T): Promise<void> => {
    given.push(value);
    return new Promise<void>((resolve, reject) => pending.push({ resolve, reject }));
  };
  return { given, pending, write };
}

const info = (title: string): SessionUpdate => ({ sessionUpdate: "session_info_update", title });

Deno.test("ReplayWriter prefers the sink's frames, four batches in flight", async () => {
  const frameWrites = heldWrites<Uint8Array>();
  let updates = 0;
  const writer = new ReplayWriter({
    updates: () => {
      updates++;
      return Promise.resolve();
    },
    frames: { head: '{"update":', tail: "}\n", write: frameWrites.write },
  });
  for (let batch = 0; batch < 4; batch++) await writer.write([info(`t${batch}`)]);
  await writer.write([]);
  assert.equal(frameWrites.given.length, 4, "an empty batch writes nothing");
  const fifth = writer.write([info("t4")]);
  await Promise.resolve();
  assert.equal(frameWrites.given.length, 4, "the fifth batch waits for the first write");
  frameWrites.pending[0]?.resolve();
  await fifth;
  assert.equal(frameWrites.given.length, 5);
  for (const write of frameWrites.pending.slice(1)) write.resolve();
  await writer.finish();
  assert.equal(updates, 0);
  assert.deepEqual(
    frameWrites.given.map((bytes) => notifications(bytes)),
    [0, 1, 2, 3, 4].map((n) => [{ update: info(`t${n}`) }]),
  );
});

Deno.test("ReplayWriter without frames writes one batch of updates at a time; a failure fails the next write", async () => {
  const batches = heldWrites<readonly SessionUpdate[]>();
  const writer = new ReplayWriter({ updates: batches.write });
  await writer.write([info("a"), info("b")]);
  const second = writer.write([info("c")]);
  await Promise.resolve();
  assert.equal(batches.given.length, 1, "the second batch waits for the first");
  batches.pending[0]?.reject(new Error("client gone"));
  await assert.rejects(second, /client gone/);
  await writer.settled();
  assert.deepEqual(batches.given, [[info("a"), info("b")]]);
});

Deno.test("replayThrough() writes each update through the update sink, in order, past a failure", async () => {
  const seen: string[] = [];
  const sink = replayThrough((update) => {
    const title = (update as { title: string }).title;
    seen.push(title);
    return title === "b" ? Promise.reject(new Error("lost")) : Promise.resolve();
  }, nullLogger);
  await sink.updates([info("a"), info("b"), info("c")]);
  assert.deepEqual(seen, ["a", "b", "c"]);
});
