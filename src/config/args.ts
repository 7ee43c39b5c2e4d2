/**
 * The command line: which command it asks for, and the settings its flags give (each flag is a
 * setting's, from {@link SETTINGS}, or one of the commands' own).
 *
 * @module
 */
import { nearestWord } from "../util/nearest_word.ts";
import {
  type Config,
  type ConfigDraft,
  ConfigError,
  setFromText,
  settingKeysBy,
  SETTINGS,
} from "./config.ts";
import { finishRun, RUN_FLAGS, runDraft, type RunOptions, takeRunFlag } from "./run_args.ts";

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
  }
  | {
    /** `acp-harness copy-sessions --from <dir|url> --to <dir|url>`: copy sessions between stores. */
    readonly kind: "copy-sessions";
    /** The source store: a JSONL data directory or a PostgreSQL URL. */
    readonly from: string;
    /** The destination store: a JSONL data directory or a PostgreSQL URL. */
    readonly to: string;
    readonly overrides: Partial<Config>;
  }
  | {
    /** `acp-harness export-script SESSION_ID`: print a recorded session as a scripted-model script. */
    readonly kind: "export-script";
    /** The session to export. */
    readonly sessionId: string;
    readonly overrides: Partial<Config>;
  }
  | {
    /** `acp-harness hash-token`: print the hash of the token on stdin. */
    readonly kind: "hash-token";
    /** `--help` was given: print the command's usage instead. */
    readonly help: boolean;
  }
  | {
    /** `acp-harness run [options] [PROMPT…]`: one prompt, printed, then exit. */
    readonly kind: "run";
    readonly run: RunOptions;
    readonly overrides: Partial<Config>;
  };

const BY_FLAG = settingKeysBy((setting) => setting.flag);

/**
 * Parses command-line arguments. Pure: no I/O. `models` as the first argument asks for the
 * model list (it also takes `--json`); `copy-sessions` copies sessions between stores (it takes
 * `--from` and `--to`, both required); `export-script` takes one SESSION_ID; anything else serves.
 *
 * @example Parsing flags
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseArgs } from "./args.ts";
 * const command = parseArgs(["--mode", "auto", "--stream"]);
 * assert(command.kind === "serve" && command.overrides.mode === "auto");
 * ```
 *
 * @param args The arguments after the program name
 * @returns What to do
 * @throws {ConfigError} For an unknown flag, a missing value or a bad value
 */
export function parseArgs(args: readonly string[]): Command {
  if (args[0] === "hash-token") return hashTokenCommand(args.slice(1));
  const overrides: ConfigDraft = {};
  const models = args[0] === "models";
  const copy = args[0] === "copy-sessions";
  const run = args[0] === "run" ? runDraft() : undefined;
  const exporting = args[0] === "export-script";
  let sessionId: string | undefined;
  const first = models || copy || run || exporting || args[0] === "serve" ? 1 : 0;
  let json = false;
  const ends: { from?: string; to?: string } = {};
  for (let index = first; index < args.length; index++) {
    const arg = args[index] ?? "";
    if (arg === "-h" || arg === "--help") return { kind: "help" };
    if (arg === "-V" || arg === "--version") return { kind: "version" };
    if (run) {
      // After "--" every argument is a word of the prompt.
      if (arg === "--") {
        run.words = [...run.words, ...args.slice(index + 1)];
        break;
      }
      const taken = takeRunFlag(args, index, run);
      if (taken !== undefined) {
        index = taken;
        continue;
      }
    }
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    if (flag === "--json") {
      if (!models) {
        throw new ConfigError(
          `Option "--json" applies only to "acp-harness models" and "acp-harness run"`,
        );
      }
      if (eq !== -1) throw new ConfigError(`Option "--json" takes no value`);
      json = true;
      continue;
    }
    if (flag === "--from" || flag === "--to") {
      if (!copy) {
        throw new ConfigError(`Option "${flag}" applies only to "acp-harness copy-sessions"`);
      }
      const text = eq === -1 ? args[++index] : arg.slice(eq + 1);
      if (text === undefined || text === "" || (eq === -1 && text.startsWith("--"))) {
        throw new ConfigError(`Option "${flag}" needs a value`);
      }
      ends[flag === "--from" ? "from" : "to"] = text;
      continue;
    }
    if (exporting && sessionId === undefined && !arg.startsWith("-")) {
      sessionId = arg;
      continue;
    }
    const key = BY_FLAG.get(flag);
    if (key === undefined && RUN_FLAGS.includes(flag)) {
      throw new ConfigError(`Option "${flag}" applies only to "acp-harness run"`);
    }
    if (key === undefined) {
      throw new ConfigError(
        arg.startsWith("-") ? unknownOption(flag) : `Unexpected argument "${arg}"`,
      );
    }
    let text: string | undefined;
    if (eq !== -1) text = arg.slice(eq + 1);
    else if (SETTINGS[key].bare === undefined) {
      text = args[++index];
      if (text?.startsWith("--")) text = undefined;
    }
    if (text === "" && SETTINGS[key].bare === undefined) text = undefined;
    const before: ConfigDraft = { [key]: overrides[key] };
    setFromText(overrides, key, text, flag);
    // A repeatable flag (one whose setting merges, like --allow) adds to what it gave before.
    repeat(overrides, before, key);
  }
  if (models) return { kind: "models", json, overrides };
  if (run) return { kind: "run", run: finishRun(run), overrides };
  if (exporting) {
    if (sessionId === undefined) {
      throw new ConfigError(`"acp-harness export-script" needs a SESSION_ID`);
    }
    return { kind: "export-script", sessionId, overrides };
  }
  if (copy) {
    if (ends.from === undefined || ends.to === undefined) {
      throw new ConfigError(
        `"acp-harness copy-sessions" needs --from <url-or-dir> and --to <url-or-dir>`,
      );
    }
    return { kind: "copy-sessions", from: ends.from, to: ends.to, overrides };
  }
  return { kind: "serve", overrides };
}

/** `acp-harness hash-token [--help]`: nothing else (the token comes on stdin, never in argv). */
function hashTokenCommand(rest: readonly string[]): Command {
  if (rest.length === 0) return { kind: "hash-token", help: false };
  if (rest.length === 1 && (rest[0] === "--help" || rest[0] === "-h")) {
    return { kind: "hash-token", help: true };
  }
  throw new ConfigError(
    `"acp-harness hash-token" takes no arguments: it reads the token from the first line of stdin`,
  );
}

function repeat<K extends keyof Config>(into: ConfigDraft, before: ConfigDraft, key: K): void {
  const merge = SETTINGS[key].merge;
  const earlier = before[key];
  const now = into[key];
  if (merge && earlier !== undefined && now !== undefined) into[key] = merge(earlier, now);
}

/** The flags of the command line besides the settings' own. */
const COMMAND_FLAGS = ["--help", "--version", "--json", "--from", "--to", ...RUN_FLAGS];

/** "Unknown option", with the nearest flag when one is close. */
function unknownOption(flag: string): string {
  const near = nearestWord(flag, [...BY_FLAG.keys(), ...COMMAND_FLAGS]);
  return `Unknown option "${flag}"${near === undefined ? "" : ` (did you mean "${near}"?)`}`;
}
