/**
 * Tenants at the HTTP edge, through the transport's handler: a token resolves to its tenant, a
 * connection answers only requests of its own tenant (another tenant's `Acp-Connection-Id` is an
 * unknown one, byte for byte), URL keys are per tenant, each tenant's requests a minute end in
 * `429` with `Retry-After`, and a token removed from the tenants stops working and ends its
 * connections. The WebSocket test runs on a real 127.0.0.1 listener.
 *
 * @module
 */
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { WebSocket as NodeWebSocket } from "ws";
import assert from "node:assert/strict";
import { hashToken, type TenantDefinition, TenantDirectory } from "../../../src/server/tenants.ts";
import { type AcpTestClient, memoryClient, RpcError } from "../../_helpers/acp_client.ts";
import { startHttpServer } from "../../_helpers/http_server.ts";
import { tempDir } from "../../_helpers/temp_dir.ts";
import { type HandlerTestServer, startHandler } from "./_request.ts";

const JSON_HEADERS = { "content-type": "application/json" };

async function tenant(
  name: string,
  tokens: readonly string[],
  limits: TenantDefinition["limits"] = {},
): Promise<TenantDefinition> {
  return {
    name,
    tokens: await Promise.all(tokens.map(async (token) => (await hashToken(token)).slice(7))),
    limits,
  };
}

function directory(...tenants: TenantDefinition[]): TenantDirectory {
  const built = new TenantDirectory();
  built.replace(tenants);
  return built;
}

function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

function rfdClient(http: HandlerTestServer, token: string): AcpTestClient {
  return memoryClient(
    createHttpStream(`${http.url}/acp`, { headers: bearer(token), fetch: http.fetch }),
  );
}

async function closeClient(client: AcpTestClient): Promise<void> {
  await (client as unknown as { close(): Promise<void> }).close().catch(() => {});
}

/** POSTs initialize on `/acp`; returns the connection id. */
async function initialize(http: HandlerTestServer, token: string): Promise<string> {
  const response = await http.fetch(`${http.url}/acp`, {
    method: "POST",
    headers: { ...JSON_HEADERS, ...bearer(token) },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: 1, clientCapabilities: {} },
    }),
  });
  assert.equal(response.status, 200);
  await response.body?.cancel();
  const id = response.headers.get("acp-connection-id");
  assert.ok(id);
  return id;
}

/** Status, content type and body of a response, for comparing two. */
async function described(response: Response): Promise<string> {
  return JSON.stringify([
    response.status,
    response.headers.get("content-type"),
    await response.text(),
  ]);
}

Deno.test("HTTP tenants: another tenant's Acp-Connection-Id is answered as an unknown one", async () => {
  await using cwd = await tempDir("acp-harness-tenants-");
  const tenants = directory(await tenant("ci", ["ci-1"]), await tenant("web", ["web-1"]));
  await using http = startHandler({ tenants });
  const ci = rfdClient(http, "ci-1");
  await ci.initialize();
  const sessionId = await ci.newSession(cwd.path);
  const ciConnection = await initialize(http, "ci-1");
  const unknown = crypto.randomUUID();
  const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "session/list", params: {} });
  const requests: Array<(id: string) => RequestInit> = [
    (id) => ({
      method: "POST",
      headers: { ...JSON_HEADERS, ...bearer("web-1"), "acp-connection-id": id },
      body: list,
    }),
    (id) => ({
      method: "GET",
      headers: { ...bearer("web-1"), accept: "text/event-stream", "acp-connection-id": id },
    }),
    (id) => ({
      method: "GET",
      headers: {
        ...bearer("web-1"),
        accept: "text/event-stream",
        "acp-connection-id": id,
        "acp-session-id": sessionId,
      },
    }),
    (id) => ({ method: "DELETE", headers: { ...bearer("web-1"), "acp-connection-id": id } }),
  ];
  for (const request of requests) {
    const theirs = await described(await http.fetch(`${http.url}/acp`, request(ciConnection)));
    const nobodys = await described(await http.fetch(`${http.url}/acp`, request(unknown)));
    assert.equal(theirs, nobodys);
    assert.match(theirs, /Unknown Acp-Connection-Id/);
  }
  // The connection is untouched, and answers its own tenant (another of its tokens would do).
  const own = await http.fetch(`${http.url}/acp`, {
    method: "POST",
    headers: { ...JSON_HEADERS, ...bearer("ci-1"), "acp-connection-id": ciConnection },
    body: list,
  });
  assert.equal(own.status, 202);
  await own.body?.cancel();
  assert.equal(await ci.prompt(sessionId, "still here"), "end_turn");
  assert.deepEqual(ci.problems, []);
  await closeClient(ci);
  await http.fetch(`${http.url}/acp`, {
    method: "DELETE",
    headers: { ...bearer("ci-1"), "acp-connection-id": ciConnection },
  });
});

