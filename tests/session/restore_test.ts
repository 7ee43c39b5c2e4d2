import assert from "node:assert/strict";
import type { TurnEvent } from "../../src/agent/turn_event.ts";
import { nullLogger } from "../../src/log/logger.ts";
import { replayUpdates } from "../../src/session/replay.ts";
import {
  INTERRUPTED_TOOL_RESULT,
  restoreSession,
  SessionRestorer,
} from "../../src/session/restore.ts";
import { storedToolParts, toolResultEvent } from "../../src/session/stored_content.ts";
import { MemoryAttachmentStore } from "../../src/store/memory_attachment_store.ts";
import { MemorySessionStore } from "../../src/store/memory_session_store.ts";
import type { AttachmentStore, LoadedSession, StoredEvent } from "../../src/store/session_store.ts";
import type { ToolContent } from "../../src/tools/tool.ts";

const NO_ATTACHMENTS = new MemoryAttachmentStore();

const PARTS: readonly ToolContent[] = [
  { type: "text", text: "Took it" },
  { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
  { type: "resource_link", uri: "file:///tmp/page.html", name: "page.html" },
];
const TEXT = "Took it\n[image: image/png]\n[resource: page.html file:///tmp/page.html]";

/** Stores `events` as one session in an in-memory store and loads it back. */
async function storedLog(
  events: readonly StoredEvent[],
  attachments: AttachmentStore,
): Promise<LoadedSession | undefined> {
  const store = new MemorySessionStore({ attachments });
  const id = crypto.randomUUID();
  await store.create({
    version: 1,
    id,
    cwd: "/work",
    additionalDirectories: [],
    createdAt: "2026-11-30T00:00:00.000Z",
  });
  await store.append(id, events, { sync: true });
  return await store.load(id);
}

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
  const loaded = await storedLog(events, NO_ATTACHMENTS);
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

Deno.test("SessionRestorer: batch by batch, the same state and replay as the whole log at once", async () => {
  const attachments = new MemoryAttachmentStore();
  const png = await attachments.put(new Uint8Array([137, 80, 78, 71]), "image/png");
  const gone = "0".repeat(64);
  const events: StoredEvent[] = [
    { type: "config", model: "echo", mode: "ask" },
    { type: "turn_start" },
    {
      type: "user",
      messageId: "u1",
      content: [
        { type: "text", text: "look" },
        { type: "image", mimeType: "image/png", sha256: png },
        { type: "image", mimeType: "image/png", sha256: gone },
      ],
    },
    { type: "title", title: "Looking" },
    {
      type: "assistant",
      messageId: "a1",
      thoughtId: "t1",
      text: "Reading it",
      reasoning: "first the file",
      toolCalls: [{ id: "c1", name: "read_file", arguments: '{"path":"a.ts"}' }],
    },
    { type: "usage", usage: { input: 10, output: 2 }, used: 12, size: 1000, cost: 0.5 },
    {
      type: "tool_call",
      toolCallId: "c1",
      name: "read_file",
      title: "Read a.ts",
      kind: "read",
      rawInput: { path: "a.ts" },
      locations: [{ path: "/w/a.ts", line: 3 }],
    },
    { type: "permission", toolCallId: "c1", tool: "read_file", answer: "allow_always" },
    toolResultEvent(FINAL_UPDATE, "read_file"),
    { type: "assistant", text: "Done." },
    { type: "usage", usage: { input: 20, output: 4 }, used: 24 },
    { type: "turn_end", stopReason: "end_turn" },
    { type: "turn_start" },
    { type: "user", messageId: "u2", content: [{ type: "text", text: "again" }] },
    {
      type: "assistant",
      text: "",
      toolCalls: [
        { id: "c2", name: "run_command", arguments: "{}" },
        { id: "c3", name: "read_file", arguments: "{}" },
      ],
    },
    {
      type: "tool_result",
      toolCallId: "c3",
      name: "read_file",
      content: "body",
      isError: false,
      display: [{ type: "terminal", terminalId: "term-1" }],
    },
  ];
  const log = await storedLog(events, attachments);
  assert.ok(log);
  const id = log.header.id;

  const restored = await restoreSession(log, attachments, nullLogger);
  const replayed = await replayUpdates(
    [...log.records, ...restored.repair],
    attachments,
    nullLogger,
    id,
  );
  assert.deepEqual(restored.repair, [
    {
      type: "tool_result",
      toolCallId: "c2",
      name: "run_command",
      content: INTERRUPTED_TOOL_RESULT,
      isError: true,
    },
    { type: "turn_end", stopReason: "interrupted" },
  ]);
  for (const size of [1, 2, 3, 7, log.records.length]) {
    const restorer = new SessionRestorer({
      attachments,
      logger: nullLogger,
      sessionId: id,
      replay: true,
    });
    const updates = [];
    for (let start = 0; start < log.records.length; start += size) {
      updates.push(...await restorer.add(log.records.slice(start, start + size)));
    }
    const finished = restorer.finish();
    updates.push(...finished.updates);
    assert.deepEqual(updates, replayed, `batches of ${size}`);
    // A replay sends the usage in its updates; without replay it is kept for the client.
    const { usage: _usage, ...unreplayed } = restored;
    assert.deepEqual(finished.restored, unreplayed, `batches of ${size}`);
  }
  const silent = new SessionRestorer({
    attachments,
    logger: nullLogger,
    sessionId: id,
    replay: false,
  });
  assert.deepEqual(await silent.add(log.records), []);
  const finished = silent.finish();
  assert.deepEqual(finished.updates, []);
  assert.deepEqual(finished.restored, restored);
  // The latest usage that says the context size, for a resumed session's client.
  assert.deepEqual(restored.usage, replayed.findLast((u) => u.sessionUpdate === "usage_update"));
  assert.ok(restored.usage);
});

Deno.test("each recorded plan replays as a plan update in log order, on both replay paths", async () => {
  const first = [
    { content: "Fix it", status: "in_progress", priority: "high" },
    { content: "Test it", status: "pending", priority: "medium" },
  ] as const;
  const second = [
    { content: "Fix it", status: "completed", priority: "high" },
    { content: "Test it", status: "in_progress", priority: "medium" },
  ] as const;
  const call = (id: string): StoredEvent[] => [
    {
      type: "assistant",
      text: "",
      toolCalls: [{ id, name: "update_plan", arguments: "{}" }],
    },
    {
      type: "tool_call",
      toolCallId: id,
      name: "update_plan",
      title: "Update plan (2 entries)",
      kind: "think",
      rawInput: {},
      locations: [],
    },
    { type: "tool_result", toolCallId: id, name: "update_plan", content: "ok", isError: false },
  ];
  const events: StoredEvent[] = [
    { type: "turn_start" },
    { type: "user", messageId: "u1", content: [{ type: "text", text: "plan" }] },
    ...call("p1"),
    { type: "plan", entries: first },
    ...call("p2"),
    { type: "plan", entries: second },
    // A hand-edited record: the bad entry is left out, an unknown priority is medium.
    {
      type: "plan",
      entries: [{ content: "Ship", status: "done" }, {
        content: "Tag",
        status: "pending",
        priority: "urgent",
      }],
    } as unknown as StoredEvent,
    { type: "turn_end", stopReason: "end_turn" },
  ];
  const log = await storedLog(events, NO_ATTACHMENTS);
  assert.ok(log);
  const id = log.header.id;
  const replayed = await replayUpdates(log.records, NO_ATTACHMENTS, nullLogger, id);
  const order = replayed.map((update) =>
    update.sessionUpdate === "plan"
      ? update
      : `${update.sessionUpdate} ${"toolCallId" in update ? update.toolCallId : ""}`
  );
  assert.deepEqual(order, [
    "user_message_chunk ",
    "tool_call p1",
    "tool_call_update p1",
    { sessionUpdate: "plan", entries: first },
    "tool_call p2",
    "tool_call_update p2",
    { sessionUpdate: "plan", entries: second },
    {
      sessionUpdate: "plan",
      entries: [{ content: "Tag", status: "pending", priority: "medium" }],
    },
  ]);
  const restorer = new SessionRestorer({
    attachments: NO_ATTACHMENTS,
    logger: nullLogger,
    sessionId: id,
    replay: true,
  });
  const streamed = [];
  for (const record of log.records) streamed.push(...await restorer.add([record]));
  const finished = restorer.finish();
  assert.deepEqual([...streamed, ...finished.updates], replayed);
  // The plan is no part of the model's history: the calls and their results are.
  assert.deepEqual(
    finished.restored.history.map((message) => message.role),
    ["user", "assistant", "tool", "assistant", "tool"],
  );
});

Deno.test("replay and restore: a tool call and its result with every optional field, and without", async () => {
  const events: StoredEvent[] = [
    { type: "turn_start" },
    {
      type: "assistant",
      text: "Reading",
      reasoning: "the file first",
      toolCalls: [{ id: "c1", name: "read_file", arguments: "{}" }],
      providerState: { id: "r1" },
      provider: "openai",
    },
    {
      type: "tool_call",
      toolCallId: "c1",
      name: "read_file",
      title: "Read a.ts",
      kind: "read",
      rawInput: { path: "a.ts" },
      locations: [{ path: "/w/a.ts", line: 3 }, { path: "/w/b.ts" }],
    },
    {
      type: "tool_result",
      toolCallId: "c1",
      name: "read_file",
      content: "gone",
      isError: true,
      locations: [{ path: "/w/a.ts", line: 3 }],
      rawOutput: { code: 2 },
    } as StoredEvent,
    { type: "assistant", text: "Plain" },
    {
      type: "tool_call",
      toolCallId: "c2",
      name: "run",
      title: "Run",
      kind: "execute",
      rawInput: {},
      locations: [],
    },
    { type: "tool_result", toolCallId: "c2", name: "run", content: "ok", isError: false },
    { type: "turn_end", stopReason: "end_turn" },
  ];
  const log = await storedLog(events, NO_ATTACHMENTS);
  assert.ok(log);
  const id = log.header.id;
  const restorer = new SessionRestorer({
    attachments: NO_ATTACHMENTS,
    logger: nullLogger,
    sessionId: id,
    replay: true,
  });
  const updates = await restorer.add(log.records);
  const { restored } = restorer.finish();
  assert.deepEqual(updates.filter((update) => update.sessionUpdate.startsWith("tool_call")), [
    {
      sessionUpdate: "tool_call",
      toolCallId: "c1",
      title: "Read a.ts",
      kind: "read",
      status: "pending",
      rawInput: { path: "a.ts" },
      locations: [{ path: "/w/a.ts", line: 3 }, { path: "/w/b.ts" }],
    },
    {
      sessionUpdate: "tool_call_update",
      toolCallId: "c1",
      status: "failed",
      content: [{ type: "content", content: { type: "text", text: "gone" } }],
      locations: [{ path: "/w/a.ts", line: 3 }],
      rawOutput: { code: 2 },
    },
    {
      sessionUpdate: "tool_call",
      toolCallId: "c2",
      title: "Run",
      kind: "execute",
      status: "pending",
      rawInput: {},
    },
    {
      sessionUpdate: "tool_call_update",
      toolCallId: "c2",
      status: "completed",
      content: [{ type: "content", content: { type: "text", text: "ok" } }],
    },
  ]);
  assert.deepEqual(restored.history, [
    {
      role: "assistant",
      text: "Reading",
      reasoning: "the file first",
      toolCalls: [{ id: "c1", name: "read_file", arguments: "{}" }],
      providerState: { id: "r1" },
      provider: "openai",
    },
    { role: "tool", toolCallId: "c1", name: "read_file", content: "gone", isError: true },
    { role: "assistant", text: "Plain" },
    { role: "tool", toolCallId: "c2", name: "run", content: "ok", isError: false },
  ]);
});

Deno.test("restoreSession() remembers a user's always answer, not one a rule decided or asked for", async () => {
  const attachments = new MemoryAttachmentStore();
  const events: StoredEvent[] = [
    { type: "turn_start" },
    { type: "user", messageId: "m1", content: [{ type: "text", text: "go" }] },
    {
      type: "assistant",
      text: "",
      toolCalls: [
        { id: "c1", name: "write_file", arguments: "{}" },
        { id: "c2", name: "run_command", arguments: "{}" },
        { id: "c3", name: "edit_file", arguments: "{}" },
      ],
    },
    {
      type: "permission",
      toolCallId: "c1",
      tool: "write_file",
      answer: "reject_once",
      decision: "deny",
      rule: "write_file",
    },
    {
      type: "permission",
      toolCallId: "c2",
      tool: "run_command",
      answer: "allow_always",
      decision: "ask",
      rule: "run_command(git push*)",
    },
    // An old record, without decision and rule: the user's answer, remembered as before.
    { type: "permission", toolCallId: "c3", tool: "edit_file", answer: "allow_always" },
    { type: "tool_result", toolCallId: "c1", name: "write_file", content: "no", isError: true },
    { type: "tool_result", toolCallId: "c2", name: "run_command", content: "ok", isError: false },
    { type: "tool_result", toolCallId: "c3", name: "edit_file", content: "ok", isError: false },
    { type: "assistant", text: "Done." },
    { type: "turn_end", stopReason: "end_turn" },
  ];
  const log = await storedLog(events, attachments);
  assert.ok(log);
  const restored = await restoreSession(log, attachments, nullLogger);
  assert.deepEqual([...restored.grants], [["edit_file", "allow_always"]]);
  const replayed = await replayUpdates(log.records, attachments, nullLogger, log.header.id);
  assert.ok(replayed.length > 0);
});

Deno.test("restoreSession() sums the session's tokens from every usage record and keeps the latest budgets", async () => {
  const log = await storedLog([
    { type: "budgets", limits: { maxToolCalls: 3 } },
    { type: "turn_start" },
    { type: "user", messageId: "m1", content: [{ type: "text", text: "one" }] },
    { type: "assistant", text: "a" },
    { type: "usage", usage: { input: 600, output: 40 }, used: 640, cost: 0.5 },
    { type: "assistant", text: "b" },
    { type: "usage", usage: { input: 300, output: 60 }, used: 360, cost: 0.75 },
    { type: "turn_end", stopReason: "end_turn" },
    { type: "clear" },
    { type: "usage", usage: { input: 0, output: 0 }, used: 10 },
    { type: "budgets", limits: { maxToolCalls: 2, maxSessionTokens: 5000 } },
  ], NO_ATTACHMENTS);
  assert.ok(log);
  const restored = await restoreSession(log, NO_ATTACHMENTS, nullLogger);
  assert.equal(restored.tokens, 1000, "input plus output of every request, a clear included");
  assert.equal(restored.cost, 0.75);
  assert.deepEqual(restored.budgets, { maxToolCalls: 2, maxSessionTokens: 5000 });
});
