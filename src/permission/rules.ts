/**
 * Permission rules: which rule, if any, decides a tool call before the mode does. Deny rules
 * come first, then ask rules, then allow rules; a call no rule decides is the mode's (and the
 * session's remembered answers'). Syntax in `./rule_syntax.ts`, command lines in
 * `./shell_command.ts`; docs/permission.md describes the whole.
 *
 * @module
 */
import {
  matchesStarPattern,
  normalizeWhitespace,
  type PermissionRule,
  SPECIFIER_KINDS,
} from "./rule_syntax.ts";
import {
  analyzeCommand,
  type CommandAnalysis,
  type CommandPart,
  normalizePosix,
} from "./shell_command.ts";

/** The rules of a server, by what they do. */
export interface PermissionRules {
  /** Rules that let the calls they cover run (every part of a command line covered). */
  readonly allow: readonly PermissionRule[];
  /** Rules that refuse the calls they match (any part of a command line). */
  readonly deny: readonly PermissionRule[];
  /** Rules that ask the user before the calls they match run, in every mode. */
  readonly ask: readonly PermissionRule[];
}

/** No rules: every call is the mode's. */
export const NO_RULES: PermissionRules = Object.freeze({ allow: [], deny: [], ask: [] });

/** A tool call, as rules see it. */
export interface RuleCall {
  /** The tool's name. */
  readonly tool: string;
  /** Its input (the parsed JSON arguments). */
  readonly input: unknown;
  /** The session's working directory: relative paths and globs are resolved against it. */
  readonly cwd: string;
  /** The session's roots (the cwd first). */
  readonly roots: readonly string[];
}

/** What the rules decided about a call, with the rule (or rules) that did. */
export interface RuleVerdict {
  readonly action: "allow" | "deny" | "ask";
  /** The deciding rule as written; for a command allowed part by part, each rule used. */
  readonly rule: string;
}

/** Characters a `*` may not stand for when a rule must match a whole complex line. */
const SHELL_SPECIAL = new Set([";", "&", "|", "<", ">", "(", ")", "$", "`", "\\", "\n", "\r"]);

/**
 * Decides a call by the rules: the first deny rule that matches denies it, else the first ask
 * rule asks, else allow rules that cover it allow it; `undefined` leaves it to the mode.
 *
 * A `run_command` line is split into its commands (`&&`, `||`, `;`, `|`, `&`, newlines): a deny
 * or ask rule matching any of them (nested ones included) or the whole line decides; allow
 * rules must match every one. A line with substitutions, subshells, functions, here-documents,
 * redirections out of the roots (and the like: see `./shell_command.ts`) needs one allow rule
 * that matches the whole line with every `*` standing for no shell operator; a line that does
 * not parse is allowed only by a rule without a specifier.
 *
 * @example Deny beats allow, and a list needs every part allowed
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseRule } from "./rule_syntax.ts";
 * import { decideByRules } from "./rules.ts";
 * const rules = {
 *   allow: [parseRule("allow", "run_command(npm test*)")],
 *   deny: [parseRule("deny", "write_file")],
 *   ask: [],
 * };
 * const call = (tool: string, input: unknown) => ({ tool, input, cwd: "/w", roots: ["/w"] });
 * assert.equal((await decideByRules(rules, call("write_file", { path: "a" })))?.action, "deny");
 * const allowed = await decideByRules(rules, call("run_command", { command: "npm test" }));
 * assert.equal(allowed?.action, "allow");
 * const list = await decideByRules(rules, call("run_command", { command: "npm test && rm -rf ~" }));
 * assert.equal(list, undefined);
 * ```
 *
 * @param rules The rules
 * @param call The tool call
 * @returns The verdict, or `undefined` when no rule decides
 */
export async function decideByRules(
  rules: PermissionRules,
  call: RuleCall,
): Promise<RuleVerdict | undefined> {
  const relevant = (list: readonly PermissionRule[]) =>
    list.filter((rule) => matchesStarPattern(rule.tool, call.tool));
  const deny = relevant(rules.deny);
  const ask = relevant(rules.ask);
  const allow = relevant(rules.allow);
  if (deny.length + ask.length + allow.length === 0) return undefined;
  const subject = await subjectOf(call);
  for (const [action, list] of [["deny", deny], ["ask", ask]] as const) {
    const rule = list.find((rule) => catches(rule, subject));
    if (rule) return { action, rule: rule.text };
  }
  const used = allowedBy(allow, subject);
  return used ? { action: "allow", rule: used.join(", ") } : undefined;
}

/** What a call's specifier-bearing rules are matched against. */
type Subject =
  | { readonly kind: "none" }
  | { readonly kind: "command"; readonly line: string; readonly analysis: CommandAnalysis }
  | { readonly kind: "path"; readonly path: string | undefined; readonly call: RuleCall }
  | { readonly kind: "agent"; readonly agent: string | undefined };

