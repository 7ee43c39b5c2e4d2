/**
 * One server, many connections: sessions belong to the connection that opened them, each
 * session's tool set comes from the tool-set factory and its disposer runs however it ends, and
 * every line a connection logs names it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { client, methods } from "@agentclientprotocol/sdk";
import {
  type AgentServer,
  builtinTools,
  createAgentServer,
  createLogger,
  createMemoryPair,
  DEFAULT_SERVER_SETTINGS,
  JsonlSessionStore,
  ModelCatalog,
  NodeHost,
  type SessionToolsInfo,
  type ToolSetFactory,
  VERSION,
} from "../../mod.ts";
import { type AcpTestClient, memoryClient, RpcError } from "../_helpers/acp_client.ts";
import { makeTempDir, removeTempDir } from "../_helpers/temp_dir.ts";

interface Fixture {
  readonly server: AgentServer;
  readonly logs: string[];
  readonly cwd: string;
  /** Sessions the factory made tools for, in order. */
  readonly made: SessionToolsInfo[];
  /** Sessions whose disposer ran, in order. */
  readonly released: string[];
  connect(): { client: AcpTestClient; end: () => Promise<void>; closed: Promise<void> };
  [Symbol.asyncDispose](): Promise<void>;
}

async function fixture(toolsFor?: ToolSetFactory, idleTask?: () => void): Promise<Fixture> {
  const root = await makeTempDir("acp-harness-factory-");
  const cwd = join(root, "work");
  await Deno.mkdir(cwd);
  const host = new NodeHost({});
  const logs: string[] = [];
  const logger = createLogger("debug", (line) => logs.push(line));
  const store = new JsonlSessionStore({ host, dataDir: join(root, "data"), logger });
  const made: SessionToolsInfo[] = [];
  const released: string[] = [];
  const tools = builtinTools();
  const server = createAgentServer({
    catalog: new ModelCatalog(),
    host,
    logger,
    store,
    attachments: store.attachments,
    toolsFor: toolsFor ?? ((info) => {
      made.push(info);
      info.disposer.defer(() => void released.push(info.sessionId));
      return tools;
    }),
    ...(idleTask ? { idleTask } : {}),
  });
  return {
    server,
    logs,
    cwd,
    made,
    released,
    connect() {
      const [serverSide, clientSide] = createMemoryPair();
      const connection = server.connect(serverSide);
      const client = memoryClient(clientSide);
      const end = (client as unknown as { close: () => Promise<void> }).close;
      return { client, end, closed: connection.closed };
    },
    async [Symbol.asyncDispose]() {
      await server.close();
      await removeTempDir(root);
    },
  };
}

async function rejectsWith(promise: Promise<unknown>, code: number): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof RpcError, String(error));
    assert.equal(error.code, code, error.message);
    return true;
  });
}

Deno.test("createAgentServer() serves many connections; a session belongs to its connection", async () => {
  await using f = await fixture();
  const a = f.connect();
  const b = f.connect();
  assert.equal(f.server.connections, 2);
  await a.client.initialize();
  await b.client.initialize();
  const first = await a.client.newSession(f.cwd);
  const second = await b.client.newSession(f.cwd);
  assert.equal(await a.client.prompt(first, "one"), "end_turn");
  // Another connection does not see it.
  await rejectsWith(b.client.prompt(first, "not yours"), -32002);
  await rejectsWith(
    b.client.request("session/load", { sessionId: first, cwd: f.cwd, mcpServers: [] }),
    -32602,
  );
  // The end of a connection releases its sessions only.
  await a.end();
  await a.closed;
  assert.deepEqual(f.released, [first]);
  assert.equal(f.server.connections, 1);
  assert.equal(await b.client.prompt(second, "two"), "end_turn");
  // A session released by its connection's end can be loaded on another.
  await b.client.request("session/load", { sessionId: first, cwd: f.cwd, mcpServers: [] });
  assert.equal(await b.client.prompt(first, "again"), "end_turn");
});

Deno.test("createAgentServer() runs a session's disposer on close, delete, connection end and server close", async () => {
  await using f = await fixture();
  const { client, end, closed } = f.connect();
  await client.initialize();
  const closedOne = await client.newSession(f.cwd);
  const deleted = await client.newSession(f.cwd);
  const ended = await client.newSession(f.cwd);
  assert.deepEqual(f.made.map((info) => [info.sessionId, info.cwd]), [
    [closedOne, f.cwd],
    [deleted, f.cwd],
    [ended, f.cwd],
  ]);
  await client.request("session/close", { sessionId: closedOne });
  assert.deepEqual(f.released, [closedOne]);
  await client.request("session/delete", { sessionId: deleted });
  assert.deepEqual(f.released, [closedOne, deleted]);
  await end();
  await closed;
  assert.deepEqual(f.released, [closedOne, deleted, ended]);

  const other = f.connect();
  await other.client.initialize();
  await other.client.request("session/resume", { sessionId: ended, cwd: f.cwd, mcpServers: [] });
  assert.equal(f.made.at(-1)?.sessionId, ended);
  await f.server.close();
  await other.closed;
  assert.deepEqual(f.released, [closedOne, deleted, ended, ended]);
  assert.throws(() => f.connect(), /Cannot connect: the server is closing/);
});

Deno.test("createAgentServer() releases what a failing tool-set factory registered and fails the request", async () => {
  const released: string[] = [];
  await using f = await fixture(({ sessionId, disposer }) => {
    disposer.defer(() => void released.push(sessionId));
    throw new Error("Cannot start the tool source: broken");
  });
  const { client } = f.connect();
  await client.initialize();
  await rejectsWith(client.newSession(f.cwd), -32603);
  assert.equal(released.length, 1);
});

