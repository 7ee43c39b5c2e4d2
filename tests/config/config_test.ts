import assert from "node:assert/strict";
import {
  BOOLEAN_WORDS,
  type Config,
  ConfigError,
  configFromEnv,
  configFromFile,
  DEFAULT_CONFIG,
  mergeConfig,
  SETTINGS,
} from "../../src/config/config.ts";
import { type Command, parseArgs } from "../../src/config/args.ts";
import { flagTerm, shownDefault, USAGE } from "../../src/config/usage.ts";

/** The overrides of a `serve` command; fails for any other command. */
function overrides(command: Command): Partial<Config> {
  assert.equal(command.kind, "serve");
  return (command as Extract<Command, { kind: "serve" }>).overrides;
}

/** Asserts that `fn` throws a ConfigError whose message contains every string in `parts`. */
function assertConfigError(fn: () => unknown, ...parts: string[]): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof ConfigError, `expected ConfigError, got ${String(error)}`);
    assert.ok(error instanceof TypeError);
    assert.equal(error.name, "ConfigError");
    for (const part of parts) {
      assert.ok(error.message.includes(part), `"${error.message}" does not mention "${part}"`);
    }
    return true;
  });
}

/** An env lookup over a record. */
function envOf(vars: Record<string, string>): (name: string) => string | undefined {
  return (name) => vars[name];
}

// parseArgs

Deno.test("parseArgs() returns serve with no overrides for no arguments", () => {
  assert.deepEqual(parseArgs([]), { kind: "serve", overrides: {} });
});

Deno.test("parseArgs() returns help for --help and -h", () => {
  assert.deepEqual(parseArgs(["--help"]), { kind: "help" });
  assert.deepEqual(parseArgs(["-h"]), { kind: "help" });
  assert.deepEqual(parseArgs(["--model", "x", "-h"]), { kind: "help" });
});

Deno.test("parseArgs() returns version for --version and -V", () => {
  assert.deepEqual(parseArgs(["--version"]), { kind: "version" });
  assert.deepEqual(parseArgs(["-V"]), { kind: "version" });
  assert.deepEqual(parseArgs(["--stream", "-V"]), { kind: "version" });
});

Deno.test("parseArgs() stops at help before validating later arguments", () => {
  assert.deepEqual(parseArgs(["--help", "--bogus"]), { kind: "help" });
});

const FLAG_CASES: ReadonlyArray<readonly [string, string, Partial<Config>]> = [
  ["--model", "openai/gpt-4o", { model: "openai/gpt-4o" }],
  ["--mode", "auto", { mode: "auto" }],
  ["--mode", "read-only", { mode: "read-only" }],
  ["--mode", "ask", { mode: "ask" }],
  ["--script", "steps.json", { script: "steps.json" }],
  ["--max-steps", "7", { maxSteps: 7 }],
  ["--max-message-bytes", "4096", { maxMessageBytes: 4096 }],
  ["--data-dir", "/var/lib/acp", { dataDir: "/var/lib/acp" }],
  ["--config", "conf.json", { configFile: "conf.json" }],
  ["--log-level", "debug", { logLevel: "debug" }],
  ["--log-level", "error", { logLevel: "error" }],
];

Deno.test("parseArgs() reads every value flag given as `--flag value`", () => {
  for (const [flag, value, expected] of FLAG_CASES) {
    assert.deepEqual(overrides(parseArgs([flag, value])), expected, `${flag} ${value}`);
  }
});

Deno.test("parseArgs() reads every value flag given as `--flag=value`", () => {
  for (const [flag, value, expected] of FLAG_CASES) {
    assert.deepEqual(overrides(parseArgs([`${flag}=${value}`])), expected, `${flag}=${value}`);
  }
});

Deno.test("parseArgs() keeps everything after the first `=` in the value", () => {
  assert.deepEqual(overrides(parseArgs(["--model=a=b"])), { model: "a=b" });
});

Deno.test("parseArgs() combines several flags and the last one wins", () => {
  assert.deepEqual(
    overrides(parseArgs([
      "--model",
      "a",
      "--mode=auto",
      "--stream",
      "--max-steps",
      "3",
      "--model=b",
    ])),
    { model: "b", mode: "auto", stream: true, maxSteps: 3 },
  );
});