Deno.test("HTTP tenants: a URL key is a connection per tenant", async () => {
  await using cwd = await tempDir("acp-harness-tenants-");
  const tenants = directory(await tenant("ci", ["ci-1"]), await tenant("web", ["web-1"]));
  await using http = startHandler({ tenants });
  const post = async (token: string, id: number, method: string, params: unknown) => {
    const response = await http.fetch(`${http.url}/v1/acp/shared`, {
      method: "POST",
      headers: { ...JSON_HEADERS, ...bearer(token) },
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
    });
    assert.equal(response.status, 200);
    return await response.json();
  };
  const init = { protocolVersion: 1, clientCapabilities: {} };
  assert.equal((await post("ci-1", 0, "initialize", init)).result.protocolVersion, 1);
  // The same URL for web is a connection of its own: initialize again is fine there.
  assert.equal((await post("web-1", 0, "initialize", init)).result.protocolVersion, 1);
  const created = await post("ci-1", 1, "session/new", { cwd: cwd.path, mcpServers: [] });
  assert.ok(created.result.sessionId);
  assert.deepEqual((await post("web-1", 1, "session/list", {})).result.sessions, []);
  assert.equal((await post("ci-1", 2, "session/list", {})).result.sessions.length, 1);
  for (const token of ["ci-1", "web-1"]) {
    const closed = await http.fetch(`${http.url}/v1/acp/shared`, {
      method: "DELETE",
      headers: bearer(token),
    });
    assert.equal(closed.status, 204);
  }
});

Deno.test("HTTP tenants: past its requests a minute a tenant gets 429 with Retry-After", async () => {
  let now = 1_000_000;
  const tenants = directory(
    await tenant("ci", ["ci-1"], { requestsPerMinute: 3 }),
    await tenant("web", ["web-1"]),
  );
  await using http = startHandler({ tenants, transportNow: () => now });
  const get = (token: string) =>
    http.fetch(`${http.url}/acp`, {
      method: "GET",
      headers: { ...bearer(token), accept: "text/event-stream", "acp-connection-id": "none" },
    });
  for (let at = 0; at < 3; at++) {
    const response = await get("ci-1");
    assert.equal(response.status, 404);
    await response.body?.cancel();
  }
  const limited = await get("ci-1");
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get("retry-after"), "20");
  assert.equal(limited.headers.get("content-type"), "application/problem+json");
  assert.deepEqual(await limited.json(), {
    type: "about:blank",
    title: "Too many requests",
    status: 429,
    detail: 'Tenant "ci" may send at most 3 requests a minute; retry in 20 s',
  });
  // An upgrade counts too; /health does not; another tenant is not held to it.
  const upgrade = await http.upgrade("/acp", bearer("ci-1"));
  assert.ok(upgrade instanceof Response && upgrade.status === 429);
  assert.equal((await http.fetch(`${http.url}/health`)).status, 200);
  const web = await get("web-1");
  assert.equal(web.status, 404);
  await web.body?.cancel();
  // A request a minute / 3 later goes again.
  now += 20_000;
  const again = await get("ci-1");
  assert.equal(again.status, 404);
  await again.body?.cancel();
  assert.equal((await get("ci-1")).status, 429);
});

