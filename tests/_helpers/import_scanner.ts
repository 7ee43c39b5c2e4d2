/**
 * The import scanner behind the layer tests (`tests/runtime_isolation_test.ts`,
 * `tests/layering_test.ts`): lists the `.ts` files of a tree and reads, without a TypeScript
 * parser, the code of each file with comments and strings blanked and every module it imports,
 * with the line of each import and whether it is type-only.
 *
 * @module
 */
import { readdir } from "node:fs/promises";

/** One import or re-export of a module, as written in a source file. */
export interface ImportSite {
  /** The module specifier, e.g. `"../util/abort.ts"`; a lazy `import("./x" + ".ts")` is joined. */
  readonly specifier: string;
  /** The 1-based line of the specifier. */
  readonly line: number;
  /** Whether the whole statement is `import type` / `export type` (erased at run time). */
  readonly typeOnly: boolean;
}

/** What {@link analyze} reads from a source file. */
export interface AnalyzedSource {
  /** The source with comments removed and string, template and regex contents blanked. */
  readonly code: string;
  /** Every module the source imports or re-exports, in the order of the patterns. */
  readonly imports: readonly ImportSite[];
}

/**
 * Every `.ts` file under `dir`, as paths relative to `dir` with `/` separators, sorted.
 *
 * @example
 * ```ts
 * const files = await listTs("src"); // ["agent/run_turn.ts", …], relative to the folder given
 * ```
 */
export async function listTs(dir: string, prefix = ""): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const relative = prefix + entry.name;
    if (entry.isDirectory()) files.push(...await listTs(`${dir}/${entry.name}`, `${relative}/`));
    else if (entry.isFile() && entry.name.endsWith(".ts")) files.push(relative);
  }
  return files.sort();
}

/**
 * Splits source into code with comments removed and string, template and regex contents blanked
 * (`code`), and the modules it imports or re-exports (`imports`). Code inside `${}` of template
 * literals stays code; line breaks are kept, so offsets map to the source's lines.
 *
 * @example
 * ```ts
 * analyze('import type { A } from "./a.ts";').imports; // [{ specifier: "./a.ts", line: 1, typeOnly: true }]
 * ```
 */
export function analyze(source: string): AnalyzedSource {
  let code = "";
  let withStrings = "";
  const emit = (kept: string, blanked = kept): void => {
    withStrings += kept;
    code += blanked;
  };
  // Contexts to return to: a number is the brace depth of the code that opened a template
  // literal; TEMPLATE marks a template whose `${` expression is being read.
  const TEMPLATE = -1;
  const stack: number[] = [];
  let depth = 0;
  let inTemplate = false;
  let at = 0;
  while (at < source.length) {
    const char = source[at] as string;
    const next = source[at + 1];
    if (inTemplate) {
      if (char === "\\") {
        emit(source.slice(at, at + 2), "  ");
        at += 2;
      } else if (char === "`") {
        emit(char);
        depth = stack.pop() ?? 0;
        inTemplate = false;
        at++;
      } else if (char === "$" && next === "{") {
        emit("${");
        stack.push(TEMPLATE);
        depth = 0;
        inTemplate = false;
        at += 2;
      } else {
        emit(char, char === "\n" ? "\n" : " ");
        at++;
      }
      continue;
    }
    if (char === "/" && next === "/") {
      const end = source.indexOf("\n", at);
      at = end === -1 ? source.length : end;
      continue;
    }
    if (char === "/" && next === "*") {
      const end = source.indexOf("*/", at + 2);
      const stop = end === -1 ? source.length : end + 2;
      emit(" " + "\n".repeat(source.slice(at, stop).split("\n").length - 1));
      at = stop;
      continue;
    }
    if (char === "/" && startsRegex(code)) {
      let end = at + 1;
      let inClass = false;
      while (end < source.length && source[end] !== "\n") {
        const c = source[end];
        if (c === "\\") end++;
        else if (c === "[") inClass = true;
        else if (c === "]") inClass = false;
        else if (c === "/" && !inClass) break;
        end++;
      }
      emit("/" + " ".repeat(Math.max(0, end - at - 1)) + "/");
      at = end + 1;
      continue;
    }
    if (char === '"' || char === "'") {
      let end = at + 1;
      while (end < source.length && source[end] !== char && source[end] !== "\n") {
        if (source[end] === "\\") end++;
        end++;
      }
      const literal = source.slice(at, end + 1);
      emit(literal, char + " ".repeat(Math.max(0, literal.length - 2)) + char);
      at = end + 1;
      continue;
    }
    if (char === "`") {
      emit(char);
      stack.push(depth);
      inTemplate = true;
      at++;
      continue;
    }
    if (char === "}" && depth === 0 && stack.at(-1) === TEMPLATE) {
      emit(char);
      stack.pop();
      inTemplate = true;
      at++;
      continue;
    }
    if (char === "{") depth++;
    if (char === "}") depth--;
    emit(char);
    at++;
  }
  const imports: ImportSite[] = [];
  const patterns = [
    /\b(?:import|export)\s[^;'"`]*?\bfrom\s*["']([^"']+)["']/g,
    /\bimport\s*["']([^"']+)["']/g,
    /\bimport\s*\(\s*["'`]([^"'`]+)["'`]\s*\)/g,
    /\bimport\s*\(\s*["']([^"']+)["']\s*\+\s*["']([^"']+)["']\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of withStrings.matchAll(pattern)) {
      const specifier = (match[1] as string) + (match[2] ?? "");
      const offset = match.index + match[0].indexOf(match[1] as string);
      const line = withStrings.slice(0, offset).split("\n").length;
      imports.push({ specifier, line, typeOnly: /^(?:import|export)\s+type\s/.test(match[0]) });
    }
  }
  return { code, imports };
}

/** Whether a `/` after `code` starts a regular expression rather than a division. */
function startsRegex(code: string): boolean {
  const before = code.trimEnd();
  if (before === "") return true;
  if (/[(,=:[!&|?{};+\-*%<>~^]$/.test(before)) return true;
  return /(?:^|[^\w$])(?:return|typeof|case|do|else|in|of|void|yield|await|delete|throw)$/.test(
    before,
  );
}

/**
 * A bare package specifier without an `npm:` prefix or a version.
 *
 * @example
 * ```ts
 * packageOf("npm:@agentclientprotocol/sdk@2.4.0/schema"); // "@agentclientprotocol/sdk"
 * ```
 */
export function packageOf(specifier: string): string {
  const bare = specifier.replace(/^npm:\/?/, "");
  const parts = bare.split("/");
  const name = bare.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] as string);
  return name.replace(/(.)@[^/]*$/, "$1");
}