Deno.test("parseArgs() sets stream for --stream and reads --stream=<boolean>", () => {
  assert.deepEqual(overrides(parseArgs(["--stream"])), { stream: true });
  for (const value of ["true", "1", "yes", "on", "TRUE"]) {
    assert.deepEqual(overrides(parseArgs([`--stream=${value}`])), { stream: true }, value);
  }
  for (const value of ["false", "0", "no", "off", "Off"]) {
    assert.deepEqual(overrides(parseArgs([`--stream=${value}`])), { stream: false }, value);
  }
});

Deno.test("parseArgs() does not consume the next argument after --stream", () => {
  assertConfigError(() => parseArgs(["--stream", "true"]), `Unexpected argument "true"`);
});

Deno.test("parseArgs() rejects a bad --stream value naming the flag", () => {
  assertConfigError(
    () => parseArgs(["--stream=maybe"]),
    `"maybe"`,
    `"--stream"`,
    "expected one of true, false, 1, 0, yes, no, on, off",
  );
});

Deno.test("parseArgs() rejects an unknown flag naming it", () => {
  assertConfigError(() => parseArgs(["--bogus"]), `Unknown option "--bogus"`);
  assertConfigError(() => parseArgs(["--bogus=1"]), `Unknown option "--bogus"`);
  assertConfigError(() => parseArgs(["-x"]), `Unknown option "-x"`);
  assertConfigError(
    () => parseArgs(["--mdoel", "echo"]),
    `Unknown option "--mdoel" (did you mean "--model"?)`,
  );
  assertConfigError(() => parseArgs(["--verison"]), `(did you mean "--version"?)`);
  assert.throws(() => parseArgs(["--bogus"]), (error: Error) => !error.message.includes("mean"));
});

Deno.test("parseArgs() rejects an unexpected positional argument naming it", () => {
  assertConfigError(() => parseArgs(["serve-me"]), `Unexpected argument "serve-me"`);
  assertConfigError(
    () => parseArgs(["--model", "a", "extra"]),
    `Unexpected argument "extra"`,
  );
});

Deno.test("parseArgs() rejects a value flag without a value naming the flag", () => {
  for (const flag of ["--model", "--mode", "--max-steps", "--config", "--log-level"]) {
    assertConfigError(() => parseArgs([flag]), `Option "${flag}" needs a value`);
    assertConfigError(() => parseArgs([`${flag}=`]), `Option "${flag}" needs a value`);
    assertConfigError(() => parseArgs([flag, ""]), `Option "${flag}" needs a value`);
  }
});

Deno.test("parseArgs() rejects a bad --mode naming the flag and the accepted modes", () => {
  assertConfigError(
    () => parseArgs(["--mode", "yolo"]),
    `"yolo"`,
    `"--mode"`,
    "ask, auto, read-only",
  );
  assertConfigError(() => parseArgs(["--mode=AUTO"]), `"AUTO"`, `"--mode"`);
});

Deno.test("parseArgs() rejects a bad --log-level naming the flag and the accepted levels", () => {
  assertConfigError(
    () => parseArgs(["--log-level", "trace"]),
    `"trace"`,
    `"--log-level"`,
    "error, warn, info, debug",
  );
});

Deno.test("parseArgs() rejects --max-steps values that are not positive integers", () => {
  for (const value of ["0", "-1", "1.5", "abc", "1e3", " 5", "0x10", "99999999999999999999"]) {
    assertConfigError(
      () => parseArgs(["--max-steps", value]),
      `"${value}"`,
      `"--max-steps"`,
      "positive integer",
    );
  }
});

Deno.test("parseArgs() rejects --max-message-bytes values that are not positive integers", () => {
  for (const value of ["0", "-5", "2.5", "32MiB"]) {
    assertConfigError(
      () => parseArgs([`--max-message-bytes=${value}`]),
      `"${value}"`,
      `"--max-message-bytes"`,
      "positive integer",
    );
  }
});

// configFromEnv

Deno.test("configFromEnv() returns nothing when no variable is set", () => {
  assert.deepEqual(configFromEnv(() => undefined), {});
});

