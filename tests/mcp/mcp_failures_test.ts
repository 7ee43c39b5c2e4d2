import assert from "node:assert/strict";
import process from "node:process";
import { RpcError } from "../_helpers/acp_client.ts";
import { processesWithMarker } from "../_helpers/mcp_servers.ts";
import type { MemoryServer } from "../_helpers/server.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";
import { contentText, fakeServer, lastToolUpdate, startMcpServer } from "./_session_helpers.ts";

/** Asserts that `promise` rejects with JSON-RPC `code` and a message matching every pattern. */
async function rejectsWith(
  promise: Promise<unknown>,
  code: number,
  ...patterns: RegExp[]
): Promise<RpcError> {
  let caught: RpcError | undefined;
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof RpcError, String(error));
    assert.equal(error.code, code, error.message);
    for (const pattern of patterns) assert.match(error.message, pattern);
    caught = error;
    return true;
  });
  return caught!;
}

/** The ids of the sessions `session/list` reports. */
async function listed(server: MemoryServer): Promise<string[]> {
  const page = await server.client.request<{ sessions: Array<{ sessionId: string }> }>(
    "session/list",
    {},
  );
  return page.sessions.map((session) => session.sessionId);
}

Deno.test("invalid MCP declarations are refused with -32602 before anything starts", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const marker = crypto.randomUUID();
  await using running = await startMcpServer({ markers: [marker] });
  const { server } = running;
  const valid = fakeServer("good", [`--marker=${marker}`]);
  const cases: Array<[string, unknown[], RegExp]> = [
    [
      "relative command",
      [valid, { ...fakeServer("bad"), command: "bin/node" }],
      /mcpServers\[1\]\.command/,
    ],
    [
      "env name with =",
      [valid, { ...fakeServer("bad"), env: [{ name: "A=B", value: "x" }] }],
      /mcpServers\[1\]\.env\[0\]\.name/,
    ],
    [
      "bad url",
      [valid, { type: "http", name: "remote", url: "not a url", headers: [] }],
      /mcpServers\[1\]\.url/,
    ],
    [
      "duplicate names",
      [valid, fakeServer("good")],
      /mcpServers\[1\]\.name/,
    ],
    [
      "duplicate headers, case-insensitively",
      [valid, {
        type: "http",
        name: "remote",
        url: "http://127.0.0.1:9/mcp",
        headers: [{ name: "X-Token", value: "a" }, { name: "x-token", value: "b" }],
      }],
      /mcpServers\[1\]\.headers\[1\]/,
    ],
  ];
  for (const [label, mcpServers, where] of cases) {
    const error = await rejectsWith(
      server.client.request("session/new", { cwd, mcpServers }),
      -32602,
      where,
    );
    assert.ok(!error.message.includes(marker), `${label}: ${error.message}`);
  }
  assert.deepEqual(await processesWithMarker(marker), [], "the valid sibling was not started");
  assert.deepEqual(await listed(server), []);
  assert.ok(
    !server.logs.some((line) => /MCP server connected/.test(line)),
    "no server was connected",
  );
  assert.deepEqual(server.client.problems, []);
});

Deno.test("with mcpStrict, an MCP server that exits at start fails session/new with its exit code and stderr", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const marker = crypto.randomUUID();
  await using running = await startMcpServer({ markers: [marker], config: { mcpStrict: true } });
  const { server } = running;
  const error = await rejectsWith(
    server.client.request("session/new", {
      cwd,
      mcpServers: [fakeServer("dying", ["--exit-at-start", `--marker=${marker}`])],
    }),
    -32603,
    /MCP server "dying" did not start/,
    /exited with code 3/,
    /exiting at start as asked \(--exit-at-start\)/,
  );
  assert.deepEqual(error.data, { mcpServer: "dying" });
  assert.deepEqual(await listed(server), []);
  // The server's exit was awaited before the answer: nothing is left to poll for.
  assert.deepEqual(await processesWithMarker(marker), []);
  assert.deepEqual(server.client.problems, []);
});

Deno.test("with mcpStrict, an MCP server that never answers initialize fails after mcpStartTimeout", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const marker = crypto.randomUUID();
  await using running = await startMcpServer({
    config: { mcpStartTimeout: 1, mcpStrict: true },
    markers: [marker],
  });
  const { server } = running;
  const error = await rejectsWith(
    server.client.request("session/new", {
      cwd,
      mcpServers: [fakeServer("stuck", ["--hang-at-start", `--marker=${marker}`])],
    }),
    -32603,
    /MCP server "stuck" did not start/,
    /within 1 s/,
  );
  assert.deepEqual(error.data, { mcpServer: "stuck" });
  assert.deepEqual(await listed(server), []);
  assert.deepEqual(await processesWithMarker(marker), []);
  assert.deepEqual(server.client.problems, []);
});

