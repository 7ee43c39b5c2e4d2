import assert from "node:assert/strict";
import type { SessionUpdate } from "../../src/transport/acp_types.ts";
import { ReplayFrames } from "../../src/session/replay.ts";

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