Deno.test("configFromEnv() reads every ACP_HARNESS_* variable", () => {
  const cases: ReadonlyArray<readonly [string, string, Partial<Config>]> = [
    ["ACP_HARNESS_MODEL", "anthropic/claude", { model: "anthropic/claude" }],
    ["ACP_HARNESS_MODE", "read-only", { mode: "read-only" }],
    ["ACP_HARNESS_STREAM", "1", { stream: true }],
    ["ACP_HARNESS_STREAM", "off", { stream: false }],
    ["ACP_HARNESS_SCRIPT", "/tmp/script.json", { script: "/tmp/script.json" }],
    ["ACP_HARNESS_MAX_STEPS", "12", { maxSteps: 12 }],
    ["ACP_HARNESS_MAX_MESSAGE_BYTES", "1024", { maxMessageBytes: 1024 }],
    ["ACP_HARNESS_HOME", "/home/me/.acp", { dataDir: "/home/me/.acp" }],
    ["ACP_HARNESS_CONFIG", "/etc/acp.json", { configFile: "/etc/acp.json" }],
    ["ACP_HARNESS_LOG_LEVEL", "info", { logLevel: "info" }],
  ];
  for (const [name, value, expected] of cases) {
    assert.deepEqual(configFromEnv(envOf({ [name]: value })), expected, `${name}=${value}`);
  }
});

Deno.test("configFromEnv() reads all variables together", () => {
  assert.deepEqual(
    configFromEnv(envOf({
      ACP_HARNESS_MODEL: "m",
      ACP_HARNESS_MODE: "auto",
      ACP_HARNESS_STREAM: "true",
      ACP_HARNESS_MAX_STEPS: "2",
      UNRELATED: "x",
    })),
    { model: "m", mode: "auto", stream: true, maxSteps: 2 },
  );
});

Deno.test("configFromEnv() ignores empty variables", () => {
  assert.deepEqual(
    configFromEnv(envOf({
      ACP_HARNESS_MODEL: "",
      ACP_HARNESS_MODE: "",
      ACP_HARNESS_STREAM: "",
      ACP_HARNESS_MAX_STEPS: "",
      ACP_HARNESS_LOG_LEVEL: "",
    })),
    {},
  );
});

Deno.test("configFromEnv() rejects a bad value naming the variable", () => {
  const cases: ReadonlyArray<readonly [string, string, string]> = [
    ["ACP_HARNESS_MODE", "yolo", "ask, auto, read-only"],
    ["ACP_HARNESS_STREAM", "banana", "expected one of true, false, 1, 0, yes, no, on, off"],
    ["ACP_HARNESS_MAX_STEPS", "0", "positive integer"],
    ["ACP_HARNESS_MAX_MESSAGE_BYTES", "big", "positive integer"],
    ["ACP_HARNESS_LOG_LEVEL", "loud", "error, warn, info, debug"],
  ];
  for (const [name, value, expected] of cases) {
    assertConfigError(
      () => configFromEnv(envOf({ [name]: value })),
      `${name}:`,
      `"${value}"`,
      expected,
    );
  }
});

// configFromFile

Deno.test("configFromFile() returns nothing for an empty object", () => {
  assert.deepEqual(configFromFile({}, "c.json"), {});
});

Deno.test("configFromFile() reads every key", () => {
  const json = {
    $schema: "https://example.com/schema.json",
    model: "ollama/llama",
    script: "s.json",
    dataDir: "/data",
    mode: "auto",
    logLevel: "debug",
    stream: true,
    maxSteps: 9,
    permissionTimeout: 30,
    maxMessageBytes: 2048,
    sessionListPageSize: 20,
  };
  assert.deepEqual(configFromFile(json, "c.json"), {
    model: "ollama/llama",
    script: "s.json",
    dataDir: "/data",
    mode: "auto",
    logLevel: "debug",
    stream: true,
    maxSteps: 9,
    permissionTimeout: 30,
    maxMessageBytes: 2048,
    sessionListPageSize: 20,
  });
  assert.deepEqual(configFromFile({ stream: false }, "c.json"), { stream: false });
});

Deno.test("configFromFile() rejects a value that is not a JSON object naming the file", () => {
  for (const json of [null, [], "text", 3, true]) {
    assertConfigError(
      () => configFromFile(json, "/etc/acp.json"),
      `"/etc/acp.json"`,
      "expected a JSON object",
    );
  }
});

Deno.test("configFromFile() rejects an unknown key naming it and the file", () => {
  assertConfigError(
    () => configFromFile({ model: "m", modle: "typo" }, "c.json"),
    `"c.json"`,
    `unknown key "modle" (did you mean "model"?)`,
  );
  // configFile is a flag/env setting, not a file key.
  assertConfigError(() => configFromFile({ configFile: "x" }, "c.json"), `"configFile"`);
});

