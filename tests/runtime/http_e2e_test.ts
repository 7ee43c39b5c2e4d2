/**
 * `serve --http` as a real child process on Deno, Node.js and Bun: the SDK's HTTP and WebSocket
 * clients and `acp-http-client` 0.4.2 drive it over 127.0.0.1, and SIGTERM drains a running turn
 * (answered `cancelled`) and exits 0.
 *
 * @module
 */
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { WebSocket as NodeWebSocket } from "ws";
import {
  type AcpTestClient,
  exitWithin,
  listeningUrl,
  memoryClient,
  spawnAgent,
  type StdioAgent,
} from "../_helpers/acp_client.ts";
import { ROOT, RUNTIMES } from "../_helpers/runtimes.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";

const SCRIPT = [
  { toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "out.txt", content: "z" } }] },
  { text: "written" },
  { text: "second turn" },
  { toolCalls: [{ id: "r1", name: "run_command", arguments: { command: "sleep 60" } }] },
];

/** Starts `serve --http --port 0` and resolves with the URL it printed. */
async function startServe(
  runtime: (typeof RUNTIMES)[number],
  dirs: TempDirs,
  extra: readonly string[] = [],
): Promise<{ agent: StdioAgent; url: string }> {
  const data = await dirs.make();
  const script = join(data, "script.json");
  await writeFile(script, JSON.stringify(SCRIPT));
  const agent = spawnAgent(runtime.command, [
    ...runtime.args,
    "serve",
    "--http",
    "--port",
    "0",
    "--data-dir",
    data,
    "--model",
    "scripted",
    "--script",
    script,
    "--mode",
    "ask",
    "--token",
    "e2e-token",
    "--log-level",
    "info",
    ...extra,
  ]);
  const url = await listeningUrl(agent);
  return { agent, url };
}

/** Resolves once the server's stderr holds `count` lines matching `pattern`. */
function stderrLines(agent: StdioAgent, pattern: RegExp, count: number): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      const lines = agent.stderr().split("\n").filter((line) => pattern.test(line));
      if (lines.length < count) return;
      agent.child.stderr?.off("data", check);
      resolve();
    };
    agent.child.stderr?.on("data", check);
    check();
  });
}

const FLOW = `${ROOT}tests/_fixtures/acp_http_client_flow.mjs`;

const AUTH = { authorization: "Bearer e2e-token" };

/**
 * `fetch` for the SDK client of a server that is about to exit: a refused connection reads as
 * `410 Gone`, which closes the client's transport instead of rejecting inside it.
 */
const tolerantFetch: typeof fetch = (input, init) =>
  fetch(input, init).catch(() => new Response(null, { status: 410 }));

