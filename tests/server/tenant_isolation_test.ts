/**
 * Two tenants on one agent server, on the memory, JSONL and PostgreSQL stores: neither lists,
 * loads, resumes, forks, deletes, closes or prompts the other's sessions (nor those of no
 * tenant), and each such request is answered byte for byte as one naming a random id is. The
 * `session/list` cursor leads to no other tenant's sessions.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createMemoryPair } from "../../mod.ts";
import { nullLogger } from "../../src/log/logger.ts";
import type { ConnectionOptions } from "../../src/server/connection.ts";
import { hashToken, TenantDirectory, type TenantScope } from "../../src/server/tenants.ts";
import { openPostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { PrometheusTelemetry } from "../../src/telemetry/prometheus_telemetry.ts";
import type { AttachmentStore, SessionStore } from "../../src/store/session_store.ts";
import { type AcpTestClient, type Frame, memoryClient } from "../_helpers/acp_client.ts";
import { postgresTest, withTestDatabase } from "../_helpers/postgres.ts";
import { createTestAgentServer, type StartOptions } from "../_helpers/server.ts";
import { tempDir, TempDirs } from "../_helpers/temp_dir.ts";

type Page = { sessions: Array<{ sessionId: string }>; nextCursor?: string };

/** The tenants `ci` (limits as given) and `web`. */
async function twoTenants(limits: Record<string, number> = {}): Promise<TenantDirectory> {
  const tenants = new TenantDirectory();
  tenants.replace([
    { name: "ci", tokens: [(await hashToken("ci-token")).slice(7)], limits },
    { name: "web", tokens: [(await hashToken("web-token")).slice(7)], limits: {} },
  ]);
  return tenants;
}

async function scopeOf(tenants: TenantDirectory, token: string): Promise<TenantScope> {
  const identity = await tenants.resolve(token);
  assert.ok(identity);
  return identity.scope;
}

interface Side {
  readonly client: AcpTestClient;
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

/** A server on `stores` (memory when absent) and a way to connect to it as a tenant or none. */
function serverOn(options: StartOptions) {
  const built = createTestAgentServer(options);
  const { server, logs } = built;
  const waiters = new Set<() => void>();
  built.onLog = () => {
    for (const waiter of [...waiters]) waiter();
  };
  const sides: Side[] = [];
  const connect = async (scope?: TenantScope): Promise<AcpTestClient> => {
    const [serverSide, clientSide] = createMemoryPair();
    const connectionOptions: ConnectionOptions = scope
      ? { tenant: scope.name, tenancy: scope }
      : {};
    const connection = server.connect(serverSide, connectionOptions);
    const client = memoryClient(clientSide);
    sides.push({
      client,
      closed: connection.closed,
      close: () => (client as unknown as { close: () => Promise<void> }).close(),
    });
    await client.initialize();
    return client;
  };
  /** Resolves once the server has logged a line matching `pattern`. */
  const logged = (pattern: RegExp): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => {
        if (!logs.some((line) => pattern.test(line))) return;
        waiters.delete(check);
        resolve();
      };
      waiters.add(check);
      check();
    });
  return {
    connect,
    logged,
    async [Symbol.asyncDispose](): Promise<void> {
      for (const side of sides) {
        await side.close().catch(() => {});
        await side.closed;
      }
      await server.close();
      assert.deepEqual(sides.flatMap((side) => side.client.problems), []);
    },
  };
}

/** A request's error as sent, with `id` written as `<id>`, for comparing answers to two ids. */
async function errorOf(
  client: AcpTestClient,
  method: string,
  params: Record<string, unknown>,
  id: string,
): Promise<string> {
  const frame: Frame = await client.requestRaw(method, params);
  return JSON.stringify(frame.error ?? frame.result).replaceAll(id, "<id>");
}

/** Each way to name a session by id, as `web` would name one of `ci`'s. */
function requestsFor(id: string, cwd: string): Array<[string, Record<string, unknown>]> {
  return [
    ["session/load", { sessionId: id, cwd, mcpServers: [] }],
    ["session/resume", { sessionId: id, cwd, mcpServers: [] }],
    ["session/fork", { sessionId: id, cwd, mcpServers: [] }],
    ["session/prompt", { sessionId: id, prompt: [{ type: "text", text: "hi" }] }],
    ["session/set_mode", { sessionId: id, modeId: "auto" }],
    ["session/delete", { sessionId: id }],
    ["session/close", { sessionId: id }],
  ];
}

