/**
 * The HTTP transport in-process: the RFD profile driven by the ACP SDK's own HTTP and WebSocket
 * clients, raw `fetch` for every status, the security checks, connection isolation, the
 * workspace allow-list and each limit. Requests go straight to the transport's handler
 * (`_request.ts`); the WebSocket tests need a listener and run on a real 127.0.0.1 socket.
 *
 * @module
 */
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { WebSocket as NodeWebSocket } from "ws";
import { type AcpTestClient, memoryClient, RpcError } from "../../_helpers/acp_client.ts";
import { startHttpServer } from "../../_helpers/http_server.ts";
import { tempDir } from "../../_helpers/temp_dir.ts";
import { type HandlerTestServer, startHandler } from "./_request.ts";

const JSON_HEADERS = { "content-type": "application/json" };

function initializeBody(id: number | string = 0): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "initialize",
    params: { protocolVersion: 1, clientCapabilities: {} },
  });
}

/** Where an SDK HTTP client sends its requests: a listener's URL, or a handler. */
type HttpTarget = string | Pick<HandlerTestServer, "url" | "fetch">;

/** An SDK HTTP client as a test client; `close()` ends the stream (DELETE). */
function httpClient(target: HttpTarget, headers: Record<string, string> = {}): AcpTestClient {
  if (typeof target === "string") {
    return memoryClient(createHttpStream(`${target}/acp`, { headers }));
  }
  return memoryClient(createHttpStream(`${target.url}/acp`, { headers, fetch: target.fetch }));
}

async function closeClient(client: AcpTestClient): Promise<void> {
  await (client as unknown as { close(): Promise<void> }).close().catch(() => {});
}

/** POSTs initialize raw; returns the connection id. */
async function rawInitialize(
  http: Pick<HandlerTestServer, "url" | "fetch">,
  headers: Record<string, string> = {},
): Promise<string> {
  const response = await http.fetch(`${http.url}/acp`, {
    method: "POST",
    headers: { ...JSON_HEADERS, ...headers },
    body: initializeBody(),
  });
  assert.equal(response.status, 200);
  const body = await response.json();
  assert.equal(body.result.protocolVersion, 1);
  const id = response.headers.get("acp-connection-id");
  assert(id);
  return id;
}

Deno.test("SDK HTTP client: initialize, new session, streamed prompt, load after reconnect", async () => {
  await using cwd = await tempDir("acp-harness-http-");
  await using http = startHandler();
  const first = httpClient(http);
  const init = await first.initialize();
  assert.equal((init.agentCapabilities as { loadSession: boolean }).loadSession, true);
  const sessionId = await first.newSession(cwd.path);
  assert.equal(await first.prompt(sessionId, "hello over http"), "end_turn");
  const text = first.updates(sessionId)
    .filter(({ update }) => update.sessionUpdate === "agent_message_chunk")
    .map(({ update }) => (update.content as { text: string }).text).join("");
  assert.match(text, /hello over http/);
  assert.deepEqual(first.problems, []);
  await closeClient(first);
  await http.waitForLog(/connection closed/);

  const second = httpClient(http);
  await second.initialize();
  await second.request("session/load", { sessionId, cwd: cwd.path, mcpServers: [] });
  // The RFD profile answers `session/load` on the connection stream and replays on the session
  // stream: the two are not ordered with each other.
  await second.waitForUpdate(sessionId, "agent_message_chunk");
  const replayed = second.updates(sessionId).map(({ update }) => update.sessionUpdate);
  assert(replayed.includes("user_message_chunk"), `replayed: ${replayed}`);
  assert(replayed.includes("agent_message_chunk"));
  assert.equal(await second.prompt(sessionId, "again"), "end_turn");
  assert.deepEqual(second.problems, []);
  await closeClient(second);
});

