/**
 * What a `run_command` line is made of, for the permission rules: its simple commands, found by a
 * real shell parser (`mvdan-sh`, the Go `mvdan.cc/sh` parser compiled to JavaScript, loaded on
 * first use), and whether it holds anything that makes its parts not the whole story
 * (substitutions, subshells, functions, here-documents, redirections out of the roots, …).
 *
 * @module
 */

/** The longest command line analysed; a longer one counts as not parsed. */
export const MAX_COMMAND_LENGTH = 8192;
/** The deepest syntax tree analysed (nodes from the top); a deeper line counts as not parsed. */
export const MAX_COMMAND_DEPTH = 256;
/** How deep `eval` and `sh -c` strings are analysed for deny and ask rules. */
const MAX_REPARSE_DEPTH = 3;

/** One simple command of a line. */
export interface CommandPart {
  /** As rules match it: assignments, then words, unquoted, one space apart (no redirections). */
  readonly text: string;
  /** Further forms deny and ask rules also match: without assignments, program's base name. */
  readonly variants: readonly string[];
}

/** What a command line is made of. */
export type CommandAnalysis =
  | {
    readonly parsed: true;
    /** The simple commands a list or pipeline runs, in order (`a && b | c`). */
    readonly parts: readonly CommandPart[];
    /** Every simple command, nested ones too (in substitutions, subshells, eval strings). */
    readonly nested: readonly CommandPart[];
    /** Why the parts do not tell the whole story, when they do not. */
    readonly complex?: string;
  }
  | { readonly parsed: false; readonly reason: string };

/** Where a command runs: redirections are resolved against `cwd` and must stay in `roots`. */
export interface CommandScope {
  readonly cwd: string;
  readonly roots: readonly string[];
}

// mvdan-sh is Go compiled by GopherJS. Its tree, read through the objects `Parse` returns, wraps
// every node anew on each access (about 60 µs a node, half a second for a long line), so the tree
// is read from the Go values underneath (`__internal_object__`): the same field names, slices as
// `{$array, $offset, $length}`, strings as UTF-8 bytes, a node's type in `constructor.string`
// (`*syntax.CallExpr`), nil pointers as the type's `nil`. This is pinned by the exact version in
// package.json and checked by tests/permission/shell_command_test.ts.

/** A node of the Go syntax tree. */
type ShNode = Readonly<Record<string, unknown>> & {
  Pos(): { readonly offs: number };
  End(): { readonly offs: number };
};
interface GoSlice {
  readonly $array: readonly unknown[];
  readonly $offset: number;
  readonly $length: number;
}
interface ShSyntax {
  NewParser(...options: unknown[]): { Parse(source: string, name: string): unknown };
  Variant(lang: unknown): unknown;
  readonly LangBash: unknown;
}

let syntax: Promise<ShSyntax> | undefined;

/** mvdan-sh, loaded on first use (its 1.5 MB stay out of start-up). */
function loadSyntax(): Promise<ShSyntax> {
  syntax ??= import("mvdan-sh").then((module) => {
    const loaded = module as { default?: { syntax: ShSyntax }; syntax?: ShSyntax };
    const found = loaded.syntax ?? loaded.default?.syntax;
    if (!found) throw new TypeError("Cannot load mvdan-sh: no syntax export");
    return found;
  });
  return syntax;
}

/** The node type of a Go value (`CallExpr`), `undefined` for nil and for what is no node. */
function typeOf(value: unknown): string | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const type = (value as { constructor?: { string?: unknown; nil?: unknown } }).constructor;
  const name = type?.string;
  if (typeof name !== "string" || !name.startsWith("*syntax.") || type?.nil === value) {
    return undefined;
  }
  return name.slice("*syntax.".length);
}

/** A field holding a node, `undefined` when it is nil. */
function child(node: ShNode, field: string): ShNode | undefined {
  const value = node[field];
  return typeOf(value) === undefined ? undefined : value as ShNode;
}

function isSlice(value: unknown): value is GoSlice {
  return typeof value === "object" && value !== null &&
    Array.isArray((value as { $array?: unknown }).$array);
}

/** The nodes of a slice field. */
function list(node: ShNode, field: string): ShNode[] {
  const value = node[field];
  if (!isSlice(value)) return [];
  return value.$array.slice(value.$offset, value.$offset + value.$length)
    .filter((item) => typeOf(item) !== undefined) as ShNode[];
}