async function closeClient(client: AcpTestClient): Promise<void> {
  await (client as unknown as { close(): Promise<void> }).close().catch(() => {});
}

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: serve --http with the SDK's HTTP and WebSocket clients`, async () => {
    await using dirs = new TempDirs("acp-harness-http-e2e-");
    const cwd = await dirs.make();
    const { agent, url } = await startServe(runtime, dirs);
    try {
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
      const health = await fetch(`${url}/health`);
      assert.equal(await health.text(), "ok");

      const http = memoryClient(createHttpStream(`${url}/acp`, { headers: AUTH }));
      http.handlers.set("session/request_permission", () => ({
        outcome: { outcome: "selected", optionId: "allow_once" },
      }));
      await http.initialize();
      const sessionId = await http.newSession(cwd);
      assert.equal(await http.prompt(sessionId, "write"), "end_turn");
      assert(existsSync(join(cwd, "out.txt")));
      assert(http.frames.some((frame) => frame.method === "session/request_permission"));
      assert.deepEqual(http.problems, []);
      await closeClient(http);
      await stderrLines(agent, /connection closed/, 1);

      // Reconnect over WebSocket and load the session.
      const ws = memoryClient(createWebSocketStream(`${url.replace("http", "ws")}/acp`, {
        WebSocket: NodeWebSocket as never,
        headers: AUTH,
      }));
      await ws.initialize();
      await ws.request("session/load", { sessionId, cwd: cwd, mcpServers: [] });
      assert(ws.updates(sessionId).some(({ update }) => update.sessionUpdate === "tool_call"));
      assert.equal(await ws.prompt(sessionId, "again"), "end_turn");
      assert.deepEqual(ws.problems, []);
      await closeClient(ws);
      await stderrLines(agent, /connection closed/, 2);

      // SIGTERM with a command running: the turn is answered `cancelled`, then the process exits 0.
      const last = memoryClient(
        createHttpStream(`${url}/acp`, { headers: AUTH, fetch: tolerantFetch }),
      );
      last.handlers.set("session/request_permission", () => ({
        outcome: { outcome: "selected", optionId: "allow_once" },
      }));
      await last.initialize();
      await last.request("session/load", { sessionId, cwd, mcpServers: [] });
      const slow = last.prompt(sessionId, "run it");
      slow.catch(() => {}); // awaited below, after the signal
      await last.waitFor(() =>
        last.updates(sessionId).some(({ update }) =>
          update.toolCallId === "r1" && update.status === "in_progress"
        )
      );
      // Deno.kill, not child.kill: Deno's node:child_process reports a child it signalled as killed
      // even when the child handled the signal and exited 0.
      Deno.kill(agent.child.pid as number, "SIGTERM");
      assert.equal(await slow, "cancelled");
      const code = await exitWithin(agent, 10_000);
      assert.equal(code, 0, `${JSON.stringify(await agent.exited)}\n${agent.stderr()}`);
      await closeClient(last);
      assert(!agent.stderr().includes("e2e-token"));
    } finally {
      agent.child.kill("SIGKILL");
      await agent.exited;
    }
  });

  Deno.test(`${runtime.name}: serve --http with acp-http-client 0.4.2 on /v1/acp/:id`, async () => {
    await using dirs = new TempDirs("acp-harness-http-e2e-");
    const cwd = await dirs.make();
    const { agent, url } = await startServe(runtime, dirs);
    try {
      // Node.js: under Deno the client's `@agentclientprotocol/sdk` import resolves to SDK 2.x.
      const client = spawn("node", [FLOW, url, "e2e-token", cwd], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      client.stdout.setEncoding("utf8").on("data", (text: string) => stdout += text);
      client.stderr.setEncoding("utf8").on("data", (text: string) => stderr += text);
      const killer = setTimeout(() => client.kill("SIGKILL"), 60_000); // a bound, not a wait
      const code = await new Promise<number | null>((resolve) => client.on("close", resolve));
      clearTimeout(killer);
      assert.equal(code, 0, `${stderr}\n${agent.stderr()}`);
      const run = JSON.parse(stdout);
      assert.equal(run.first, "end_turn");
      assert.equal(run.second, "end_turn");
      assert.equal(run.cancelled, "cancelled");
      assert(run.seenA.includes("tool_call") && run.seenA.includes("agent_message_chunk"));
      assert(run.replayed.includes("user_message_chunk") && run.replayed.includes("tool_call"));
      assert(existsSync(join(cwd, "out.txt")));
      Deno.kill(agent.child.pid as number, "SIGTERM");
      assert.equal(await exitWithin(agent, 10_000), 0);
    } finally {
      agent.child.kill("SIGKILL");
      await agent.exited;
    }
  });

  Deno.test(`${runtime.name}: serve --http refuses to bind beyond loopback unsafely`, async () => {
    await using dirs = new TempDirs("acp-harness-http-e2e-");
    const data = await dirs.make();
    const agent = spawnAgent(runtime.command, [
      ...runtime.args,
      "serve",
      "--http",
      "--host",
      "0.0.0.0",
      "--port",
      "0",
      "--data-dir",
      data,
    ]);
    assert.equal(await exitWithin(agent, 20_000), 2);
    assert.match(agent.stderr(), /without a bearer token/);
  });
}
