import assert from "node:assert/strict";
import { ModelCatalog, type ModelInfo } from "../../src/llm/catalog.ts";
import { BUILTIN_MODELS, builtinProviders, type ProviderSpec } from "../../src/llm/presets.ts";
import type { LlmEvent, LlmProvider, LlmRequest } from "../../src/llm/provider.ts";
import { parseScript } from "../../src/llm/scripted.ts";

const SCRIPT = parseScript([{ text: "scripted answer" }]);

function envOf(vars: Record<string, string>): (name: string) => string | undefined {
  return (name) => vars[name];
}

/** A fetch that fails the test if anything reaches for the network. */
const NO_FETCH: typeof fetch = () => {
  throw new Error("the catalog must not fetch");
};

function ids(catalog: ModelCatalog): string[] {
  return catalog.list().map((model) => model.id);
}

function request(model: string): LlmRequest {
  return {
    sessionId: "s",
    model,
    system: "",
    messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
    tools: [],
  };
}

async function collect(provider: LlmProvider, model: string): Promise<LlmEvent[]> {
  const events: LlmEvent[] = [];
  const signal = new AbortController().signal;
  for await (const event of provider.stream(request(model), { signal })) events.push(event);
  return events;
}

/** A keyless provider spec for tests. */
function spec(overrides: Partial<ProviderSpec> = {}): ProviderSpec {
  return {
    api: "openai-chat",
    baseUrl: "http://127.0.0.1:9/v1",
    configured: true,
    defaults: {},
    ...overrides,
  };
}

// What is offered

Deno.test("ModelCatalog offers only echo by default", () => {
  const catalog = new ModelCatalog();
  assert.deepEqual(ids(catalog), ["echo"]);
  assert.equal(catalog.has("echo"), true);
  assert.equal(catalog.has("scripted"), false);
  assert.equal(catalog.info("scripted"), undefined);
});

Deno.test("ModelCatalog offers scripted when given a script", () => {
  const catalog = new ModelCatalog({ script: SCRIPT });
  assert.deepEqual(ids(catalog), ["echo", "scripted"]);
  assert.equal(catalog.has("scripted"), true);
  assert.equal(catalog.resolve("scripted").provider.id, "scripted");
});

Deno.test("ModelCatalog offers the listed models of configured providers only", () => {
  const catalog = new ModelCatalog({
    providers: builtinProviders(envOf({ DEEPSEEK_API_KEY: "sk-deepseek" })),
  });
  assert.deepEqual(ids(catalog), [
    "echo",
    ...Object.keys(BUILTIN_MODELS).filter((id) => id.startsWith("deepseek/")),
  ]);
  assert.ok(ids(catalog).length > 1);
  assert.equal(catalog.has("anthropic/claude-sonnet-5-5"), false);
  // Unoffered models of known providers still resolve.
  assert.equal(catalog.info("anthropic/claude-sonnet-5-5")?.name, "Claude Sonnet 5.5");
});

Deno.test("ModelCatalog offers config-file models of configured providers", () => {
  const catalog = new ModelCatalog({
    providers: { local: spec(), remote: spec({ configured: false }) },
    models: { "local/llama": { name: "Llama" }, "remote/big": { name: "Big" } },
  });
  assert.deepEqual(ids(catalog), ["echo", "local/llama"]);
  assert.equal(catalog.info("local/llama")?.name, "Llama");
});

Deno.test("ModelCatalog always offers the default model", () => {
  const providers = builtinProviders(envOf({}));
  const catalog = new ModelCatalog({ providers, defaultModel: "openai/gpt-9" });
  assert.deepEqual(ids(catalog), ["echo", "openai/gpt-9"]);
  assert.equal(catalog.has("openai/gpt-9"), true);
  // Listed once, even when it is already offered.
  const listed = new ModelCatalog({ script: SCRIPT, defaultModel: "scripted" });
  assert.deepEqual(ids(listed), ["echo", "scripted"]);
  assert.deepEqual(ids(new ModelCatalog({ defaultModel: "echo" })), ["echo"]);
});

// info()

