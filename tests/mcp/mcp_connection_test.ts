import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { NodeHost } from "../../src/host/node_host.ts";
import { nullLogger } from "../../src/log/logger.ts";
import {
  McpCallError,
  McpConnection,
  type McpConnectionOptions,
} from "../../src/mcp/mcp_connection.ts";
import type { McpStdioServer } from "../../src/mcp/mcp_declarations.ts";
import { McpStartError } from "../../src/mcp/mcp_errors.ts";
import {
  fakeStdio,
  killProcessesWithMarker,
  processesWithMarker,
} from "../_helpers/mcp_servers.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";

/** A fresh marker per test, so its processes can be found (and must be gone at the end). */
function markerFlag(): { marker: string; flag: string } {
  const marker = `mcp-connection-test-${crypto.randomUUID()}`;
  return { marker, flag: `--marker=${marker}` };
}

function options(
  flags: readonly string[],
  overrides: Partial<McpConnectionOptions> & { env?: Record<string, string> } = {},
): McpConnectionOptions {
  const { command, args } = fakeStdio(...flags);
  const spec: McpStdioServer = {
    name: "fake",
    declaredName: "fake",
    transport: "stdio",
    command,
    args,
    env: overrides.env ?? {},
  };
  return {
    spec,
    processes: new NodeHost({ PATH: process.env.PATH }),
    cwd: "/",
    logger: nullLogger,
    logFields: {},
    startTimeoutMs: 10_000,
    callTimeoutMs: 10_000,
    ...overrides,
  };
}

/** Fails the test if the marker's processes are still there; kills them either way. */
async function assertNoneLeft(marker: string): Promise<void> {
  const left = await killProcessesWithMarker(marker);
  assert.deepEqual(left, [], "no server process is left");
}

const never = new AbortController().signal;

Deno.test("McpConnection.open() lists the server's tools and prompts; calls go through", async () => {
  const { marker, flag } = markerFlag();
  const connection = await McpConnection.open(options([flag]), never);
  try {
    assert.equal(connection.name, "fake");
    const names = connection.tools.map((tool) => tool.name);
    for (const name of ["echo", "add", "slow", "schema_zoo"]) assert.ok(names.includes(name), name);
    assert.deepEqual(connection.tools.find((tool) => tool.name === "echo")?.annotations, {
      readOnlyHint: true,
    });
    assert.deepEqual(connection.prompts.map((prompt) => prompt.name), ["greet", "review"]);
    const answer = await connection.callTool("echo", { text: "hi" }, never);
    assert.deepEqual(answer.content, [{ type: "text", text: "echo: hi" }]);
    const prompt = await connection.getPrompt("greet", { name: "Ada" }, never);
    assert.deepEqual(prompt.messages, [
      { role: "user", content: { type: "text", text: "Say hello to Ada" } },
    ]);
    await connection.refreshed(new AbortController().signal);
  } finally {
    await connection.close();
  }
  await assertNoneLeft(marker);
});

Deno.test("McpConnection.open() fails naming the server when it exits at start", async () => {
  await assert.rejects(
    McpConnection.open(options(["--exit-at-start"]), never),
    (error: unknown) => {
      assert.ok(error instanceof McpStartError);
      assert.equal(error.server, "fake");
      assert.match(error.message, /^MCP server "fake" did not start: /);
      assert.match(error.message, /exited with code 3/);
      assert.match(error.message, /exiting at start as asked/);
      return true;
    },
  );
});

Deno.test("McpConnection.open() reports the handshake's own failure, not the exit that follows", async () => {
  // The server exits 0 once its stdin is closed after the failure; that is not the cause.
  const hostile = fileURLToPath(new URL("../_fixtures/hostile_mcp_server.mjs", import.meta.url));
  for (
    const [mode, cause] of [
      ["init-error", /this server refuses to start/],
      ["bad-version", /1999-01-01/],
    ] as const
  ) {
    const base = options([]);
    const spec: McpStdioServer = {
      ...(base.spec as McpStdioServer),
      args: [hostile, `--mode=${mode}`],
    };
    await assert.rejects(McpConnection.open({ ...base, spec }, never), (error: unknown) => {
      assert.ok(error instanceof McpStartError, String(error));
      assert.match(error.message, cause, mode);
      assert.doesNotMatch(error.message, /exited with code/, mode);
      return true;
    });
  }
});

Deno.test("McpConnection.open() times out a server that never answers initialize", async () => {
  const { marker, flag } = markerFlag();
  const started = performance.now();
  await assert.rejects(
    McpConnection.open(options(["--hang-at-start", flag], { startTimeoutMs: 300 }), never),
    (error: unknown) => {
      assert.ok(error instanceof McpStartError);
      assert.equal(error.message, 'MCP server "fake" did not start: no answer within 0.3 s');
      return true;
    },
  );
  assert.ok(performance.now() - started < 3_000);
  await assertNoneLeft(marker);
});

