/**
 * A session's system prompt, built once per model and day.
 *
 * @module
 */
import { buildSystemPrompt, type SystemPromptSandbox } from "../agent/system_prompt.ts";
import type { PermissionMode } from "../permission/mode.ts";
import type { PermissionRules } from "../permission/rules.ts";

/** What the system prompt of one turn states besides the model and the day. */
export interface SystemPromptTurn {
  /** The permission mode the turn runs under. */
  readonly mode?: PermissionMode | undefined;
  /** The sandbox the session's commands run in, when the server has one. */
  readonly sandbox?: SystemPromptSandbox | undefined;
}

/** What a {@link SystemPromptCache} is built from. */
export interface SystemPromptCacheOptions {
  /** Canonical workspace roots, the cwd first. */
  readonly roots: readonly string[];
  /** Project instructions (the cwd's AGENTS.md), when present. */
  readonly instructions?: string;
  readonly now: () => number;
  /** The server's permission rules, stated with the mode. */
  readonly rules?: PermissionRules;
}

/**
 * The system prompt of the last model, permission mode, sandbox level and (UTC) day asked for,
 * rebuilt when one changes.
 */
export class SystemPromptCache {
  readonly #options: SystemPromptCacheOptions;
  #cached: { key: string; text: string } | undefined;

  /** @param options The roots, the instructions and the clock */
  constructor(options: SystemPromptCacheOptions) {
    this.#options = options;
  }

  /**
   * The system prompt for a model today.
   *
   * @param model The model's human name
   * @param turn The permission mode of the turn and the sandbox its commands run in (each
   *   stated in the prompt when given)
   * @returns The prompt text
   */
  get(model: string, turn: SystemPromptTurn = {}): string {
    const { mode, sandbox } = turn;
    const date = new Date(this.#options.now());
    const day = Math.floor(date.getTime() / 86_400_000);
    const key = `${model}\n${day}\n${mode ?? ""}\n${sandbox?.level ?? ""}\n${
      sandbox?.network ?? ""
    }`;
    if (this.#cached?.key !== key) {
      const { roots, instructions, rules } = this.#options;
      this.#cached = {
        key,
        text: buildSystemPrompt({
          roots,
          model,
          date,
          ...(instructions ? { instructions } : {}),
          ...(mode ? { permissions: { mode, ...(rules ? { rules } : {}) } } : {}),
          ...(sandbox ? { sandbox } : {}),
        }),
      };
    }
    return this.#cached.text;
  }
}
