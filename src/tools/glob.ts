/**
 * A small glob matcher for `/`-separated relative paths, used by find_files and search_text.
 * Globs come from the model, so they are compiled to RE2 (linear-time matching, see
 * `_regex.ts`): no glob can make matching a path backtrack, e.g. `**\/*a*a*a*a*a*b`.
 *
 * @module
 */
import { compileRe2, dotAll } from "./_regex.ts";

/** Brace expansions beyond this many alternatives are refused. */
const MAX_ALTERNATIVES = 256;

/** A compiled glob pattern. */
export interface Glob {
  /** The pattern as given. */
  readonly pattern: string;
  /**
   * The directory (relative, no wildcards) every match lies under, or `""`; walks start there.
   * Empty when the pattern matches base names.
   */
  readonly base: string;
  /** Whether a path segment of the pattern names `name` literally (e.g. `node_modules`). */
  names(name: string): boolean;
  /** Whether a relative path matches. */
  matches(path: string): boolean;
  /**
   * Worst-case matching cost per character, in RE2 instructions: matching a path of `n`
   * characters costs at most about `cost × n` steps of about 50 ns.
   */
  readonly cost: number;
}

/**
 * Compiles a glob pattern.
 *
 * Syntax: `*` matches any characters except `/`, `?` one character except `/`, `**` as a whole
 * segment any number of directories (zero included), `{a,b}` alternatives (nestable, may contain
 * `/`), `[abc]`, `[a-z]` and `[!abc]` one character of (or not of) a set. `*` and `?` also match a
 * leading dot. A pattern without `/` matches the base name at any depth (like `.gitignore` and
 * `rg -g`), so `*.ts` finds every TypeScript file. A leading `./` or `/` is ignored.
 *
 * @example Matching
 * ```ts
 * import assert from "node:assert/strict";
 * import { compileGlob } from "./glob.ts";
 * const glob = await compileGlob("src/**\/*.{ts,tsx}");
 * if (typeof glob === "string") throw new Error(glob);
 * assert.equal(glob.matches("src/a/b/c.tsx"), true);
 * assert.equal(glob.matches("src/c.ts"), true);
 * assert.equal(glob.matches("lib/c.ts"), false);
 * assert.equal(glob.base, "src");
 * ```
 *
 * @param pattern The glob
 * @returns The compiled glob, or why the pattern is refused
 */
export async function compileGlob(pattern: string): Promise<Glob | string> {
  const trimmed = pattern.replace(/^(?:\.\/)+/, "").replace(/^\/+/, "");
  if (trimmed === "") return "The pattern is empty";
  const alternatives = expandBraces(trimmed);
  if (alternatives === undefined) {
    return `The pattern has more than ${MAX_ALTERNATIVES} brace alternatives`;
  }
  const segmentsOf = (alternative: string): string[] =>
    alternative.split("/").filter((segment) => segment !== "" && segment !== ".");
  if (alternatives.some((alternative) => segmentsOf(alternative).includes(".."))) {
    return "The pattern must not contain `..`; search from another path instead";
  }
  const byBaseName = !trimmed.includes("/");
  const sources = alternatives.map((alternative) => segmentsToRegex(segmentsOf(alternative)));
  const regex = await compileRe2(`^(?:${sources.join("|")})$`, dotAll);
  if (typeof regex === "string") return `The pattern cannot be matched: ${regex}`;
  const segments = alternatives.map(segmentsOf);
  const base = byBaseName ? "" : commonBase(segments);
  return {
    pattern,
    base,
    cost: regex.programSize(),
    names(name: string): boolean {
      return segments.some((list) => list.includes(name));
    },
    matches(path: string): boolean {
      const subject = byBaseName ? path.slice(path.lastIndexOf("/") + 1) : path;
      return regex.test(subject);
    },
  };
}

/** Expands `{a,b}` alternatives (nested too); `undefined` when there are too many. */
function expandBraces(pattern: string): string[] | undefined {
  let results = [pattern];
  for (;;) {
    const next: string[] = [];
    let expanded = false;
    for (const item of results) {
      const group = firstBraceGroup(item);
      if (group === undefined) {
        next.push(item);
        continue;
      }
      expanded = true;
      for (const option of group.options) {
        next.push(item.slice(0, group.start) + option + item.slice(group.end + 1));
      }
    }
    if (next.length > MAX_ALTERNATIVES) return undefined;
    results = next;
    if (!expanded) return results;
  }
}

/** The first top-level `{…,…}` group with at least one comma. */
function firstBraceGroup(
  text: string,
): { start: number; end: number; options: string[] } | undefined {
  for (let start = 0; start < text.length; start++) {
    if (text[start] === "\\") {
      start++;
      continue;
    }
    if (text[start] !== "{") continue;
    let depth = 0;
    const options: string[] = [];
    let optionStart = start + 1;
    for (let at = start; at < text.length; at++) {
      const char = text[at];
      if (char === "\\") {
        at++;
      } else if (char === "{") {
        depth++;
      } else if (char === "}") {
        depth--;
        if (depth === 0) {
          options.push(text.slice(optionStart, at));
          if (options.length > 1) return { start, end: at, options };
          break;
        }
      } else if (char === "," && depth === 1) {
        options.push(text.slice(optionStart, at));
        optionStart = at + 1;
      }
    }
  }
  return undefined;
}

function segmentsToRegex(segments: readonly string[]): string {
  let source = "";
  segments.forEach((segment, index) => {
    const last = index === segments.length - 1;
    if (segment === "**") {
      source += last ? ".*" : "(?:[^/]+/)*";
    } else {
      source += segmentToRegex(segment) + (last ? "" : "/");
    }
  });
  return source;
}

function segmentToRegex(segment: string): string {
  let source = "";
  for (let at = 0; at < segment.length; at++) {
    const char = segment[at] as string;
    if (char === "\\" && at + 1 < segment.length) {
      source += escapeRegex(segment[++at] as string);
    } else if (char === "*") {
      while (segment[at + 1] === "*") at++;
      source += "[^/]*";
    } else if (char === "?") {
      source += "[^/]";
    } else if (char === "[") {
      const close = segment.indexOf("]", at + 2);
      if (close === -1) {
        source += "\\[";
        continue;
      }
      let body = segment.slice(at + 1, close);
      const negated = body.startsWith("!") || body.startsWith("^");
      if (negated) body = body.slice(1);
      source += `[${negated ? "^/" : ""}${body.replace(/[\\\]^]/g, "\\$&")}]`;
      at = close;
    } else {
      source += escapeRegex(char);
    }
  }
  return source;
}

function escapeRegex(char: string): string {
  return /[.*+?^${}()|[\]\\/]/.test(char) ? `\\${char}` : char;
}

function isLiteral(segment: string): boolean {
  return !/[*?[\\]/.test(segment);
}

/** The leading literal directories shared by all alternatives (the last segment excluded). */
function commonBase(alternatives: readonly (readonly string[])[]): string {
  let base: string[] | undefined;
  for (const segments of alternatives) {
    const literal: string[] = [];
    for (const segment of segments.slice(0, -1)) {
      if (!isLiteral(segment)) break;
      literal.push(segment);
    }
    if (base === undefined) base = literal;
    else {
      let common = 0;
      while (common < base.length && common < literal.length && base[common] === literal[common]) {
        common++;
      }
      base = base.slice(0, common);
    }
  }
  return (base ?? []).join("/");
}