Deno.test("McpConnection.open() stops when the outer signal aborts", async () => {
  const { marker, flag } = markerFlag();
  const controller = new AbortController();
  const opening = McpConnection.open(options(["--hang-at-start", flag]), controller.signal);
  // The server is our child, but nothing says when it has started: /proc is polled.
  await pollUntil(async () => (await processesWithMarker(marker)).length > 0, {
    what: "the fake server running",
  });
  const started = performance.now();
  controller.abort(new Error("the session was cancelled"));
  await assert.rejects(opening, (error: unknown) => {
    assert.ok(error instanceof McpStartError);
    assert.match(error.message, /^MCP server "fake" did not start: /);
    return true;
  });
  assert.ok(performance.now() - started < 3_000);
  await assertNoneLeft(marker);
});

Deno.test("McpConnection.open() with an aborted signal leaves no process behind", async () => {
  const { marker, flag } = markerFlag();
  const unhandled: unknown[] = [];
  const onUnhandled = (event: PromiseRejectionEvent): void => {
    event.preventDefault();
    unhandled.push(event.reason);
  };
  globalThis.addEventListener("unhandledrejection", onUnhandled);
  const controller = new AbortController();
  controller.abort(new Error("cancelled before it began"));
  await assert.rejects(
    McpConnection.open(options(["--hang-at-start", flag]), controller.signal),
    McpStartError,
  );
  // Nothing should have been started, or it should have been ended before open() settled. A
  // process that is started after the rejection announces itself by no event: /proc is polled
  // (briefly) for it to show up.
  const appeared = await pollUntil(
    async () => (await processesWithMarker(marker)).length > 0,
    { what: "a leaked server", timeoutMs: 1_000 },
  ).then(() => true, () => false);
  globalThis.removeEventListener("unhandledrejection", onUnhandled);
  const left = await killProcessesWithMarker(marker);
  assert.deepEqual({
    startedAfterOpenFailed: appeared,
    processesLeft: left.length,
    unhandledRejections: unhandled.map(String),
  }, { startedAfterOpenFailed: false, processesLeft: 0, unhandledRejections: [] });
});

Deno.test("McpConnection.open() aborted while the server is being spawned leaves no process behind", async () => {
  const { marker, flag } = markerFlag();
  const controller = new AbortController();
  const opening = McpConnection.open(options(["--hang-at-start", flag]), controller.signal);
  // open() has asked the host to spawn the server; the spawn has not finished yet.
  controller.abort(new Error("another server of the session failed"));
  await assert.rejects(opening, McpStartError);
  // As above: a process started after the rejection announces itself by no event.
  const appeared = await pollUntil(
    async () => (await processesWithMarker(marker)).length > 0,
    { what: "a leaked server", timeoutMs: 1_000 },
  ).then(() => true, () => false);
  const left = await killProcessesWithMarker(marker);
  assert.deepEqual(
    { startedAfterOpenFailed: appeared, processesLeft: left.length },
    { startedAfterOpenFailed: false, processesLeft: 0 },
  );
});

Deno.test("McpConnection.callTool() times out, and the server is told to cancel", async () => {
  await using dir = await tempDir("acp-harness-mcp-connection-");
  const events = join(dir.path, "events.log");
  const { marker, flag } = markerFlag();
  const connection = await McpConnection.open(
    options([flag], { callTimeoutMs: 300, env: { FAKE_MCP_EVENTS: events } }),
    never,
  );
  try {
    await assert.rejects(connection.callTool("slow", {}, never), (error: unknown) => {
      assert.ok(error instanceof McpCallError);
      assert.equal(error.cancelled, false);
      assert.equal(
        error.message,
        "the MCP server fake did not answer tools/call slow within 0.3 s",
      );
      return true;
    });
    // The server writes the file in its own time; no event reaches us: poll it.
    await pollUntil(
      async () => /^cancelled \S+$/m.test(await readFile(events, "utf8").catch(() => "")),
      { what: "the server told of the cancelled call", timeoutMs: 3_000 },
    );
    // The connection is still usable.
    const answer = await connection.callTool("echo", { text: "still here" }, never);
    assert.deepEqual(answer.content, [{ type: "text", text: "echo: still here" }]);
  } finally {
    await connection.close();
  }
  await assertNoneLeft(marker);
});

