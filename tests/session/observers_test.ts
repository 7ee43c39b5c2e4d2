/**
 * Read-only observers (`session/load` with `_meta["acp-harness"].observe`), over in-memory
 * connections of one server: the replay then the live updates, with nothing lost or doubled at
 * the seam; every acting method refused with the owner rule; permission requests only to the
 * owner; dropped when the session closes or the owner goes; another tenant's session not found; a
 * slow observer never holds back the owner.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createMemoryPair } from "../../mod.ts";
import { type AcpTestClient, memoryClient, RpcError } from "../_helpers/acp_client.ts";
import { createTestAgentServer } from "../_helpers/server.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";
import {
  MAX_OBSERVERS_PER_SESSION,
  OBSERVER_BACKLOG,
  ObserverRegistry,
} from "../../src/session/observers.ts";

const OBSERVE = { _meta: { "acp-harness": { observe: true } } };
const DETACHED = "_acp-harness/observer_detached";

interface Side {
  readonly client: AcpTestClient;
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

/** A scripted server and a way to connect clients to it (of a tenant, when given). */
function serve(script: unknown[]) {
  const { server } = createTestAgentServer({ script, config: { model: "scripted" } });
  const sides: Side[] = [];
  const connect = async (tenant?: string): Promise<Side> => {
    const [serverSide, clientSide] = createMemoryPair();
    const connection = server.connect(serverSide, tenant === undefined ? {} : { tenant });
    const client = memoryClient(clientSide);
    let closing: Promise<void> | undefined;
    const side: Side = {
      client,
      closed: connection.closed,
      close: () =>
        closing ??= (async () => {
          await (client as unknown as { close: () => Promise<void> }).close();
          await connection.closed;
        })(),
    };
    sides.push(side);
    await client.initialize();
    return side;
  };
  return {
    connect,
    async [Symbol.asyncDispose]() {
      for (const side of sides) await side.close();
      await server.close();
    },
  };
}

/** The texts of the agent's messages to `client` for a session, joined. */
function agentText(client: AcpTestClient, sessionId: string): string {
  return client.updates(sessionId)
    .filter(({ update }) => update.sessionUpdate === "agent_message_chunk")
    .map(({ update }) => (update.content as { text: string }).text).join("|");
}

/** The tool call updates of a session to `client`, as `kind:id:status`. */
function toolUpdates(client: AcpTestClient, sessionId: string): string[] {
  return client.updates(sessionId)
    .filter(({ update }) => String(update.sessionUpdate).startsWith("tool_call"))
    .map(({ update }) => `${update.sessionUpdate}:${update.toolCallId}:${update.status}`);
}

/** A permission request the owner holds until `answer` is called. */
function heldPermission(client: AcpTestClient): { asked: Promise<void>; answer: () => void } {
  let asked!: () => void;
  let answer!: () => void;
  const askedPromise = new Promise<void>((resolve) => asked = resolve);
  const answered = new Promise<void>((resolve) => answer = resolve);
  client.handlers.set("session/request_permission", async () => {
    asked();
    await answered;
    return { outcome: { outcome: "selected", optionId: "allow_once" } };
  });
  return { asked: askedPromise, answer };
}

async function refusedWith(promise: Promise<unknown>, code: number, pattern: RegExp) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof RpcError, String(error));
    assert.equal(error.code, code, error.message);
    assert.match(error.message, pattern);
    return true;
  });
}

const SCRIPT = [
  { text: "first answer" },
  { toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "a.txt", content: "x\n" } }] },
  { text: "written" },
];

Deno.test("an observer attached mid-turn sees the replay, then the turn live, as the owner does", async () => {
  await using workspaces = new TempDirs("acp-harness-observers-");
  const cwd = await workspaces.make();
  await using server = serve(SCRIPT);
  const owner = await server.connect();
  const sessionId = await owner.client.newSession(cwd);
  assert.equal(await owner.client.prompt(sessionId, "one"), "end_turn");
  const permission = heldPermission(owner.client);
  const turn = owner.client.prompt(sessionId, "write it");
  await permission.asked;
  // The owner's turn waits on its permission request: the observer attaches now.
  const observer = await server.connect();
  const loaded = await observer.client.request<Record<string, unknown>>("session/load", {
    sessionId,
    cwd,
    mcpServers: [],
    ...OBSERVE,
  });
  assert.deepEqual((loaded._meta as Record<string, unknown>)["acp-harness"], { observing: true });
  assert.ok(Array.isArray(loaded.configOptions));
  assert.deepEqual(toolUpdates(observer.client, sessionId), ["tool_call:w1:pending"]);
  permission.answer();
  assert.equal(await turn, "end_turn");
  await observer.client.waitFor(() => agentText(observer.client, sessionId).endsWith("written"));
  assert.equal(agentText(observer.client, sessionId), agentText(owner.client, sessionId));
  assert.equal(agentText(owner.client, sessionId), "first answer|written");
  // The tool call once, then its progress and end live; never a permission request.
  const tools = toolUpdates(observer.client, sessionId);
  assert.equal(tools[0], "tool_call:w1:pending");
  assert.equal(tools.at(-1), "tool_call_update:w1:completed");
  assert.equal(tools.filter((update) => update.startsWith("tool_call:")).length, 1);
  assert.equal(tools.filter((update) => update.endsWith(":completed")).length, 1);
  assert.ok(!observer.client.frames.some((frame) => frame.method === "session/request_permission"));
  // The user's messages are in the replay.
  const userTexts = observer.client.updates(sessionId)
    .filter(({ update }) => update.sessionUpdate === "user_message_chunk")
    .map(({ update }) => (update.content as { text: string }).text);
  assert.deepEqual(userTexts, ["one", "write it"]);
  assert.deepEqual([...owner.client.problems, ...observer.client.problems], []);
});