Deno.test("with mcpStrict, when one MCP server fails to start, the ones that started are stopped", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const good = crypto.randomUUID();
  const bad = crypto.randomUUID();
  await using running = await startMcpServer({ markers: [good, bad], config: { mcpStrict: true } });
  const { server } = running;
  await rejectsWith(
    server.client.request("session/new", {
      cwd,
      mcpServers: [
        fakeServer("good", [`--marker=${good}`]),
        fakeServer("bad", ["--exit-at-start", `--marker=${bad}`]),
      ],
    }),
    -32603,
    /MCP server "bad" did not start: exited with code 3/,
  );
  assert.ok(
    server.logs.some((line) => /MCP server connected/.test(line) && line.includes(good)),
    "the good server had started",
  );
  assert.deepEqual(await processesWithMarker(good), [], "the good server was stopped");
  assert.deepEqual(await processesWithMarker(bad), []);
  assert.deepEqual(await listed(server), []);
  assert.deepEqual(server.client.problems, []);
});

Deno.test("an MCP server that dies mid-session fails that call, and the next call reconnects", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const marker = crypto.randomUUID();
  const echo = (id: string) => ({
    toolCalls: [{ id, name: "mcp__fake__echo", arguments: { text: id } }],
  });
  await using running = await startMcpServer({
    config: { mode: "auto" },
    markers: [marker],
    script: [echo("c1"), echo("c2"), echo("c3"), { text: "done" }],
  });
  const { server } = running;
  const sessionId = await server.client.newSession(cwd, {
    mcpServers: [fakeServer("fake", ["--die-after-calls=1", `--marker=${marker}`])],
  });
  assert.equal(await server.client.prompt(sessionId, "call thrice"), "end_turn");
  const first = lastToolUpdate(server, sessionId, "c1");
  assert.equal(first.status, "completed");
  assert.equal(contentText(first), "echo: c1");
  const second = lastToolUpdate(server, sessionId, "c2");
  assert.equal(second.status, "failed");
  assert.match(contentText(second), /MCP server fake went away/);
  assert.match(contentText(second), /exited with code 1/);
  const third = lastToolUpdate(server, sessionId, "c3");
  assert.equal(third.status, "completed");
  assert.equal(contentText(third), "echo: c3");

  assert.ok(server.logs.some((line) => /MCP server reconnecting/.test(line)));
  assert.deepEqual(server.client.problems, []);
});

Deno.test("an MCP server killed during a call fails it as killed, and the next call reconnects", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const marker = crypto.randomUUID();
  await using mcp = await startMcpServer({
    script: [
      { toolCalls: [{ id: "c1", name: "mcp__fake__slow", arguments: {} }] },
      { toolCalls: [{ id: "c2", name: "mcp__fake__echo", arguments: { text: "again" } }] },
      { text: "done" },
    ],
    config: { mode: "auto" },
    markers: [marker],
  });
  const { server } = mcp;
  const sessionId = await server.client.newSession(cwd, {
    mcpServers: [fakeServer("fake", [`--marker=${marker}`])],
  });
  const [pid] = await processesWithMarker(marker);
  assert.ok(pid !== undefined, "the server runs");
  const turn = server.client.prompt(sessionId, "call slow");
  await server.client.waitFor(() =>
    server.client.updates(sessionId).some(({ update }) =>
      update.toolCallId === "c1" && update.status === "in_progress"
    )
  );
  process.kill(pid, "SIGKILL");
  assert.equal(await turn, "end_turn");
  const killed = lastToolUpdate(server, sessionId, "c1");
  assert.equal(killed.status, "failed");
  assert.match(contentText(killed), /MCP server fake went away during tools\/call slow/);
  assert.match(contentText(killed), /was killed by SIGKILL/);
  const again = lastToolUpdate(server, sessionId, "c2");
  assert.equal(again.status, "completed");
  assert.equal(contentText(again), "echo: again");
  const [fresh] = await processesWithMarker(marker);
  assert.ok(fresh !== undefined && fresh !== pid, "a new server process serves the session");
  assert.deepEqual(server.client.problems, []);
});

