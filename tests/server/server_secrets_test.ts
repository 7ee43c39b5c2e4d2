import assert from "node:assert/strict";
import { ModelCatalog } from "../../src/llm/catalog.ts";
import { builtinProviders } from "../../src/llm/presets.ts";
import { secretValues, serverSecretEnv } from "../../src/server/server_secrets.ts";

Deno.test("serverSecretEnv() names the token, every preset's key and the config file's apiKeyEnv", () => {
  const providers = {
    ...builtinProviders(() => undefined),
    mine: {
      api: "openai-chat" as const,
      baseUrl: "http://127.0.0.1:9",
      apiKeyEnv: "MY_PROVIDER_KEY",
      configured: true,
      defaults: {},
    },
  };
  assert.deepEqual(serverSecretEnv(new ModelCatalog({ providers })), [
    "ACP_HARNESS_TOKEN",
    "ACP_HARNESS_TOKEN_FILE",
    "ANTHROPIC_API_KEY",
    "DEEPSEEK_API_KEY",
    "MY_PROVIDER_KEY",
    "OPENAI_API_KEY",
  ]);
  // Without providers (an embedder's catalog) the presets' keys still count.
  assert.deepEqual(serverSecretEnv(new ModelCatalog()), [
    "ACP_HARNESS_TOKEN",
    "ACP_HARNESS_TOKEN_FILE",
    "ANTHROPIC_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENAI_API_KEY",
  ]);
});

Deno.test("secretValues() gives the set values worth redacting", () => {
  const env: Record<string, string> = { A: "sk-123456", B: "", C: "abc", D: "  padded-key  " };
  assert.deepEqual(secretValues(["A", "B", "C", "D", "E"], (name) => env[name]), [
    "sk-123456",
    "padded-key",
  ]);
});
