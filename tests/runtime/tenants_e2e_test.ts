/**
 * Tenants on a real `serve --http --tenants FILE` process, on Deno and Bun (the source) and
 * Node.js (the bundle), over real HTTP on 127.0.0.1: token hashes printed by
 * `acp-harness hash-token`, two tenants that cannot see or touch each other's sessions, the
 * session limit, `429` with `Retry-After`, and a SIGHUP reload that adds a token and removes one
 * (its WebSocket closed with 4401; a bad file on reload keeps the tenants); on Node.js on a
 * PostgreSQL store too, and the start-up refusals (exit 2). Signals go by `process.kill`: on Deno
 * a child's `kill()` sent only the first of several signals (the child then counts as killed).
 *
 * @module
 */
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { WebSocket as NodeWebSocket } from "ws";
import {
  type AcpTestClient,
  exitWithin,
  listeningUrl,
  memoryClient,
  RpcError,
  spawnAgent,
} from "../_helpers/acp_client.ts";
import { postgresTest, withTestDatabase } from "../_helpers/postgres.ts";
import { RUNTIMES } from "../_helpers/runtimes.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";

const JSON_HEADERS = { "content-type": "application/json" };

/** `acp-harness hash-token` of `token`, run on the runtime. */
async function hashWith(runtime: (typeof RUNTIMES)[number], token: string): Promise<string> {
  const agent = spawnAgent(runtime.command, [...runtime.args, "hash-token"]);
  await agent.writeRaw(`${token}\n`);
  agent.end();
  assert.equal(await exitWithin(agent, 30_000), 0, agent.stderr());
  const printed = agent.lines.join("\n");
  assert.match(printed, /^sha256:[0-9a-f]{64}$/);
  return printed;
}

function tenantsFile(hashes: Record<string, string>, root: string, ciTokens: string[]): unknown {
  return {
    tenants: [
      {
        name: "ci",
        tokens: ciTokens.map((token) => hashes[token]),
        allowedRoots: [root],
        limits: { sessions: 1 },
      },
      { name: "web", tokens: [hashes["web-1"]], limits: { requestsPerMinute: 600 } },
      { name: "slow", tokens: [hashes["slow-1"]], limits: { requestsPerMinute: 2 } },
    ],
  };
}

function client(url: string, token: string): AcpTestClient {
  return memoryClient(
    createHttpStream(`${url}/acp`, { headers: { authorization: `Bearer ${token}` } }),
  );
}

async function closeClient(acp: AcpTestClient): Promise<void> {
  await (acp as unknown as { close(): Promise<void> }).close().catch(() => {});
}

/** The error of a request, with `id` written as `<id>`. */
async function errorText(acp: AcpTestClient, method: string, params: unknown, id: string) {
  const frame = await acp.requestRaw(method, params);
  return JSON.stringify(frame.error).replaceAll(id, "<id>");
}