Deno.test("configFromFile() rejects values of the wrong type naming the key", () => {
  const cases: ReadonlyArray<readonly [Record<string, unknown>, string, string]> = [
    [{ model: 3 }, "model", "a non-empty string"],
    [{ model: "" }, "model", "a non-empty string"],
    [{ script: null }, "script", "a non-empty string"],
    [{ dataDir: ["/a"] }, "dataDir", "a non-empty string"],
    [{ mode: "yolo" }, "mode", "one of ask, auto, read-only"],
    [{ logLevel: 1 }, "logLevel", "one of error, warn, info, debug"],
    [{ stream: "true" }, "stream", "true or false"],
    [{ maxSteps: 0 }, "maxSteps", "a positive integer"],
    [{ maxSteps: 2.5 }, "maxSteps", "a positive integer"],
    [{ maxSteps: "5" }, "maxSteps", "a positive integer"],
    [{ maxMessageBytes: -1 }, "maxMessageBytes", "a positive integer"],
    [{ permissionTimeout: 0 }, "permissionTimeout", "a positive integer"],
    [{ sessionListPageSize: true }, "sessionListPageSize", "a positive integer"],
    // Beyond Number.MAX_SAFE_INTEGER, as the flags and variables already refuse.
    [{ maxMessageBytes: 1e300 }, "maxMessageBytes", "a positive integer"],
  ];
  for (const [json, key, expected] of cases) {
    assertConfigError(
      () => configFromFile(json, "c.json"),
      `Cannot read config file "c.json"`,
      `"${key}" must be ${expected}`,
    );
  }
});

// mergeConfig

Deno.test("mergeConfig() returns the defaults with no sources", () => {
  assert.deepEqual(mergeConfig(), DEFAULT_CONFIG);
  assert.notEqual(mergeConfig(), DEFAULT_CONFIG);
});

Deno.test("mergeConfig() applies defaults < file < env < flags", () => {
  const file = configFromFile(
    { model: "file-model", mode: "read-only", maxSteps: 5, logLevel: "info" },
    "c.json",
  );
  const env = configFromEnv(envOf({ ACP_HARNESS_MODE: "auto", ACP_HARNESS_MAX_STEPS: "6" }));
  const flags = overrides(parseArgs(["--max-steps", "7", "--stream"]));
  assert.deepEqual(mergeConfig(file, env, flags), {
    ...DEFAULT_CONFIG,
    model: "file-model",
    mode: "auto",
    maxSteps: 7,
    logLevel: "info",
    stream: true,
  });
});

Deno.test("mergeConfig() does not let undefined override an earlier value", () => {
  const merged = mergeConfig(
    { model: "kept", dataDir: "/kept" },
    { model: undefined, dataDir: undefined } as unknown as Partial<Config>,
  );
  assert.equal(merged.model, "kept");
  assert.equal(merged.dataDir, "/kept");
  assert.equal(mergeConfig({ maxSteps: undefined } as unknown as Partial<Config>).maxSteps, 50);
});

Deno.test("mergeConfig() lets false and later values override", () => {
  const merged = mergeConfig({ stream: true }, { stream: false });
  assert.equal(merged.stream, false);
});

Deno.test("mergeConfig() does not mutate DEFAULT_CONFIG", () => {
  const before = { ...DEFAULT_CONFIG };
  mergeConfig({ model: "changed", maxSteps: 1 });
  assert.deepEqual(DEFAULT_CONFIG, before);
});

// configFromFile: providers and models

Deno.test("configFromFile() reads the providers section", () => {
  const providers = {
    local: { api: "openai-chat", baseUrl: "http://127.0.0.1:8080/v1" },
    "corp-proxy.eu": {
      api: "anthropic-messages",
      baseUrl: "https://llm.example.com/anthropic",
      apiKeyEnv: "CORP_LLM_KEY",
      headers: { "x-team": "tools" },
    },
    openai: {
      api: "openai-chat",
      baseUrl: "https://api.openai.com/v1",
      apiKeyEnv: "OPENAI_API_KEY",
      maxTokensField: "max_tokens",
    },
  };
  assert.deepEqual(configFromFile({ providers }, "c.json"), { providers });
  assert.deepEqual(configFromFile({ providers: {} }, "c.json"), { providers: {} });
});

Deno.test("configFromFile() reads the models section", () => {
  const models = {
    "local/llama": { name: "Llama", contextWindow: 8192, image: false },
    "anthropic/claude-next": {
      maxOutputTokens: 64_000,
      image: true,
      reasoningEfforts: ["low", "high"],
      defaultReasoningEffort: "high",
      pricing: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
    },
    "openai/free": { pricing: { input: 0, output: 0 } },
    "deepseek/x": {},
  };
  assert.deepEqual(configFromFile({ models }, "c.json"), { models });
});

