import assert from "node:assert/strict";
import { BUILTIN_MODELS, builtinProviders } from "../../src/llm/presets.ts";

function envOf(vars: Record<string, string>): (name: string) => string | undefined {
  return (name) => vars[name];
}

Deno.test("builtinProviders() defines openai, anthropic, deepseek and ollama", () => {
  const providers = builtinProviders(envOf({}));
  assert.deepEqual(Object.keys(providers), ["openai", "anthropic", "deepseek", "ollama"]);
  assert.equal(providers.openai?.api, "openai-chat");
  assert.equal(providers.anthropic?.api, "anthropic-messages");
  assert.equal(providers.deepseek?.api, "openai-chat");
  assert.equal(providers.ollama?.api, "openai-chat");
  assert.equal(providers.openai?.apiKeyEnv, "OPENAI_API_KEY");
  assert.equal(providers.anthropic?.apiKeyEnv, "ANTHROPIC_API_KEY");
  assert.equal(providers.deepseek?.apiKeyEnv, "DEEPSEEK_API_KEY");
  assert.equal(providers.ollama?.apiKeyEnv, undefined, "ollama needs no key");
  assert.equal(providers.openai?.maxTokensField, "max_completion_tokens");
});

Deno.test("builtinProviders() uses the public endpoints by default", () => {
  const providers = builtinProviders(envOf({}));
  assert.equal(providers.openai?.baseUrl, "https://api.openai.com/v1");
  assert.equal(providers.anthropic?.baseUrl, "https://api.anthropic.com");
  assert.equal(providers.deepseek?.baseUrl, "https://api.deepseek.com");
  assert.equal(providers.ollama?.baseUrl, "http://127.0.0.1:11434/v1");
});

Deno.test("builtinProviders() reads the *_BASE_URL variables", () => {
  const providers = builtinProviders(envOf({
    OPENAI_BASE_URL: "http://127.0.0.1:8080/v1",
    ANTHROPIC_BASE_URL: "http://127.0.0.1:8081",
    DEEPSEEK_BASE_URL: "http://127.0.0.1:8082",
  }));
  assert.equal(providers.openai?.baseUrl, "http://127.0.0.1:8080/v1");
  assert.equal(providers.anthropic?.baseUrl, "http://127.0.0.1:8081");
  assert.equal(providers.deepseek?.baseUrl, "http://127.0.0.1:8082");
  // A base URL alone does not make a provider configured.
  assert.equal(providers.openai?.configured, false);
  assert.equal(providers.anthropic?.configured, false);
  assert.equal(providers.deepseek?.configured, false);
});

Deno.test("builtinProviders() reads OLLAMA_HOST with and without a scheme", () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["http://127.0.0.1:11500", "http://127.0.0.1:11500/v1"],
    ["https://ollama.example:443/", "https://ollama.example:443/v1"],
    ["127.0.0.1:11500", "http://127.0.0.1:11500/v1"],
    ["gpu-box:11434//", "http://gpu-box:11434/v1"],
    ["http://gpu-box", "http://gpu-box/v1"],
  ];
  for (const [host, baseUrl] of cases) {
    const ollama = builtinProviders(envOf({ OLLAMA_HOST: host })).ollama;
    assert.equal(ollama?.baseUrl, baseUrl, host);
    assert.equal(ollama?.configured, true, host);
  }
});

Deno.test("builtinProviders() uses Ollama's default port for an OLLAMA_HOST without scheme or port", () => {
  // Ollama's own client (envconfig.Host) reads "0.0.0.0" as http://0.0.0.0:11434; only an explicit
  // scheme makes the port default to 80/443.
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["0.0.0.0", "http://0.0.0.0:11434/v1"],
    ["localhost", "http://localhost:11434/v1"],
    ["gpu-box/", "http://gpu-box:11434/v1"],
  ];
  for (const [host, baseUrl] of cases) {
    assert.equal(builtinProviders(envOf({ OLLAMA_HOST: host })).ollama?.baseUrl, baseUrl, host);
  }
});

Deno.test("builtinProviders() marks a provider configured when its key or host is set", () => {
  const none = builtinProviders(envOf({}));
  for (const [id, provider] of Object.entries(none)) {
    assert.equal(provider.configured, false, id);
  }
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["OPENAI_API_KEY", "openai"],
    ["ANTHROPIC_API_KEY", "anthropic"],
    ["DEEPSEEK_API_KEY", "deepseek"],
    ["OLLAMA_HOST", "ollama"],
  ];
  for (const [variable, id] of cases) {
    const providers = builtinProviders(envOf({ [variable]: "x" }));
    for (const [other, provider] of Object.entries(providers)) {
      assert.equal(provider.configured, other === id, `${variable} → ${other}`);
    }
  }
  // An empty key is not a key.
  assert.equal(builtinProviders(envOf({ OPENAI_API_KEY: "" })).openai?.configured, false);
});

Deno.test("builtinProviders() gives defaults for unlisted models", () => {
  const providers = builtinProviders(envOf({}));
  assert.equal(providers.openai?.defaults.image, true);
  assert.deepEqual(providers.anthropic?.defaults.reasoningEfforts, ["low", "medium", "high"]);
  assert.equal(providers.ollama?.defaults.image, false);
});

Deno.test("BUILTIN_MODELS are keyed by built-in provider and keep their default effort valid", () => {
  const providers = builtinProviders(envOf({}));
  for (const [id, facts] of Object.entries(BUILTIN_MODELS)) {
    const provider = id.slice(0, id.indexOf("/"));
    assert.ok(provider in providers, `${id} names an unknown provider`);
    if (facts.defaultReasoningEffort !== undefined) {
      assert.ok(facts.reasoningEfforts?.includes(facts.defaultReasoningEffort), id);
    }
  }
});