/** A Go string (UTF-8 bytes, one per character) as text. */
function goString(value: unknown): string {
  if (typeof value !== "string") return "";
  if (!/[\u0080-\u00ff]/.test(value)) return value;
  const bytes = Uint8Array.from(value, (character) => character.charCodeAt(0) & 0xff);
  return new TextDecoder().decode(bytes);
}

/** The most nodes read of one line (a line is at most 8,192 characters). */
const MAX_NODES = 100_000;

// Operator tokens of mvdan-sh 0.10 (tests/permission/shell_command_test.ts checks them).
const AND_OR_PIPE = new Set([10, 11, 12, 13]); // && || | |&
const OUTPUT_REDIRECTS = new Set([54, 55, 57, 60, 64, 65]); // > >> <> >| &> &>>
const DUP_REDIRECTS = new Set([58, 59]); // <& >&
const HERE_DOCS = new Set([61, 62, 63]); // << <<- <<<
const WRITABLE_DEVICES = new Set(["/dev/null", "/dev/stdout", "/dev/stderr"]);
const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"]);
/** Commands that run text as shell code, or change the shell itself. */
const EVALUATORS = new Set(["eval", "source", ".", "exec", "trap", "alias", "command", "builtin"]);
/** Commands after which a relative path means another place. */
const DIRECTORY_CHANGERS = new Set(["cd", "pushd", "popd"]);
/** Nodes whose presence makes a line need a whole-line match. */
const COMPLEX_NODES: Readonly<Record<string, string>> = {
  CmdSubst: "a command substitution",
  ProcSubst: "a process substitution",
  ArithmExp: "an arithmetic expansion",
  Subshell: "a subshell",
  Block: "a { } group",
  IfClause: "an if clause",
  WhileClause: "a loop",
  ForClause: "a loop",
  CaseClause: "a case clause",
  FuncDecl: "a function",
  ArithmCmd: "an arithmetic command",
  TestClause: "a [[ ]] test",
  DeclClause: "a declaration",
  LetClause: "a let command",
  TimeClause: "a time command",
  CoprocClause: "a coprocess",
  ExtGlob: "an extended glob",
};

/**
 * Analyses a command line: its parts, every nested simple command, and whether it needs a
 * whole-line match. A line that is too long, too deep or not valid shell is `parsed: false`.
 *
 * @example A list of two commands
 * ```ts
 * import assert from "node:assert/strict";
 * import { analyzeCommand } from "./shell_command.ts";
 * const analysis = await analyzeCommand("npm test && rm -rf ~", { cwd: "/w", roots: ["/w"] });
 * assert(analysis.parsed);
 * assert.deepEqual(analysis.parts.map((part) => part.text), ["npm test", "rm -rf ~"]);
 * ```
 *
 * @param line The command line
 * @param scope The directory it runs in and the roots
 * @returns What it is made of
 */
export async function analyzeCommand(line: string, scope: CommandScope): Promise<CommandAnalysis> {
  if (line.length > MAX_COMMAND_LENGTH) {
    return { parsed: false, reason: `longer than ${MAX_COMMAND_LENGTH} characters` };
  }
  const sh = await loadSyntax();
  return analyzeWith(sh, line, scope, 0);
}

function analyzeWith(
  sh: ShSyntax,
  line: string,
  scope: CommandScope,
  reparse: number,
): CommandAnalysis {
  let file: ShNode;
  try {
    const parsed = sh.NewParser(sh.Variant(sh.LangBash)).Parse(line, "");
    file = (parsed as { __internal_object__?: ShNode }).__internal_object__ as ShNode;
  } catch (error) {
    return { parsed: false, reason: parseProblem(error) };
  }
  if (typeOf(file) !== "File") throw new TypeError("Cannot read mvdan-sh's syntax tree");
  try {
    const reader = new LineReader(sh, line, scope, reparse);
    const parts: CommandPart[] = [];
    for (const stmt of list(file, "Stmts")) reader.top(stmt, parts);
    reader.walk(file);
    reader.finish();
    const complex = reader.complex;
    return { parsed: true, parts, nested: reader.nested, ...(complex ? { complex } : {}) };
  } catch (error) {
    if (error instanceof TooDeep) return { parsed: false, reason: error.message };
    if (error instanceof RangeError) return { parsed: false, reason: "nested too deeply" };
    throw error;
  }
}

class TooDeep extends Error {}

/** Reads one parsed line: its parts, nested commands and what makes it complex. */
class LineReader {
  readonly nested: CommandPart[] = [];
  complex: string | undefined;
  readonly #sh: ShSyntax;
  #nodes = 0;
  readonly #bytes: Uint8Array;
  readonly #scope: CommandScope;
  readonly #reparse: number;
  /** Whether a command changes the directory (`cd`): relative redirections are then unknown. */
  #changesDirectory = false;
  #relativeRedirect = false;