Deno.test("mergeConfig() defaults providers and models to empty and takes the file's", () => {
  const merged = mergeConfig();
  assert.deepEqual(merged.providers, {});
  assert.deepEqual(merged.models, {});
  const file = configFromFile({
    providers: { local: { api: "openai-chat", baseUrl: "http://127.0.0.1:1/v1" } },
    models: { "local/m": { name: "M" } },
  }, "c.json");
  assert.deepEqual(mergeConfig(file).providers, {
    local: { api: "openai-chat", baseUrl: "http://127.0.0.1:1/v1" },
  });
  assert.deepEqual(mergeConfig(file).models, { "local/m": { name: "M" } });
});

Deno.test("configFromFile() rejects a bad provider naming the path", () => {
  const good = { api: "openai-chat", baseUrl: "http://127.0.0.1:8080/v1" };
  const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
    [{ local: { ...good, api: "gemini" } }, "providers.local.api"],
    [{ local: { baseUrl: good.baseUrl } }, "providers.local.api"],
    [{ local: { ...good, baseUrl: "not a url" } }, "providers.local.baseUrl"],
    [{ local: { ...good, baseUrl: "ftp://127.0.0.1/v1" } }, "providers.local.baseUrl"],
    [{ local: { ...good, baseUrl: 8080 } }, "providers.local.baseUrl"],
    [{ local: { api: "openai-chat" } }, "providers.local.baseUrl"],
    [{ local: { ...good, apiKeyEnv: "MY-KEY" } }, "providers.local.apiKeyEnv"],
    [{ local: { ...good, apiKeyEnv: "1KEY" } }, "providers.local.apiKeyEnv"],
    [{ local: { ...good, apiKeyEnv: "" } }, "providers.local.apiKeyEnv"],
    [{ local: { ...good, apiKeyEnv: "$KEY" } }, "providers.local.apiKeyEnv"],
    [{ local: { ...good, headers: { "x-a": 1 } } }, "providers.local.headers.x-a"],
    [{ local: { ...good, maxTokensField: "max_output_tokens" } }, "providers.local.maxTokensField"],
    [{ local: { ...good, apiKey: "sk-inline" } }, "providers.local"],
    [{ local: "http://127.0.0.1:8080" }, "providers.local"],
  ];
  for (const [providers, path] of cases) {
    assertConfigError(
      () => configFromFile({ providers }, "c.json"),
      `Cannot read config file "c.json"`,
      `"${path}"`,
    );
  }
});

Deno.test("configFromFile() names an unknown provider key", () => {
  assertConfigError(
    () =>
      configFromFile({
        providers: {
          local: { api: "openai-chat", baseUrl: "http://127.0.0.1:1", apiKey: "sk-x" },
        },
      }, "c.json"),
    `"providers.local"`,
    "apiKey",
  );
});

Deno.test("configFromFile() rejects bad provider ids", () => {
  const provider = { api: "openai-chat", baseUrl: "http://127.0.0.1:1" };
  for (const id of ["Local", "my provider", "a/b", "-x", ""]) {
    assertConfigError(
      () => configFromFile({ providers: { [id]: provider } }, "c.json"),
      `Cannot read config file "c.json"`,
      `"providers`,
    );
  }
});

Deno.test("configFromFile() rejects sections that are not objects", () => {
  for (const key of ["providers", "models"]) {
    for (const value of [[], "x", null, 3]) {
      assertConfigError(
        () => configFromFile({ [key]: value }, "c.json"),
        `Cannot read config file "c.json"`,
        `"${key}"`,
      );
    }
  }
});

Deno.test("configFromFile() rejects bad model facts naming the path", () => {
  const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
    [{ "local/m": { contextWindow: 0 } }, "models.local/m.contextWindow"],
    [{ "local/m": { contextWindow: 1.5 } }, "models.local/m.contextWindow"],
    [{ "local/m": { maxOutputTokens: -1 } }, "models.local/m.maxOutputTokens"],
    [{ "local/m": { image: "yes" } }, "models.local/m.image"],
    [{ "local/m": { name: "" } }, "models.local/m.name"],
    [{ "local/m": { reasoningEfforts: [] } }, "models.local/m.reasoningEfforts"],
    [{ "local/m": { reasoningEfforts: ["low", ""] } }, "models.local/m.reasoningEfforts.1"],
    [{ "local/m": { pricing: { input: 1 } } }, "models.local/m.pricing.output"],
    [{ "local/m": { pricing: { input: -1, output: 1 } } }, "models.local/m.pricing.input"],
    [{ "local/m": { pricing: { input: 1, output: 1, cached: 1 } } }, "models.local/m.pricing"],
    [{ "local/m": { vision: true } }, "models.local/m"],
    [{ "local/m": "fast" }, "models.local/m"],
  ];
  for (const [models, path] of cases) {
    assertConfigError(
      () => configFromFile({ models }, "c.json"),
      `Cannot read config file "c.json"`,
      `"${path}"`,
    );
  }
});