/** POSTs initialize with a token; the status. */
async function initializeStatus(url: string, token: string): Promise<number> {
  const response = await fetch(`${url}/acp`, {
    method: "POST",
    headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: 1, clientCapabilities: {} },
    }),
  });
  await response.body?.cancel();
  const id = response.headers.get("acp-connection-id");
  if (id) {
    await (await fetch(`${url}/acp`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}`, "acp-connection-id": id },
    })).body?.cancel();
  }
  return response.status;
}

/** A WebSocket of `token` on `/acp`, initialized; `closed` gives the code it is closed with. */
async function openSocket(url: string, token: string): Promise<{ closed: Promise<number> }> {
  const socket = new NodeWebSocket(`${url.replace("http", "ws")}/acp`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const closed = new Promise<number>((resolve) => socket.on("close", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  const answered = new Promise<string>((resolve) =>
    socket.once("message", (data) => resolve(String(data)))
  );
  socket.send(JSON.stringify({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: 1, clientCapabilities: {} },
  }));
  assert.match(await answered, /"protocolVersion":1/);
  return { closed };
}

/** The scenario of the file's first tests, on `runtime`, with `storeArgs` (none: JSONL). */
async function scenario(
  runtime: (typeof RUNTIMES)[number],
  storeArgs: readonly string[] = [],
): Promise<void> {
  await using dirs = new TempDirs("acp-harness-tenants-e2e-");
  const [data, root, elsewhere] = [await dirs.make(), await dirs.make(), await dirs.make()];
  const hashes: Record<string, string> = {};
  for (const token of ["ci-1", "ci-old", "ci-new", "web-1", "slow-1"]) {
    hashes[token] = await hashWith(runtime, token);
  }
  const file = join(data, "tenants.json");
  await writeFile(file, JSON.stringify(tenantsFile(hashes, root, ["ci-1", "ci-old"])));
  const agent = spawnAgent(runtime.command, [
    ...runtime.args,
    "serve",
    "--http",
    "--port",
    "0",
    "--data-dir",
    data,
    "--tenants",
    file,
    "--log-level",
    "info",
    ...storeArgs,
  ]);
  const clients: AcpTestClient[] = [];
  try {
    const url = await listeningUrl(agent);
    const ci = client(url, "ci-1");
    const web = client(url, "web-1");
    clients.push(ci, web);
    await ci.initialize();
    await web.initialize();
    const mine = await ci.newSession(root);
    assert.equal(await ci.prompt(mine, "hello"), "end_turn");
    // ci's roots: not elsewhere; and at most one open session.
    await assert.rejects(ci.newSession(elsewhere), RpcError);
    await assert.rejects(ci.newSession(root), (error: unknown) => {
      assert.ok(error instanceof RpcError);
      assert.equal(error.code, -32029);
      assert.match(error.message, /tenant "ci" may have at most 1 open/);
      return true;
    });
    // web sees none of it: a list without it, and its id answered as a random one is.
    assert.deepEqual(
      (await web.request<{ sessions: unknown[] }>("session/list", {})).sessions,
      [],
    );
    const random = crypto.randomUUID();
    for (const method of ["session/load", "session/resume"]) {
      assert.equal(
        await errorText(web, method, { sessionId: mine, cwd: root, mcpServers: [] }, mine),
        await errorText(web, method, { sessionId: random, cwd: root, mcpServers: [] }, random),
      );
    }
    assert.equal(
      await errorText(web, "session/prompt", {
        sessionId: mine,
        prompt: [{ type: "text", text: "x" }],
      }, mine),
      await errorText(web, "session/prompt", {
        sessionId: random,
        prompt: [{ type: "text", text: "x" }],
      }, random),
    );
    assert.deepEqual(await web.request("session/delete", { sessionId: mine }), {});
    assert.equal(await ci.prompt(mine, "still mine"), "end_turn");

    // slow: two requests a minute, then 429 with Retry-After in whole seconds.
    const statuses: number[] = [];
    let limited: Response | undefined;
    for (let at = 0; at < 3; at++) {
      const response = await fetch(`${url}/acp`, {
        headers: {
          authorization: "Bearer slow-1",
          accept: "text/event-stream",
          "acp-connection-id": "none",
        },
      });
      statuses.push(response.status);
      if (response.status === 429) limited = response;
      else await response.body?.cancel();
    }
    assert.deepEqual(statuses, [404, 404, 429]);
    assert.match(limited?.headers.get("retry-after") ?? "", /^[1-9]\d*$/);
    assert.equal((await limited?.json()).title, "Too many requests");
    assert.equal((await fetch(`${url}/health`)).status, 200);

    // SIGHUP: ci-new added, ci-old removed (its WebSocket closed with the code of a 401).
    assert.equal(await initializeStatus(url, "ci-old"), 200);
    assert.equal(await initializeStatus(url, "ci-new"), 401);
    const oldSocket = await openSocket(url, "ci-old");
    await writeFile(file, JSON.stringify(tenantsFile(hashes, root, ["ci-1", "ci-new"])));
    process.kill(agent.child.pid!, "SIGHUP");
    await agent.client.waitFor(() => /tenants file reloaded/.test(agent.stderr()), 20_000);
    assert.equal(await oldSocket.closed, 4401);
    assert.equal(await initializeStatus(url, "ci-old"), 401);
    assert.equal(await initializeStatus(url, "ci-new"), 200);
    // A bad file on reload keeps the tenants, and says why.
    await writeFile(file, JSON.stringify({ tenants: [{ name: "ci", tokens: ["plain"] }] }));
    process.kill(agent.child.pid!, "SIGHUP");
    await agent.client.waitFor(() => /tenants file not reloaded/.test(agent.stderr()), 20_000);
    assert.match(agent.stderr(), /tenants\[0\]\.tokens\[0\]: must be \\"sha256:\\"/);
    assert.equal(await initializeStatus(url, "ci-new"), 200);
    assert.equal(await ci.prompt(mine, "after the reloads"), "end_turn");
    // The server's lines for ci's connection carry its name.
    assert.match(agent.stderr(), /session created .*"tenant":"ci"/);
    assert.deepEqual(clients.flatMap((acp) => acp.problems), []);
  } finally {
    for (const acp of clients) await closeClient(acp);
    agent.child.kill("SIGTERM");
    if ((await exitWithin(agent, 10_000)) === null) agent.child.kill("SIGKILL");
  }
}

for (const runtime of RUNTIMES) {
  Deno.test(`serve --http --tenants (${runtime.name}): isolation, limits, 429, SIGHUP reload`, async () => {
    await scenario(runtime);
  });
}

postgresTest(
  "serve --http --tenants (node, PostgreSQL): isolation, limits, 429, SIGHUP reload",
  async (url) => {
    await using database = await withTestDatabase(url);
    await scenario(RUNTIMES.find((runtime) => runtime.name === "node")!, ["--store", database.url]);
  },
);

Deno.test("serve --tenants (node): a bad file, --token with it, or no --http stop the start (exit 2)", async () => {
  const node = RUNTIMES.find((runtime) => runtime.name === "node")!;
  await using dirs = new TempDirs("acp-harness-tenants-e2e-");
  const data = await dirs.make();
  const bad = join(data, "bad.json");
  await writeFile(bad, JSON.stringify({ tenants: [{ name: "Bad Name", tokens: [] }] }));
  const good = join(data, "good.json");
  await writeFile(good, JSON.stringify({ tenants: [] }));
  const cases: Array<[string[], RegExp]> = [
    [
      ["--http", "--tenants", bad],
      /Invalid tenants file ".*bad\.json": tenants\[0\]\.name: must be/,
    ],
    [["--http", "--tenants", join(data, "missing.json")], /Cannot read the tenants file/],
    [["--http", "--tenants", good, "--token", "t"], /"--tenants" replaces "--token"/],
    [["--tenants", good], /"--tenants" applies only to "acp-harness serve --http"/],
  ];
  for (const [args, pattern] of cases) {
    const agent = spawnAgent(node.command, [
      ...node.args,
      "serve",
      "--port",
      "0",
      "--data-dir",
      data,
      ...args,
    ]);
    assert.equal(await exitWithin(agent, 30_000), 2, agent.stderr());
    assert.match(agent.stderr(), pattern);
  }
});
