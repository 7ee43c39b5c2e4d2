import assert from "node:assert/strict";
import { ModelCatalog, type ModelInfo } from "../../src/llm/catalog.ts";
import { BUILTIN_MODELS, builtinProviders, type ProviderSpec } from "../../src/llm/presets.ts";
import type { LlmEvent, LlmProvider, LlmRequest } from "../../src/llm/provider.ts";
import { parseScript } from "../../src/llm/scripted.ts";
import { createLogger } from "../../src/log/logger.ts";

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
    assert.match(error.message, /expected one of echo, scripted, /);
    assert.match(error.message, /openai, anthropic, deepseek, ollama/);
    return true;
  });
  // Without a script or providers, scripted is still named (with what it needs).
  assert.throws(() => new ModelCatalog().resolve("openai/gpt-4o"), (error: unknown) => {
    assert.ok(error instanceof RangeError);
    assert.equal(
      error.message,
      'Unknown model "openai/gpt-4o": expected one of echo, scripted (with --script) ' +
        '(run "acp-harness models" to list them)',
    );
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

// The model picker per provider key (issue 7, defect 9)

Deno.test("ModelCatalog offers the OpenAI preset models when OPENAI_API_KEY is set", () => {
  const catalog = new ModelCatalog({
    providers: builtinProviders(envOf({ OPENAI_API_KEY: "sk-openai" })),
    fetch: NO_FETCH,
  });
  const openai = ids(catalog).filter((id) => id.startsWith("openai/"));
  assert.ok(openai.length >= 2, JSON.stringify(ids(catalog)));
  assert.ok(openai.includes("openai/gpt-5"));
  for (const id of openai) assert.ok(catalog.info(id)?.contextWindow, id);
});

Deno.test("ModelCatalog offers the Anthropic and DeepSeek preset models when their keys are set", () => {
  const catalog = new ModelCatalog({
    providers: builtinProviders(envOf({ ANTHROPIC_API_KEY: "a", DEEPSEEK_API_KEY: "d" })),
  });
  const providers = new Set(catalog.list().map((model) => model.provider));
  assert.deepEqual([...providers], ["echo", "anthropic", "deepseek"]);
});

// known()

Deno.test("ModelCatalog.known() lists every known model with whether it can be used now", () => {
  const catalog = new ModelCatalog({
    providers: builtinProviders(envOf({ DEEPSEEK_API_KEY: "d" })),
    env: envOf({ DEEPSEEK_API_KEY: "d" }),
  });
  const known = catalog.known();
  const byId = new Map(known.map((model) => [model.id, model]));
  assert.equal(byId.get("echo")?.available, true);
  assert.equal(byId.get("echo")?.offered, true);
  assert.deepEqual(
    [byId.get("scripted")?.available, byId.get("scripted")?.reason],
    [false, "needs --script"],
  );
  const gpt = byId.get("openai/gpt-5");
  assert.deepEqual([gpt?.available, gpt?.offered, gpt?.reason], [
    false,
    false,
    "OPENAI_API_KEY is not set",
  ]);
  assert.equal(byId.get("deepseek/deepseek-v4-pro")?.available, true);
  // Offered models come first, in the picker's order.
  assert.deepEqual(
    known.filter((model) => model.offered).map((model) => model.id),
    ids(catalog),
  );
  assert.deepEqual(known.slice(0, ids(catalog).length).map((model) => model.id), ids(catalog));
});

Deno.test("ModelCatalog.known() says a keyless provider needs its host variable", () => {
  const catalog = new ModelCatalog({
    providers: builtinProviders(envOf({})),
    models: { "ollama/qwen3-coder": { contextWindow: 65_536 } },
  });
  const ollama = catalog.known().find((model) => model.id === "ollama/qwen3-coder");
  assert.deepEqual([ollama?.available, ollama?.reason], [false, "OLLAMA_HOST is not set"]);
});

// The unknown-model message

Deno.test("ModelCatalog.resolve() names every valid choice for an unknown model", () => {
  const catalog = new ModelCatalog({
    providers: builtinProviders(envOf({ OPENAI_API_KEY: "sk" })),
  });
  assert.throws(() => catalog.resolve("gpt-none"), (error: unknown) => {
    assert.ok(error instanceof RangeError);
    assert.match(error.message, /^Unknown model "gpt-none": expected one of echo, scripted /);
    for (const id of ids(catalog)) assert.ok(error.message.includes(id), id);
    assert.match(error.message, /<provider>\/<model> with provider one of openai, anthropic/);
    return true;
  });
});

// discover()

/** A fake Ollama on loopback answering /api/tags with `models`. */
function fakeOllama(
  answer: (url: URL) => Response,
): { url: string; requests: string[]; close(): Promise<void> } {
  const requests: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const url = new URL(request.url);
    requests.push(`${request.method} ${url.pathname}`);
    return answer(url);
  });
  return {
    url: `127.0.0.1:${server.addr.port}`,
    requests,
    close: () => server.shutdown(),
  };
}