Deno.test("SDK HTTP client: a permission request is answered and a turn is cancelled", async () => {
  await using cwd = await tempDir("acp-harness-http-");
  await using http = startHandler({
    config: { model: "scripted", mode: "ask" },
    script: [
      { toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "a.txt", content: "x" } }] },
      { text: "written" },
      { text: "slow", delayMs: 60_000 },
    ],
  });
  const client = httpClient(http);
  client.handlers.set("session/request_permission", () => ({
    outcome: { outcome: "selected", optionId: "allow_once" },
  }));
  await client.initialize();
  const sessionId = await client.newSession(cwd.path);
  assert.equal(await client.prompt(sessionId, "write it"), "end_turn");
  assert(existsSync(join(cwd.path, "a.txt")));
  assert(client.frames.some((frame) => frame.method === "session/request_permission"));

  // A new session's first prompt announces its title once admitted: then cancel it.
  const other = await client.newSession(cwd.path);
  const slow = client.prompt(other, "take your time");
  await client.waitForUpdate(other, "session_info_update");
  await client.notify("session/cancel", { sessionId: other });
  assert.equal(await slow, "cancelled");
  assert.deepEqual(client.problems, []);
  await closeClient(client);
});

Deno.test("SDK WebSocket client: initialize, new session, prompt, permission", async () => {
  await using cwd = await tempDir("acp-harness-ws-");
  await using http = await startHttpServer({
    token: "tok",
    config: { model: "scripted", mode: "ask" },
    script: [
      { toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "b.txt", content: "y" } }] },
      { text: "done over ws" },
    ],
  });
  const client = memoryClient(createWebSocketStream(`${http.url.replace("http", "ws")}/acp`, {
    WebSocket: NodeWebSocket as never,
    headers: { authorization: "Bearer tok" },
  }));
  client.handlers.set("session/request_permission", () => ({
    outcome: { outcome: "selected", optionId: "allow_once" },
  }));
  await client.initialize();
  const sessionId = await client.newSession(cwd.path);
  assert.equal(await client.prompt(sessionId, "write over ws"), "end_turn");
  assert(existsSync(join(cwd.path, "b.txt")));
  assert.deepEqual(client.problems, []);
  await closeClient(client);
  await http.waitForLog(/connection closed/);
});

Deno.test("a dropped WebSocket cancels its running turn; the session loads on a new connection", async () => {
  await using cwd = await tempDir("acp-harness-ws-");
  await using http = await startHttpServer({
    config: { model: "scripted" },
    script: [{ text: "slow", delayMs: 60_000 }],
  });
  const sockets: NodeWebSocket[] = [];
  class Tracked extends NodeWebSocket {
    constructor(...args: ConstructorParameters<typeof NodeWebSocket>) {
      super(...args);
      sockets.push(this);
    }
  }
  const first = memoryClient(createWebSocketStream(`${http.url.replace("http", "ws")}/acp`, {
    WebSocket: Tracked as never,
  }));
  await first.initialize();
  const sessionId = await first.newSession(cwd.path);
  // The vanished client never learns the answer: its prompt is left pending.
  void first.prompt(sessionId, "go").catch(() => {});
  await first.waitForUpdate(sessionId, "session_info_update");
  sockets[0]!.terminate(); // no close frame: the client just vanishes
  await http.waitForLog(/prompt ended .*"stopReason":"cancelled"/);
  await http.waitForLog(/connection closed/);

  const second = httpClient(http.url);
  await second.initialize();
  await second.request("session/load", { sessionId, cwd: cwd.path, mcpServers: [] });
  // The cancelled turn left no answer, so the script would start over: go on with echo.
  await second.request("session/set_config_option", {
    sessionId,
    configId: "model",
    value: "echo",
  });
  assert.equal(await second.prompt(sessionId, "again"), "end_turn");
  await closeClient(second);
});