Deno.test("by default a session opens without an MCP server that did not start, and says so", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const good = crypto.randomUUID();
  const bad = crypto.randomUUID();
  await using running = await startMcpServer({
    markers: [good, bad],
    config: { mode: "auto" },
    script: [
      { toolCalls: [{ id: "c1", name: "mcp__good__echo", arguments: { text: "hi" } }] },
      { text: "done" },
    ],
  });
  const { server } = running;
  // A client that takes notices is told after the answer, besides the answer's _meta.
  await server.client.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: { session: { notices: {} } },
  });
  const answer = await server.client.request<
    { sessionId: string; _meta?: Record<string, { mcpServersNotStarted?: string[] }> }
  >("session/new", {
    cwd,
    mcpServers: [
      fakeServer("good", [`--marker=${good}`]),
      fakeServer("bad", ["--exit-at-start", `--marker=${bad}`]),
    ],
  });
  const notStarted = answer._meta?.["acp-harness"]?.mcpServersNotStarted ?? [];
  assert.equal(notStarted.length, 1, JSON.stringify(answer._meta));
  assert.match(notStarted[0] ?? "", /^MCP server "bad" did not start: exited with code 3/);
  await server.client.waitFor(() =>
    server.client.updates(answer.sessionId).some(({ update }) => update.sessionUpdate === "notice")
  );
  const notice = server.client.updates(answer.sessionId).find(({ update }) =>
    update.sessionUpdate === "notice"
  );
  assert.match(String(notice?.update.description), /MCP server "bad" did not start/);
  assert.ok(
    server.logs.some((line) =>
      /session opened without an MCP server that did not start/.test(line) &&
      line.includes('"server":"bad"')
    ),
  );
  assert.equal(await server.client.prompt(answer.sessionId, "use it"), "end_turn");
  assert.equal(contentText(lastToolUpdate(server, answer.sessionId, "c1")), "echo: hi");
  assert.deepEqual(await listed(server), [answer.sessionId]);
  assert.deepEqual(server.client.problems, []);
});

Deno.test("_meta acp-harness.mcpStrict asks one session to fail when a server does not start", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const bad = crypto.randomUUID();
  await using running = await startMcpServer({ markers: [bad] });
  const { server } = running;
  const mcpServers = [fakeServer("bad", ["--exit-at-start", `--marker=${bad}`])];
  await rejectsWith(
    server.client.request("session/new", {
      cwd,
      mcpServers,
      _meta: { "acp-harness": { mcpStrict: true } },
    }),
    -32603,
    /MCP server "bad" did not start/,
  );
  await rejectsWith(
    server.client.request("session/new", {
      cwd,
      mcpServers,
      _meta: { "acp-harness": { mcpStrict: "yes" } },
    }),
    -32602,
    /_meta\.acp-harness\.mcpStrict: must be true or false, got "yes"/,
  );
  assert.deepEqual(await listed(server), []);
  assert.deepEqual(server.client.problems, []);
});

Deno.test("a bare MCP command is looked up on the server's own PATH, not the declared env's", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  const marker = crypto.randomUUID();
  const node = fakeServer("fake").command;
  const dir = node.slice(0, node.lastIndexOf("/"));
  const name = node.slice(node.lastIndexOf("/") + 1);
  await using running = await startMcpServer({
    markers: [marker],
    env: { PATH: `relative/bin:${dir}` },
    config: { mcpStrict: true },
  });
  const { server } = running;
  const declared = fakeServer("fake", [`--marker=${marker}`]);
  const sessionId = await server.client.newSession(cwd, {
    // The declared PATH names nothing: the lookup must not use it.
    mcpServers: [{ ...declared, command: name, env: [{ name: "PATH", value: "/nonexistent" }] }],
  });
  assert.ok(sessionId);
  assert.ok(
    server.logs.some((line) =>
      /MCP server program found on PATH/.test(line) && line.includes(`"path":"${node}"`)
    ),
    server.logs.join(""),
  );
  await rejectsWith(
    server.client.request("session/new", {
      cwd,
      mcpServers: [{ ...declared, name: "missing", command: "acp-harness-no-such-program" }],
    }),
    -32603,
    /MCP server "missing" did not start: Cannot find the program "acp-harness-no-such-program" on the server's PATH/,
  );
  assert.deepEqual(server.client.problems, []);
});

Deno.test("an HTTP MCP server that is not reached names the cause, not 'fetch failed'", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-");
  const cwd = await dirs.make();
  await using running = await startMcpServer({ config: { mcpStrict: true } });
  const { server } = running;
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = probe.addr as Deno.NetAddr;
  probe.close();
  const error = await rejectsWith(
    server.client.request("session/new", {
      cwd,
      mcpServers: [{
        type: "http",
        name: "docs",
        url: `http://127.0.0.1:${port}/mcp`,
        headers: [],
      }],
    }),
    -32603,
    /MCP server "docs" did not start: .*(refused|ECONNREFUSED)/i,
  );
  assert.doesNotMatch(error.message, /did not start: fetch failed$/);
});