Deno.test("createAgentServer() tags every line a connection logs with its connection id", async () => {
  await using f = await fixture();
  const a = f.connect();
  const b = f.connect();
  await a.client.initialize();
  await b.client.initialize();
  await a.client.newSession(f.cwd);
  await b.client.newSession(f.cwd);
  const created = f.logs.filter((line) => line.includes("session created"));
  assert.equal(created.length, 2);
  assert.match(created[0]!, /"connectionId":"c1"/);
  assert.match(created[1]!, /"connectionId":"c2"/);
  const initialize = f.logs.filter((line) => line.includes("debug: initialize"));
  assert.ok(initialize.every((line) => /"connectionId":"c\d"/.test(line)));
});

Deno.test("a session open on one connection cannot be deleted from another", async () => {
  await using f = await fixture();
  const one = f.connect();
  const two = f.connect();
  await one.client.initialize();
  await two.client.initialize();
  const sessionId = await one.client.newSession(f.cwd);
  await assert.rejects(
    two.client.request("session/delete", { sessionId }),
    (error: unknown) =>
      error instanceof RpcError && error.code === -32602 &&
      /cannot delete: session .* is open on another connection of this server/.test(error.message),
  );
  // Still there and usable on its own connection.
  assert.equal(await one.client.prompt(sessionId, "still mine"), "end_turn");
  await one.client.request("session/close", { sessionId });
  assert.deepEqual(await two.client.request("session/delete", { sessionId }), {});
  const list = await two.client.request<{ sessions: unknown[] }>("session/list", {});
  assert.deepEqual(list.sessions, []);
  await one.end();
  await two.end();
});

Deno.test("createAgentServer() runs idleTask once, after the session/new that waited for the session side is answered", async () => {
  const events: string[] = [];
  let ran!: () => void;
  const idle = new Promise<void>((resolve) => ran = resolve);
  await using f = await fixture(undefined, () => {
    events.push("idle");
    ran();
  });
  const a = f.connect();
  // Sent together: session/new waits for the session side, which `initialize`'s answer loads.
  const [, sessionId] = await Promise.all([
    a.client.initialize(),
    a.client.newSession(f.cwd).then((id) => {
      events.push("session/new answered");
      return id;
    }),
  ]);
  await idle;
  assert.deepEqual(events, ["session/new answered", "idle"]);
  // Once per server: another connection and more sessions do not run it again.
  const b = f.connect();
  await b.client.initialize();
  await b.client.newSession(f.cwd);
  assert.equal(await a.client.prompt(sessionId, "hello"), "end_turn");
  await b.end();
  await b.closed;
  assert.deepEqual(events, ["session/new answered", "idle"]);
});

Deno.test("createAgentServer(): a failing idleTask is logged and the server keeps serving", async () => {
  let ran!: () => void;
  const idle = new Promise<void>((resolve) => ran = resolve);
  await using f = await fixture(undefined, () => {
    ran();
    throw new Error("idle boom");
  });
  const a = f.connect();
  await a.client.initialize();
  await idle;
  const sessionId = await a.client.newSession(f.cwd);
  assert.equal(await a.client.prompt(sessionId, "still here"), "end_turn");
  assert.ok(
    f.logs.some((line) => line.includes("the idle task failed") && line.includes("idle boom")),
  );
});

Deno.test("createAgentServer({ host }) alone serves a prompt to the ACP SDK's client over a memory pair", async () => {
  const server = createAgentServer({ host: new NodeHost() });
  const cwd = await makeTempDir("acp-harness-defaults-");
  try {
    const [serverSide, clientSide] = createMemoryPair();
    server.connect(serverSide);
    let reply = "";
    const answer = await client({ name: "defaults-test" })
      .onNotification(methods.client.session.update, ({ params }) => {
        const update = params.update;
        if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
          reply += update.content.text;
        }
      })
      .connectWith(clientSide, async (agent) => {
        const init = await agent.request(methods.agent.initialize, { protocolVersion: 1 });
        const { sessionId, configOptions } = await agent.request(methods.agent.session.new, {
          cwd,
          mcpServers: [],
        });
        const { stopReason } = await agent.request(methods.agent.session.prompt, {
          sessionId,
          prompt: [{ type: "text", text: "hello defaults" }],
        });
        const model = configOptions?.find((option) => option.id === "model")?.currentValue;
        return { version: init.agentInfo?.version, model, stopReason };
      });
    // The package's version and the offline default model, which echoes the prompt.
    assert.deepEqual(answer, { version: VERSION, model: "echo", stopReason: "end_turn" });
    assert.equal(reply, "Echo: hello defaults");
    assert.equal(server.connections, 1);
  } finally {
    await server.close();
    await removeTempDir(cwd);
  }
});

Deno.test("createAgentServer() takes partial settings over DEFAULT_SERVER_SETTINGS", async () => {
  const server = createAgentServer({
    host: new NodeHost(),
    settings: { sessionListPageSize: 1 },
  });
  const cwd = await makeTempDir("acp-harness-settings-");
  try {
    const [serverSide, clientSide] = createMemoryPair();
    server.connect(serverSide);
    const listed = await client({ name: "settings-test" }).connectWith(
      clientSide,
      async (agent) => {
        await agent.request(methods.agent.initialize, { protocolVersion: 1 });
        for (let i = 0; i < 2; i++) {
          await agent.request(methods.agent.session.new, { cwd, mcpServers: [] });
        }
        return await agent.request(methods.agent.session.list, {});
      },
    );
    assert.equal(listed.sessions.length, 1, "one session a page");
    assert.equal(typeof listed.nextCursor, "string");
    assert.equal(DEFAULT_SERVER_SETTINGS.sessionListPageSize, 100);
  } finally {
    await server.close();
    await removeTempDir(cwd);
  }
});