async function listed(client: AcpTestClient, cursor?: string): Promise<Page> {
  return await client.request<Page>("session/list", cursor === undefined ? {} : { cursor });
}

async function isolation(options: StartOptions): Promise<void> {
  await using dirs = new TempDirs("acp-harness-tenants-");
  const cwd = await dirs.make();
  const tenants = await twoTenants();
  await using server = serverOn({ ...options, config: { sessionListPageSize: 1 } });
  const ci = await server.connect(await scopeOf(tenants, "ci-token"));
  const web = await server.connect(await scopeOf(tenants, "web-token"));
  const none = await server.connect();
  const [ciOpen, ciClosed] = [await ci.newSession(cwd), await ci.newSession(cwd)];
  assert.equal(await ci.prompt(ciOpen, "hello"), "end_turn");
  await ci.request("session/close", { sessionId: ciClosed });
  const webOwn = await web.newSession(cwd);
  const noTenant = await none.newSession(cwd);

  // Lists: each tenant its own, in pages whose cursors lead to no other tenant's sessions.
  const ciFirst = await listed(ci);
  assert.equal(ciFirst.sessions.length, 1);
  assert.ok(ciFirst.nextCursor);
  const ciSecond = await listed(ci, ciFirst.nextCursor);
  assert.deepEqual(
    [...ciFirst.sessions, ...ciSecond.sessions].map((s) => s.sessionId).sort(),
    [ciOpen, ciClosed].sort(),
  );
  assert.equal(ciSecond.nextCursor, undefined);
  const webPage = await listed(web);
  assert.deepEqual(webPage.sessions.map((s) => s.sessionId), [webOwn]);
  assert.equal(webPage.nextCursor, undefined);
  const webWithCursor = await listed(web, ciFirst.nextCursor);
  assert.ok(webWithCursor.sessions.every((s) => s.sessionId === webOwn));
  assert.equal(webWithCursor.nextCursor, undefined);
  // A connection of no tenant (a server without tenants) sees every session, as before.
  const all: string[] = [];
  for (let page = await listed(none);; page = await listed(none, page.nextCursor)) {
    all.push(...page.sessions.map((s) => s.sessionId));
    if (page.nextCursor === undefined) break;
  }
  assert.deepEqual(all.sort(), [ciOpen, ciClosed, webOwn, noTenant].sort());

  // Every request naming another tenant's session (open, closed) or one of no tenant is
  // answered as one naming an id nobody has.
  for (const foreign of [ciOpen, ciClosed, noTenant]) {
    for (const [method, params] of requestsFor(foreign, cwd)) {
      const random = crypto.randomUUID();
      const [randomParams] = requestsFor(random, cwd).filter(([m]) => m === method);
      const expected = await errorOf(web, method, randomParams![1], random);
      assert.equal(await errorOf(web, method, params, foreign), expected, `${method} ${foreign}`);
    }
  }
  // ... and nothing was touched: ci's sessions are all there, and its open one still works.
  assert.equal(await ci.prompt(ciOpen, "still mine"), "end_turn");
  await ci.request("session/load", { sessionId: ciClosed, cwd, mcpServers: [] });
  assert.deepEqual((await listed(web)).sessions.map((s) => s.sessionId), [webOwn]);

  // A fork is its tenant's.
  const fork = await ci.request<{ sessionId: string }>("session/fork", {
    sessionId: ciOpen,
    cwd,
    mcpServers: [],
  });
  const forkFromWeb = await errorOf(web, "session/load", {
    sessionId: fork.sessionId,
    cwd,
    mcpServers: [],
  }, fork.sessionId);
  assert.match(forkFromWeb, /"code":-32002/);
  await ci.request("session/close", { sessionId: fork.sessionId });
  await ci.request("session/load", { sessionId: fork.sessionId, cwd, mcpServers: [] });
  // Its own delete works.
  assert.deepEqual(await web.request("session/delete", { sessionId: webOwn }), {});
  assert.deepEqual((await listed(web)).sessions, []);
}