Deno.test("configFromFile() rejects a defaultReasoningEffort outside reasoningEfforts", () => {
  assertConfigError(
    () =>
      configFromFile({
        models: {
          "local/m": { reasoningEfforts: ["low", "high"], defaultReasoningEffort: "medium" },
        },
      }, "c.json"),
    `"models.local/m.defaultReasoningEffort"`,
    "reasoningEfforts",
  );
  assertConfigError(
    () => configFromFile({ models: { "local/m": { defaultReasoningEffort: "high" } } }, "c.json"),
    `"models.local/m.defaultReasoningEffort"`,
  );
  assert.deepEqual(
    configFromFile({
      models: { "local/m": { reasoningEfforts: ["low", "high"], defaultReasoningEffort: "low" } },
    }, "c.json"),
    {
      models: { "local/m": { reasoningEfforts: ["low", "high"], defaultReasoningEffort: "low" } },
    },
  );
});

// The models command and the usage text (issue 7, defect 9)

Deno.test("parseArgs() reads the models command with --json and the other flags", () => {
  assert.deepEqual(parseArgs(["models"]), { kind: "models", json: false, overrides: {} });
  assert.deepEqual(parseArgs(["models", "--json", "--script", "s.json"]), {
    kind: "models",
    json: true,
    overrides: { script: "s.json" },
  });
  assert.deepEqual(parseArgs(["models", "--help"]), { kind: "help" });
});

Deno.test("parseArgs() reads copy-sessions with --from and --to, both required, only there", () => {
  assert.deepEqual(
    parseArgs([
      "copy-sessions",
      "--from",
      "./data",
      "--to=postgres://acp@db/acp",
      "--lease-ttl",
      "5",
    ]),
    {
      kind: "copy-sessions",
      from: "./data",
      to: "postgres://acp@db/acp",
      overrides: { leaseTtl: 5 },
    },
  );
  assertConfigError(() => parseArgs(["copy-sessions", "--from", "a"]), "--to <url-or-dir>");
  assertConfigError(() => parseArgs(["copy-sessions", "--to", "b"]), "--from <url-or-dir>");
  assertConfigError(() => parseArgs(["copy-sessions", "--from", "--to", "b"]), `"--from" needs`);
  assertConfigError(() => parseArgs(["--from", "a"]), `"--from"`, "copy-sessions");
  assertConfigError(() => parseArgs(["models", "--to", "a"]), `"--to"`, "copy-sessions");
});

Deno.test("parseArgs() and configFromEnv() read the store and the lease time", () => {
  const command = parseArgs(["--store", "postgres://acp:pw@db/acp", "--lease-ttl=2"]);
  assert.ok(command.kind === "serve");
  assert.deepEqual(command.overrides, { store: "postgres://acp:pw@db/acp", leaseTtl: 2 });
  assert.deepEqual(
    configFromEnv(envOf({ ACP_HARNESS_STORE: "/srv/acp", ACP_HARNESS_LEASE_TTL: "10" })),
    { store: "/srv/acp", leaseTtl: 10 },
  );
  assert.equal(mergeConfig().leaseTtl, 30);
  assert.equal(mergeConfig().store, undefined);
  assertConfigError(() => parseArgs(["--lease-ttl", "0"]), "--lease-ttl");
});

Deno.test("parseArgs() accepts models only as the first argument and --json only after it", () => {
  assertConfigError(() => parseArgs(["--stream", "models"]), `Unexpected argument "models"`);
  assertConfigError(() => parseArgs(["--json"]), `"--json"`, "models");
  assertConfigError(() => parseArgs(["models", "--json=1"]), `"--json" takes no value`);
  assertConfigError(() => parseArgs(["models", "extra"]), `Unexpected argument "extra"`);
});

