import assert from "node:assert/strict";
import { PERMISSION_MODES } from "../../src/permission/mode.ts";
import type { ModelInfo } from "../../src/llm/catalog.ts";
import type { SessionConfigOption } from "../../src/transport/acp_types.ts";
import {
  buildConfigOptions,
  buildModeState,
  DEFAULT_EFFORT,
  effortValues,
  initialEffort,
} from "../../src/session/config_options.ts";

function model(id: string, extra: Partial<ModelInfo> = {}): ModelInfo {
  const slash = id.indexOf("/");
  const provider = slash === -1 ? id : id.slice(0, slash);
  const name = slash === -1 ? id : id.slice(slash + 1);
  return {
    id,
    provider,
    model: name,
    name: `Name of ${name}`,
    description: `${name} via ${provider}`,
    image: false,
    reasoningEfforts: [],
    ...extra,
  };
}

const ECHO = model("echo");
const PLAIN = model("local/plain");
/** Efforts without a declared default: the provider decides. */
const THINKER = model("anthropic/thinker", { reasoningEfforts: ["low", "medium", "high"] });
/** Efforts with a declared default. */
const DEEP = model("deepseek/deep", {
  reasoningEfforts: ["low", "high", "max"],
  defaultReasoningEffort: "high",
});
const MODELS = [ECHO, THINKER, PLAIN, DEEP, model("anthropic/other"), model("local/second")];

function option(options: readonly SessionConfigOption[], id: string): SessionConfigOption {
  const found = options.find((candidate) => candidate.id === id);
  assert.ok(found, `no option ${id}`);
  return found;
}

/** The flat values of a select option. */
function values(option: SessionConfigOption): string[] {
  assert.equal(option.type, "select");
  if (option.type !== "select") return [];
  return option.options.flatMap((entry) => "group" in entry ? entry.options : [entry])
    .map((entry) => entry.value);
}

// effortValues() and initialEffort()

Deno.test("effortValues() is empty for a model without efforts", () => {
  assert.deepEqual(effortValues(PLAIN), []);
  assert.deepEqual(effortValues(undefined), []);
});

Deno.test("effortValues() puts default first when the model declares no default effort", () => {
  assert.equal(DEFAULT_EFFORT, "default");
  assert.deepEqual(effortValues(THINKER), ["default", "low", "medium", "high"]);
  assert.deepEqual(effortValues(DEEP), ["low", "high", "max"]);
});

Deno.test("initialEffort() is the model's declared default, else the provider's", () => {
  assert.equal(initialEffort(DEEP), "high");
  assert.equal(initialEffort(THINKER), undefined);
  assert.equal(initialEffort(PLAIN), undefined);
  assert.equal(initialEffort(undefined), undefined);
  // A default without efforts means nothing.
  assert.equal(initialEffort(model("x/y", { defaultReasoningEffort: "high" })), undefined);
});

// buildConfigOptions()

Deno.test("buildConfigOptions() lists model and mode for a model without efforts", () => {
  const options = buildConfigOptions({ model: "local/plain", mode: "ask" }, MODELS, PLAIN);
  assert.deepEqual(options.map((entry) => entry.id), ["model", "mode"]);
  const [modelOption, modeOption] = options;
  assert.ok(modelOption?.type === "select" && modeOption?.type === "select");
  assert.equal(modelOption.category, "model");
  assert.equal(modelOption.currentValue, "local/plain");
  assert.equal(modeOption.category, "mode");
  assert.equal(modeOption.currentValue, "ask");
  assert.deepEqual(values(modeOption), [...PERMISSION_MODES]);
});

