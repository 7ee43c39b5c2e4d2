import assert from "node:assert/strict";
import { RpcError } from "../_helpers/acp_client.ts";
import { startServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

/** Asserts that `promise` rejects with a JSON-RPC error of `code` whose message matches. */
async function rejects(promise: Promise<unknown>, code: number, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof RpcError, String(error));
    assert.equal(error.code, code, error.message);
    assert.match(error.message, pattern);
    return true;
  });
}

Deno.test("authenticate succeeds for a set key and names the variable of an unset one", async () => {
  const server = startServer({ env: { ANTHROPIC_API_KEY: "sk-ant-1" } });
  try {
    const init = await server.client.request("initialize", { protocolVersion: 1 });
    const methods = init.authMethods as Array<{ id: string; name: string; description: string }>;
    assert.deepEqual(methods.map((method) => method.id), [
      "env:OPENAI_API_KEY",
      "env:ANTHROPIC_API_KEY",
      "env:DEEPSEEK_API_KEY",
    ]);
    assert.match(methods[0]?.description ?? "", /OPENAI_API_KEY environment variable/);
    assert.deepEqual(
      await server.client.request("authenticate", { methodId: "env:ANTHROPIC_API_KEY" }),
      {},
    );
    await rejects(
      server.client.request("authenticate", { methodId: "env:OPENAI_API_KEY" }),
      -32000,
      /OPENAI_API_KEY is not set: set it in the agent's environment/,
    );
    assert.deepEqual(server.client.problems, []);
  } finally {
    await server.disconnect();
  }
});

Deno.test("session/new with a default model whose key is unset fails -32000 naming the key", async () => {
  await using dir = await tempDir("acp-harness-auth-");
  const unset = startServer({ config: { model: "openai/gpt-5" } });
  try {
    await unset.client.request("initialize", { protocolVersion: 1 });
    await assert.rejects(
      unset.client.request("session/new", { cwd: dir.path, mcpServers: [] }),
      (error: unknown) => {
        assert.ok(error instanceof RpcError);
        assert.equal(error.code, -32000);
        assert.match(
          error.message,
          /OPENAI_API_KEY is not set \(the model openai\/gpt-5 needs it\)/,
        );
        assert.deepEqual(error.data, { authMethods: ["env:OPENAI_API_KEY"] });
        return true;
      },
    );
    assert.deepEqual(unset.client.problems, []);
  } finally {
    await unset.disconnect();
  }
  const set = startServer({ config: { model: "openai/gpt-5" }, env: { OPENAI_API_KEY: "sk-1" } });
  try {
    await set.client.request("initialize", { protocolVersion: 1 });
    const created = await set.client.request("session/new", { cwd: dir.path, mcpServers: [] });
    assert.equal(typeof created.sessionId, "string");
  } finally {
    await set.disconnect();
  }
});
