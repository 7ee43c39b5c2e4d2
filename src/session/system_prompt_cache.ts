/**
 * A session's system prompt, built once per model and day.
 *
 * @module
 */
import { buildSystemPrompt, type SystemPromptSandbox } from "../agent/system_prompt.ts";

/** What a {@link SystemPromptCache} is built from. */
export interface SystemPromptCacheOptions {
  /** Canonical workspace roots, the cwd first. */
  readonly roots: readonly string[];
  /** Project instructions (the cwd's AGENTS.md), when present. */
  readonly instructions?: string;
  readonly now: () => number;
}

/**
 * The system prompt of the last model, (UTC) day and sandbox level asked for, rebuilt when one
 * changes.
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
   * @param sandbox The sandbox the session's commands run in, when the server has one
   * @returns The prompt text
   */
  get(model: string, sandbox?: SystemPromptSandbox): string {
    const date = new Date(this.#options.now());
    const key = `${model}\n${Math.floor(date.getTime() / 86_400_000)}\n${sandbox?.level ?? ""}`;
    if (this.#cached?.key !== key) {
      const { roots, instructions } = this.#options;
      this.#cached = {
        key,
        text: buildSystemPrompt({
          roots,
          model,
          date,
          ...(instructions ? { instructions } : {}),
          ...(sandbox ? { sandbox } : {}),
        }),
      };
    }
    return this.#cached.text;
  }
}
