/**
 * An HTTP MCP server declared with a user name and password in its URL and a token in its query
 * (`http://u:SECRET@127.0.0.1:PORT/mcp?token=SECRET`), on Deno, Node.js and Bun: the credentials
 * travel as an `Authorization: Basic` header, and neither secret shows in the client's error, on
 * stderr at any level (`--log-level debug`) or in the data directory, whether the server answers
 * (the reference everything server), refuses (401) or cannot be reached.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { RpcError, spawnAgent } from "../_helpers/acp_client.ts";
import { startEverythingRemote } from "../_helpers/mcp_servers.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";

const PASSWORD = `SECRETPASS${crypto.randomUUID().slice(0, 8)}`;
const QUERY_TOKEN = `SECRETQ${crypto.randomUUID().slice(0, 8)}`;

/** `base` (`http://127.0.0.1:PORT/path`) with the user name, password and query token. */
function withSecrets(base: string): string {
  const url = new URL(base);
  url.username = "u";
  url.password = PASSWORD;
  url.searchParams.set("token", QUERY_TOKEN);
  return url.href;
}

/** Runs `check` for every runtime at once; fails with every runtime's failure, named. */
async function onEveryRuntime(check: (runtime: Runtime) => Promise<void>): Promise<void> {
  const outcomes = await Promise.allSettled(RUNTIMES.map((runtime) => check(runtime)));
  const failures = outcomes.flatMap((outcome, index) =>
    outcome.status === "rejected"
      ? [`${RUNTIMES[index]?.name}: ${String(outcome.reason?.stack ?? outcome.reason)}`]
      : []
  );
  assert.deepEqual(failures, [], failures.join("\n\n"));
}

/** A loopback HTTP server that answers 401 to everything and keeps the requests' headers. */
async function refusingServer(): Promise<
  { url: string; headers: IncomingHttpHeaders[] } & AsyncDisposable
> {
  const headers: IncomingHttpHeaders[] = [];
  const server = createServer((request, response) => {
    headers.push(request.headers);
    request.resume();
    response.writeHead(401, { "content-type": "application/json", connection: "close" });
    response.end(JSON.stringify({ error: "unauthorized" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    headers,
    async [Symbol.asyncDispose](): Promise<void> {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A loopback port nothing listens on (it was free a moment ago). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The texts of every file under `dir`. */
async function filesUnder(dir: string): Promise<Array<{ file: string; text: string }>> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return await Promise.all(
    entries.filter((entry) => entry.isFile()).map(async (entry) => {
      const file = join(entry.parentPath, entry.name);
      return { file, text: await readFile(file, "latin1") };
    }),
  );
}

/** Asserts that `text` holds neither secret. */
function noSecret(text: string, where: string): void {
  for (const secret of [PASSWORD, QUERY_TOKEN]) {
    assert.ok(!text.includes(secret), `${where} holds ${secret}: ${text.slice(0, 2000)}`);
  }
}

Deno.test("an MCP URL's password and query token reach no error, log line or file on deno, node and bun", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-url-");
  await using everything = await startEverythingRemote("streamableHttp");
  await using refusing = await refusingServer();
  const unreachable = `http://127.0.0.1:${await closedPort()}/mcp`;
  await onEveryRuntime(async (runtime) => {
    const base = await dirs.make();
    const cwd = join(base, "ws");
    const dataDir = join(base, "data");
    await mkdir(cwd);
    const script = join(base, "script.json");
    await writeFile(script, JSON.stringify([{ text: "done" }]));
    const agent = spawnAgent(
      runtime.command,
      [
        ...runtime.args,
        ...["--data-dir", dataDir, "--model", "scripted", "--script", script],
        ...["--log-level", "debug", "--mcp-start-timeout", "20", "--mcp-strict"],
      ],
      { cwd, env: { ...Deno.env.toObject(), ACP_HARNESS_HOME: join(base, "home") } },
    );
    try {
      await agent.client.initialize();
      const declare = (url: string) => ({
        mcpServers: [{ type: "http", name: "web", url: withSecrets(url), headers: [] }],
      });
      // The real server: the session starts (the credentials went as a header, not in the URL).
      const sessionId = await agent.client.newSession(cwd, declare(everything.url));
      await agent.client.request("session/close", { sessionId });
      // A server that refuses, and a port nothing listens on: the error names the server only.
      for (const url of [refusing.url, unreachable]) {
        const error = await agent.client.request("session/new", { cwd, ...declare(url) }).then(
          () => assert.fail(`session/new with ${url} succeeded`),
          (error: unknown) => error,
        );
        assert.ok(error instanceof RpcError, String(error));
        assert.equal(error.code, -32603);
        assert.match(error.message, /MCP server "web" did not start/);
        noSecret(`${error.message} ${JSON.stringify(error.data ?? null)}`, "the error");
      }
      agent.end();
      await agent.exited;
      assert.match(agent.stderr(), /MCP server did not start/);
      noSecret(agent.stderr(), "stderr");
      for (const frame of agent.client.frames) noSecret(JSON.stringify(frame), "a frame");
      for (const { file, text } of await filesUnder(dataDir)) noSecret(text, file);
    } finally {
      if (agent.child.exitCode === null && agent.child.signalCode === null) {
        agent.child.kill("SIGKILL");
      }
      await agent.exited;
    }
  });
  // Each agent sent the user name and password as Basic credentials.
  assert.equal(refusing.headers.length >= RUNTIMES.length, true, `${refusing.headers.length}`);
  for (const headers of refusing.headers) {
    assert.equal(headers.authorization, `Basic ${btoa(`u:${PASSWORD}`)}`);
  }
});
