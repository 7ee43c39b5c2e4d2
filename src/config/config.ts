import { z } from "zod";
import type { ModelFacts, ProviderApi } from "../llm/presets.ts";
import { LOG_LEVELS, type LogLevel } from "../log/logger.ts";

/** Permission policy of a session. */
export type PermissionMode = "ask" | "auto" | "read-only";

/** All permission modes. */
export const PERMISSION_MODES: readonly PermissionMode[] = ["ask", "auto", "read-only"];

/** The server's settings, from flags, environment and config file. */
export interface Config {
  /** Default model id for new sessions. @default {"echo"} */
  readonly model: string;
  /** Default permission mode. @default {"ask"} */
  readonly mode: PermissionMode;
  /** Relay deltas as they arrive instead of committed steps. @default {false} */
  readonly stream: boolean;
  /** Data directory; `undefined` means `~/.acp-harness`. */
  readonly dataDir: string | undefined;
  /** The config file that was read, if any. */
  readonly configFile: string | undefined;
  /** Least severe level logged to stderr. @default {"warn"} */
  readonly logLevel: LogLevel;
  /** Script file for the `scripted` model. */
  readonly script: string | undefined;
  /** Most model requests in one turn. @default {50} */
  readonly maxSteps: number;
  /** Seconds a permission request waits for the client's answer before refusing. @default {300} */
  readonly permissionTimeout: number;
  /** Largest inbound JSON-RPC message in bytes. @default {33554432} */
  readonly maxMessageBytes: number;
  /** Sessions per `session/list` page. @default {100} */
  readonly sessionListPageSize: number;
  /** Providers from the config file, by id (they override built-in ones of the same id). */
  readonly providers: Readonly<Record<string, ProviderConfig>>;
  /** Model facts from the config file, by full model id. */
  readonly models: Readonly<Record<string, ModelFacts>>;
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

/** Default settings. */
export const DEFAULT_CONFIG: Config = {
  model: "echo",
  mode: "ask",
  stream: false,
  dataDir: undefined,
  configFile: undefined,
  logLevel: "warn",
  script: undefined,
  maxSteps: 50,
  permissionTimeout: 300,
  maxMessageBytes: 32 * 1024 * 1024,
  sessionListPageSize: 100,
  providers: {},
  models: {},
};

// Built on first use: constructing zod schemas costs time at start-up, and most runs read no
// config file.
let fileSchemas: { provider: z.ZodType; model: z.ZodType } | undefined;
function configFileSchemas(): { provider: z.ZodType; model: z.ZodType } {
  if (fileSchemas) return fileSchemas;
  const tokens = z.number().int().positive();
  const price = z.number().nonnegative();
  fileSchemas = {
    provider: z.strictObject({
      api: z.enum(["openai-chat", "anthropic-messages"]),
      baseUrl: z.url({ protocol: /^https?$/ }),
      apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).optional(),
      headers: z.record(z.string(), z.string()).optional(),
      maxTokensField: z.enum(["max_tokens", "max_completion_tokens"]).optional(),
    }),
    model: z.strictObject({
      name: z.string().min(1).optional(),
      contextWindow: tokens.optional(),
      maxOutputTokens: tokens.optional(),
      image: z.boolean().optional(),
      reasoningEfforts: z.array(z.string().min(1)).min(1).optional(),
      defaultReasoningEffort: z.string().min(1).optional(),
      pricing: z.strictObject({
        input: price,
        output: price,
        cacheRead: price.optional(),
        cacheWrite: price.optional(),
      }).optional(),
    }).refine(
      (model) =>
        model.defaultReasoningEffort === undefined ||
        (model.reasoningEfforts ?? []).includes(model.defaultReasoningEffort),
      {
        message: "defaultReasoningEffort must be one of reasoningEfforts",
        path: ["defaultReasoningEffort"],
      },
    ),
  };
  return fileSchemas;
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

/** What the command line asks for. */
export type Command =
  | { readonly kind: "help" }
  | { readonly kind: "version" }
  | { readonly kind: "serve"; readonly overrides: Partial<Config> }
  | {
    /** `acp-harness models`: list the models and exit. */
    readonly kind: "models";
    /** Print JSON instead of a table. */
    readonly json: boolean;
    readonly overrides: Partial<Config>;
  };

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

const OPTIONS: ReadonlyArray<readonly [string, string]> = [
  ["--model <id>", "Default model for new sessions (env ACP_HARNESS_MODEL; default echo)"],
  [
    "--mode <mode>",
    "ask, auto or read-only (env ACP_HARNESS_MODE; default ask)",
  ],
  [
    "--stream[=<bool>]",
    `Relay model output as it arrives (env ACP_HARNESS_STREAM; default off)\n<bool> is ${
      BOOLEAN_WORDS.join(", ")
    } (any case)`,
  ],
  ["--script <file>", 'Script file for the offline "scripted" model (env ACP_HARNESS_SCRIPT)'],
  ["--max-steps <n>", "Most model requests in one turn (env ACP_HARNESS_MAX_STEPS; default 50)"],
  [
    "--permission-timeout <s>",
    "Seconds to wait for a permission answer before refusing (env ACP_HARNESS_PERMISSION_TIMEOUT; default 300)",
  ],
  [
    "--max-message-bytes <n>",
    "Inbound message limit (env ACP_HARNESS_MAX_MESSAGE_BYTES; default 32 MiB)",
  ],
  ["--data-dir <dir>", "Data directory (env ACP_HARNESS_HOME; default ~/.acp-harness)"],
  ["--config <file>", "JSON config file (env ACP_HARNESS_CONFIG)"],
  [
    "--log-level <level>",
    "error, warn, info or debug (env ACP_HARNESS_LOG_LEVEL; default warn)",
  ],
  ["-h, --help", "Print this help and exit"],
  ["-V, --version", "Print the version and exit"],
];

const COMMANDS: ReadonlyArray<readonly [string, string]> = [
  [
    "models [--json]",
    "List the models and whether each can be used now, then exit",
  ],
];

/** Widest line of the usage text. */
const USAGE_WIDTH = 100;

/**
 * Lays out `[term, description]` rows in two columns: terms indented by two spaces, every
 * description starting in the same column, long descriptions wrapped at word boundaries with
 * continuation lines in that column; a newline in a description starts a new line.
 */
function twoColumns(rows: ReadonlyArray<readonly [string, string]>, column: number): string {
  const lines: string[] = [];
  for (const [term, description] of rows) {
    let line = `  ${term}`.padEnd(column);
    let start = true;
    for (const word of description.replaceAll("\n", " \n ").split(" ")) {
      if (word === "\n" || (!start && line.length + 1 + word.length > USAGE_WIDTH)) {
        lines.push(line);
        line = " ".repeat(column);
        start = true;
        if (word === "\n") continue;
      }
      line += start ? word : ` ${word}`;
      start = false;
    }
    lines.push(line);
  }
  return lines.join("\n");
}

const COLUMN = 2 + Math.max(...[...OPTIONS, ...COMMANDS].map(([term]) => term.length)) + 2;

/** The usage text printed by `--help` and after a usage error. */
export const USAGE: string = `Usage: acp-harness [options]
       acp-harness models [--json] [options]

Without a command, serves the Agent Client Protocol (ACP) on stdin/stdout until stdin closes;
logs go to stderr.

Commands:
${twoColumns(COMMANDS, COLUMN)}

Options:
${twoColumns(OPTIONS, COLUMN)}
`;

const VALUE_FLAGS = new Set([
  "--model",
  "--mode",
  "--script",
  "--max-steps",
  "--permission-timeout",
  "--max-message-bytes",
  "--data-dir",
  "--config",
  "--log-level",
]);

/**
 * Parses command-line arguments. Pure: no I/O. `models` as the first argument asks for the
 * model list (it also takes `--json`); anything else serves.
 *
 * @example Parsing flags
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseArgs } from "./config.ts";
 * const command = parseArgs(["--mode", "auto", "--stream"]);
 * assert(command.kind === "serve" && command.overrides.mode === "auto");
 * ```
 *
 * @param args The arguments after the program name
 * @returns What to do
 * @throws {ConfigError} For an unknown flag, a missing value or a bad value
 */
export function parseArgs(args: readonly string[]): Command {
  const overrides: Record<string, unknown> = {};
  const models = args[0] === "models";
  let json = false;
  for (let index = models ? 1 : 0; index < args.length; index++) {
    const arg = args[index] as string;
    if (arg === "-h" || arg === "--help") return { kind: "help" };
    if (arg === "-V" || arg === "--version") return { kind: "version" };
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    if (flag === "--json") {
      if (!models) throw new ConfigError(`Option "--json" applies only to "acp-harness models"`);
      if (eq !== -1) throw new ConfigError(`Option "--json" takes no value`);
      json = true;
      continue;
    }
    if (flag === "--stream") {
      if (eq !== -1) overrides.stream = parseBoolean("--stream", arg.slice(eq + 1));
      else overrides.stream = true;
      continue;
    }
    if (!VALUE_FLAGS.has(flag)) {
      throw new ConfigError(
        arg.startsWith("-") ? `Unknown option "${flag}"` : `Unexpected argument "${arg}"`,
      );
    }
    let value: string | undefined;
    if (eq !== -1) value = arg.slice(eq + 1);
    else {
      value = args[index + 1];
      index++;
    }
    if (value === undefined || value === "" || (eq === -1 && value.startsWith("--"))) {
      throw new ConfigError(`Option "${flag}" needs a value`);
    }
    Object.assign(overrides, settingFromString(flag, value));
  }
  if (models) return { kind: "models", json, overrides: overrides as Partial<Config> };
  return { kind: "serve", overrides: overrides as Partial<Config> };
}

const ENV_VARS: ReadonlyArray<readonly [string, string]> = [
  ["ACP_HARNESS_MODEL", "--model"],
  ["ACP_HARNESS_MODE", "--mode"],
  ["ACP_HARNESS_STREAM", "--stream"],
  ["ACP_HARNESS_SCRIPT", "--script"],
  ["ACP_HARNESS_MAX_STEPS", "--max-steps"],
  ["ACP_HARNESS_PERMISSION_TIMEOUT", "--permission-timeout"],
  ["ACP_HARNESS_MAX_MESSAGE_BYTES", "--max-message-bytes"],
  ["ACP_HARNESS_HOME", "--data-dir"],
  ["ACP_HARNESS_CONFIG", "--config"],
  ["ACP_HARNESS_LOG_LEVEL", "--log-level"],
];

/**
 * Reads the settings that environment variables give.
 *
 * @param env Looks up one variable
 * @returns The settings found
 * @throws {ConfigError} Naming the variable with a bad value
 */
export function configFromEnv(env: (name: string) => string | undefined): Partial<Config> {
  const settings: Record<string, unknown> = {};
  for (const [name, flag] of ENV_VARS) {
    const value = env(name);
    if (value === undefined || value === "") continue;
    try {
      Object.assign(
        settings,
        flag === "--stream"
          ? { stream: parseBoolean(name, value) }
          : settingFromString(flag, value),
      );
    } catch (error) {
      throw new ConfigError(`${name}: ${(error as Error).message}`);
    }
  }
  return settings as Partial<Config>;
}

/**
 * Reads the settings a JSON config file gives.
 *
 * @param json The parsed file
 * @param file The file's path, for messages
 * @returns The settings found
 * @throws {ConfigError} Naming the key with a bad value
 */
export function configFromFile(json: unknown, file: string): Partial<Config> {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new ConfigError(`Cannot read config file "${file}": expected a JSON object`);
  }
  const settings: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(json)) {
    const bad = (expected: string): ConfigError =>
      new ConfigError(`Cannot read config file "${file}": "${key}" must be ${expected}`);
    switch (key) {
      case "model":
      case "script":
      case "dataDir":
        if (typeof value !== "string" || value === "") throw bad("a non-empty string");
        settings[key] = value;
        break;
      case "mode":
        if (!PERMISSION_MODES.includes(value as PermissionMode)) {
          throw bad(`one of ${PERMISSION_MODES.join(", ")}`);
        }
        settings.mode = value;
        break;
      case "logLevel":
        if (!LOG_LEVELS.includes(value as LogLevel)) throw bad(`one of ${LOG_LEVELS.join(", ")}`);
        settings.logLevel = value;
        break;
      case "stream":
        if (typeof value !== "boolean") throw bad("true or false");
        settings.stream = value;
        break;
      case "maxSteps":
      case "permissionTimeout":
      case "maxMessageBytes":
      case "sessionListPageSize":
        if (!Number.isInteger(value) || (value as number) < 1) throw bad("a positive integer");
        settings[key] = value;
        break;
      case "providers":
      case "models": {
        const schema = z.record(
          key === "providers" ? z.string().regex(/^[a-z0-9][a-z0-9_.-]*$/) : z.string().min(1),
          key === "providers" ? configFileSchemas().provider : configFileSchemas().model,
        );
        const result = schema.safeParse(value);
        if (!result.success) {
          const issue = result.error.issues[0];
          throw new ConfigError(
            `Cannot read config file "${file}": "${[key, ...(issue?.path ?? [])].join(".")}": ${
              issue?.message ?? "invalid"
            }`,
          );
        }
        settings[key] = result.data;
        break;
      }
      case "$schema":
        break;
      default:
        throw new ConfigError(`Cannot read config file "${file}": unknown key "${key}"`);
    }
  }
  return settings as Partial<Config>;
}