Deno.test("parseArgs() and configFromEnv() accept exactly the boolean words they list", () => {
  assert.deepEqual(BOOLEAN_WORDS, ["true", "false", "1", "0", "yes", "no", "on", "off"]);
  for (const [index, word] of BOOLEAN_WORDS.entries()) {
    for (const spelled of [word, word.toUpperCase()]) {
      assert.deepEqual(configFromEnv(envOf({ ACP_HARNESS_STREAM: spelled })), {
        stream: index % 2 === 0,
      });
    }
  }
  for (const value of ["banana", "y", "n", "2", "enabled"]) {
    assertConfigError(
      () => configFromEnv(envOf({ ACP_HARNESS_STREAM: value })),
      `ACP_HARNESS_STREAM: Invalid value "${value}" for "ACP_HARNESS_STREAM": expected one of ` +
        BOOLEAN_WORDS.join(", "),
    );
  }
  assert.ok(USAGE.includes(BOOLEAN_WORDS.join(", ")), "the usage lists the same words");
});

Deno.test("USAGE lines up every option and command description in one column", () => {
  const lines = USAGE.split("\n");
  const entries = lines.filter((line) => /^ {2}-|^ {2}models/.test(line));
  assert.ok(entries.length >= 12, "every option and the models command");
  const columns = new Set(entries.map((line) => /^ {2}\S.*?\S {2,}(?=\S)/.exec(line)?.[0].length));
  assert.equal(columns.size, 1, `descriptions start in one column:\n${entries.join("\n")}`);
  const [column] = [...columns] as [number];
  for (const line of lines.slice(lines.indexOf("Commands:"))) {
    assert.ok(line.length <= 100, `line too long: ${line}`);
    // A continuation line starts in the description column.
    if (/^ {3,}\S/.test(line)) assert.equal(/^ */.exec(line)?.[0].length, column, line);
  }
  for (
    const flag of [
      "--model",
      "--mode",
      "--stream",
      "--script",
      "--max-steps",
      "--max-message-bytes",
      "--data-dir",
      "--config",
      "--log-level",
      "--help",
      "--version",
    ]
  ) {
    assert.ok(entries.some((line) => line.includes(flag)), flag);
  }
});

// The settings table (issue 8, item 6)

Deno.test("configFromEnv() names the variable, not a flag, in a bad value's message", () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["ACP_HARNESS_MODE", "yolo"],
    ["ACP_HARNESS_MAX_STEPS", "0"],
    ["ACP_HARNESS_LOG_LEVEL", "loud"],
    ["ACP_HARNESS_STREAM", "banana"],
  ];
  for (const [name, value] of cases) {
    assert.throws(() => configFromEnv(envOf({ [name]: value })), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.ok(error.message.startsWith(`${name}: Invalid value "${value}" for "${name}": `));
      assert.ok(!error.message.includes("--"), error.message);
      return true;
    });
  }
});

Deno.test("SETTINGS gives DEFAULT_CONFIG: one entry per Config field, with its default", () => {
  assert.deepEqual(
    Object.fromEntries(Object.entries(SETTINGS).map(([key, setting]) => [key, setting.default])),
    { ...DEFAULT_CONFIG },
  );
  assert.deepEqual(Object.keys(SETTINGS).sort(), Object.keys(DEFAULT_CONFIG).sort());
});

/**
 * The `@default {…}` of each field of the `Config` interface in src/config/config.ts, by field
 * name (`undefined` for a field without one).
 */
async function jsdocDefaults(): Promise<Map<string, string | undefined>> {
  const source = await Deno.readTextFile(new URL("../../src/config/config.ts", import.meta.url));
  const start = source.indexOf("export interface Config {");
  assert.notEqual(start, -1, "config.ts declares the Config interface");
  const body = source.slice(start, source.indexOf("\n}\n", start));
  const defaults = new Map<string, string | undefined>();
  for (const [, doc = "", field = ""] of body.matchAll(/\/\*\*([\s\S]*?)\*\/\s*readonly (\w+)/g)) {
    defaults.set(field, /@default \{(.*?)\}(?=\s|$)/.exec(doc)?.[1]);
  }
  return defaults;
}

Deno.test("Config's JSDoc @default of each field says what SETTINGS gives as its default", async () => {
  const defaults = await jsdocDefaults();
  assert.deepEqual([...defaults.keys()].sort(), Object.keys(SETTINGS).sort());
  for (const [key, setting] of Object.entries(SETTINGS)) {
    const documented = defaults.get(key);
    if (setting.default === undefined) {
      assert.equal(documented, undefined, `${key} has no default, and its JSDoc names none`);
      continue;
    }
    assert.notEqual(documented, undefined, `${key}: its JSDoc has no @default`);
    // A JSON value, or the text --help shows (`16 MiB`).
    let value: unknown;
    try {
      value = JSON.parse(documented as string);
    } catch {
      assert.equal(documented, shownDefault(setting), `${key}: @default {${documented}}`);
      continue;
    }
    assert.deepEqual(value, setting.default, `${key}: @default {${documented}}`);
  }
});