async function subjectOf(call: RuleCall): Promise<Subject> {
  const kind = SPECIFIER_KINDS[call.tool];
  const input = (typeof call.input === "object" && call.input !== null ? call.input : {}) as Record<
    string,
    unknown
  >;
  if (kind === "command") {
    const line = typeof input["command"] === "string" ? input["command"] : "";
    const dir = typeof input["cwd"] === "string" ? input["cwd"] : ".";
    const cwd = normalizePosix(dir.startsWith("/") ? dir : `${call.cwd}/${dir}`);
    return { kind, line, analysis: await analyzeCommand(line, { cwd, roots: call.roots }) };
  }
  if (kind === "path") {
    const given = input["path"] ??
      (call.tool === "find_files" || call.tool === "search_text" ? "." : undefined);
    const path = typeof given === "string" && given !== "" && !given.includes("\0")
      ? normalizePosix(given.startsWith("/") ? given : `${call.cwd}/${given}`)
      : undefined;
    return { kind, path, call };
  }
  if (kind === "agent") {
    return { kind, agent: typeof input["agent"] === "string" ? input["agent"] : undefined };
  }
  return { kind: "none" };
}

/** Whether a deny or ask rule catches the call: any part, nested or the whole line. */
function catches(rule: PermissionRule, subject: Subject): boolean {
  const pattern = rule.specifier;
  if (pattern === undefined) return true;
  switch (subject.kind) {
    case "command": {
      if (matchesStarPattern(pattern, normalizeWhitespace(subject.line))) return true;
      if (!subject.analysis.parsed) return false;
      return subject.analysis.nested.some((part) => partMatches(pattern, part, true));
    }
    case "path":
      // A call without a usable path fails in the tool; a deny rule still refuses it first.
      return subject.path === undefined || pathMatches(pattern, subject.path, subject.call);
    case "agent":
      return subject.agent === undefined || matchesStarPattern(pattern, subject.agent);
    default:
      return false;
  }
}

/** The allow rules that together allow the call, or `undefined` when they do not. */
function allowedBy(rules: readonly PermissionRule[], subject: Subject): string[] | undefined {
  const whole = rules.find((rule) => rule.specifier === undefined);
  if (whole) return [whole.text];
  switch (subject.kind) {
    case "command": {
      const { analysis } = subject;
      if (!analysis.parsed) return undefined;
      if (analysis.complex !== undefined || analysis.parts.length === 0) {
        const line = normalizeWhitespace(subject.line);
        const rule = rules.find((rule) =>
          matchesStarPattern(rule.specifier ?? "", line, (c) => !SHELL_SPECIAL.has(c))
        );
        return rule ? [rule.text] : undefined;
      }
      const used = new Set<string>();
      for (const part of analysis.parts) {
        const rule = rules.find((rule) => partMatches(rule.specifier ?? "", part, false));
        if (!rule) return undefined;
        used.add(rule.text);
      }
      return [...used];
    }
    case "path": {
      const { path, call } = subject;
      if (path === undefined) return undefined;
      const rule = rules.find((rule) => pathMatches(rule.specifier ?? "", path, call));
      return rule ? [rule.text] : undefined;
    }
    case "agent": {
      const { agent } = subject;
      if (agent === undefined) return undefined;
      const rule = rules.find((rule) => matchesStarPattern(rule.specifier ?? "", agent));
      return rule ? [rule.text] : undefined;
    }
    default:
      return undefined;
  }
}

/** A part matches as written; deny and ask rules also match its other forms. */
function partMatches(pattern: string, part: CommandPart, variants: boolean): boolean {
  if (matchesStarPattern(pattern, part.text)) return true;
  return variants && part.variants.some((variant) => matchesStarPattern(pattern, variant));
}

/** Longest path matched against a glob. */
const MAX_PATH_LENGTH = 4096;

const compiledGlobs = new Map<string, RegExp>();

/**
 * Whether a path matches a rule's path glob: `**` any number of directories, `*` any run of
 * characters but `/`, `?` one character but `/`. A relative glob is relative to the session's
 * working directory and never matches a path outside the roots.
 */
function pathMatches(glob: string, path: string, call: RuleCall): boolean {
  if (path.length > MAX_PATH_LENGTH) return false;
  const absolute = glob.startsWith("/");
  if (!absolute && !call.roots.some((root) => isInside(normalizePosix(root), path))) return false;
  const full = absolute ? glob : `${call.cwd.replace(/\/+$/, "")}/${glob}`;
  let regex = compiledGlobs.get(full);
  if (!regex) {
    regex = globRegex(normalizeGlob(full));
    if (compiledGlobs.size > 1000) compiledGlobs.clear();
    compiledGlobs.set(full, regex);
  }
  return regex.test(path);
}

function isInside(root: string, path: string): boolean {
  return path === root || path.startsWith(root === "/" ? "/" : `${root}/`);
}

/** A glob with `.`, `..` and repeated slashes resolved (a `..` cancels the segment before). */
function normalizeGlob(glob: string): string {
  const trailing = glob.endsWith("/") ? "/**" : "";
  return normalizePosix(glob) + trailing;
}

function globRegex(glob: string): RegExp {
  let source = "";
  const segments = glob.split("/");
  segments.forEach((segment, index) => {
    const last = index === segments.length - 1;
    if (segment === "**") {
      source += last ? "(?:/.*)?" : "(?:/[^/]*)*";
      return;
    }
    if (index > 0) source += "/";
    for (const character of segment) {
      source += character === "*"
        ? "[^/]*"
        : character === "?"
        ? "[^/]"
        : character.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&");
    }
  });
  return new RegExp(`^${source || "/"}$`, "u");
}