Deno.test("HTTP tenants: a token removed stops working, and the connections opened with it end", async () => {
  await using cwd = await tempDir("acp-harness-tenants-");
  const tenants = directory(await tenant("ci", ["ci-old", "ci-kept"]));
  await using http = startHandler({ tenants });
  const viaOld = rfdClient(http, "ci-old");
  await viaOld.initialize();
  const sessionId = await viaOld.newSession(cwd.path);
  const viaKept = rfdClient(http, "ci-kept");
  await viaKept.initialize();
  assert.equal(http.transport.connections, 2);
  tenants.replace([await tenant("ci", ["ci-kept", "ci-new"])]);
  assert.equal(http.transport.closeRevoked((identity) => tenants.holds(identity)), 1);
  await http.waitForLog(/closing a connection whose token was removed/);
  // Its sessions are released once it has closed (not when its closing begins).
  await http.waitForLog(/connection closed/);
  const refused = await http.fetch(`${http.url}/acp`, {
    method: "POST",
    headers: { ...JSON_HEADERS, ...bearer("ci-old") },
    body: "{}",
  });
  assert.equal(refused.status, 401);
  await refused.body?.cancel();
  // The session stays the tenant's: the kept token's connection loads it.
  await viaKept.request("session/load", { sessionId, cwd: cwd.path, mcpServers: [] });
  const viaNew = rfdClient(http, "ci-new");
  await viaNew.initialize();
  assert.deepEqual(
    (await viaNew.request<{ sessions: unknown[] }>("session/list", {})).sessions.length,
    1,
  );
  for (const client of [viaOld, viaKept, viaNew]) await closeClient(client);
});

Deno.test("HTTP tenants: a WebSocket is its token's tenant's, and ends when the token is removed", async () => {
  await using cwd = await tempDir("acp-harness-tenants-");
  const tenants = directory(await tenant("ci", ["ci-1"]), await tenant("web", ["web-1"]));
  await using http = await startHttpServer({ tenants });
  const socket = (token: string) =>
    memoryClient(createWebSocketStream(`${http.url.replace("http", "ws")}/acp`, {
      WebSocket: NodeWebSocket as never,
      headers: bearer(token),
    }));
  const ci = socket("ci-1");
  const web = socket("web-1");
  await ci.initialize();
  await web.initialize();
  const sessionId = await ci.newSession(cwd.path);
  assert.deepEqual((await web.request<{ sessions: unknown[] }>("session/list", {})).sessions, []);
  await assert.rejects(
    web.request("session/load", { sessionId, cwd: cwd.path, mcpServers: [] }),
    (error: unknown) => error instanceof RpcError && error.code === -32002,
  );
  const refused = await fetch(`${http.url}/acp`, {
    headers: { ...bearer("nobody"), upgrade: "websocket", connection: "Upgrade" },
  });
  assert.equal(refused.status, 401);
  await refused.body?.cancel();
  tenants.replace([await tenant("web", ["web-1"])]);
  assert.equal(http.transport.closeRevoked((identity) => tenants.holds(identity)), 1);
  await http.waitForLog(
    /closing a connection whose token was removed \{"connectionId":"[^"]+","tenant":"ci"\}/,
  );
  assert.equal(await web.prompt(await web.newSession(cwd.path), "still here"), "end_turn");
  assert.deepEqual([...ci.problems, ...web.problems], []);
  await closeClient(web);
  await closeClient(ci);
});

/**
 * Tenants whose reload lands between a request's authentication and what comes after it: once
 * `reloadAfterResolve` is set, the next token resolved (against the tenants as they were) is
 * followed at once by the reload it gives, before the request goes on.
 */
class ReloadingTenants extends TenantDirectory {
  reloadAfterResolve: (() => void) | undefined;

  override async resolve(token: string): ReturnType<TenantDirectory["resolve"]> {
    const identity = await super.resolve(token);
    const reload = this.reloadAfterResolve;
    this.reloadAfterResolve = undefined;
    reload?.();
    return identity;
  }
}

/** The edge's `401` for a token of no tenant, described. */
async function unknownTokenRefusal(http: HandlerTestServer): Promise<string> {
  return await described(
    await http.fetch(`${http.url}/acp`, {
      method: "POST",
      headers: { ...JSON_HEADERS, ...bearer("nobody") },
      body: "{}",
    }),
  );
}

