/**
 * How the permission-rule settings (`--allow`, `--deny`, `--ask`, their variables and the config
 * file's `permissions` section) are read: each rule parsed at start, so a rule that does not
 * parse stops the start with a message naming the rule, where it came from and the position.
 *
 * @module
 */
import {
  parseRule,
  type PermissionRule,
  type RuleKind,
  RuleSyntaxError,
  splitRuleList,
} from "../permission/rule_syntax.ts";
import { ConfigError, type ValueType } from "./value_types.ts";

/**
 * The value type of a list of rules of one kind: from text, comma-separated (commas inside a
 * specifier's parentheses do not split); from JSON, an array of strings.
 *
 * @example A rule that does not parse
 * ```ts
 * import assert from "node:assert/strict";
 * import { ruleList } from "./rule_list.ts";
 * assert.throws(
 *   () => ruleList("allow").fromText?.("run_command(npm", "--allow"),
 *   /Invalid rule "run_command\(npm" in "--allow": missing "\)" at character 16/,
 * );
 * ```
 *
 * @param kind What the rules do
 * @returns The value type
 */
export function ruleList(kind: RuleKind): ValueType<readonly PermissionRule[]> {
  return {
    fromText(text, name) {
      const items = splitRuleList(text);
      if (items.length === 0) {
        throw new ConfigError(`Invalid value "${text}" for "${name}": expected a rule`);
      }
      return items.map((item) => readRule(kind, item, `"${name}"`));
    },
    fromJson(json, key) {
      if (!Array.isArray(json)) throw new ConfigError(`"${key}" must be an array of rules`);
      return json.map((item, index) => {
        if (typeof item !== "string") {
          throw new ConfigError(`"${key}[${index}]" must be a rule (a string)`);
        }
        return readRule(kind, item, `"${key}[${index}]"`);
      });
    },
  };
}

function readRule(kind: RuleKind, text: string, where: string): PermissionRule {
  try {
    return parseRule(kind, text);
  } catch (error) {
    if (!(error instanceof RuleSyntaxError)) throw error;
    const problem = error.message.charAt(0).toLowerCase() + error.message.slice(1);
    throw new ConfigError(`Invalid rule "${text.trim()}" in ${where}: ${problem}`);
  }
}

/**
 * Rules from two sources together (sources add to each other, a rule given twice counts once).
 *
 * @param lower The rules of the lower source
 * @param higher The rules of the higher source
 * @returns Both
 */
export function addRules(
  lower: readonly PermissionRule[],
  higher: readonly PermissionRule[],
): readonly PermissionRule[] {
  const seen = new Set(lower.map((rule) => rule.text));
  return [...lower, ...higher.filter((rule) => !seen.has(rule.text))];
}
