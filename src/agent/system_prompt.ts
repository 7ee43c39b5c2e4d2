import type { PermissionMode } from "../permission/mode.ts";
import type { PermissionRules } from "../permission/rules.ts";
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
  /** The permission mode and rules the turn runs under (see {@link permissionLines}). */
  readonly permissions?: { readonly mode: PermissionMode; readonly rules?: PermissionRules };
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
  if (options.permissions) {
    lines.push(...permissionLines(options.permissions.mode, options.permissions.rules));
  }
  if (options.sandbox) lines.push(...sandboxLines(options.sandbox));
  if (options.instructions) {
    lines.push("", "Project instructions (AGENTS.md):", options.instructions.trim());
  }
  return lines.join("\n");
}

/** The most characters the rules take in the system prompt. */
const RULES_SHOWN_CHARACTERS = 600;

const MODE_LINES: Readonly<Record<PermissionMode, string>> = {
  ask: "edits and commands ask the user first",
  auto: "tool calls run without asking",
  "read-only": "edits, commands and other changes are refused",
};

/**
 * The system prompt's lines on permissions: the mode and, capped in length, the rules, so that
 * the model does not spend steps on calls that will be refused.
 *
 * @example Read-only with an allow rule
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseRule } from "../permission/rule_syntax.ts";
 * import { permissionLines } from "./system_prompt.ts";
 * const lines = permissionLines("read-only", {
 *   allow: [parseRule("allow", "run_command(npm test)")],
 *   deny: [],
 *   ask: [],
 * });
 * assert(lines[0]?.includes("read-only"));
 * assert(lines[1]?.includes("allow run_command(npm test)"));
 * ```
 *
 * @param mode The permission mode of the turn
 * @param rules The permission rules
 * @returns The lines
 */
export function permissionLines(mode: PermissionMode, rules?: PermissionRules): string[] {
  const all = rules ? [...rules.deny, ...rules.ask, ...rules.allow] : [];
  const lines = [
    `Permission mode: ${mode} (${MODE_LINES[mode]}${
      all.length > 0 ? " unless a rule decides" : ""
    }).`,
  ];
  if (all.length === 0) return lines;
  let shown = "";
  let count = 0;
  for (const rule of all) {
    const item = `${rule.kind} ${rule.text}`;
    if (shown.length + item.length > RULES_SHOWN_CHARACTERS) break;
    shown += `${count === 0 ? "" : "; "}${item}`;
    count++;
  }
  const more = all.length - count;
  lines.push(
    `Permission rules (deny beats ask beats allow; a command line needs every part allowed, ` +
      `and $(…), backticks, subshells and redirections out of the workspace need a rule for ` +
      `the whole line): ${shown}${more > 0 ? `; and ${more} more` : ""}.`,
  );
  return lines;
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