Deno.test("ModelCatalog.info() describes the offline models", () => {
  const catalog = new ModelCatalog({ script: SCRIPT });
  const echo = catalog.info("echo");
  assert.ok(echo);
  assert.equal(echo.id, "echo");
  assert.equal(echo.provider, "echo");
  assert.equal(echo.model, "echo");
  assert.match(echo.name, /Echo/);
  assert.equal(echo.image, false);
  assert.deepEqual(echo.reasoningEfforts, []);
  assert.equal(catalog.info("scripted")?.provider, "scripted");
});

Deno.test("ModelCatalog.info() merges the provider's defaults with the built-in model facts", () => {
  const providers = builtinProviders(envOf({}));
  const catalog = new ModelCatalog({ providers });
  const sonnet: ModelInfo = {
    id: "anthropic/claude-sonnet-5-5",
    provider: "anthropic",
    model: "claude-sonnet-5-5",
    name: "Claude Sonnet 5.5",
    description: "claude-sonnet-5-5 via anthropic",
    contextWindow: 200_000,
    maxOutputTokens: 32_000,
    image: true,
    reasoningEfforts: ["low", "medium", "high"],
  };
  assert.deepEqual(catalog.info("anthropic/claude-sonnet-5-5"), sonnet);
  // Built-in facts win over the provider defaults.
  assert.deepEqual(catalog.info("deepseek/deepseek-flash"), {
    id: "deepseek/deepseek-flash",
    provider: "deepseek",
    model: "deepseek-flash",
    name: "DeepSeek Flash",
    description: "deepseek-flash via deepseek",
    contextWindow: 1_000_000,
    maxOutputTokens: 384_000,
    image: true,
    reasoningEfforts: ["low", "high", "max"],
    defaultReasoningEffort: "high",
  });
  // An unlisted model gets the provider's defaults and its own name.
  assert.deepEqual(catalog.info("ollama/qwen3:8b"), {
    id: "ollama/qwen3:8b",
    provider: "ollama",
    model: "qwen3:8b",
    name: "qwen3:8b",
    description: "qwen3:8b via ollama",
    contextWindow: 4_096,
    image: false,
    reasoningEfforts: [],
  });
});

Deno.test("ModelCatalog.info() applies config model facts over the defaults", () => {
  const catalog = new ModelCatalog({
    providers: { local: spec({ defaults: { contextWindow: 8_000, image: false } }) },
    models: {
      "local/vision": {
        name: "Vision",
        image: true,
        reasoningEfforts: ["low", "high"],
        defaultReasoningEffort: "low",
        pricing: { input: 1, output: 2 },
      },
    },
  });
  assert.deepEqual(catalog.info("local/vision"), {
    id: "local/vision",
    provider: "local",
    model: "vision",
    name: "Vision",
    description: "vision via local",
    contextWindow: 8_000,
    image: true,
    reasoningEfforts: ["low", "high"],
    defaultReasoningEffort: "low",
    pricing: { input: 1, output: 2 },
  });
});

Deno.test("ModelCatalog.info() merges config model facts with the built-in ones field by field", () => {
  // Adding pricing for a built-in model must not drop what the catalog already knows about it.
  const catalog = new ModelCatalog({
    providers: builtinProviders(envOf({})),
    models: { "deepseek/deepseek-v4-pro": { pricing: { input: 0.5, output: 2 } } },
  });
  const info = catalog.info("deepseek/deepseek-v4-pro");
  assert.equal(info?.pricing?.input, 0.5);
  assert.equal(info?.name, "DeepSeek V4 Pro");
  assert.equal(info?.maxOutputTokens, 384_000);
  assert.deepEqual(info?.reasoningEfforts, ["low", "high", "max"]);
  assert.equal(info?.defaultReasoningEffort, "high");
});

Deno.test("ModelCatalog.info() returns undefined for unknown providers and malformed ids", () => {
  const catalog = new ModelCatalog({ providers: builtinProviders(envOf({})) });
  for (const id of ["nope/model", "gpt-4o", "/model", "openai/", "", "scripted"]) {
    assert.equal(catalog.info(id), undefined, id);
    assert.equal(catalog.has(id), false, id);
  }
});

// resolve()