Deno.test("tenants (memory): neither sees nor touches the other's sessions; ids leak nothing", async () => {
  await isolation({});
});

Deno.test("tenants (JSONL): neither sees nor touches the other's sessions; ids leak nothing", async () => {
  await using data = await tempDir("acp-harness-tenants-data-");
  await isolation({ dataDir: data.path });
});

postgresTest(
  "tenants (PostgreSQL): neither sees nor touches the other's sessions; ids leak nothing",
  async (url) => {
    await using database = await withTestDatabase(url);
    const pg = await openPostgresStore({
      url: database.url,
      logger: nullLogger,
      leaseTtlMs: 3_000,
    });
    try {
      await isolation({ stores: { store: pg.store, attachments: pg.attachments } });
      // The listing is filtered in SQL: the column holds the tenant.
      const rows = await listedTenants(pg.store, pg.attachments);
      assert.deepEqual(rows, ["ci", "ci", "ci"]);
    } finally {
      await pg.close();
    }
  },
);

/** The tenants of the sessions a store lists for `ci` (through the store's own filter). */
async function listedTenants(
  store: SessionStore,
  _attachments: AttachmentStore,
): Promise<string[]> {
  const page = await store.list({ limit: 50, tenant: "ci" });
  return page.sessions.map((summary) => summary.tenant ?? "none");
}

Deno.test("tenants: a tenant's open sessions are counted across its connections (-32029)", async () => {
  await using dirs = new TempDirs("acp-harness-tenants-");
  const cwd = await dirs.make();
  const tenants = await twoTenants({ sessions: 2 });
  await using server = serverOn({});
  const scope = await scopeOf(tenants, "ci-token");
  const first = await server.connect(scope);
  const second = await server.connect(scope);
  const web = await server.connect(await scopeOf(tenants, "web-token"));
  const one = await first.newSession(cwd);
  await second.newSession(cwd);
  const refused: Frame = await second.requestRaw("session/new", { cwd, mcpServers: [] });
  assert.deepEqual(refused.error, {
    code: -32029,
    message: 'Too many sessions: tenant "ci" may have at most 2 open; close one first',
    data: { limit: "tenantSessions", max: 2, tenant: "ci" },
  });
  // Another tenant is not held to it.
  await web.newSession(cwd);
  await web.newSession(cwd);
  await web.newSession(cwd);
  // Closing one makes room.
  await first.request("session/close", { sessionId: one });
  await second.newSession(cwd);
});

Deno.test("tenants: a tenant's sessions get the lower of the server's and its own budgets", async () => {
  await using dirs = new TempDirs("acp-harness-tenants-");
  const cwd = await dirs.make();
  const tenants = await twoTenants({ maxSteps: 3, maxSessionTokens: 1_000_000 });
  await using server = serverOn({ config: { maxSteps: 20, maxSessionTokens: 500 } });
  const ci = await server.connect(await scopeOf(tenants, "ci-token"));
  const sessionId = await ci.newSession(cwd);
  const answer = await ci.request<{ _meta?: Record<string, { budget?: { limits: unknown } }> }>(
    "session/prompt",
    { sessionId, prompt: [{ type: "text", text: "hi" }] },
  );
  assert.deepEqual(answer._meta?.["acp-harness"]?.budget?.limits, {
    maxSteps: 3,
    maxSessionTokens: 500,
  });
});