Deno.test("RFD profile: every status code", async () => {
  await using http = startHandler({ limits: { maxBodyBytes: 4096 } });
  const url = `${http.url}/acp`;
  const post = (body: string, headers: Record<string, string> = JSON_HEADERS) =>
    http.fetch(url, { method: "POST", headers, body });
  const status = async (response: Promise<Response>): Promise<number> => {
    const settled = await response;
    await settled.body?.cancel();
    return settled.status;
  };
  assert.equal(await status(post(initializeBody(), { "content-type": "text/plain" })), 415);
  assert.equal(await status(post("{not json")), 400);
  assert.equal(await status(post("[]")), 400);
  assert.equal(await status(post('"text"')), 400);
  assert.equal(await status(post("x".repeat(5000))), 413);
  // An initialize whose id is neither a string nor a number (the SDK answered 500), with or
  // without an empty Acp-Connection-Id (which opens a connection as none does).
  for (const badId of ["[]", "{}", "true"]) {
    const body =
      `{"jsonrpc":"2.0","id":${badId},"method":"initialize","params":{"protocolVersion":1}}`;
    for (const headers of [JSON_HEADERS, { ...JSON_HEADERS, "acp-connection-id": "" }]) {
      const refused = await post(body, headers);
      assert.equal(refused.status, 400, badId);
      assert.deepEqual(await refused.json(), {
        jsonrpc: "2.0",
        id: null,
        error: {
          code: -32600,
          message: "Invalid request: a request id must be a string or a number",
        },
      });
    }
  }
  const newSession = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "session/new",
    params: { cwd: "/", mcpServers: [] },
  });
  assert.equal(await status(post(newSession)), 400); // no Acp-Connection-Id
  assert.equal(
    await status(post(newSession, { ...JSON_HEADERS, "acp-connection-id": "nope" })),
    404,
  );
  const id = await rawInitialize(http);
  assert.equal(
    await status(post(initializeBody(1), { ...JSON_HEADERS, "acp-connection-id": id })),
    400,
  );
  assert.equal(await status(post(newSession, { ...JSON_HEADERS, "acp-connection-id": id })), 202);
  const prompt = JSON.stringify({
    jsonrpc: "2.0",
    id: 2,
    method: "session/prompt",
    params: { sessionId: "s", prompt: [] },
  });
  assert.equal(await status(post(prompt, { ...JSON_HEADERS, "acp-connection-id": id })), 400);
  assert.equal(await status(http.fetch(url, { headers: { "acp-connection-id": id } })), 406);
  const sse = { accept: "text/event-stream" };
  assert.equal(await status(http.fetch(url, { headers: sse })), 400);
  assert.equal(
    await status(http.fetch(url, { headers: { ...sse, "acp-connection-id": "x" } })),
    404,
  );
  const stream = await http.fetch(url, { headers: { ...sse, "acp-connection-id": id } });
  assert.equal(stream.status, 200);
  assert.equal(stream.headers.get("content-type"), "text/event-stream");
  assert.equal(
    await status(http.fetch(url, { headers: { ...sse, "acp-connection-id": id } })),
    409,
  );
  assert.equal(await status(http.fetch(url, { method: "PUT" })), 405);
  assert.equal(await status(http.fetch(`${http.url}/elsewhere`)), 404);
  assert.equal(await status(http.fetch(url, { method: "DELETE" })), 400);
  assert.equal(
    await status(http.fetch(url, { method: "DELETE", headers: { "acp-connection-id": id } })),
    202,
  );
  await stream.body?.cancel();
  assert.equal(
    await status(http.fetch(url, { method: "DELETE", headers: { "acp-connection-id": id } })),
    404,
  );
  assert.equal(await status(http.fetch(`${http.url}/health`)), 200);
});