Deno.test("ModelCatalog.resolve() throws a RangeError listing the providers for an unknown one", () => {
  const catalog = new ModelCatalog({
    script: SCRIPT,
    providers: builtinProviders(envOf({})),
  });
  assert.throws(() => catalog.resolve("nope/model"), (error: unknown) => {
    assert.ok(error instanceof RangeError);
    assert.match(error.message, /"nope\/model"/);
    assert.match(error.message, /echo, scripted/);
    assert.match(error.message, /openai, anthropic, deepseek, ollama/);
    return true;
  });
  assert.throws(() => new ModelCatalog().resolve("openai/gpt-4o"), (error: unknown) => {
    assert.ok(error instanceof RangeError);
    assert.match(error.message, /\(none\)/);
    assert.doesNotMatch(error.message, /scripted/);
    return true;
  });
});

Deno.test("ModelCatalog.resolve() fails a request with auth when the API key is missing", async () => {
  const catalog = new ModelCatalog({
    providers: builtinProviders(envOf({})),
    env: envOf({}),
    fetch: NO_FETCH,
  });
  const { info, provider } = catalog.resolve("openai/gpt-x");
  assert.equal(info.model, "gpt-x");
  assert.equal(provider.id, "openai");
  const events = await collect(provider, info.model);
  assert.equal(events.length, 1);
  const [finish] = events;
  assert.ok(finish?.type === "finish");
  assert.equal(finish.reason, "error");
  assert.equal(finish.error?.kind, "auth");
  assert.equal(finish.error?.retryable, false);
  assert.match(finish.error?.message ?? "", /OPENAI_API_KEY/);
});

Deno.test("ModelCatalog.resolve() reads the key on use and retries loading after a failure", async () => {
  const vars: Record<string, string> = {};
  const seen: Array<[string, string | null]> = [];
  const catalog = new ModelCatalog({
    providers: builtinProviders(envOf({})),
    env: (name) => vars[name],
    fetch: (input, init) => {
      seen.push([String(input), new Headers(init?.headers).get("authorization")]);
      return Promise.resolve(Response.json({ error: { message: "bad key" } }, { status: 401 }));
    },
  });
  const { provider } = catalog.resolve("openai/gpt-x");
  const first = await collect(provider, "gpt-x");
  const failed = first.at(-1);
  assert.ok(failed?.type === "finish" && failed.reason === "error");
  assert.match(failed.error?.message ?? "", /OPENAI_API_KEY/);
  assert.deepEqual(seen, [], "no request without a key");
  vars.OPENAI_API_KEY = "sk-later";
  const second = await collect(provider, "gpt-x");
  assert.deepEqual(seen, [["https://api.openai.com/v1/chat/completions", "Bearer sk-later"]]);
  const last = second.at(-1);
  assert.ok(last?.type === "finish" && last.reason === "error");
  assert.equal(last.error?.kind, "auth");
  assert.doesNotMatch(last.error?.message ?? "", /OPENAI_API_KEY/);
});

Deno.test("ModelCatalog.resolve() does not need a key for keyless providers", async () => {
  const seen: string[] = [];
  const catalog = new ModelCatalog({
    providers: { local: spec({ api: "anthropic-messages", baseUrl: "http://127.0.0.1:9" }) },
    fetch: (input) => {
      seen.push(String(input));
      return Promise.resolve(new Response("nope", { status: 500 }));
    },
  });
  const { provider } = catalog.resolve("local/m");
  assert.equal(provider.id, "local");
  const events = await collect(provider, "m");
  assert.deepEqual(seen, ["http://127.0.0.1:9/v1/messages"]);
  assert.equal(events.at(-1)?.type, "finish");
});

Deno.test("ModelCatalog.resolve() reuses one provider instance per provider", () => {
  const catalog = new ModelCatalog({
    script: SCRIPT,
    providers: builtinProviders(envOf({ OPENAI_API_KEY: "sk" })),
    fetch: NO_FETCH,
  });
  const a = catalog.resolve("openai/gpt-a");
  const b = catalog.resolve("openai/gpt-b");
  assert.equal(a.provider, b.provider);
  assert.equal(a.info.model, "gpt-a");
  assert.equal(b.info.model, "gpt-b");
  assert.notEqual(catalog.resolve("anthropic/claude").provider, a.provider);
  assert.equal(catalog.resolve("echo").provider, catalog.resolve("echo").provider);
  assert.equal(catalog.resolve("scripted").provider, catalog.resolve("scripted").provider);
});
