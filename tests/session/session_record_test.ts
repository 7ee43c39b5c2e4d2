import assert from "node:assert/strict";
import type { TurnEvent } from "../../src/agent/turn_event.ts";
import { nullLogger } from "../../src/log/logger.ts";
import {
  replayUpdates,
  restoreSession,
  storedToolParts,
  toolResultEvent,
} from "../../src/session/session_record.ts";
import { MemoryAttachmentStore } from "../../src/store/memory_attachment_store.ts";
import { MemorySessionStore } from "../../src/store/memory_session_store.ts";
import type { LoadedSession, StoredEvent } from "../../src/store/session_store.ts";
import type { ToolContent } from "../../src/tools/tool.ts";

const NO_ATTACHMENTS = new MemoryAttachmentStore();

const PARTS: readonly ToolContent[] = [
  { type: "text", text: "Took it" },
  { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
  { type: "resource_link", uri: "file:///tmp/page.html", name: "page.html" },
];
const TEXT = "Took it\n[image: image/png]\n[resource: page.html file:///tmp/page.html]";

/** A log of one turn with one tool call and the given result, through the in-memory store. */
async function logWith(result: StoredEvent): Promise<LoadedSession> {
  const events: StoredEvent[] = [
    { type: "turn_start" },
    { type: "user", messageId: "m1", content: [{ type: "text", text: "look" }] },
    {
      type: "assistant",
      text: "",
      toolCalls: [{ id: "c1", name: "mcp__browser__screenshot", arguments: "{}" }],
    },
    {
      type: "tool_call",
      toolCallId: "c1",
      name: "mcp__browser__screenshot",
      title: "Screenshot",
      kind: "other",
      rawInput: {},
      locations: [],
    },
    result,
    { type: "assistant", text: "A login page." },
    { type: "turn_end", stopReason: "end_turn" },
  ];
  const store = new MemorySessionStore({ attachments: NO_ATTACHMENTS });
  const id = crypto.randomUUID();
  await store.create({
    version: 1,
    id,
    cwd: "/work",
    additionalDirectories: [],
    createdAt: "2026-11-30T00:00:00.000Z",
  });
  await store.append(id, events, { sync: true });
  const loaded = await store.load(id);
  assert.ok(loaded);
  return loaded;
}

const FINAL_UPDATE: Extract<TurnEvent, { type: "tool-call-update" }> = {
  type: "tool-call-update",
  toolCallId: "c1",
  status: "completed",
  text: TEXT,
  parts: PARTS,
};

Deno.test("a tool result's parts survive the log: restored history and load replay", async () => {
  const event = toolResultEvent(FINAL_UPDATE, "mcp__browser__screenshot");
  assert.deepEqual(event, {
    type: "tool_result",
    toolCallId: "c1",
    name: "mcp__browser__screenshot",
    content: TEXT,
    isError: false,
    parts: PARTS,
  });
  const log = await logWith(event);
  const restored = await restoreSession(log, NO_ATTACHMENTS, nullLogger);
  assert.deepEqual(restored.repair, []);
  assert.deepEqual(restored.history[2], {
    role: "tool",
    toolCallId: "c1",
    name: "mcp__browser__screenshot",
    content: TEXT,
    parts: PARTS,
    isError: false,
  });
  const updates = await replayUpdates(log.records, NO_ATTACHMENTS, nullLogger, "s1");
  assert.deepEqual(updates.find((update) => update.sessionUpdate === "tool_call_update"), {
    sessionUpdate: "tool_call_update",
    toolCallId: "c1",
    status: "completed",
    content: [
      { type: "content", content: { type: "text", text: "Took it" } },
      { type: "content", content: { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" } },
      {
        type: "content",
        content: { type: "resource_link", uri: "file:///tmp/page.html", name: "page.html" },
      },
    ],
  });
});

Deno.test("a tool result recorded as a string (an old log) restores and replays as text", async () => {
  const old: StoredEvent = {
    type: "tool_result",
    toolCallId: "c1",
    name: "read_file",
    content: "file body",
    isError: true,
  };
  assert.deepEqual(
    toolResultEvent(
      { type: "tool-call-update", toolCallId: "c1", status: "failed", text: "file body" },
      "read_file",
    ),
    old,
  );
  const log = await logWith(old);
  const restored = await restoreSession(log, NO_ATTACHMENTS, nullLogger);
  assert.deepEqual(restored.history[2], {
    role: "tool",
    toolCallId: "c1",
    name: "read_file",
    content: "file body",
    isError: true,
  });
  const updates = await replayUpdates(log.records, NO_ATTACHMENTS, nullLogger, "s1");
  assert.deepEqual(updates.find((update) => update.sessionUpdate === "tool_call_update"), {
    sessionUpdate: "tool_call_update",
    toolCallId: "c1",
    status: "failed",
    content: [{ type: "content", content: { type: "text", text: "file body" } }],
  });
});

Deno.test("storedToolParts() keeps only well-formed parts", () => {
  const record = {
    type: "tool_result",
    toolCallId: "c1",
    name: "t",
    content: "x",
    isError: false,
    parts: [
      { type: "text", text: "ok" },
      { type: "text" },
      { type: "image", mimeType: "image/png" },
      { type: "resource_link", uri: "u", name: "n", mimeType: 3 },
      { type: "audio", data: "x" },
      null,
      "text",
    ],
  } as unknown as StoredEvent;
  assert.deepEqual(storedToolParts(record), [{ type: "text", text: "ok" }]);
  const garbage = { ...record, parts: [null] } as unknown as StoredEvent;
  assert.equal(storedToolParts(garbage), undefined);
  assert.equal(storedToolParts({ ...record, parts: "x" } as unknown as StoredEvent), undefined);
});
