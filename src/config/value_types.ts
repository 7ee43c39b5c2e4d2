/**
 * How a setting's value is read: from text (a flag or an environment variable) and from JSON (the
 * config file), with the errors that name what was expected.
 *
 * @module
 */

import * as z from "zod";
import type { ModelFacts, ProviderApi } from "../llm/presets.ts";

/** An ACP agent declared in the config file, which the `delegate` tool starts over stdio. */
export interface AgentConfig {
  /** The program (looked up on `PATH` when it has no slash). */
  readonly command: string;
  /** Its arguments. */
  readonly args?: readonly string[];
  /**
   * Environment variables on top of what the agent inherits of the server's environment (the
   * variables programs need to run, `CHILD_INHERITED_ENV`, and those named in `inheritEnv`).
   */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Names of further variables of the server's environment the agent inherits, such as its
   * model's API key (`ANTHROPIC_API_KEY`); a name ending in `*` is a prefix pattern.
   */
  readonly inheritEnv?: readonly string[];
  /** What the agent is good for, shown to the model. */
  readonly description: string;
}

/** A provider declared in the config file. */
export interface ProviderConfig {
  /** Wire format the provider speaks. */
  readonly api: ProviderApi;
  /** Base URL; the API path is appended. */
  readonly baseUrl: string;
  /** Environment variable holding the API key. */
  readonly apiKeyEnv?: string;
  /** Extra request headers. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Request body field for the output limit. */
  readonly maxTokensField?: "max_tokens" | "max_completion_tokens";
}

