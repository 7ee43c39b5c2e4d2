/**
 * Several real server processes (Deno, Node and Bun) on one PostgreSQL database: listing across
 * instances, leases naming their holder, takeover after a SIGKILL, migrations raced at start-up,
 * concurrent creates and lists with no lost or doubled event, a client of the HTTP transport
 * moving from one instance to the other, and an observer on the instance that does not run the
 * session (refused, and told why; another tenant's "not found").
 */
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import assert from "node:assert/strict";
import { WebSocket as NodeWebSocket } from "ws";
import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  type AcpTestClient,
  exitWithin,
  listeningUrl,
  memoryClient,
  RpcError,
  spawnAgent,
  type StdioAgent,
} from "../_helpers/acp_client.ts";
import { postgresTest, withTestDatabase } from "../_helpers/postgres.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";
import { nullLogger } from "../../src/log/logger.ts";
import { openPostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { hashToken } from "../../src/server/tenants.ts";

const [DENO_RUNTIME, NODE, BUN] = RUNTIMES as [Runtime, Runtime, Runtime];

/**
 * Seconds of concurrent creates and lists. The issue asks for 30; `deno task test` runs 5 to keep
 * the suite short: set ACP_HARNESS_PG_SOAK_SECONDS=30 for the full run.
 */
const SOAK_SECONDS = Number(Deno.env.get("ACP_HARNESS_PG_SOAK_SECONDS") ?? "5");

type Update = Record<string, unknown>;

/** A test's directory and database; disposing it kills the servers and drops the database. */
interface Setup extends AsyncDisposable {
  readonly cwd: string;
  readonly base: string;
  readonly url: string;
  /** Starts a server process on `runtime` with `--store <url>`. */
  server(runtime: Runtime, args?: readonly string[]): StdioAgent;
}

async function setup(): Promise<Setup> {
  const dir = await tempDir("acp-harness-pg-instances-");
  const database = await withTestDatabase();
  const base = dir.path;
  const cwd = join(base, "ws");
  await mkdir(cwd);
  const started: StdioAgent[] = [];
  return {
    cwd,
    base,
    url: database.url,
    server(runtime, args = []) {
      const agent = spawnAgent(
        runtime.command,
        [
          ...runtime.args,
          "--store",
          database.url,
          "--data-dir",
          join(base, `data-${started.length}`),
          ...args,
        ],
        { cwd, env: { ...Deno.env.toObject(), NO_COLOR: "1" } },
      );
      started.push(agent);
      return agent;
    },
    async [Symbol.asyncDispose]() {
      for (const agent of started) {
        if (agent.child.exitCode === null && agent.child.signalCode === null) {
          agent.child.kill("SIGKILL");
        }
      }
      await Promise.all(started.map((agent) => agent.exited));
      try {
        await database[Symbol.asyncDispose]();
      } finally {
        await dir[Symbol.asyncDispose]();
      }
    },
  };
}

/** Closes stdin and waits for a clean exit (a bound on a hung process, not a wait). */
async function stop(agent: StdioAgent): Promise<void> {
  agent.end();
  const timer = setTimeout(() => agent.child.kill("SIGKILL"), 15_000);
  try {
    const { code } = await agent.exited;
    assert.equal(code, 0, agent.stderr());
  } finally {
    clearTimeout(timer);
  }
}

/** Every session a server lists, page after page. */
async function listAll(agent: StdioAgent): Promise<Update[]> {
  const sessions: Update[] = [];
  let cursor: string | undefined;
  do {
    const page = await agent.client.request<{ sessions: Update[]; nextCursor?: string }>(
      "session/list",
      cursor === undefined ? {} : { cursor },
    );
    sessions.push(...page.sessions);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return sessions;
}

postgresTest(
  "two instances: B lists A's session at once, is refused it while A holds it, takes it over after A's SIGKILL",
  async (_url) => {
    await using f = await setup();
    const { cwd, base } = f;
    await writeFile(join(cwd, "notes.txt"), "remember me\n");
    const before = join(base, "before.json");
    await writeFile(
      before,
      JSON.stringify([
        { text: "First answer." },
        { toolCalls: [{ id: "r1", name: "read_file", arguments: { path: "notes.txt" } }] },
        { delayMs: 60_000, text: "never committed" },
      ]),
    );
    const after = join(base, "after.json");
    await writeFile(
      after,
      JSON.stringify([{ text: "unused" }, { text: "unused" }, {
        text: "Continuing where we stopped.",
      }]),
    );
    const a = f.server(NODE, [
      "--model",
      "scripted",
      "--script",
      before,
      "--mode",
      "auto",
      "--lease-ttl",
      "2",
    ]);
    const b = f.server(DENO_RUNTIME, [
      "--model",
      "scripted",
      "--script",
      after,
      "--lease-ttl",
      "2",
    ]);
    await Promise.all([a.client.initialize(), b.client.initialize()]);
    const sessionId = await a.client.newSession(cwd);
    assert.equal(await a.client.prompt(sessionId, "Remember the notes"), "end_turn");

    // Freshness: B reads the listing from the database, so A's session and title show at once.
    const listed = await b.client.request<{ sessions: Update[] }>("session/list", { cwd });
    assert.deepEqual(listed.sessions.map((s) => [s.sessionId, s.title]), [[
      sessionId,
      "Remember the notes",
    ]]);
    // Ownership: B is refused the session while A holds it, with A's instance named.
    const refused = await b.client.requestRaw("session/load", { sessionId, cwd, mcpServers: [] });
    const error = refused.error as { code: number; message: string };
    assert.equal(error.code, -32602);
    assert.match(
      error.message,
      new RegExp(`open in another acp-harness instance \\("[^"]*:${a.child.pid}:`),
    );

    // A dies mid-turn: its second turn is waiting on a model step 60 s long.
    await using reader = await openPostgresStore({ url: f.url, logger: nullLogger });
    void a.client.prompt(sessionId, "Read them again").catch(() => {});
    await a.client.waitFor((frames) =>
      frames.some((frame) => (frame.params as { update?: Update })?.update?.status === "completed")
    );
    // Appends between commit points are written in the background, so wait until the database
    // holds the tool's result (what A showed its client can be ahead of what it committed).
    await pollUntil(
      async () =>
        (await reader.store.load(sessionId))?.records.some((r) => r.type === "tool_result") ??
          false,
      { what: "the tool result committed" },
    );
    a.child.kill("SIGKILL");
    await a.exited;

    // B takes over once A's lease expires (A's --lease-ttl: no heartbeat for 2 s; the holder's
    // setting decides when its lease runs out): each retry follows the refusal
    // before it, bounded by a deadline.
    const deadline = Date.now() + 20_000;
    let attempts = 0;
    for (;;) {
      attempts++;
      try {
        await b.client.request("session/load", { sessionId, cwd, mcpServers: [] });
        break;
      } catch (failure) {
        if (!(failure instanceof RpcError) || !/open in another/.test(failure.message)) {
          throw failure;
        }
        if (Date.now() > deadline) {
          throw new Error(`still held after ${attempts} loads: ${failure}`);
        }
      }
    }
    const replayed = b.client.updates(sessionId).map(({ update }) => update);
    const texts = replayed.filter((u) => String(u.sessionUpdate).endsWith("message_chunk"))
      .map((u) => [u.sessionUpdate, (u.content as { text: string }).text]);
    assert.deepEqual(texts, [
      ["user_message_chunk", "Remember the notes"],
      ["agent_message_chunk", "First answer."],
      ["user_message_chunk", "Read them again"],
    ]);
    assert.deepEqual(replayed.filter((u) => u.toolCallId === "r1").map((u) => u.status), [
      "pending",
      "completed",
    ]);
    assert.equal(await b.client.prompt(sessionId, "Go on"), "end_turn");
    const last = b.client.updates(sessionId).map(({ update }) => update)
      .filter((u) => u.sessionUpdate === "agent_message_chunk").at(-1);
    assert.equal((last?.content as { text: string }).text, "Continuing where we stopped.");
    assert.deepEqual(b.client.problems, []);
    await stop(b);
    const ends = (await reader.store.load(sessionId))!.records.flatMap((r) =>
      r.type === "turn_end" ? [r.stopReason] : []
    );
    assert.deepEqual(ends, ["end_turn", "interrupted", "end_turn"]);

    // The interrupted turn was closed as crash recovery does: a third instance sees it ended.
    const c = f.server(BUN);
    await c.client.initialize();
    await c.client.request("session/load", { sessionId, cwd, mcpServers: [] });
    const again = c.client.updates(sessionId).map(({ update }) => update)
      .filter((u) => String(u.sessionUpdate).endsWith("message_chunk"))
      .map((u) => (u.content as { text: string }).text);
    assert.deepEqual(again, [
      "Remember the notes",
      "First answer.",
      "Read them again",
      "Go on",
      "Continuing where we stopped.",
    ]);
    await stop(c);
  },
);

postgresTest(
  "five instances started together on a fresh database all migrate and serve",
  async () => {
    await using f = await setup();
    const agents = [NODE, DENO_RUNTIME, BUN, NODE, BUN].map((runtime) => f.server(runtime));
    await Promise.all(agents.map((agent) => agent.client.initialize()));
    const ids = await Promise.all(agents.map((agent) => agent.client.newSession(f.cwd)));
    // A session is written after its session/new answer, and at the latest before its first
    // prompt is admitted: once each has answered a prompt, every instance lists all five.
    await Promise.all(agents.map((agent, i) => agent.client.prompt(ids[i]!, `s${i}`)));
    const listed = await listAll(agents[0]!);
    assert.deepEqual(new Set(listed.map((s) => s.sessionId)), new Set(ids));
    await Promise.all(agents.map(stop));
    for (const agent of agents) assert.doesNotMatch(agent.stderr(), /error/i, agent.stderr());
  },
);

postgresTest(
  `three instances create and list concurrently for ${SOAK_SECONDS} s: no lost or doubled event`,
  async () => {
    await using f = await setup();
    const workers = [NODE, DENO_RUNTIME, BUN].map((runtime) => f.server(runtime));
    await Promise.all(workers.map((agent) => agent.client.initialize()));
    const until = Date.now() + SOAK_SECONDS * 1000;
    const created = await Promise.all(workers.map(async (agent, index) => {
      const ids: string[] = [];
      while (Date.now() < until) {
        const id = await agent.client.newSession(f.cwd);
        ids.push(id);
        assert.equal(await agent.client.prompt(id, `w${index} s${ids.length}`), "end_turn");
        await agent.client.request("session/list", { cwd: f.cwd });
      }
      return ids;
    }));
    await Promise.all(workers.map(stop));
    const all = created.flat();
    assert.ok(all.length >= workers.length, `created ${all.length}`);

    const checker = f.server(NODE);
    await checker.client.initialize();
    const listed = (await listAll(checker)).map((s) => s.sessionId as string);
    assert.equal(listed.length, new Set(listed).size, "no session listed twice");
    assert.deepEqual(new Set(listed), new Set(all), "every session created is listed");
    for (const id of all) {
      await checker.client.request("session/load", { sessionId: id, cwd: f.cwd, mcpServers: [] });
      const chunks = checker.client.updates(id).map(({ update }) => update.sessionUpdate)
        .filter((kind) => String(kind).endsWith("message_chunk"));
      assert.deepEqual(chunks, ["user_message_chunk", "agent_message_chunk"], id);
      await checker.client.request("session/close", { sessionId: id });
    }
    await stop(checker);
  },
);

/** A WebSocket ACP client of a `serve --http` instance. */
function wsClient(url: string): AcpTestClient {
  return memoryClient(createWebSocketStream(`${url.replace("http", "ws")}/acp`, {
    WebSocket: NodeWebSocket as never,
    headers: { authorization: "Bearer pg-token" },
  }));
}

postgresTest(
  "HTTP: two instances on one database; a client moves to the other instance and loads its session",
  async () => {
    await using f = await setup();
    const http = ["--http", "--port", "0", "--token", "pg-token"];
    const a = f.server(NODE, http);
    const b = f.server(BUN, http);
    const [urlA, urlB] = await Promise.all([listeningUrl(a), listeningUrl(b)]);
    const first = wsClient(urlA);
    await first.initialize();
    const sessionId = await first.newSession(f.cwd);
    assert.equal(await first.prompt(sessionId, "hello from A"), "end_turn");

    // Instance A goes away (SIGTERM: it drains and releases its leases); the client reconnects
    // through "the load balancer" to B.
    Deno.kill(a.child.pid as number, "SIGTERM");
    assert.equal(await exitWithin(a, 10_000), 0, a.stderr());
    await (first as unknown as { close(): Promise<void> }).close().catch(() => {});
    const second = wsClient(urlB);
    await second.initialize();
    const listed = await second.request<{ sessions: Update[] }>("session/list", {});
    assert.deepEqual(listed.sessions.map((s) => [s.sessionId, s.title]), [[
      sessionId,
      "hello from A",
    ]]);
    await second.request("session/load", { sessionId, cwd: f.cwd, mcpServers: [] });
    const replayed = second.updates(sessionId).map(({ update }) => update.sessionUpdate);
    assert.deepEqual(replayed.filter((kind) => String(kind).endsWith("message_chunk")), [
      "user_message_chunk",
      "agent_message_chunk",
    ]);
    assert.equal(await second.prompt(sessionId, "hello from B"), "end_turn");
    assert.deepEqual(second.problems, []);
    await (second as unknown as { close(): Promise<void> }).close().catch(() => {});
    Deno.kill(b.child.pid as number, "SIGTERM");
    assert.equal(await exitWithin(b, 10_000), 0, b.stderr());
  },
);

/** A WebSocket ACP client of a `serve --http --tenants` instance, with `token`. */
function tenantClient(url: string, token: string): AcpTestClient {
  return memoryClient(createWebSocketStream(`${url.replace("http", "ws")}/acp`, {
    WebSocket: NodeWebSocket as never,
    headers: { authorization: `Bearer ${token}` },
  }));
}

/** The error a request is answered with, its session id written as `<id>`. */
async function errorOf(acp: AcpTestClient, method: string, params: Update, id: string) {
  const error = await acp.request(method, params).then(
    () => assert.fail(`${method} was not refused`),
    (error: unknown) => error,
  );
  assert.ok(error instanceof RpcError, String(error));
  return { code: error.code, message: error.message.replaceAll(id, "<id>") };
}

postgresTest(
  "HTTP: an observer on the instance that does not run the session is refused and told where to go; nothing is written",
  async () => {
    await using f = await setup();
    const script = join(f.base, "script.json");
    await writeFile(
      script,
      JSON.stringify([
        {
          toolCalls: [{
            id: "w1",
            name: "write_file",
            arguments: { path: "out.txt", content: "z" },
          }],
        },
        { text: "written on A" },
      ]),
    );
    const tenants = join(f.base, "tenants.json");
    const hash = async (token: string) => await hashToken(token);
    await writeFile(
      tenants,
      JSON.stringify({
        tenants: [
          { name: "ci", tokens: [await hash("ci-1"), await hash("ci-2")] },
          { name: "web", tokens: [await hash("web-1")] },
        ],
      }),
    );
    const args = [
      ...["--http", "--port", "0", "--tenants", tenants, "--model", "scripted"],
      ...["--script", script, "--mode", "ask"],
    ];
    const a = f.server(NODE, args);
    const b = f.server(DENO_RUNTIME, args);
    const [urlA, urlB] = await Promise.all([listeningUrl(a), listeningUrl(b)]);
    const owner = tenantClient(urlA, "ci-1");
    const colleague = tenantClient(urlB, "ci-2");
    const stranger = tenantClient(urlB, "web-1");
    const clients = [owner, colleague, stranger];
    try {
      let asked!: () => void;
      let answer!: () => void;
      const askedPromise = new Promise<void>((resolve) => asked = resolve);
      const answered = new Promise<void>((resolve) => answer = resolve);
      owner.handlers.set("session/request_permission", async () => {
        asked();
        await answered;
        return { outcome: { outcome: "selected", optionId: "allow_once" } };
      });
      for (const client of clients) await client.initialize();
      const sessionId = await owner.newSession(f.cwd);
      // A's turn runs, held at its permission request.
      const turn = owner.prompt(sessionId, "write it");
      await askedPromise;
      await using reader = await openPostgresStore({ url: f.url, logger: nullLogger });
      // Appends between commit points are written in the background: wait for the tool call's.
      await pollUntil(
        async () => JSON.stringify((await reader.store.load(sessionId))?.records).includes("w1"),
        { what: "the tool call committed" },
      );
      const stored = JSON.stringify(await reader.store.load(sessionId));
      const observe = {
        sessionId,
        cwd: f.cwd,
        mcpServers: [],
        _meta: { "acp-harness": { observe: true } },
      };

      // The same tenant on B: -32602, saying it runs elsewhere and what to do.
      const refused = await errorOf(colleague, "session/load", observe, sessionId);
      assert.equal(refused.code, -32602);
      assert.match(refused.message, /session <id> is not open on this server/);
      assert.match(refused.message, /owns it on another instance .*observe it there/);
      assert.match(refused.message, /load it without observe to own it/);
      // Another tenant on B: exactly what an unknown id gets, not the cross-instance error.
      const random = crypto.randomUUID();
      assert.deepEqual(
        await errorOf(stranger, "session/load", observe, sessionId),
        await errorOf(stranger, "session/load", { ...observe, sessionId: random }, random),
      );
      assert.equal((await errorOf(stranger, "session/load", observe, sessionId)).code, -32002);
      // Nothing was written to the session, and A still holds it.
      assert.equal(JSON.stringify(await reader.store.load(sessionId)), stored);
      const owned = await errorOf(colleague, "session/load", { ...observe, _meta: {} }, sessionId);
      assert.match(owned.message, /open in another acp-harness instance/);

      // A's turn completes unaffected.
      answer();
      assert.equal(await turn, "end_turn");
      const text = (client: AcpTestClient) =>
        client.updates(sessionId)
          .filter(({ update }) => update.sessionUpdate === "agent_message_chunk")
          .map(({ update }) => (update.content as { text: string }).text).join("|");
      assert.equal(text(owner), "written on A");
      // Closed on A (its lease released), B's colleague loads it: owns it, sees all of it.
      await owner.request("session/close", { sessionId });
      const loaded = await colleague.request<{ _meta?: Update }>("session/load", {
        sessionId,
        cwd: f.cwd,
        mcpServers: [],
      });
      assert.equal((loaded._meta?.["acp-harness"] as Update | undefined)?.observing, undefined);
      assert.equal(text(colleague), "written on A");
      assert.deepEqual(clients.flatMap((client) => client.problems), []);
    } finally {
      for (const client of clients) {
        await (client as unknown as { close(): Promise<void> }).close().catch(() => {});
      }
    }
    Deno.kill(a.child.pid as number, "SIGTERM");
    Deno.kill(b.child.pid as number, "SIGTERM");
    assert.equal(await exitWithin(a, 10_000), 0, a.stderr());
    assert.equal(await exitWithin(b, 10_000), 0, b.stderr());
  },
);

Deno.test("an unreachable PostgreSQL store exits 2 naming the URL without its password", async () => {
  await using dir = await tempDir("acp-harness-pg-unreachable-");
  const url = "postgres://acp:s3cret-pw@127.0.0.1:1/acp";
  const child = spawn(NODE.command, [...NODE.args, "--store", url, "--data-dir", dir.path], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (text: string) => stderr += text);
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000); // a bound on a hung process
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  clearTimeout(timer);
  assert.equal(code, 2, stderr);
  assert.match(stderr, /postgres:\/\/acp:\*\*\*@127\.0\.0\.1:1\/acp/);
  assert.ok(!stderr.includes("s3cret-pw"), stderr);
});
