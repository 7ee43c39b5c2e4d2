/**
 * The flags of `acp-harness run` besides the settings' own: the output format, which session to
 * continue, attached files, an MCP config file, and the prompt's words.
 *
 * @module
 */
import { ConfigError } from "./config.ts";

/** What `acp-harness run` takes beyond the settings. */
export interface RunOptions {
  /** The prompt's words (joined by spaces); `["-"]` or none reads stdin. */
  readonly words: readonly string[];
  /** `text` (the default), `--json` (one document) or `--jsonl` (every update, then it). */
  readonly output: "text" | "json" | "jsonl";
  /** `--resume <id>`: continue that session. */
  readonly resume?: string;
  /** `--continue`: continue the newest session in the working directory. */
  readonly continueLatest: boolean;
  /** `--ephemeral`: keep the session in memory only. */
  readonly ephemeral: boolean;
  /** `--file <path>` (repeatable): files attached as resource links. */
  readonly files: readonly string[];
  /** `--mcp-config <file>`: a JSON file with `mcpServers` as in `session/new`. */
  readonly mcpConfig?: string;
}

/** The flags {@link takeRunFlag} knows, for "did you mean". */
export const RUN_FLAGS: readonly string[] = [
  "--json",
  "--jsonl",
  "--resume",
  "--continue",
  "--ephemeral",
  "--file",
  "--mcp-config",
];

/** A {@link RunOptions} being filled in. */
export type RunDraft = { -readonly [K in keyof RunOptions]: RunOptions[K] };

/** An empty draft. */
export function runDraft(): RunDraft {
  return { words: [], output: "text", continueLatest: false, ephemeral: false, files: [] };
}

/**
 * Takes one argument of `acp-harness run` when it is the command's own (a flag of
 * {@link RUN_FLAGS}, or a word of the prompt).
 *
 * @example A flag and a word
 * ```ts
 * import assert from "node:assert/strict";
 * import { runDraft, takeRunFlag } from "./run_args.ts";
 * const draft = runDraft();
 * assert.equal(takeRunFlag(["--json", "hi"], 0, draft), 0);
 * assert.equal(takeRunFlag(["--json", "hi"], 1, draft), 1);
 * assert.deepEqual([draft.output, draft.words], ["json", ["hi"]]);
 * ```
 *
 * @param args Every argument
 * @param index Where this one is
 * @param draft Receives what it says
 * @returns The index of the last argument taken, or `undefined` when it is not the command's own
 * @throws {ConfigError} For a flag without its value, or conflicting flags
 */
export function takeRunFlag(
  args: readonly string[],
  index: number,
  draft: RunDraft,
): number | undefined {
  const arg = args[index] ?? "";
  if (arg === "-" || !arg.startsWith("-")) {
    draft.words = [...draft.words, arg];
    return index;
  }
  const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
  const flag = eq === -1 ? arg : arg.slice(0, eq);
  const value = (): [string, number] => {
    const text = eq === -1 ? args[index + 1] : arg.slice(eq + 1);
    if (text === undefined || text === "" || (eq === -1 && text.startsWith("--"))) {
      throw new ConfigError(`Option "${flag}" needs a value`);
    }
    return [text, eq === -1 ? index + 1 : index];
  };
  const bare = (): number => {
    if (eq !== -1) throw new ConfigError(`Option "${flag}" takes no value`);
    return index;
  };
  switch (flag) {
    case "--json":
    case "--jsonl": {
      const output = flag === "--json" ? "json" : "jsonl";
      if (draft.output !== "text" && draft.output !== output) {
        throw new ConfigError(`Options "--json" and "--jsonl" exclude each other`);
      }
      draft.output = output;
      return bare();
    }
    case "--continue":
      draft.continueLatest = true;
      return bare();
    case "--ephemeral":
      draft.ephemeral = true;
      return bare();
    case "--resume": {
      const [text, next] = value();
      draft.resume = text;
      return next;
    }
    case "--file": {
      const [text, next] = value();
      draft.files = [...draft.files, text];
      return next;
    }
    case "--mcp-config": {
      const [text, next] = value();
      draft.mcpConfig = text;
      return next;
    }
    default:
      return undefined;
  }
}

/**
 * Checks a filled-in draft: `--resume` and `--continue` exclude each other, and neither goes with
 * `--ephemeral` (a memory session is gone when the run ends).
 *
 * @param draft The draft
 * @returns The options
 * @throws {ConfigError} Naming the conflicting flags
 */
export function finishRun(draft: RunDraft): RunOptions {
  if (draft.resume !== undefined && draft.continueLatest) {
    throw new ConfigError(`Options "--resume" and "--continue" exclude each other`);
  }
  if (draft.ephemeral && (draft.resume !== undefined || draft.continueLatest)) {
    throw new ConfigError(
      `Option "--ephemeral" cannot continue a session (drop "--resume"/"--continue")`,
    );
  }
  return draft;
}