/** A bad flag, environment variable or config file entry. */
export class ConfigError extends TypeError {
  /**
   * Creates the error.
   *
   * @param message Names the setting and what was expected
   */
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/**
 * The words `--stream=<value>` and `ACP_HARNESS_STREAM` accept, case-insensitively, in pairs:
 * `true`, `1`, `yes` and `on` mean true; `false`, `0`, `no` and `off` mean false.
 */
export const BOOLEAN_WORDS: readonly string[] = [
  "true",
  "false",
  "1",
  "0",
  "yes",
  "no",
  "on",
  "off",
];

/** How a setting's value is read from text (a flag or an environment variable) and from JSON. */
export interface ValueType<V> {
  /**
   * Reads the text of a flag or an environment variable; absent for values that only the config
   * file can give.
   *
   * @throws {ConfigError} `Invalid value "<text>" for "<name>": expected <what>`
   */
  readonly fromText?: (text: string, name: string) => V;
  /**
   * Reads a config-file value.
   *
   * @throws {ConfigError} `"<key>" must be <what>`, or `"<key>.<path>": <problem>`
   */
  readonly fromJson: (json: unknown, key: string) => V;
}

/** A value type whose text and JSON forms are each checked by one function. */
interface CheckedType<V> {
  /** The value a text means, or `undefined` when it means none. */
  readonly text: (text: string) => V | undefined;
  /** The value a JSON value means, or `undefined` when it means none. */
  readonly json: (json: unknown) => V | undefined;
  /** What a valid value is, for messages: "a positive integer". */
  readonly expected: string;
  /** What a valid text is, when it differs from `expected`. */
  readonly textExpected?: string;
}

function checkedType<V>(type: CheckedType<V>): ValueType<V> {
  return {
    fromText(text, name) {
      const value = type.text(text);
      if (value !== undefined) return value;
      throw new ConfigError(
        `Invalid value "${text}" for "${name}": expected ${type.textExpected ?? type.expected}`,
      );
    },
    fromJson(json, key) {
      const value = type.json(json);
      if (value !== undefined) return value;
      throw new ConfigError(`"${key}" must be ${type.expected}`);
    },
  };
}

/** A non-empty string. */
export const NON_EMPTY_STRING: ValueType<string> = checkedType({
  text: (text) => text === "" ? undefined : text,
  json: (json) => typeof json === "string" && json !== "" ? json : undefined,
  expected: "a non-empty string",
});

/** A positive safe integer; as text, decimal digits only. */
export const POSITIVE_INTEGER: ValueType<number> = checkedType({
  text: (text) => /^\d+$/.test(text) ? positiveInteger(Number(text)) : undefined,
  json: (json) => typeof json === "number" ? positiveInteger(json) : undefined,
  expected: "a positive integer",
});

function positiveInteger(number: number): number | undefined {
  return Number.isSafeInteger(number) && number >= 1 ? number : undefined;
}

/** A safe integer of 0 or more; as text, decimal digits only. */
export const NON_NEGATIVE_INTEGER: ValueType<number> = checkedType({
  text: (text) => /^\d+$/.test(text) ? nonNegativeInteger(Number(text)) : undefined,
  json: (json) => typeof json === "number" ? nonNegativeInteger(json) : undefined,
  expected: "a non-negative integer",
});

function nonNegativeInteger(number: number): number | undefined {
  return Number.isSafeInteger(number) && number >= 0 ? number : undefined;
}

/** A finite number of 0 or more; as text, a decimal (`0.5`, `2`). */
export const NON_NEGATIVE_NUMBER: ValueType<number> = checkedType({
  text: (text) =>
    /^(?:\d+(?:\.\d*)?|\.\d+)$/.test(text) ? nonNegativeNumber(Number(text)) : undefined,
  json: (json) => typeof json === "number" ? nonNegativeNumber(json) : undefined,
  expected: "a number of 0 or more",
});

function nonNegativeNumber(number: number): number | undefined {
  return Number.isFinite(number) && number >= 0 ? number : undefined;
}

/** A share: a number greater than 0 and at most 1; as text, a decimal (`0.8`). */
export const SHARE: ValueType<number> = checkedType({
  text: (text) =>
    /^(?:0|1)?(?:\.\d+)?$/.test(text) && text !== "" ? share(Number(text)) : undefined,
  json: (json) => typeof json === "number" ? share(json) : undefined,
  expected: "a number greater than 0 and at most 1",
});

function share(number: number): number | undefined {
  return Number.isFinite(number) && number > 0 && number <= 1 ? number : undefined;
}

/** A TCP port, 0 to 65535 (0 picks a free one); as text, decimal digits only. */
export const PORT: ValueType<number> = checkedType({
  text: (text) => /^\d+$/.test(text) ? port(Number(text)) : undefined,
  json: (json) => typeof json === "number" ? port(json) : undefined,
  expected: "a port number from 0 to 65535",
});

function port(number: number): number | undefined {
  return Number.isInteger(number) && number >= 0 && number <= 65535 ? number : undefined;
}

/**
 * A list of non-empty strings: as text, separated by commas (spaces around each item are
 * dropped); in the config file, a JSON array of strings.
 */
export const STRING_LIST: ValueType<readonly string[]> = checkedType({
  text(text) {
    const items = text.split(",").map((item) => item.trim());
    return items.every((item) => item !== "") ? items : undefined;
  },
  json: (json) =>
    Array.isArray(json) && json.every((item) => typeof item === "string" && item !== "")
      ? json as string[]
      : undefined,
  expected: "an array of non-empty strings",
  textExpected: "a comma-separated list of non-empty items",
});

/** A boolean; as text, one of {@link BOOLEAN_WORDS} in any case. */
export const BOOLEAN: ValueType<boolean> = checkedType({
  text(text) {
    const index = BOOLEAN_WORDS.indexOf(text.toLowerCase());
    return index === -1 ? undefined : index % 2 === 0;
  },
  json: (json) => typeof json === "boolean" ? json : undefined,
  expected: "true or false",
  textExpected: `one of ${BOOLEAN_WORDS.join(", ")}`,
});

/**
 * One of a list of words.
 *
 * @param values The words accepted
 * @returns The value type
 */
export function oneOf<T extends string>(values: readonly T[]): ValueType<T> {
  return checkedType({
    text: (text) => values.find((value) => value === text),
    json: (json) => values.find((value) => value === json),
    expected: `one of ${values.join(", ")}`,
  });
}

/** A config-file section checked by a zod schema, which is built on first use. */
function schemaType<V>(schema: () => z.ZodType<V>): ValueType<V> {
  return {
    fromJson(json, key) {
      const result = schema().safeParse(json);
      if (result.success) return result.data;
      const issue = result.error.issues[0];
      throw new ConfigError(
        `"${[key, ...(issue?.path ?? [])].join(".")}": ${issue?.message ?? "invalid"}`,
      );
    },
  };
}

/** The config file's `providers` section: providers by id. */
export const PROVIDERS_SECTION: ValueType<Readonly<Record<string, ProviderConfig>>> = schemaType(
  () => configFileSchemas().providers,
);

/** The config file's `models` section: model facts by full model id. */
export const MODELS_SECTION: ValueType<Readonly<Record<string, ModelFacts>>> = schemaType(
  () => configFileSchemas().models,
);

/** The config file's `agents` section: the ACP agents the `delegate` tool can start, by name. */
export const AGENTS_SECTION: ValueType<Readonly<Record<string, AgentConfig>>> = schemaType(
  () => configFileSchemas().agents,
);

interface SectionSchemas {
  readonly providers: z.ZodType<Readonly<Record<string, ProviderConfig>>>;
  readonly models: z.ZodType<Readonly<Record<string, ModelFacts>>>;
  readonly agents: z.ZodType<Readonly<Record<string, AgentConfig>>>;
}

// Built on first use: constructing zod schemas costs time at start-up, and most runs read no
// config file.
let sectionSchemas: SectionSchemas | undefined;
function configFileSchemas(): SectionSchemas {
  if (sectionSchemas) return sectionSchemas;
  const tokens = z.number().int().positive();
  const price = z.number().nonnegative();
  const provider = z.strictObject({
    api: z.enum(["openai-chat", "anthropic-messages"]),
    baseUrl: z.url({ protocol: /^https?$/ }),
    apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).exactOptional(),
    headers: z.record(z.string(), z.string()).exactOptional(),
    maxTokensField: z.enum(["max_tokens", "max_completion_tokens"]).exactOptional(),
  });
  const model = z.strictObject({
    name: z.string().min(1).exactOptional(),
    contextWindow: tokens.exactOptional(),
    maxOutputTokens: tokens.exactOptional(),
    image: z.boolean().exactOptional(),
    reasoningEfforts: z.array(z.string().min(1)).min(1).exactOptional(),
    defaultReasoningEffort: z.string().min(1).exactOptional(),
    pricing: z.strictObject({
      input: price,
      output: price,
      cacheRead: price.exactOptional(),
      cacheWrite: price.exactOptional(),
    }).exactOptional(),
  }).refine(
    (facts) =>
      facts.defaultReasoningEffort === undefined ||
      (facts.reasoningEfforts ?? []).includes(facts.defaultReasoningEffort),
    {
      message: "defaultReasoningEffort must be one of reasoningEfforts",
      path: ["defaultReasoningEffort"],
    },
  );
  const agent = z.strictObject({
    command: z.string().min(1),
    args: z.array(z.string()).exactOptional(),
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string()).exactOptional(),
    inheritEnv: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*\*?$/)).exactOptional(),
    description: z.string().min(1),
  });
  sectionSchemas = {
    providers: z.record(z.string().regex(/^[a-z0-9][a-z0-9_.-]*$/), provider),
    models: z.record(z.string().min(1), model),
    agents: z.record(z.string(), agent).superRefine((agents, context) => {
      for (const name of Object.keys(agents)) {
        if (/^[A-Za-z0-9_-]{1,64}$/.test(name)) continue;
        context.addIssue({
          code: "custom",
          message: "an agent name must be 1 to 64 letters, digits, _ or -",
          path: [name],
        });
      }
    }),
  };
  return sectionSchemas;
}