Deno.test("McpConnection.callTool() aborted by its signal fails as cancelled", async () => {
  await using dir = await tempDir("acp-harness-mcp-connection-");
  const events = join(dir.path, "events.log");
  const { marker, flag } = markerFlag();
  const connection = await McpConnection.open(
    options([flag], { env: { FAKE_MCP_EVENTS: events } }),
    never,
  );
  try {
    const controller = new AbortController();
    const calling = connection.callTool("slow", {}, controller.signal);
    // Abort once the server has the call: it reads its input in order, so an answer to a later
    // call means it has read (and registered) the slow one.
    await connection.callTool("echo", { text: "after slow" }, never);
    controller.abort();
    await assert.rejects(calling, (error: unknown) => {
      assert.ok(error instanceof McpCallError);
      assert.equal(error.cancelled, true);
      assert.equal(error.message, "tools/call slow was cancelled");
      return true;
    });
    // The server writes the file in its own time; no event reaches us: poll it.
    await pollUntil(
      async () => /^cancelled \S+$/m.test(await readFile(events, "utf8").catch(() => "")),
      { what: "the server told of the cancelled call", timeoutMs: 3_000 },
    );
    // An already aborted signal fails at once, as cancelled too.
    const aborted = new AbortController();
    aborted.abort();
    await assert.rejects(connection.callTool("echo", { text: "x" }, aborted.signal), {
      name: "McpCallError",
      cancelled: true,
    });
  } finally {
    await connection.close();
  }
  await assertNoneLeft(marker);
});

Deno.test("McpConnection.callTool() reports a server's error answer as refused", async () => {
  const { marker, flag } = markerFlag();
  const connection = await McpConnection.open(options([flag]), never);
  try {
    await assert.rejects(connection.callTool("no_such_tool", {}, never), (error: unknown) => {
      assert.ok(error instanceof McpCallError);
      assert.equal(error.cancelled, false);
      assert.match(error.message, /^the MCP server fake refused tools\/call no_such_tool: /);
      assert.match(error.message, /Unknown tool: no_such_tool/);
      return true;
    });
    await assert.rejects(connection.getPrompt("greet", {}, never), /refused prompts\/get greet/);
    // A refusal is not the connection failing: the same server answers the next call.
    const answer = await connection.callTool("echo", { text: "same" }, never);
    assert.deepEqual(answer.content, [{ type: "text", text: "echo: same" }]);
  } finally {
    await connection.close();
  }
  await assertNoneLeft(marker);
});

Deno.test("McpConnection.callTool() fails with 'went away' when the server dies, then reconnects", async () => {
  const { marker, flag } = markerFlag();
  const connection = await McpConnection.open(options(["--die-after-calls=1", flag]), never);
  try {
    const first = await connection.callTool("echo", { text: "one" }, never);
    assert.deepEqual(first.content, [{ type: "text", text: "echo: one" }]);
    await assert.rejects(connection.callTool("echo", { text: "two" }, never), (error: unknown) => {
      assert.ok(error instanceof McpCallError);
      assert.equal(error.cancelled, false);
      assert.match(error.message, /^the MCP server fake went away during tools\/call echo: /);
      assert.match(error.message, /the next call reconnects$/);
      return true;
    });
    // A new server process, whose first call is answered.
    const third = await connection.callTool("echo", { text: "three" }, never);
    assert.deepEqual(third.content, [{ type: "text", text: "echo: three" }]);
    assert.equal((await processesWithMarker(marker)).length, 1);
  } finally {
    await connection.close();
  }
  await assertNoneLeft(marker);
});

Deno.test("McpConnection with --die-after-calls=0: every server dies on its first call, each call reconnects", async () => {
  const { marker, flag } = markerFlag();
  const connection = await McpConnection.open(options(["--die-after-calls=0", flag]), never);
  try {
    await assert.rejects(connection.callTool("echo", { text: "a" }, never), /went away/);
    // The next call starts a new server (which dies on its first call too), not "reconnecting failed".
    await assert.rejects(connection.callTool("echo", { text: "b" }, never), (error: unknown) => {
      assert.ok(error instanceof McpCallError);
      assert.match(error.message, /went away during tools\/call echo/);
      assert.doesNotMatch(error.message, /reconnecting failed/);
      return true;
    });
  } finally {
    await connection.close();
  }
  await assertNoneLeft(marker);
});

Deno.test("McpConnection.close() is idempotent, ends the process and refuses later calls", async () => {
  const { marker, flag } = markerFlag();
  const connection = await McpConnection.open(options([flag]), never);
  assert.equal((await processesWithMarker(marker)).length, 1);
  await Promise.all([connection.close(), connection.close()]);
  await connection.close();
  assert.deepEqual(await processesWithMarker(marker), []);
  await assert.rejects(connection.callTool("echo", { text: "x" }, never), {
    name: "McpCallError",
    message: "the MCP server fake was closed",
  });
  await assertNoneLeft(marker);
});