Deno.test("HTTP tenants: a token removed between its request's authentication and its connection's opening opens nothing (401)", async () => {
  await using cwd = await tempDir("acp-harness-tenants-");
  const before = [await tenant("ci", ["ci-old", "ci-kept"]), await tenant("web", ["web-1"])];
  const after = [await tenant("ci", ["ci-kept"]), await tenant("web", ["web-1"])];
  const tenants = new ReloadingTenants();
  tenants.replace(before);
  await using http = startHandler({ tenants });
  const reload = (): void => {
    tenants.replace(after);
    http.transport.closeRevoked((identity) => tenants.holds(identity));
  };
  const kept = rfdClient(http, "ci-kept");
  const web = rfdClient(http, "web-1");
  await kept.initialize();
  await web.initialize();
  const refusal = await unknownTokenRefusal(http);
  const opening: Array<() => Promise<Response>> = [
    // /acp: initialize without an Acp-Connection-Id.
    () =>
      http.fetch(`${http.url}/acp`, {
        method: "POST",
        headers: { ...JSON_HEADERS, ...bearer("ci-old") },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 0,
          method: "initialize",
          params: { protocolVersion: 1, clientCapabilities: {} },
        }),
      }),
    // /v1/acp/:id: the first request of a key.
    () =>
      http.fetch(`${http.url}/v1/acp/raced`, {
        method: "POST",
        headers: { ...JSON_HEADERS, ...bearer("ci-old") },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 0,
          method: "initialize",
          params: { protocolVersion: 1, clientCapabilities: {} },
        }),
      }),
  ];
  for (const open of opening) {
    tenants.replace(before);
    tenants.reloadAfterResolve = reload;
    assert.equal(await described(await open()), refusal);
  }
  // A WebSocket upgrade: refused before the handshake, as the edge refuses it.
  tenants.replace(before);
  tenants.reloadAfterResolve = reload;
  const upgrade = await http.upgrade("/acp", bearer("ci-old"));
  if (!(upgrade instanceof Response)) upgrade.reject();
  assert.ok(upgrade instanceof Response, "the upgrade is refused");
  assert.equal(await described(upgrade), refusal);
  assert.equal(http.transport.connections, 2, "only the other tokens' connections are open");
  // The other token of the tenant, and the other tenant, are untouched.
  assert.equal(await kept.prompt(await kept.newSession(cwd.path), "still here"), "end_turn");
  assert.equal(await web.prompt(await web.newSession(cwd.path), "still here"), "end_turn");
  assert.deepEqual([...kept.problems, ...web.problems], []);
  for (const client of [kept, web]) await closeClient(client);
});

Deno.test("HTTP tenants: a request of an open connection authenticated just before its token was removed gets 401", async () => {
  await using cwd = await tempDir("acp-harness-tenants-");
  const before = [await tenant("ci", ["ci-old", "ci-kept"])];
  const after = [await tenant("ci", ["ci-kept"])];
  const tenants = new ReloadingTenants();
  tenants.replace(before);
  await using http = startHandler({ tenants });
  const refusal = await unknownTokenRefusal(http);
  const connection = await initialize(http, "ci-old");
  const post = (id: number, method: string, params: unknown) =>
    http.fetch(`${http.url}/acp`, {
      method: "POST",
      headers: { ...JSON_HEADERS, ...bearer("ci-old"), "acp-connection-id": connection },
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
    });
  tenants.reloadAfterResolve = () => {
    tenants.replace(after);
    http.transport.closeRevoked((identity) => tenants.holds(identity));
  };
  assert.equal(
    await described(await post(1, "session/new", { cwd: cwd.path, mcpServers: [] })),
    refusal,
  );
  // The URL-keyed profile too: a key's connection, then a request raced by the reload.
  tenants.replace(before);
  const keyed = (id: number, method: string, params: unknown) =>
    http.fetch(`${http.url}/v1/acp/mine`, {
      method: "POST",
      headers: { ...JSON_HEADERS, ...bearer("ci-old") },
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
    });
  const opened = await keyed(0, "initialize", { protocolVersion: 1, clientCapabilities: {} });
  assert.equal(opened.status, 200);
  await opened.body?.cancel();
  tenants.reloadAfterResolve = () => {
    tenants.replace(after);
    http.transport.closeRevoked((identity) => tenants.holds(identity));
  };
  assert.equal(
    await described(await keyed(1, "session/new", { cwd: cwd.path, mcpServers: [] })),
    refusal,
  );
});

