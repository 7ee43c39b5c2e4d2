/** Inputs of {@link buildSystemPrompt}. */
export interface SystemPromptOptions {
  /** Workspace roots, the session cwd first. */
  readonly roots: readonly string[];
  /** Human model name. */
  readonly model: string;
  readonly date: Date;
  /** Project instructions (AGENTS.md), when present. */
  readonly instructions?: string;
}

/**
 * The system prompt: who the agent is, where it works, the date and project instructions.
 *
 * @example Building a prompt
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildSystemPrompt } from "./system_prompt.ts";
 * const text = buildSystemPrompt({ roots: ["/w"], model: "echo", date: new Date(0) });
 * assert(text.includes("/w"));
 * ```
 *
 * @param options The inputs
 * @returns The prompt text
 */
export function buildSystemPrompt(options: SystemPromptOptions): string {
  const [cwd, ...extra] = options.roots;
  const lines = [
    `You are acp-harness, a coding agent running as the ${options.model} model.`,
    "You work in the user's workspace with the tools you are given and report what you did.",
    `Working directory: ${cwd ?? "(none)"}`,
  ];
  if (extra.length > 0) lines.push(`Additional workspace roots: ${extra.join(", ")}`);
  lines.push(`Today's date: ${options.date.toISOString().slice(0, 10)}`);
  if (options.instructions) {
    lines.push("", "Project instructions (AGENTS.md):", options.instructions.trim());
  }
  return lines.join("\n");
}
