/**
 * The `Session` facade with fakes around it: a store that records appends, a provider the test
 * steps, a sink that keeps updates. Covers the turn (admission, end, failures of the admission
 * record, reported either way a store reports them), the selection and close.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Host } from "../../src/host/host.ts";
import { ConfigValueError, Session } from "../../src/session/session.ts";
import type { AttachmentStore, SessionStore } from "../../src/store/session_store.ts";
import type { Workspace } from "../../src/tools/workspace.ts";
import { SessionLogFailedError, StoreCommitTimeoutError } from "../../src/store/store_errors.ts";
import { pollUntil, settle } from "../_helpers/wait.ts";
import { sessionServices } from "../_helpers/server.ts";
import {
  captureLogger,
  captureSink,
  fakeCatalog,
  FakeStore,
  gate,
  GatedProvider,
  modelInfo,
} from "./_fakes.ts";

function session(options: { efforts?: boolean; commitTimeoutMs?: number } = {}) {
  const store = new FakeStore();
  const provider = new GatedProvider();
  const { logger, lines } = captureLogger();
  const { sink, updates } = captureSink();
  const info = modelInfo(
    options.efforts ? { reasoningEfforts: ["low", "high"], defaultReasoningEffort: "low" } : {},
  );
  const order: string[] = [];
  store.onAppend = (call) => order.push(`append ${call.events.map((e) => e.type).join(",")}`);
  const s = new Session({
    services: sessionServices({
      settings: {
        maxSteps: 10,
        ...(options.commitTimeoutMs === undefined
          ? {}
          : { storeCommitTimeoutMs: options.commitTimeoutMs }),
      },
      catalog: fakeCatalog(provider, info),
      host: {} as Host,
      files: {} as Host,
      now: () => 0,
      store: store as unknown as SessionStore,
      attachments: {} as AttachmentStore,
    }),
    id: "s1",
    cwd: "/work",
    additionalDirectories: [],
    selection: { model: info.id, mode: "ask" },
    tools: [],
    workspace: {} as Workspace,
    ask: () => Promise.resolve("allow_once"),
    sink: (update) => {
      order.push(`send ${update.sessionUpdate}`);
      return sink(update);
    },
    logger,
  });
  return { session: s, store, provider, lines, updates, order };
}

const text = (value: string) => [{ type: "text" as const, text: value }];

Deno.test("Session.prompt() records the admission in its first append, before anything is sent", async () => {
  const { session: s, store, provider, order } = session();
  s.start();
  const turn = s.prompt(text("Fix the build"), new AbortController().signal);
  await provider.started.wait;
  assert.deepEqual(store.types()[0], ["config", "turn_start", "user", "title"]);
  assert.equal(store.calls[0]?.sync, true);
  provider.next.open();
  assert.equal(await turn, "end_turn");
  await s.close();
  assert.deepEqual(order, [
    "append config,turn_start,user,title",
    "send session_info_update",
    "append assistant",
    "send agent_message_chunk",
    "append turn_end",
  ]);
});

Deno.test("Session.prompt() fails when the store throws on the admission record", async () => {
  const { session: s, store, lines } = session();
  store.behaviour = () => {
    throw new Error("disk full");
  };
  await assert.rejects(s.prompt(text("hello"), new AbortController().signal), /disk full/);
  assert.equal(store.types().flat().includes("turn_end"), false, "no turn was admitted");
  assert.ok(lines.some((line) => line.startsWith("acp-harness warn: prompt failed")));
  store.behaviour = () => Promise.resolve();
  // The slot is free again, but the log is not: nothing is appended after what failed.
  await assert.rejects(
    s.prompt(text("again"), new AbortController().signal),
    (error) =>
      error instanceof SessionLogFailedError && /load the session again/.test(error.message),
  );
  await s.close();
});

Deno.test("Session.prompt() fails when the store rejects the admission record", async () => {
  const { session: s, store, provider, lines } = session();
  let reject = (_error: Error): void => {};
  store.behaviour = (call) =>
    call.events.some((event) => event.type === "turn_start")
      ? new Promise((_resolve, fail) => reject = fail)
      : Promise.resolve();
  const turn = s.prompt(text("hello"), new AbortController().signal);
  await provider.started.wait;
  reject(new Error("disk full"));
  await assert.rejects(turn, /disk full/);
  await s.close();
  const end = store.calls.flatMap((call) => call.events).find((event) => event.type === "turn_end");
  assert.equal(end, undefined, "nothing appended after the failed append");
  assert.ok(lines.some((line) => line.startsWith("acp-harness warn: prompt failed")));
  assert.ok(
    lines.some((line) => line.startsWith("acp-harness error: cannot write the session log")),
  );
});

Deno.test("Session.prompt(): a failed record that is not strict fails the prompt at its end", async () => {
  const { session: s, store, provider, lines } = session();
  store.behaviour = (call) =>
    call.events.some((event) => event.type === "assistant")
      ? Promise.reject(new Error("sync failed"))
      : Promise.resolve();
  const turn = s.prompt(text("hello"), new AbortController().signal);
  await provider.started.wait;
  provider.next.open();
  await assert.rejects(turn, /sync failed/, "never answered when its records are not stored");
  await s.close();
  assert.ok(
    lines.some((line) => line.startsWith("acp-harness error: cannot write the session log")),
  );
  const end = store.calls.flatMap((call) => call.events).find((event) => event.type === "turn_end");
  assert.equal(end, undefined, "nothing appended after the failed append");
});

Deno.test("Session.prompt(): the answer waits until the store has the turn's end", async () => {
  const { session: s, store, provider } = session();
  // The first prompt titles the session; the second is an ordinary turn.
  const first = s.prompt(text("hello"), new AbortController().signal);
  provider.next.open();
  assert.equal(await first, "end_turn");
  provider.started = gate();
  provider.next = gate();
  const before = store.calls.length;
  const stored = gate();
  store.behaviour = (call) =>
    call.events.some((event) => event.type === "turn_end") ? stored.wait : Promise.resolve();
  let answered = false;
  const turn = s.prompt(text("hello"), new AbortController().signal).finally(() => answered = true);
  await provider.started.wait;
  provider.next.open();
  await pollUntil(
    () => store.types().slice(before).flat().includes("turn_end"),
    { what: "the turn's end" },
  );
  await settle();
  assert.equal(answered, false, "not answered before the store has it");
  stored.open();
  assert.equal(await turn, "end_turn");
  await s.close();
});

Deno.test("Session.prompt(): a store that never confirms fails the prompt after the commit timeout", async () => {
  const { session: s, store, provider } = session({ commitTimeoutMs: 50 });
  Object.assign(store, { name: "PostgreSQL" });
  store.behaviour = (call) =>
    call.events.some((event) => event.type === "turn_end")
      ? new Promise(() => {})
      : Promise.resolve();
  const turn = s.prompt(text("hello"), new AbortController().signal);
  await provider.started.wait;
  provider.next.open();
  await assert.rejects(
    turn,
    (error) =>
      error instanceof StoreCommitTimeoutError && /PostgreSQL session store/.test(error.message),
  );
  // Nothing more is appended after records the store may not have.
  await assert.rejects(
    s.prompt(text("again"), new AbortController().signal),
    StoreCommitTimeoutError,
  );
  const calls = store.calls.length;
  s.cancel();
  assert.equal(store.calls.length, calls);
});

Deno.test("Session.prompt() is cancelled by cancel() and close() waits for it", async () => {
  const { session: s, store, provider, lines } = session();
  const turn = s.prompt(text("hello"), new AbortController().signal);
  // A prompt while one runs would be queued.
  s.assertCanPrompt();
  await provider.started.wait;
  s.cancel();
  assert.equal(await turn, "cancelled");
  const second = s.prompt(text("again"), new AbortController().signal);
  const closing = s.close();
  assert.throws(() => s.setMode("auto"), /closing/);
  assert.equal(await second, "cancelled");
  await closing;
  assert.equal(store.types().flat().filter((type) => type === "turn_end").length, 2);
  assert.ok(lines.some((line) => /prompt ended .*"stopReason":"cancelled"/.test(line)));
});

Deno.test("Session: a prompt while one runs is queued, and a cancel drops it unrecorded", async () => {
  const { session: s, store, provider } = session();
  const turn = s.prompt(text("hello"), new AbortController().signal);
  const queued = s.prompt(text("queued"), new AbortController().signal);
  assert.equal(s.queuedPrompts, 1);
  await provider.started.wait;
  s.cancel();
  assert.deepEqual([await turn, await queued], ["cancelled", "cancelled"]);
  const users = store.types().flat().filter((type) => type === "user");
  assert.equal(users.length, 1, "the dropped prompt left nothing in the log");
});

Deno.test("Session.setConfigOption() records the selection, then tells the client", async () => {
  const { session: s, store, order, updates } = session({ efforts: true });
  const options = s.setConfigOption("mode", "auto");
  assert.equal(options.find((option) => option.id === "mode")?.currentValue, "auto");
  assert.deepEqual(order, [
    "append config",
    "send config_option_update",
    "send current_mode_update",
  ]);
  assert.deepEqual(store.calls[0], {
    events: [{ type: "config", model: "fake/model", mode: "auto" }],
    sync: true,
  });
  s.setConfigOption("reasoning_effort", "high");
  assert.equal(updates.length, 3, "no mode update when the mode stays");
  assert.equal(s.modes().currentModeId, "auto");
  assert.throws(() => s.setConfigOption("colour", "red"), ConfigValueError);
  assert.throws(() => s.setConfigOption("mode", "yolo"), ConfigValueError);
  await s.close();
});