Deno.test("a message nested thousands deep gets its error and the connection goes on", async () => {
  await using cwd = await tempDir("acp-harness-http-");
  await using http = startHandler();
  const id = await rawInitialize(http);
  const headers = { ...JSON_HEADERS, "acp-connection-id": id };
  const events = await http.fetch(`${http.url}/acp`, {
    headers: { accept: "text/event-stream", "acp-connection-id": id },
  });
  const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
  const deep = `${'{"a":'.repeat(5000)}1${"}".repeat(5000)}`;
  const post = (body: string) =>
    http.fetch(`${http.url}/acp`, { method: "POST", headers, body }).then(async (response) => {
      await response.body?.cancel();
      return response.status;
    });
  assert.equal(await post(deep), 202);
  assert.equal(
    await post(JSON.stringify({
      jsonrpc: "2.0",
      id: 5,
      method: "session/new",
      params: { cwd: cwd.path, mcpServers: [] },
    })),
    202,
  );
  let text = "";
  while (!text.includes('"id":5')) text += (await reader.read()).value ?? "";
  assert.match(text, /"omitted":"nested deeper than 64 levels"/);
  assert.match(text, /"id":5,"result":\{"sessionId"/);
  await reader.cancel();
});

Deno.test("security: bearer token, Origin and Host", async () => {
  await using http = startHandler({
    token: "s3cret-token",
    allowedOrigins: ["https://ide.example"],
  });
  const init = (headers: Record<string, string>) =>
    http.fetch(`${http.url}/acp`, {
      method: "POST",
      headers: { ...JSON_HEADERS, ...headers },
      body: initializeBody(),
    });
  for (
    const [headers, expected] of [
      [{}, 401],
      [{ authorization: "Bearer wrong" }, 401],
      [{ authorization: "Basic czNjcmV0LXRva2Vu" }, 401],
      [{ authorization: "Bearer s3cret-token", origin: "https://evil.example" }, 403],
    ] as const
  ) {
    const response = await init(headers);
    assert.equal(response.status, expected, JSON.stringify(headers));
    assert.equal(response.headers.get("content-type"), "application/problem+json");
    await response.body?.cancel();
  }
  const allowed = await init({
    authorization: "Bearer s3cret-token",
    origin: "https://ide.example",
  });
  assert.equal(allowed.status, 200);
  assert.equal(allowed.headers.get("access-control-allow-origin"), "https://ide.example");
  await allowed.body?.cancel();
  // A DNS-rebound name in Host is refused on loopback.
  const rebound = await http.fetch(`${http.url}/acp`, {
    method: "POST",
    headers: { ...JSON_HEADERS, host: "evil.example", authorization: "Bearer s3cret-token" },
    body: "{}",
  });
  assert.equal(rebound.status, 403);
  await rebound.body?.cancel();
  // The health check needs no token.
  const health = await http.fetch(`${http.url}/health`);
  assert.equal(await health.text(), "ok");
  // A WebSocket upgrade without the token is refused before any ACP.
  const refused = await http.upgrade("/acp");
  assert(refused instanceof Response);
  assert.equal(refused.status, 401);
  await refused.body?.cancel();
  // The token never reaches the log.
  assert(!http.logs.some((line) => line.includes("s3cret-token")));
});

Deno.test("isolation: a connection cannot prompt, cancel or close another's session", async () => {
  await using cwd = await tempDir("acp-harness-http-");
  await using http = startHandler({
    config: { model: "scripted" },
    script: [{ text: "slow", delayMs: 60_000 }],
  });
  const a = httpClient(http);
  const b = httpClient(http);
  await a.initialize();
  await b.initialize();
  const sessionId = await a.newSession(cwd.path);
  const running = a.prompt(sessionId, "go");
  await a.waitForUpdate(sessionId, "session_info_update");
  await assert.rejects(
    b.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hijack" }] }),
    (error: unknown) => error instanceof RpcError && error.code === -32002,
  );
  await b.notify("session/cancel", { sessionId });
  await b.request("session/close", { sessionId });
  // A's turn is still running: only A can end it.
  assert.equal(http.server.connections, 2);
  await a.notify("session/cancel", { sessionId });
  assert.equal(await running, "cancelled");
  await closeClient(a);
  await closeClient(b);
});

Deno.test("allow-list: cwd outside the workspace roots gets -32602, list shows only inside", async () => {
  await using root = await tempDir("acp-harness-roots-");
  await using outside = await tempDir("acp-harness-outside-");
  const inside = join(root.path, "project");
  await mkdir(inside);
  await using http = startHandler({ allowedRoots: [root.path] });
  const client = httpClient(http);
  await client.initialize();
  await assert.rejects(
    client.newSession(outside.path),
    (error: unknown) =>
      error instanceof RpcError && error.code === -32602 && /cwd/.test(error.message),
  );
  const sessionId = await client.newSession(inside);
  const listed = await client.request<{ sessions: Array<{ sessionId: string }> }>(
    "session/list",
    {},
  );
  assert.deepEqual(listed.sessions.map((session) => session.sessionId), [sessionId]);
  await closeClient(client);
});

Deno.test("limits: connections, sessions per connection", async () => {
  await using cwd = await tempDir("acp-harness-http-");
  await using http = startHandler({
    limits: { maxConnections: 2, maxSessionsPerConnection: 2 },
  });
  const a = httpClient(http);
  await a.initialize();
  await a.newSession(cwd.path);
  await a.newSession(cwd.path);
  await assert.rejects(
    a.newSession(cwd.path),
    (error: unknown) => error instanceof RpcError && error.code === -32029,
  );
  await rawInitialize(http);
  const third = await http.fetch(`${http.url}/acp`, {
    method: "POST",
    headers: JSON_HEADERS,
    body: initializeBody(),
  });
  assert.equal(third.status, 503);
  assert.equal(third.headers.get("retry-after"), "1");
  await third.body?.cancel();
  // An empty Acp-Connection-Id opens a connection too, so it counts against the limit.
  const emptyId = await http.fetch(`${http.url}/acp`, {
    method: "POST",
    headers: { ...JSON_HEADERS, "acp-connection-id": "" },
    body: initializeBody(),
  });
  assert.equal(emptyId.status, 503);
  await emptyId.body?.cancel();
  assert.equal(http.transport.connections, 2);
  await closeClient(a);
});

Deno.test("limits: an idle connection is closed", async () => {
  await using http = startHandler({ limits: { idleTimeoutMs: 200 } });
  await rawInitialize(http);
  await http.waitForLog(/closing idle connection/);
  await http.waitForLog(/connection closed/);
  assert.equal(http.transport.connections, 0);
});

Deno.test("limits: a stalled reader's connection is closed", async () => {
  await using cwd = await tempDir("acp-harness-http-");
  await using http = startHandler({
    limits: { maxBufferedBytes: 2048, stallTimeoutMs: 200 },
  });
  // A client that never opens the session stream: the echo turn's output fills the buffer.
  const id = await rawInitialize(http);
  const headers = { ...JSON_HEADERS, "acp-connection-id": id };
  const events = await http.fetch(`${http.url}/acp`, {
    headers: { accept: "text/event-stream", "acp-connection-id": id },
  });
  const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
  await http.fetch(`${http.url}/acp`, {
    method: "POST",
    headers,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "session/new",
      params: { cwd: cwd.path, mcpServers: [] },
    }),
  }).then((response) => response.body?.cancel());
  let text = "";
  while (!text.includes('"sessionId"')) text += (await reader.read()).value ?? "";
  const sessionId = /"sessionId":"([^"]+)"/.exec(text)![1]!;
  for (let index = 0; index < 3; index++) {
    await http.fetch(`${http.url}/acp`, {
      method: "POST",
      headers: { ...headers, "acp-session-id": sessionId },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 10 + index,
        method: "session/prompt",
        params: { sessionId, prompt: [{ type: "text", text: "x".repeat(3000) }] },
      }),
    }).then((response) => response.body?.cancel()).catch(() => {});
  }
  await http.waitForLog(/connection closed/);
  assert.equal(http.transport.connections, 0);
  // The server ended the stream (or dropped the socket).
  try {
    while (!(await reader.read()).done);
  } catch {
    // dropped
  }
});

Deno.test("100 concurrent connections each run a session", async () => {
  await using cwd = await tempDir("acp-harness-http-");
  await using http = startHandler();
  const clients = Array.from({ length: 100 }, () => httpClient(http));
  const reasons = await Promise.all(clients.map(async (client, index) => {
    await client.initialize();
    const sessionId = await client.newSession(cwd.path);
    return await client.prompt(sessionId, `client ${index}`);
  }));
  assert.deepEqual(new Set(reasons), new Set(["end_turn"]));
  assert.equal(http.transport.connections, 100);
  for (const client of clients) assert.deepEqual(client.problems, []);
  await Promise.all(clients.map(closeClient));
});
