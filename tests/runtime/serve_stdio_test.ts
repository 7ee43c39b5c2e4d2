/**
 * `serveStdio()` (the `./stdio` entry): serves one ACP connection over NDJSON byte streams until
 * the input ends or its signal aborts, with a server given or one of its own.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type AgentServer, ndJsonStream, VERSION } from "../../mod.ts";
import { serveStdio } from "../../stdio.ts";
import {
  type AcpTestClient,
  exitWithin,
  memoryClient,
  spawnAgent,
} from "../_helpers/acp_client.ts";
import { BUN, DENO, ROOT } from "../_helpers/runtimes.ts";
import { createTestAgentServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

/** Two byte pipes: a client on one end, `serveStdio` on the other. */
function pipes(): {
  client: AcpTestClient & { close?: () => Promise<void> };
  input: ReadableStream<Uint8Array>;
  output: WritableStream<Uint8Array>;
} {
  const toServer = new TransformStream<Uint8Array, Uint8Array>();
  const toClient = new TransformStream<Uint8Array, Uint8Array>();
  const client = memoryClient(ndJsonStream(toServer.writable, toClient.readable));
  return { client, input: toServer.readable, output: toClient.writable };
}

/** A server of the test kit's (offline models, sessions in memory). */
function echoServer(): AgentServer {
  return createTestAgentServer().server;
}

Deno.test("serveStdio() serves a prompt on the given streams and ends when the input ends", async () => {
  await using cwd = await tempDir("acp-harness-stdio-");
  const server = echoServer();
  const { client, input, output } = pipes();
  const serving = serveStdio({ server, input, output });
  try {
    const init = await client.initialize();
    assert.equal((init.agentInfo as { version: string }).version, VERSION);
    const sessionId = await client.newSession(cwd.path);
    assert.equal(await client.prompt(sessionId, "hello"), "end_turn");
    assert.equal(client.problems.length, 0, client.problems.join("\n"));
    await client.close?.();
    await serving;
    // A server given stays open after serving ends.
    assert.equal(server.connections, 0);
  } finally {
    await server.close();
  }
});

Deno.test("serveStdio() without a server makes one of its own and closes it", async () => {
  const { client, input, output } = pipes();
  const serving = serveStdio({ input, output });
  const init = await client.initialize();
  assert.equal((init.agentInfo as { name: string }).name, "acp-harness");
  await client.close?.();
  await serving;
});

Deno.test("serveStdio() ends when its signal aborts, with the input still open", async () => {
  const server = echoServer();
  const { client, input, output } = pipes();
  const stop = new AbortController();
  const serving = serveStdio({ server, input, output, signal: stop.signal });
  try {
    await client.initialize();
    stop.abort();
    await serving;
    assert.equal(server.connections, 0);
  } finally {
    await client.close?.();
    await server.close();
  }
});

Deno.test("serveStdio() with an aborted signal serves nothing", async () => {
  const stop = new AbortController();
  stop.abort(new Error("stopped"));
  await assert.rejects(serveStdio({ signal: stop.signal }), /stopped/);
});

/** Serves ACP with `serveStdio()`'s defaults: the process's stdin and stdout. */
const DEFAULTS_SCRIPT = `import { serveStdio } from ${JSON.stringify(`${ROOT}stdio.ts`)};
await serveStdio();
`;

for (
  const [name, command, args] of [
    ["Deno", DENO, ["eval", "--config", `${ROOT}deno.json`, "--ext=ts", DEFAULTS_SCRIPT]],
    // Bun takes the Node.js way (node:stream over process.stdin and process.stdout).
    ["Bun", BUN, ["--eval", DEFAULTS_SCRIPT]],
  ] as const
) {
  Deno.test(`serveStdio() serves the process's stdin and stdout on ${name}`, async () => {
    await using cwd = await tempDir("acp-harness-stdio-");
    const agent = spawnAgent(command, args, { cwd: cwd.path });
    try {
      await agent.client.initialize();
      const sessionId = await agent.client.newSession(cwd.path);
      assert.equal(await agent.client.prompt(sessionId, "hello"), "end_turn");
      agent.end();
      assert.equal(await exitWithin(agent, 10_000), 0, agent.stderr());
      assert.deepEqual(agent.impure, [], "stdout carries protocol frames only");
      assert.deepEqual(agent.client.problems, []);
    } finally {
      agent.child.kill("SIGKILL");
    }
  });
}