Deno.test("an observer cannot prompt, steer, configure or cancel; its close detaches it only", async () => {
  await using workspaces = new TempDirs("acp-harness-observers-");
  const cwd = await workspaces.make();
  await using server = serve([{ text: "a" }, { text: "b" }]);
  const owner = await server.connect();
  const sessionId = await owner.client.newSession(cwd);
  const observer = await server.connect();
  await observer.client.request("session/load", { sessionId, cwd, mcpServers: [], ...OBSERVE });
  const rule = /read-only observer of it; only the connection that owns it may prompt/;
  const text = [{ type: "text", text: "hi" }];
  await refusedWith(
    observer.client.request("session/prompt", { sessionId, prompt: text }),
    -32002,
    rule,
  );
  await refusedWith(
    observer.client.request("_session/steering", { sessionId, prompt: text }),
    -32002,
    rule,
  );
  await refusedWith(
    observer.client.request("session/set_mode", { sessionId, modeId: "auto" }),
    -32002,
    rule,
  );
  await refusedWith(
    observer.client.request("session/set_config_option", {
      sessionId,
      configId: "mode",
      value: "auto",
    }),
    -32002,
    rule,
  );
  // A second observe of the same session, and a resume that observes, are refused.
  await refusedWith(
    observer.client.request("session/load", { sessionId, cwd, mcpServers: [], ...OBSERVE }),
    -32602,
    /observed by this connection already/,
  );
  await refusedWith(
    observer.client.request("session/resume", { sessionId, cwd, ...OBSERVE }),
    -32602,
    /only session\/load observes/,
  );
  await observer.client.notify("session/cancel", { sessionId });
  assert.equal(await owner.client.prompt(sessionId, "first"), "end_turn");
  await observer.client.waitFor(() => agentText(observer.client, sessionId) === "a");
  await observer.client.request("session/close", { sessionId });
  await refusedWith(
    observer.client.request("session/prompt", { sessionId, prompt: text }),
    -32002,
    /^Resource not found/,
  );
  const seen = observer.client.updates(sessionId).length;
  assert.equal(await owner.client.prompt(sessionId, "second"), "end_turn");
  assert.equal(agentText(owner.client, sessionId), "a|b");
  // Detached: the owner's second turn went to the owner only, and nothing told it it was dropped.
  await observer.client.request("session/list", {});
  assert.equal(observer.client.updates(sessionId).length, seen);
  assert.ok(!observer.client.frames.some((frame) => frame.method === DETACHED));
  assert.deepEqual([...owner.client.problems, ...observer.client.problems], []);
});

Deno.test("observers are dropped, and told, when the owner closes the session or disconnects", async () => {
  await using workspaces = new TempDirs("acp-harness-observers-");
  const cwd = await workspaces.make();
  await using server = serve([]);
  const owner = await server.connect();
  const closedOne = await owner.client.newSession(cwd);
  const leftOne = await owner.client.newSession(cwd);
  const observer = await server.connect();
  for (const sessionId of [closedOne, leftOne]) {
    await observer.client.request("session/load", { sessionId, cwd, mcpServers: [], ...OBSERVE });
  }
  const detached = (sessionId: string) =>
    observer.client.frames.find((frame) =>
      frame.method === DETACHED && (frame.params as { sessionId: string }).sessionId === sessionId
    )?.params as { reason: string; message: string } | undefined;
  await owner.client.request("session/close", { sessionId: closedOne });
  await observer.client.waitFor(() => detached(closedOne) !== undefined);
  assert.equal(detached(closedOne)?.reason, "closed");
  assert.match(detached(closedOne)?.message ?? "", /closed by the connection that owns it/);
  await owner.close();
  await observer.client.waitFor(() => detached(leftOne) !== undefined);
  assert.equal(detached(leftOne)?.reason, "closed");
  // The session is the observer's to own now.
  await observer.client.request("session/load", { sessionId: leftOne, cwd, mcpServers: [] });
  await refusedWith(
    observer.client.request("session/load", {
      sessionId: closedOne,
      cwd,
      mcpServers: [],
      ...OBSERVE,
    }),
    -32602,
    /is not open on this server.*load it without observe to own it/,
  );
  assert.deepEqual(observer.client.problems, []);
});