Deno.test("buildConfigOptions() groups the models by provider in first-seen order", () => {
  const options = buildConfigOptions({ model: "echo", mode: "auto" }, MODELS, ECHO);
  const modelOption = option(options, "model");
  assert.ok(modelOption.type === "select");
  assert.deepEqual(modelOption.options, [
    {
      group: "echo",
      name: "echo",
      options: [{ value: "echo", name: "Name of echo", description: "echo via echo" }],
    },
    {
      group: "anthropic",
      name: "anthropic",
      options: [
        {
          value: "anthropic/thinker",
          name: "Name of thinker",
          description: "thinker via anthropic",
        },
        { value: "anthropic/other", name: "Name of other", description: "other via anthropic" },
      ],
    },
    {
      group: "local",
      name: "local",
      options: [
        { value: "local/plain", name: "Name of plain", description: "plain via local" },
        { value: "local/second", name: "Name of second", description: "second via local" },
      ],
    },
    {
      group: "deepseek",
      name: "deepseek",
      options: [
        { value: "deepseek/deep", name: "Name of deep", description: "deep via deepseek" },
      ],
    },
  ]);
  assert.deepEqual(values(modelOption).sort(), MODELS.map((entry) => entry.id).sort());
});

Deno.test("buildConfigOptions() adds reasoning_effort with default first for a model without a default", () => {
  const options = buildConfigOptions(
    { model: "anthropic/thinker", mode: "ask" },
    MODELS,
    THINKER,
  );
  assert.deepEqual(options.map((entry) => entry.id), ["model", "mode", "reasoning_effort"]);
  const effort = option(options, "reasoning_effort");
  assert.ok(effort.type === "select");
  assert.equal(effort.category, "thought_level");
  assert.equal(effort.currentValue, "default");
  assert.deepEqual(effort.options, [
    { value: "default", name: "Provider default" },
    { value: "low", name: "low" },
    { value: "medium", name: "medium" },
    { value: "high", name: "high" },
  ]);
  const chosen = buildConfigOptions(
    { model: "anthropic/thinker", mode: "ask", effort: "medium" },
    MODELS,
    THINKER,
  );
  assert.equal(option(chosen, "reasoning_effort").currentValue, "medium");
});

Deno.test("buildConfigOptions() offers only the model's efforts when it declares a default", () => {
  const options = buildConfigOptions(
    { model: "deepseek/deep", mode: "read-only", effort: "high" },
    MODELS,
    DEEP,
  );
  const effort = option(options, "reasoning_effort");
  assert.ok(effort.type === "select");
  assert.equal(effort.category, "thought_level");
  assert.equal(effort.currentValue, "high");
  assert.deepEqual(values(effort), ["low", "high", "max"]);
  assert.equal(option(options, "mode").currentValue, "read-only");
});

Deno.test("buildConfigOptions() has no reasoning_effort for an unknown current model", () => {
  const options = buildConfigOptions({ model: "gone/model", mode: "ask" }, MODELS, undefined);
  assert.deepEqual(options.map((entry) => entry.id), ["model", "mode"]);
  assert.equal(option(options, "model").currentValue, "gone/model");
});

Deno.test("buildConfigOptions() gives every option a name and description", () => {
  const options = buildConfigOptions({ model: "anthropic/thinker", mode: "ask" }, MODELS, THINKER);
  for (const entry of options) {
    assert.ok(entry.name, entry.id);
    assert.ok(entry.description, entry.id);
    assert.equal(entry.type, "select");
  }
});

// buildModeState()

Deno.test("buildModeState() lists every mode with the current one", () => {
  for (const mode of PERMISSION_MODES) {
    const state = buildModeState(mode);
    assert.equal(state.currentModeId, mode);
    assert.deepEqual(state.availableModes.map((entry) => entry.id), [...PERMISSION_MODES]);
  }
  assert.deepEqual(buildModeState("ask").availableModes.map((entry) => entry.name), [
    "Ask",
    "Auto",
    "Read only",
  ]);
});

Deno.test("buildModeState() matches the mode option's values, names and descriptions", () => {
  const modeOption = option(
    buildConfigOptions({ model: "echo", mode: "auto" }, [ECHO], ECHO),
    "mode",
  );
  assert.ok(modeOption.type === "select");
  const fromOption = modeOption.options.map((entry) => {
    assert.ok(!("group" in entry));
    return { id: entry.value, name: entry.name, description: entry.description };
  });
  assert.deepEqual(buildModeState("auto").availableModes, fromOption);
  for (const entry of fromOption) assert.ok(entry.description, entry.id);
});