/**
 * Merges settings; later sources win.
 *
 * @param sources Settings from lowest to highest precedence
 * @returns The complete config
 */
export function mergeConfig(...sources: ReadonlyArray<Partial<Config>>): Config {
  const merged: Record<string, unknown> = { ...DEFAULT_CONFIG };
  for (const source of sources) {
    for (const [key, value] of Object.entries(source)) {
      if (value !== undefined) merged[key] = value;
    }
  }
  return merged as unknown as Config;
}

function settingFromString(flag: string, value: string): Partial<Config> {
  switch (flag) {
    case "--model":
      return { model: value };
    case "--mode":
      if (!PERMISSION_MODES.includes(value as PermissionMode)) {
        throw new ConfigError(
          `Invalid value "${value}" for "--mode": expected one of ${PERMISSION_MODES.join(", ")}`,
        );
      }
      return { mode: value as PermissionMode };
    case "--script":
      return { script: value };
    case "--max-steps":
      return { maxSteps: positiveInteger(flag, value) };
    case "--permission-timeout":
      return { permissionTimeout: positiveInteger(flag, value) };
    case "--max-message-bytes":
      return { maxMessageBytes: positiveInteger(flag, value) };
    case "--data-dir":
      return { dataDir: value };
    case "--config":
      return { configFile: value };
    case "--log-level":
      if (!LOG_LEVELS.includes(value as LogLevel)) {
        throw new ConfigError(
          `Invalid value "${value}" for "--log-level": expected one of ${LOG_LEVELS.join(", ")}`,
        );
      }
      return { logLevel: value as LogLevel };
    default:
      throw new ConfigError(`Unknown option "${flag}"`);
  }
}

function positiveInteger(flag: string, value: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < 1 || !Number.isSafeInteger(number)) {
    throw new ConfigError(`Invalid value "${value}" for "${flag}": expected a positive integer`);
  }
  return number;
}

function parseBoolean(name: string, value: string): boolean {
  const index = BOOLEAN_WORDS.indexOf(value.toLowerCase());
  if (index !== -1) return index % 2 === 0;
  throw new ConfigError(
    `Invalid value "${value}" for "${name}": expected one of ${BOOLEAN_WORDS.join(", ")}`,
  );
}