  constructor(sh: ShSyntax, line: string, scope: CommandScope, reparse: number) {
    this.#sh = sh;
    this.#bytes = new TextEncoder().encode(line);
    this.#scope = scope;
    this.#reparse = reparse;
  }

  #flag(reason: string): void {
    this.complex ??= reason;
  }

  /** A statement of the line's top level: a list or pipeline is split into its commands. */
  top(stmt: ShNode, parts: CommandPart[], depth = 0): void {
    if (depth > MAX_COMMAND_DEPTH) throw new TooDeep("nested too deeply");
    if (stmt["Coprocess"] === true) this.#flag("a coprocess");
    this.#redirects(stmt);
    const command = child(stmt, "Cmd");
    const type = (command && typeOf(command)) ?? "";
    const [x, y] = command ? [child(command, "X"), child(command, "Y")] : [];
    if (command && type === "BinaryCmd" && AND_OR_PIPE.has(Number(command["Op"])) && x && y) {
      this.top(x, parts, depth + 1);
      this.top(y, parts, depth + 1);
    } else if (command && type === "CallExpr") {
      parts.push(this.#part(command));
    } else if (!command) {
      this.#flag("a redirection without a command");
    } else {
      this.#flag(COMPLEX_NODES[type] ?? `a ${type}`);
    }
  }

  /** What is known only once the whole line was read. */
  finish(): void {
    if (this.#changesDirectory && this.#relativeRedirect) {
      this.#flag("a relative redirection after a change of directory");
    }
  }

  /** Every simple command at any depth, and every construct that makes the line complex. */
  walk(node: ShNode, depth = 0): void {
    if (depth > MAX_COMMAND_DEPTH) throw new TooDeep("nested too deeply");
    if (++this.#nodes > MAX_NODES) throw new TooDeep("too large");
    const type = typeOf(node) ?? "";
    const reason = COMPLEX_NODES[type];
    if (reason) this.#flag(reason);
    if (type === "CallExpr") this.#nestedCall(node);
    else if (type === "ParamExp" && !simpleParameter(node)) this.#flag("a parameter expansion");
    else if (type === "Stmt") this.#redirects(node);
    else if (type === "SglQuoted" && node["Dollar"] === true) this.#flag("a $'…' string");
    for (const key of Object.keys(node)) {
      if (key === "$val") continue;
      const value = node[key];
      const items = isSlice(value)
        ? value.$array.slice(value.$offset, value.$offset + value.$length)
        : [value];
      for (const item of items) {
        const itemType = typeOf(item);
        if (itemType !== undefined && itemType !== "Pos") this.walk(item as ShNode, depth + 1);
      }
    }
  }

  #nestedCall(node: ShNode): void {
    const part = this.#part(node);
    this.nested.push(part);
    const words = list(node, "Args").map((word) => this.#word(word));
    const program = words[0]?.text ?? "";
    const name = baseName(program);
    if (!words[0]?.literal && words.length > 0) this.#flag("a command name that is not literal");
    if (EVALUATORS.has(name)) this.#flag(`"${name}"`);
    if (DIRECTORY_CHANGERS.has(name)) this.#changesDirectory = true;
    // Code run from a string: its commands are checked against deny and ask rules too.
    const code = name === "eval"
      ? words.slice(1).map((word) => word.text).join(" ")
      : SHELLS.has(name)
      ? words.find((_word, index) => index > 0 && words[index - 1]?.text === "-c")?.text
      : undefined;
    if (code === undefined) return;
    if (this.#reparse >= MAX_REPARSE_DEPTH) throw new TooDeep("eval strings nested too deeply");
    const inner = analyzeWith(this.#sh, code, this.#scope, this.#reparse + 1);
    if (!inner.parsed) throw new TooDeep(`an eval string that ${inner.reason}`);
    this.nested.push(...inner.nested);
  }

  /** A simple command as rules see it. */
  #part(call: ShNode): CommandPart {
    const assigns: string[] = [];
    for (const assign of list(call, "Assigns")) {
      if (child(assign, "Index") || child(assign, "Array")) this.#flag("an array assignment");
      const nameNode = child(assign, "Name");
      const name = nameNode ? goString(nameNode["Value"]) : "";
      const value = child(assign, "Value");
      assigns.push(`${name}${assign["Append"] ? "+=" : "="}${value ? this.#word(value).text : ""}`);
    }
    const words = list(call, "Args").map((word) => this.#word(word).text);
    const text = normalizeSpaces([...assigns, ...words].join(" "));
    const variants = new Set<string>([normalizeSpaces(words.join(" "))]);
    const program = words[0];
    if (program !== undefined && program.includes("/")) {
      variants.add(normalizeSpaces([baseName(program), ...words.slice(1)].join(" ")));
    }
    variants.delete(text);
    variants.delete("");
    return { text, variants: [...variants] };
  }

  /** A word's value where it is literal (quotes removed), its source where it is not. */
  #word(word: ShNode): { text: string; literal: boolean } {
    let text = "";
    let literal = true;
    const parts = list(word, "Parts");
    parts.forEach((part, index) => {
      const type = typeOf(part);
      const value = goString(part["Value"]);
      if (type === "Lit") {
        if (index === 0 && value.startsWith("~")) literal = false;
        if (/[*?[]/.test(value)) literal = false;
        text += value.replace(
          /\\(\n|.)/gs,
          (_, escaped: string) => escaped === "\n" ? "" : escaped,
        );
      } else if (type === "SglQuoted" && part["Dollar"] !== true) {
        text += value;
      } else if (type === "DblQuoted" && part["Dollar"] !== true) {
        for (const inner of list(part, "Parts")) {
          if (typeOf(inner) === "Lit") {
            text += goString(inner["Value"]).replace(
              /\\([$`"\\\n])/g,
              (_, c: string) => c === "\n" ? "" : c,
            );
          } else {
            literal = false;
            text += this.#source(inner);
          }
        }
      } else {
        literal = false;
        text += this.#source(part);
      }
    });
    return { text, literal };
  }

  /** The redirections of a statement: here-documents and writes out of the roots flag it. */
  #redirects(stmt: ShNode): void {
    for (const redirect of list(stmt, "Redirs")) {
      const op = Number(redirect["Op"]);
      if (HERE_DOCS.has(op)) {
        this.#flag("a here-document");
        continue;
      }
      const target = child(redirect, "Word");
      if (!target) continue;
      const { text, literal } = this.#word(target);
      if (DUP_REDIRECTS.has(op) && /^(\d+|-)$/.test(text)) continue;
      if (!OUTPUT_REDIRECTS.has(op) && !DUP_REDIRECTS.has(op)) continue; // reading is not writing
      if (!literal || text === "") {
        this.#flag("a redirection to a path not known before it runs");
      } else if (!writableTarget(text, this.#scope)) {
        this.#flag(`a redirection outside the workspace (${text})`);
      } else if (!text.startsWith("/")) {
        this.#relativeRedirect = true;
      }
    }
  }

  /** The source text of a node (mvdan-sh's offsets count UTF-8 bytes). */
  #source(node: ShNode): string {
    const bytes = this.#bytes.subarray(node.Pos().offs, node.End().offs);
    return new TextDecoder().decode(bytes);
  }
}

/** `$NAME` or `${NAME}`: nothing but a variable's value. */
function simpleParameter(node: ShNode): boolean {
  return !node["Excl"] && !node["Length"] && !node["Width"] && !node["Names"] &&
    !child(node, "Index") && !child(node, "Slice") && !child(node, "Repl") && !child(node, "Exp");
}

function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

function normalizeSpaces(text: string): string {
  return text.replace(/[ \t\n\r]+/g, " ").trim();
}

/** Whether a redirection may write `path`: a device like /dev/null, or a path in the roots. */
function writableTarget(path: string, scope: CommandScope): boolean {
  if (WRITABLE_DEVICES.has(path)) return true;
  const absolute = normalizePosix(path.startsWith("/") ? path : `${scope.cwd}/${path}`);
  return scope.roots.some((root) => {
    const base = normalizePosix(root);
    return absolute === base || absolute.startsWith(base === "/" ? "/" : `${base}/`);
  });
}

/**
 * A POSIX path with `.`, `..` and repeated slashes resolved lexically (symlinks are not
 * followed: a path rule is matched with the path as written).
 *
 * @param path An absolute path
 * @returns The normalised path
 */
export function normalizePosix(path: string): string {
  const segments: string[] = [];
  for (const segment of path.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") segments.pop();
    else segments.push(segment);
  }
  return `/${segments.join("/")}`;
}

/** What the parser said was wrong. */
function parseProblem(error: unknown): string {
  if (error instanceof RangeError) return "nested too deeply";
  const text = (error as { Error?: () => string })?.Error?.() ?? String(error);
  return `is not valid shell: ${text}`;
}