Deno.test("SETTINGS: every flag and variable is read, every key is in the file, each once", () => {
  const flags = new Set<string>();
  const envs = new Set<string>();
  for (const [key, setting] of Object.entries(SETTINGS)) {
    if (setting.flag !== undefined || setting.env !== undefined) {
      assert.ok(setting.type.fromText, `${key} has a flag or a variable, so it reads text`);
    }
    if (setting.flag !== undefined) {
      assert.ok(!flags.has(setting.flag), setting.flag);
      flags.add(setting.flag);
      assert.ok(setting.placeholder, `${setting.flag} names its value`);
    }
    if (setting.env !== undefined) {
      assert.ok(!envs.has(setting.env), setting.env);
      envs.add(setting.env);
    }
    // A config-file key is the Config key itself (the rules' in the permissions section); only
    // configFile has none.
    const fileKey = ["allow", "deny", "ask"].includes(key) ? `permissions.${key}` : key;
    assert.equal(setting.fileKey, key === "configFile" ? undefined : fileKey, key);
  }
});

Deno.test("USAGE has one line per flag of SETTINGS with its variable and default", () => {
  const text = USAGE.replaceAll(/\n {4,}/g, " ");
  for (const setting of Object.values(SETTINGS)) {
    const term = flagTerm(setting);
    if (term === undefined) continue;
    const line = text.split("\n").find((line) => line.startsWith(`  ${term} `));
    assert.ok(line, term);
    assert.ok(line.includes(setting.help), `${term}: ${setting.help}`);
    if (setting.env) assert.ok(line.includes(`env ${setting.env}`), `${term}: ${setting.env}`);
    const shown = shownDefault(setting);
    if (shown) assert.ok(line.includes(`default ${shown}`), `${term}: default ${shown}`);
  }
});

/** The rows of the first table under `heading` in `file`, as trimmed cells. */
async function firstTableRows(file: string, heading: string): Promise<string[][]> {
  const text = await Deno.readTextFile(new URL(`../../${file}`, import.meta.url));
  const section = text.slice(text.indexOf(`${heading}\n`));
  const lines = section.split("\n").filter((line) => line.startsWith("|")).slice(2);
  const table = [];
  for (const line of lines) {
    table.push(line.split("|").slice(1, -1).map((cell) => cell.trim()));
    if (!section.includes(`${line}\n|`)) break;
  }
  return table;
}

Deno.test("docs/configuration.md's table lists every setting with its flag, variable, key and default", async () => {
  const rows = await firstTableRows("docs/configuration.md", "# Configuration");
  const matched = new Set<string[]>();
  for (const [key, setting] of Object.entries(SETTINGS)) {
    const term = flagTerm(setting);
    const row = rows.find(([flag, , fileKey]) =>
      term ? flag === `\`${term}\`` : fileKey === `\`${setting.fileKey}\``
    );
    assert.ok(row, `docs/configuration.md has a row for ${key}`);
    matched.add(row);
    const [flag, env, fileKey, shown] = row;
    assert.equal(flag, term ? `\`${term}\`` : "–", key);
    assert.ok(env?.startsWith(setting.env ? `\`${setting.env}\`` : "–"), `${key}: ${env}`);
    assert.equal(fileKey, setting.fileKey ? `\`${setting.fileKey}\`` : "–", key);
    assert.equal(shown?.replaceAll("`", ""), shownDefault(setting) ?? "–", key);
  }
  const others = rows.filter((row) => !matched.has(row)).map(([flag]) => flag);
  assert.deepEqual(others, ["`-h`, `--help`", "`-V`, `--version`"], "no row without a setting");
});

Deno.test("README's table of the main flags repeats rows of docs/configuration.md's table", async () => {
  const full = await firstTableRows("docs/configuration.md", "# Configuration");
  const main = await firstTableRows("README.md", "\n## Configuration");
  assert.ok(main.length >= 10, `${main.length} rows`);
  for (const row of main) {
    const same = full.find(([flag]) => flag === row[0]);
    assert.deepEqual(same?.slice(0, 4), row.slice(0, 4), `${row[0]}`);
  }
});