Deno.test("another tenant's session is not found, as an unknown id is; the observer's end leaves the owner be", async () => {
  await using workspaces = new TempDirs("acp-harness-observers-");
  const cwd = await workspaces.make();
  await using server = serve([{ text: "still here" }]);
  const owner = await server.connect("red");
  const sessionId = await owner.client.newSession(cwd);
  const stranger = await server.connect("blue");
  const unknown = await stranger.client.request("session/load", {
    sessionId: crypto.randomUUID(),
    cwd,
    mcpServers: [],
    ...OBSERVE,
  }).catch((error: RpcError) => error);
  const theirs = await stranger.client.request("session/load", {
    sessionId,
    cwd,
    mcpServers: [],
    ...OBSERVE,
  }).catch((error: RpcError) => error);
  assert.ok(unknown instanceof RpcError && theirs instanceof RpcError);
  assert.equal(theirs.code, unknown.code);
  assert.equal(theirs.message.replace(sessionId, "ID"), unknown.message.replace(/"[^"]+"/, '"ID"'));
  const colleague = await server.connect("red");
  await colleague.client.request("session/load", { sessionId, cwd, mcpServers: [], ...OBSERVE });
  await colleague.close();
  assert.equal(await owner.client.prompt(sessionId, "go on"), "end_turn");
  assert.equal(agentText(owner.client, sessionId), "still here");
});

Deno.test("ObserverRegistry: a slow observer is dropped past its backlog; the owner never waits", async () => {
  const registry = new ObserverRegistry<string>();
  let ownerWrites = 0;
  const sink = registry.tap("s1", () => {
    ownerWrites++;
    return Promise.resolve();
  });
  registry.opened("s1", { session: "s", tenant: undefined });
  const told: string[] = [];
  // A client that never reads: its writes never settle.
  const stuck = registry.attach("s1", undefined, {
    sink: () => new Promise<void>(() => {}),
    detached: (reason) => told.push(reason),
  });
  stuck.live(new Set());
  const update = { sessionUpdate: "session_info_update" as const, title: "t" };
  for (let index = 0; index < OBSERVER_BACKLOG + 10; index++) await sink(update);
  assert.equal(ownerWrites, OBSERVER_BACKLOG + 10);
  assert.deepEqual(told, ["behind"]);
  assert.equal(stuck.gone, "behind");
  assert.equal(registry.observersOf("s1"), 0);
  // At most so many observers at once.
  for (let index = 0; index < MAX_OBSERVERS_PER_SESSION; index++) {
    registry.attach("s1", undefined, { sink: () => Promise.resolve(), detached: () => {} });
  }
  assert.throws(
    () => registry.attach("s1", undefined, { sink: () => Promise.resolve(), detached: () => {} }),
    /has 8 observers, the most it may have/,
  );
  registry.closed("s1");
  assert.equal(registry.observersOf("s1"), 0);
});

Deno.test("Observation.live: what the replay showed is not shown again; the rest is, in order", async () => {
  const registry = new ObserverRegistry<string>();
  const sink = registry.tap("s1", () => Promise.resolve());
  registry.opened("s1", { session: "s", tenant: undefined });
  const seen: unknown[] = [];
  const observation = registry.attach("s1", undefined, {
    sink: (update) => {
      seen.push(update);
      return Promise.resolve();
    },
    detached: () => {},
  });
  const text = (messageId: string) => ({
    sessionUpdate: "agent_message_chunk" as const,
    messageId,
    content: { type: "text" as const, text: messageId },
  });
  // Sent while the replay is written: m1 was recorded in time for it, m2 was not.
  await sink(text("m1"));
  await sink({ sessionUpdate: "tool_call_update", toolCallId: "c1", status: "in_progress" });
  await sink(text("m2"));
  assert.deepEqual(seen, []);
  observation.live(new Set(["agent_message_chunk:m1"]));
  await sink(text("m3"));
  assert.deepEqual(seen, [
    { sessionUpdate: "tool_call_update", toolCallId: "c1", status: "in_progress" },
    text("m2"),
    text("m3"),
  ]);
});