/** A raw WebSocket of `token` on `/acp`, initialized; `closed` gives its close code. */
async function rawSocket(url: string, token: string): Promise<{ closed: Promise<number> }> {
  const socket = new NodeWebSocket(`${url.replace("http", "ws")}/acp`, { headers: bearer(token) });
  const closed = new Promise<number>((resolve) => socket.on("close", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  const answered = new Promise<unknown>((resolve) =>
    socket.once("message", (data) => resolve(JSON.parse(String(data))))
  );
  socket.send(JSON.stringify({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: 1, clientCapabilities: {} },
  }));
  assert.equal(
    (await answered as { result: { protocolVersion: number } }).result.protocolVersion,
    1,
  );
  return { closed };
}

/** The HTTP status a WebSocket upgrade of `token` is refused with (`101`: not refused). */
async function upgradeStatus(url: string, token: string): Promise<number> {
  const socket = new NodeWebSocket(`${url.replace("http", "ws")}/acp`, { headers: bearer(token) });
  socket.on("error", () => {}); // terminating a refused upgrade reports one
  return await new Promise<number>((resolve) => {
    socket.once("unexpected-response", (_request, response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
      socket.terminate();
    });
    socket.once("open", () => {
      socket.close();
      resolve(101);
    });
  });
}

Deno.test("HTTP tenants over a real socket: a token removed by a reload neither opens a connection nor keeps its SSE stream or WebSocket", async () => {
  await using cwd = await tempDir("acp-harness-tenants-");
  const before = [await tenant("ci", ["ci-old", "ci-kept"]), await tenant("web", ["web-1"])];
  const after = [await tenant("ci", ["ci-kept"]), await tenant("web", ["web-1"])];
  const tenants = new ReloadingTenants();
  tenants.replace(before);
  await using http = await startHttpServer({ tenants });
  const reload = (): number => {
    tenants.replace(after);
    return http.transport.closeRevoked((identity) => tenants.holds(identity));
  };
  const post = (token: string, body: unknown, connection?: string) =>
    fetch(`${http.url}/acp`, {
      method: "POST",
      headers: {
        ...JSON_HEADERS,
        ...bearer(token),
        ...(connection ? { "acp-connection-id": connection } : {}),
      },
      body: JSON.stringify(body),
    });
  const init = {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: 1, clientCapabilities: {} },
  };
  // ci-old: a connection with its SSE stream open, and a WebSocket.
  const opened = await post("ci-old", init);
  assert.equal(opened.status, 200);
  await opened.body?.cancel();
  const connection = opened.headers.get("acp-connection-id")!;
  const stream = await fetch(`${http.url}/acp`, {
    headers: { ...bearer("ci-old"), accept: "text/event-stream", "acp-connection-id": connection },
  });
  assert.equal(stream.status, 200);
  const socket = await rawSocket(http.url, "ci-old");
  // The tenant's other token, and the other tenant, each with a connection.
  const kept = memoryClient(
    createHttpStream(`${http.url}/acp`, { headers: bearer("ci-kept") }),
  );
  const web = memoryClient(createWebSocketStream(`${http.url.replace("http", "ws")}/acp`, {
    WebSocket: NodeWebSocket as never,
    headers: bearer("web-1"),
  }));
  await kept.initialize();
  await web.initialize();
  const keptSession = await kept.newSession(cwd.path);
  const webSession = await web.newSession(cwd.path);

  assert.equal(reload(), 2);
  // The SSE stream ends, the WebSocket closes with the code of a 401.
  const reader = stream.body!.getReader();
  while (!(await reader.read()).done);
  assert.equal(await socket.closed, 4401);
  // Nothing of it goes on: its connection's requests, a new connection, a new WebSocket.
  const unknownToken = await post("nobody", {});
  const refusal = JSON.stringify([unknownToken.status, await unknownToken.text()]);
  const later = await post(
    "ci-old",
    { jsonrpc: "2.0", id: 1, method: "session/list", params: {} },
    connection,
  );
  assert.equal(JSON.stringify([later.status, await later.text()]), refusal);
  const again = await post("ci-old", init);
  assert.equal(JSON.stringify([again.status, await again.text()]), refusal);
  assert.equal(await upgradeStatus(http.url, "ci-old"), 401);
  // A WebSocket upgrade authenticated just before the reload: refused too, over the socket.
  tenants.replace(before);
  tenants.reloadAfterResolve = () => void reload();
  assert.equal(await upgradeStatus(http.url, "ci-old"), 401);
  // The others are untouched.
  assert.equal(await kept.prompt(keptSession, "still here"), "end_turn");
  assert.equal(await web.prompt(webSession, "still here"), "end_turn");
  assert.deepEqual([...kept.problems, ...web.problems], []);
  for (const client of [kept, web]) await closeClient(client);
});
