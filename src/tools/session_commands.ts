/**
 * Slash commands of a session: what the client is offered (`available_commands_update`) and how a
 * prompt that starts with one becomes the user turn.
 *
 * @module
 */
import type { LlmContentPart } from "../llm/provider.ts";

/** A command as the client is offered it. */
export interface SessionCommand {
  /** The name, without the slash. */
  readonly name: string;
  /** What it does. */
  readonly description: string;
  /** What to type after the name, when it takes input. */
  readonly hint?: string;
}

/** Where a session's commands come from (its MCP servers' prompts, for now). */
export interface SessionCommands {
  /** The commands offered now. */
  list(): readonly SessionCommand[];
  /**
   * The user turn a command makes.
   *
   * @param name The command's name (one that {@link SessionCommands.list} offers)
   * @param input What followed the name, trimmed
   * @param signal Aborted when the prompt is cancelled
   * @returns The user message
   * @throws {PromptContentError} When the input does not fit the command, or it failed
   */
  expand(name: string, input: string, signal: AbortSignal): Promise<readonly LlmContentPart[]>;
}

/**
 * The command a prompt invokes: its first part is text `/<name>` (then whitespace or the end) and
 * `name` is offered. Unknown `/words` are ordinary text.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { invokedCommand } from "./session_commands.ts";
 * const offered = [{ name: "mcp__docs__greet", description: "Greets" }];
 * assert.deepEqual(
 *   invokedCommand([{ type: "text", text: "/mcp__docs__greet Ada Lovelace" }], offered),
 *   { name: "mcp__docs__greet", input: "Ada Lovelace" },
 * );
 * assert.equal(invokedCommand([{ type: "text", text: "/etc/hosts is odd" }], offered), undefined);
 * ```
 *
 * @param content The admitted prompt
 * @param offered The commands offered
 * @returns The command and its input, or undefined
 */
export function invokedCommand(
  content: readonly LlmContentPart[],
  offered: readonly SessionCommand[],
): { name: string; input: string } | undefined {
  const first = content[0];
  if (first?.type !== "text") return undefined;
  const match = /^\s*\/([A-Za-z0-9_-]+)(?:\s+([\s\S]*))?$/.exec(first.text);
  if (!match) return undefined;
  const name = match[1] as string;
  if (!offered.some((command) => command.name === name)) return undefined;
  return { name, input: (match[2] ?? "").trim() };
}
