/**
 * The syntax of permission rules (`--allow`, `--deny`, `--ask`): `TOOL` or `TOOL(SPECIFIER)`.
 * TOOL is a tool name or a glob of names (`*` is any run of characters: `mcp__github__*`); the
 * specifier narrows the rule to some calls of the tool: a command pattern for `run_command`, a
 * path glob for the file tools, an agent name (glob) for `delegate`. Pure: parsing only, the
 * matching is `./rules.ts`'s.
 *
 * @module
 */

/** What a rule does to the calls it matches. */
export type RuleKind = "allow" | "deny" | "ask";

/** What the specifier of a tool's rules is matched against. */
export type SpecifierKind = "command" | "path" | "agent";

/**
 * The tools whose rules take a specifier, and what it means for each: the command line of
 * `run_command`, the `path` of the file, listing and search tools, the agent of `delegate`.
 */
export const SPECIFIER_KINDS: Readonly<Record<string, SpecifierKind>> = Object.freeze({
  run_command: "command",
  read_file: "path",
  write_file: "path",
  edit_file: "path",
  list_directory: "path",
  find_files: "path",
  search_text: "path",
  delegate: "agent",
});

/** The longest rule read (longer ones are refused). */
export const MAX_RULE_LENGTH = 4096;

/** A parsed rule. */
export interface PermissionRule {
  /** What it does to the calls it matches. */
  readonly kind: RuleKind;
  /** The rule as written (trimmed): how logs, the session log and the model name it. */
  readonly text: string;
  /** The tool name or glob. */
  readonly tool: string;
  /** The specifier, whitespace-normalised for commands; absent for a rule on every call. */
  readonly specifier?: string;
}

/** A rule that does not parse: what is wrong and where (the 1-based character position). */
export class RuleSyntaxError extends SyntaxError {
  /** The 1-based position of the character the problem is at, in the trimmed rule. */
  readonly position: number;

  /**
   * Creates the error.
   *
   * @param problem What is wrong
   * @param position The 1-based character position
   */
  constructor(problem: string, position: number) {
    super(`${problem} at character ${position}`);
    this.name = "RuleSyntaxError";
    this.position = position;
  }
}

const TOOL_CHARACTER = /[A-Za-z0-9_.*:-]/;

/**
 * Collapses runs of ASCII whitespace (what the shell splits words on) into one space and trims:
 * how command patterns and the commands they are matched with are compared.
 *
 * @param text A command or a pattern
 * @returns The normalised text
 */
export function normalizeWhitespace(text: string): string {
  return text.replace(/[ \t\n\r]+/g, " ").trim();
}

/**
 * Parses one rule.
 *
 * @example Rules of each shape
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseRule } from "./rule_syntax.ts";
 * assert.deepEqual(parseRule("allow", "run_command(npm  test *)"), {
 *   kind: "allow",
 *   text: "run_command(npm  test *)",
 *   tool: "run_command",
 *   specifier: "npm test *",
 * });
 * assert.equal(parseRule("deny", "mcp__github__*").tool, "mcp__github__*");
 * assert.throws(() => parseRule("deny", "run_command(npm"), /Missing "\)" at character 16/);
 * ```
 *
 * @param kind What the rule does
 * @param written The rule as written
 * @returns The rule
 * @throws {RuleSyntaxError} Naming the problem and its position
 */
export function parseRule(kind: RuleKind, written: string): PermissionRule {
  const text = written.trim();
  if (text === "") throw new RuleSyntaxError("Empty rule", 1);
  if (text.length > MAX_RULE_LENGTH) {
    throw new RuleSyntaxError(
      `Rule longer than ${MAX_RULE_LENGTH} characters`,
      MAX_RULE_LENGTH + 1,
    );
  }
  let end = 0;
  while (end < text.length && TOOL_CHARACTER.test(text[end] ?? "")) end++;
  const tool = text.slice(0, end);
  if (end < text.length && text[end] !== "(") {
    throw new RuleSyntaxError(
      `Unexpected ${JSON.stringify(text[end])} in the tool name (letters, digits, _ . : - and *)`,
      end + 1,
    );
  }
  if (tool === "") throw new RuleSyntaxError("Missing tool name", 1);
  if (end === text.length) return { kind, text, tool };
  const open = end;
  const close = closingParenthesis(text, open);
  if (close < text.length - 1) {
    throw new RuleSyntaxError(`Unexpected text after ")"`, close + 2);
  }
  const raw = text.slice(open + 1, close);
  const specifierKind = SPECIFIER_KINDS[tool];
  if (specifierKind === undefined) {
    throw new RuleSyntaxError(
      `"${tool}" takes no specifier (only ${Object.keys(SPECIFIER_KINDS).join(", ")} do)`,
      open + 1,
    );
  }
  const specifier = specifierKind === "command" ? normalizeWhitespace(raw) : raw.trim();
  if (specifier === "") throw new RuleSyntaxError("Empty specifier", open + 2);
  if (specifierKind === "path" && specifier.includes("\0")) {
    throw new RuleSyntaxError("NUL in a path glob", open + 2 + raw.indexOf("\0"));
  }
  return { kind, text, tool, specifier };
}

/** The index of the `)` that closes the `(` at `open` (parentheses nest), or throws. */
function closingParenthesis(text: string, open: number): number {
  let depth = 0;
  for (let index = open; index < text.length; index++) {
    const character = text[index];
    if (character === "(") depth++;
    else if (character === ")" && --depth === 0) return index;
  }
  throw new RuleSyntaxError(`Missing ")"`, text.length + 1);
}

/**
 * Splits a comma-separated list of rules (an environment variable) on the commas outside
 * parentheses, so that `run_command(a, b)` stays one rule; empty items are skipped.
 *
 * @example Commas inside a specifier
 * ```ts
 * import assert from "node:assert/strict";
 * import { splitRuleList } from "./rule_syntax.ts";
 * assert.deepEqual(splitRuleList("write_file, run_command(echo a, b)"), [
 *   "write_file",
 *   "run_command(echo a, b)",
 * ]);
 * ```
 *
 * @param list The list
 * @returns The rules' texts, trimmed
 */
export function splitRuleList(list: string): string[] {
  const items: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index <= list.length; index++) {
    const character = list[index];
    if (character === "(") depth++;
    else if (character === ")" && depth > 0) depth--;
    else if (index === list.length || (character === "," && depth === 0)) {
      const item = list.slice(start, index).trim();
      if (item !== "") items.push(item);
      start = index + 1;
    }
  }
  return items;
}

/**
 * Whether `text` matches a pattern where `*` stands for any run of characters (none excluded
 * unless `star` says) and every other character for itself. Linear in practice and at worst
 * `O(text × pattern)`: no regular expression, no backtracking blow-up.
 *
 * @param pattern The pattern
 * @param text The text
 * @param star Whether `*` may take a character (default: any)
 * @returns Whether it matches the whole text
 */
export function matchesStarPattern(
  pattern: string,
  text: string,
  star: (character: string) => boolean = () => true,
): boolean {
  let p = 0;
  let t = 0;
  let starAt = -1;
  let resume = 0;
  while (t < text.length) {
    const character = text[t] ?? "";
    if (p < pattern.length && pattern[p] !== "*" && pattern[p] === character) {
      p++;
      t++;
    } else if (p < pattern.length && pattern[p] === "*") {
      starAt = p++;
      resume = t;
    } else if (starAt !== -1 && star(text[resume] ?? "")) {
      p = starAt + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === "*") p++;
  return p === pattern.length;
}
