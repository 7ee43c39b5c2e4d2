/**
 * Internal: regular expressions on untrusted patterns and input, matched in linear time by
 * `re2js` (a JavaScript port of RE2, the syntax ripgrep and Go use). No backtracking, so no
 * pattern can make a match take exponential time; the price is no backreferences and no
 * lookaround, which are refused with a message that names the construct.
 *
 * `re2js` is loaded by the first pattern that needs it (a literal pattern never does): it is a
 * large module, and start-up does not need it.
 *
 * @module
 */
import type { RE2JS } from "re2js";

/** The `RE2JS` flag that lets `.` match a newline too (`RE2JS.DOTALL`). */
export const dotAll: number = 2;

let engine: Promise<typeof RE2JS> | undefined;

/** The `RE2JS` class, imported on first use. */
function loadEngine(): Promise<typeof RE2JS> {
  // A literal: a package is named through package.json, which only an analyzable import keeps
  // working once published to JSR (Deno then resolves the package at start, without loading it).
  engine ??= import("re2js").then((module) => module.RE2JS);
  return engine;
}

/** Patterns that compile to more RE2 instructions than this are refused. */
export const REGEX_MAX_PROGRAM_SIZE = 1024;
/**
 * The matching work one call may do, in characters × program instructions: in the worst case
 * (RE2's automaton falling back to simulating every instruction at every character) about 50 ns
 * each, so one call blocks for a few milliseconds at most.
 */
const WORK_PER_CALL = 131_072;
/** Lines are matched on at most this many characters, whatever the pattern. */
export const REGEX_MAX_WINDOW_CHARS = 65_536;
/** Lines are matched on at least this many characters, whatever the pattern. */
const MIN_WINDOW_CHARS = 128;

/** A compiled line pattern. */
export interface LinePattern {
  /**
   * How many characters of a line are matched: `Infinity` for a literal pattern (matched by
   * substring search, whole lines), else between 128 and 65,536 depending on the pattern's size.
   */
  readonly window: number;
  /**
   * Worst-case matching cost per character, in RE2 instructions (1 for a literal pattern): one
   * line costs at most `cost × min(length, window)` steps.
   */
  readonly cost: number;
  /** Whether the pattern matches somewhere in `line` (only its first `window` characters). */
  test(line: string): boolean;
}

const META = /[\\^$.|?*+()[\]{}]/;

/**
 * Compiles a search pattern (RE2 syntax) for matching single lines.
 *
 * @param pattern The pattern
 * @returns The compiled pattern, or why it is refused (a sentence without a trailing period)
 */
export async function compileLinePattern(pattern: string): Promise<LinePattern | string> {
  if (!META.test(pattern)) {
    return { window: Infinity, cost: 1, test: (line: string): boolean => line.includes(pattern) };
  }
  const compiled = await compileRe2(pattern);
  if (typeof compiled === "string") return compiled;
  const window = Math.max(
    MIN_WINDOW_CHARS,
    Math.min(REGEX_MAX_WINDOW_CHARS, Math.floor(WORK_PER_CALL / compiled.programSize())),
  );
  return {
    window,
    cost: compiled.programSize(),
    test: (line: string): boolean =>
      compiled.test(line.length > window ? line.slice(0, window) : line),
  };
}

/**
 * Compiles an RE2 pattern, refusing what RE2 cannot do and programs over
 * {@link REGEX_MAX_PROGRAM_SIZE} instructions.
 *
 * @param pattern The pattern
 * @param flags `RE2JS` flags, e.g. {@link dotAll}
 * @returns The compiled pattern, or why it is refused
 */
export async function compileRe2(pattern: string, flags = 0): Promise<RE2JS | string> {
  const engine = await loadEngine();
  let compiled: RE2JS;
  try {
    compiled = engine.compile(pattern, flags);
  } catch (error) {
    return describeSyntaxError(error);
  }
  const size = compiled.programSize();
  if (size > REGEX_MAX_PROGRAM_SIZE) {
    return `it is too complex (it compiles to ${size} instructions, at most ${REGEX_MAX_PROGRAM_SIZE} are allowed); use smaller counted repetitions such as {n,m}`;
  }
  return compiled;
}

function describeSyntaxError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const detail = message.replace(/^error parsing regexp: /, "");
  const unsupported =
    "is not supported (RE2 syntax, like ripgrep: no lookaround, no backreferences)";
  const lookaround = /`(\(\?<?[=!])/.exec(detail)?.[1];
  if (lookaround !== undefined) {
    return `${
      lookaround.includes("<") ? "lookbehind" : "lookahead"
    } \`${lookaround}\` ${unsupported}`;
  }
  const backreference = /`(\\[1-9])/.exec(detail)?.[1];
  if (backreference !== undefined) return `backreference \`${backreference}\` ${unsupported}`;
  return detail;
}