Deno.test("tenants: a tenant's prompts running at once are counted across its connections (-32029)", async () => {
  await using dirs = new TempDirs("acp-harness-tenants-");
  const cwd = await dirs.make();
  const tenants = await twoTenants({ prompts: 1 });
  await using server = serverOn({
    config: { model: "scripted" },
    script: [{ text: "slow", delayMs: 60_000 }],
  });
  const scope = await scopeOf(tenants, "ci-token");
  const first = await server.connect(scope);
  const second = await server.connect(scope);
  const slow = await first.newSession(cwd);
  const other = await second.newSession(cwd);
  const running = first.prompt(slow, "take your time");
  // The slow turn holds the tenant's one prompt (it is counted before its turn starts).
  await server.logged(/prompt started/);
  const refused: Frame = await second.requestRaw("session/prompt", {
    sessionId: other,
    prompt: [{ type: "text", text: "me too" }],
  });
  assert.deepEqual(refused.error, {
    code: -32029,
    message: 'Too many prompts: tenant "ci" may have at most 1 running at once',
    data: { limit: "tenantPrompts", max: 1, tenant: "ci" },
  });
  await first.notify("session/cancel", { sessionId: slow });
  assert.equal(await running, "cancelled");
  // The slot is free again: the other connection's prompt runs (each session's script starts
  // with the slow step; it is cancelled once it runs).
  const now = second.prompt(other, "now");
  await server.logged(new RegExp(`prompt started.*${other}`));
  await second.notify("session/cancel", { sessionId: other });
  assert.equal(await now, "cancelled");
});

Deno.test("tenants: the metrics count each tenant's sessions, prompts, tokens and refusals", async () => {
  await using dirs = new TempDirs("acp-harness-tenants-");
  const cwd = await dirs.make();
  const metrics = new PrometheusTelemetry({ defaultMetrics: false });
  const tenants = new TenantDirectory({
    refused: (tenant, limit) => metrics.tenantRefusal(tenant, limit),
  });
  tenants.replace([
    { name: "ci", tokens: [(await hashToken("ci-token")).slice(7)], limits: { sessions: 1 } },
    { name: "web", tokens: [(await hashToken("web-token")).slice(7)], limits: {} },
  ]);
  await using server = serverOn({ telemetry: metrics });
  const ci = await server.connect(await scopeOf(tenants, "ci-token"));
  const web = await server.connect(await scopeOf(tenants, "web-token"));
  const sessionId = await ci.newSession(cwd);
  assert.equal(await ci.prompt(sessionId, "hello"), "end_turn");
  await assert.rejects(ci.newSession(cwd));
  await web.newSession(cwd);
  const text = await metrics.metrics();
  assert.match(text, /^acp_harness_tenant_prompts_total\{tenant="ci",stop_reason="end_turn"\} 1$/m);
  assert.match(text, /^acp_harness_tenant_tokens_total\{tenant="ci",direction="output"\} [1-9]/m);
  assert.match(text, /^acp_harness_tenant_sessions_open\{tenant="ci"\} 1$/m);
  assert.match(text, /^acp_harness_tenant_sessions_open\{tenant="web"\} 1$/m);
  assert.match(text, /^acp_harness_tenant_refusals_total\{tenant="ci",limit="sessions"\} 1$/m);
  // The server-wide series count everyone's, as without tenants.
  assert.match(text, /^acp_harness_sessions_open 2$/m);
  assert.doesNotMatch(text, /tenant="web",stop_reason/);
});

Deno.test("tenants: a session naming another tenant's as its parent stays when that one is deleted", async () => {
  await using dirs = new TempDirs("acp-harness-tenants-");
  const cwd = await dirs.make();
  const tenants = await twoTenants();
  await using server = serverOn({});
  const ci = await server.connect(await scopeOf(tenants, "ci-token"));
  const web = await server.connect(await scopeOf(tenants, "web-token"));
  const parent = await ci.newSession(cwd);
  const ciChild = await ci.newSession(cwd, {
    _meta: { "acp-harness": { parent: { sessionId: parent, toolCallId: "call_1" } } },
  });
  await ci.request("session/close", { sessionId: ciChild });
  // web names ci's session as its parent, and keeps its session open: ci's delete neither fails
  // on it (which would name it) nor removes it.
  const webChild = await web.newSession(cwd, {
    _meta: { "acp-harness": { parent: { sessionId: parent, toolCallId: "call_1" } } },
  });
  assert.deepEqual(await ci.request("session/delete", { sessionId: parent }), {});
  const children = { _meta: { "acp-harness": { children: true } } };
  assert.deepEqual((await ci.request<Page>("session/list", children)).sessions, []);
  assert.deepEqual(
    (await web.request<Page>("session/list", children)).sessions.map((s) => s.sessionId),
    [webChild],
  );
  assert.equal(await web.prompt(webChild, "still here"), "end_turn");
});
