import { type SandboxLevel, sandboxSummary } from "../sandbox/sandbox.ts";

/** The sandbox the session's commands run in, as the system prompt states it. */
export interface SystemPromptSandbox {
  /** The session's level. */
  readonly level: SandboxLevel;
  /** Whether commands may reach the network. */
  readonly network: boolean;
}

/** Inputs of {@link buildSystemPrompt}. */
export interface SystemPromptOptions {
  /** Workspace roots, the session cwd first. */
  readonly roots: readonly string[];
  /** Human model name. */
  readonly model: string;
  readonly date: Date;
  /** Project instructions (AGENTS.md), when present. */
  readonly instructions?: string;
  /** The sandbox of `run_command`, when the server has one. */
  readonly sandbox?: SystemPromptSandbox;
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
  if (options.sandbox) lines.push(...sandboxLines(options.sandbox));
  if (options.instructions) {
    lines.push("", "Project instructions (AGENTS.md):", options.instructions.trim());
  }
  return lines.join("\n");
}

/**
 * The system prompt's lines about the sandbox of `run_command`, so that the model does not spend
 * steps on what will be refused.
 *
 * @example A workspace-write session
 * ```ts
 * import assert from "node:assert/strict";
 * import { sandboxLines } from "./system_prompt.ts";
 * const [line] = sandboxLines({ level: "workspace-write", network: false });
 * assert.match(line ?? "", /sandbox workspace-write/);
 * ```
 *
 * @param sandbox The session's level and whether commands may reach the network
 * @returns The lines
 */
export function sandboxLines(sandbox: SystemPromptSandbox): string[] {
  if (sandbox.level === "off") return ["Commands (run_command) run without a sandbox."];
  return [
    `Commands (run_command) run in a ${sandboxSummary(sandbox.level, sandbox.network)}` +
    "; credential directories such as ~/.ssh are hidden and /tmp is private to each command." +
    " A command the sandbox refuses fails with that error: do not retry it, say so or ask the user.",
  ];
}