Deno.test("ModelCatalog.discover() offers the models Ollama lists at OLLAMA_HOST", async () => {
  const ollama = fakeOllama(() =>
    Response.json({
      models: [
        { name: "qwen3-coder:latest", model: "qwen3-coder:latest", size: 1 },
        { name: "llama3.2:3b", model: "llama3.2:3b", size: 2 },
      ],
    })
  );
  try {
    const env = envOf({ OLLAMA_HOST: ollama.url });
    const lines: string[] = [];
    const catalog = new ModelCatalog({
      providers: builtinProviders(env),
      env,
      logger: createLogger("info", (line) => lines.push(line)),
    });
    assert.deepEqual(ids(catalog), ["echo"]);
    const results = await catalog.discover();
    assert.equal(results.length, 1);
    assert.deepEqual(results[0]?.models, ["ollama/qwen3-coder", "ollama/llama3.2:3b"]);
    assert.deepEqual(ids(catalog), ["echo", "ollama/qwen3-coder", "ollama/llama3.2:3b"]);
    assert.deepEqual(ollama.requests, ["GET /api/tags"]);
    assert.equal(catalog.info("ollama/qwen3-coder")?.contextWindow, 4_096);
    assert.ok(catalog.known().find((model) => model.id === "ollama/llama3.2:3b")?.available);
    // Asking again adds nothing twice.
    await catalog.discover();
    assert.deepEqual(ids(catalog), ["echo", "ollama/qwen3-coder", "ollama/llama3.2:3b"]);
    assert.match(lines.join(""), /info: models listed \{"provider":"ollama","count":2,/);
  } finally {
    await ollama.close();
  }
});

Deno.test("ModelCatalog.discover() contacts nothing when OLLAMA_HOST is not set", async () => {
  const catalog = new ModelCatalog({
    providers: builtinProviders(envOf({ OPENAI_API_KEY: "sk" })),
    fetch: NO_FETCH,
  });
  assert.deepEqual(await catalog.discover(), []);
});

Deno.test("ModelCatalog.discover() names the cause of a refused connection, not 'fetch failed'", async () => {
  const ollama = fakeOllama(() => Response.json({ models: [] }));
  const address = ollama.url;
  await ollama.close();
  const env = envOf({ OLLAMA_HOST: address });
  const catalog = new ModelCatalog({ providers: builtinProviders(env), env });
  const [result] = await catalog.discover({ timeoutMs: 5_000 });
  assert.match(String(result?.error), /refused/i);
  assert.doesNotMatch(String(result?.error), /^fetch failed$/);
});

Deno.test("ModelCatalog.discover() reports a failing server and never throws", async () => {
  const ollama = fakeOllama(() => new Response("boom", { status: 500 }));
  const lines: string[] = [];
  try {
    const env = envOf({ OLLAMA_HOST: `http://${ollama.url}` });
    const catalog = new ModelCatalog({
      providers: builtinProviders(env),
      logger: createLogger("warn", (line) => lines.push(line)),
    });
    const [result] = await catalog.discover();
    assert.equal(result?.provider, "ollama");
    assert.equal(result?.error, "HTTP 500");
    assert.deepEqual(ids(catalog), ["echo"]);
    assert.match(lines.join(""), /warn: cannot list models \{"provider":"ollama"/);
  } finally {
    await ollama.close();
  }
  // A fetch that never answers is cut off by the timeout.
  const hung = new ModelCatalog({
    providers: builtinProviders(envOf({ OLLAMA_HOST: "127.0.0.1:9" })),
    fetch: (_input, init) =>
      new Promise((_resolve, reject) =>
        init?.signal?.addEventListener("abort", () => reject(init.signal?.reason), { once: true })
      ),
  });
  const [timedOut] = await hung.discover({ timeoutMs: 20 });
  assert.equal(timedOut?.error, "no answer within 20 ms");
});

// Logging of model requests

Deno.test("ModelCatalog.resolve() logs each model request with its session, timing and outcome", async () => {
  const lines: string[] = [];
  const script = parseScript([
    { text: "secret answer", usage: { input: 12, output: 3 } },
    { error: { message: "overloaded", kind: "server", status: 529, retryable: true } },
  ]);
  const catalog = new ModelCatalog({
    script,
    logger: createLogger("debug", (line) => lines.push(line)),
  });
  const { provider } = catalog.resolve("scripted");
  const signal = new AbortController().signal;
  const secretRequest: LlmRequest = {
    ...request("scripted"),
    sessionId: "sess-1",
    system: "secret system prompt",
    messages: [{ role: "user", content: [{ type: "text", text: "secret prompt" }] }],
  };
  await Array.fromAsync(provider.stream(secretRequest, { signal, attempt: 1 }));
  await Array.fromAsync(provider.stream(secretRequest, { signal, attempt: 2 }));
  const entries = lines.map((line) => {
    const match = /^acp-harness (\w+): ([^{]+?) (\{.*\})\n$/.exec(line);
    assert.ok(match, line);
    return { level: match[1], message: match[2], fields: JSON.parse(match[3] as string) };
  });
  assert.deepEqual(entries.map(({ level, message }) => `${level} ${message}`), [
    "debug model request",
    "debug model response",
    "debug model request",
    "debug model response",
  ]);
  const [start, done, , failed] = entries;
  assert.deepEqual(start?.fields, {
    sessionId: "sess-1",
    provider: "scripted",
    model: "scripted",
    attempt: 1,
    messages: 1,
    tools: 0,
  });
  assert.equal(done?.fields.finish, "stop");
  assert.deepEqual(done?.fields.usage, { input: 12, output: 3 });
  assert.equal(typeof done?.fields.ms, "number");
  assert.equal(failed?.fields.sessionId, "sess-1");
  assert.equal(failed?.fields.attempt, 2);
  assert.equal(failed?.fields.kind, "server");
  assert.equal(failed?.fields.status, 529);
  assert.equal(failed?.fields.retryable, true);
  assert.equal(failed?.fields.error, "overloaded");
  assert.doesNotMatch(lines.join(""), /secret/);
});

Deno.test("ModelCatalog.resolve() logs a network provider's failure without the API key", async () => {
  const lines: string[] = [];
  const env = envOf({ OPENAI_API_KEY: "sk-very-secret-key" });
  const catalog = new ModelCatalog({
    providers: builtinProviders(env),
    env,
    logger: createLogger("debug", (line) => lines.push(line)),
    fetch: () =>
      Promise.resolve(
        Response.json({ error: { message: "bad key sk-very-secret-key" } }, { status: 401 }),
      ),
  });
  const { provider } = catalog.resolve("openai/gpt-5");
  await collect(provider, "gpt-5");
  const text = lines.join("");
  assert.match(text, /debug: model response .*"finish":"error","kind":"auth","status":401/);
  assert.doesNotMatch(text, /sk-very-secret-key/);
});
