import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { createServer as createHttpsServer } from "node:https";
import { createServer } from "node:net";
import { join } from "node:path";
import { exitWithin, spawnAgent } from "../_helpers/acp_client.ts";
import { ROOT, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { CERTIFICATE_HINT, describeNetworkError } from "../../src/util/network_error.ts";

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** What `fetch(url)` throws in this runtime. */
async function fetchError(url: string): Promise<unknown> {
  try {
    const response = await fetch(url);
    await response.body?.cancel();
  } catch (error) {
    return error;
  }
  throw new Error(`fetch(${url}) did not fail`);
}

Deno.test("describeNetworkError() reads the cause the runtimes leave behind 'fetch failed'", () => {
  const node = new TypeError("fetch failed", {
    cause: Object.assign(new Error("getaddrinfo ENOTFOUND api.example"), { code: "ENOTFOUND" }),
  });
  assert.equal(describeNetworkError(node), "getaddrinfo ENOTFOUND api.example");
  const deno = new TypeError("fetch failed", {
    cause: new Error(
      "error sending request for url (http://u:pw@127.0.0.1:1/x?key=s): client error (Connect): " +
        "tcp connect error: Connection refused (os error 111)",
    ),
  });
  assert.equal(
    describeNetworkError(deno),
    "client error (Connect): tcp connect error: Connection refused (os error 111)",
    "Deno's detail, without the URL it repeats",
  );
  assert.equal(
    describeNetworkError(new TypeError("ECONNREFUSED: Unable to connect.")),
    "ECONNREFUSED: Unable to connect.",
  );
  const tls = new TypeError("fetch failed", {
    cause: Object.assign(new Error("self-signed certificate"), {
      code: "DEPTH_ZERO_SELF_SIGNED_CERT",
    }),
  });
  assert.equal(
    describeNetworkError(tls),
    `self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT); ${CERTIFICATE_HINT}`,
  );
  assert.equal(describeNetworkError("plain"), "plain");
  assert.equal(describeNetworkError(new TypeError("fetch failed")), "fetch failed");
});

Deno.test("describeNetworkError() on this runtime's real refusal and certificate failure", async () => {
  const refused = describeNetworkError(
    await fetchError(`http://127.0.0.1:${await closedPort()}/`),
  );
  assert.match(refused, /refused/i);
  assert.doesNotMatch(refused, /^fetch failed$/);
  const fixtures = join(ROOT, "tests/_fixtures");
  const server = createHttpsServer({
    key: await readFile(join(fixtures, "self_signed_key.pem")),
    cert: await readFile(join(fixtures, "self_signed_cert.pem")),
  }, (_request, response) => response.end("ok"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = server.address() as { port: number };
    const reason = describeNetworkError(await fetchError(`https://127.0.0.1:${port}/`));
    assert.ok(reason.endsWith(CERTIFICATE_HINT), reason);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: a provider that refuses connections fails the prompt naming the cause`, async () => {
    await using dir = await tempDir("acp-harness-network-error-");
    const port = await closedPort();
    const configFile = join(dir.path, "config.json");
    await Deno.writeTextFile(
      configFile,
      JSON.stringify({
        providers: {
          fake: { api: "openai-chat", baseUrl: `http://127.0.0.1:${port}/v1`, apiKeyEnv: "K" },
        },
      }),
    );
    const agent = spawnAgent(runtime.command, [
      ...runtime.args,
      "--config",
      configFile,
      "--model",
      "fake/m",
    ], {
      cwd: dir.path,
      env: { ...Deno.env.toObject(), K: "sk-test", ACP_HARNESS_HOME: join(dir.path, "home") },
    });
    try {
      await agent.client.initialize();
      const sessionId = await agent.client.newSession(dir.path);
      await assert.rejects(agent.client.prompt(sessionId, "hi"), (error: Error) => {
        assert.match(error.message, new RegExp(`Cannot reach http://127\\.0\\.0\\.1:${port}/`));
        assert.match(error.message, /ECONNREFUSED|Connection refused/);
        assert.doesNotMatch(error.message, /: fetch failed/);
        return true;
      });
      agent.end();
      assert.equal(await exitWithin(agent, 10_000), 0);
    } finally {
      agent.child.kill("SIGKILL");
    }
  });
}
