/**
 * The `search_text` tool.
 *
 * @module
 */
import {
  cancelledResult,
  directoryLocations,
  errorResult,
  resolveOrError,
  stringField,
} from "./_common.ts";
import { plural, quote, shorten, utf8Length } from "./_text.ts";
import { Pacer } from "./_pace.ts";
import { compileLinePattern, type LinePattern } from "./_regex.ts";
import { SKIPPED_DIRECTORIES, walkFiles, type WalkStats } from "./_walk.ts";
import { compileGlob, type Glob } from "./glob.ts";
import { displayPath } from "./paths.ts";
import { basenamePath } from "./posix_path.ts";
import {
  defineTool,
  type ObjectSchema,
  type Tool,
  type ToolContext,
  type ToolLocation,
  type ToolResult,
} from "./tool.ts";

/** Most matching lines one call returns. */
export const SEARCH_TEXT_MAX_MATCHES = 500;
/** Most bytes of output one call returns. */
export const SEARCH_TEXT_MAX_OUTPUT_BYTES = 50_000;
/** Matching lines are cut to this many characters. */
export const SEARCH_TEXT_MAX_LINE_CHARS = 300;
/** Files larger than this are skipped. */
export const SEARCH_TEXT_MAX_FILE_BYTES: number = 2 * 1024 * 1024;
/** The walk stops after this many directory entries. */
export const SEARCH_TEXT_MAX_ENTRIES = 200_000;
/** The search stops after reading this many bytes of files. */
export const SEARCH_TEXT_MAX_SCANNED_BYTES: number = 64 * 1024 * 1024;
/** How much of a file is checked for NUL bytes to tell binary files apart. */
const BINARY_SNIFF_BYTES = 8192;

const schema: ObjectSchema = {
  type: "object",
  properties: {
    pattern: {
      type: "string",
      minLength: 1,
      description:
        "Regular expression in RE2 syntax (as ripgrep and Go), matched against each line; case-sensitive unless it starts with (?i). No backreferences or lookaround.",
    },
    path: {
      type: "string",
      minLength: 1,
      description:
        "The file or directory to search, relative to the working directory or absolute. Default: the working directory.",
    },
    include: {
      type: "string",
      minLength: 1,
      description:
        'Only search files matching this glob, e.g. "*.ts" or "src/**/*.{js,ts}" (relative to the searched directory; a pattern without "/" matches file names).',
    },
  },
  required: ["pattern"],
  additionalProperties: false,
};

interface SearchTextInput {
  readonly pattern: string;
  readonly path?: string | null;
  readonly include?: string | null;
}

/** A checked input with its pattern and its `include` glob compiled. */
interface SearchTextCall extends SearchTextInput {
  readonly compiled: LinePattern;
  readonly filter: Glob | undefined;
}

/**
 * `search_text {pattern, path?, include?}`: a regular expression in RE2 syntax (ripgrep's and
 * Go's: no backreferences, no lookaround), matched in linear time line by line in the text files
 * under `path` (a file or a directory; default: the working directory), optionally only in files
 * matching the `include` glob. Output lines are `path:line: text`, with paths relative to the
 * working directory (absolute outside it), files in walk order (name order, depth-first). Skips
 * `.git`, `node_modules` (unless `include` names them), symlinks, binary files and files over
 * 2 MiB; stops at 500 matches, 50 KB of output or 64 MiB read. A literal pattern is matched on
 * whole lines; a regular expression on the first 128 to 65,536 characters of each line (the
 * more complex the pattern, the fewer; see {@link compileLinePattern}). The scan yields to the
 * event loop every few milliseconds and stops when the call's signal aborts.
 *
 * @example Calling the tool
 * ```ts ignore
 * import { searchTextTool } from "./search_text.ts";
 * const result = await searchTextTool.execute({ pattern: "TODO", include: "*.ts" }, context);
 * // result.content: "src/a.ts:12: // TODO: remove"
 * ```
 */
export const searchTextTool: Tool = defineTool<SearchTextInput, SearchTextCall>({
  name: "search_text",
  description: [
    "Search file contents with a regular expression, line by line (like rg -n).",
    "The pattern uses RE2 syntax like ripgrep: no backreferences or lookaround; (?i) at its start ignores case.",
    "Searches the text files under path (a file or a directory; default: the working directory), optionally only files matching the include glob.",
    "Returns matching lines as path:line: text, with paths relative to the working directory, at most 500 matches.",
    "Skips .git, node_modules, symlinks, binary files and files over 2 MiB.",
    "Very long lines are matched on their first few thousand characters.",
    "Paths outside the workspace are refused.",
  ].join(" "),
  schema,
  kind: "search",
  effect: "read",
  title(input: unknown): string {
    const pattern = stringField(input, "pattern");
    const path = stringField(input, "path");
    if (!pattern) return "Search text";
    const shown = shorten(pattern, 60);
    return path ? `Search ${shown} in ${path}` : `Search ${shown}`;
  },
  locations: (input, cwd) => directoryLocations(input, cwd, "path"),
  prepare: compileSearch,
  run: searchText,
});

/** Compiles the pattern and the `include` glob of a call, or says why one is not valid. */
async function compileSearch(input: SearchTextInput): Promise<SearchTextCall | string> {
  const compiled = await compileLinePattern(input.pattern);
  if (typeof compiled === "string") {
    return `Invalid input: "pattern" is not a valid RE2 regular expression: ${compiled}`;
  }
  let filter: Glob | undefined;
  if (input.include !== undefined && input.include !== null) {
    const glob = await compileGlob(input.include);
    if (typeof glob === "string") return `Invalid input: "include": ${glob}`;
    filter = glob;
  }
  return { ...input, compiled, filter };
}

/** The running state of one search. */
interface Search {
  readonly pattern: LinePattern;
  readonly context: ToolContext;
  readonly pacer: Pacer;
  readonly lines: string[];
  readonly locations: ToolLocation[];
  bytes: number;
  full: boolean;
  searched: number;
  binary: number;
  large: number;
  unreadable: number;
  /** Bytes of files read so far. */
  scanned: number;
  /** Set when {@link SEARCH_TEXT_MAX_SCANNED_BYTES} stopped the search. */
  exhausted: boolean;
  /** Lines longer than the pattern's window, matched on their start only. */
  cut: number;
}

async function searchText(call: SearchTextCall, context: ToolContext): Promise<ToolResult> {
  const resolved = await resolveOrError(context, call.path ?? ".");
  if (!resolved.ok) return resolved.result;
  const root = resolved.path;
  const shown = displayPath(context.cwd, root);
  const info = await context.files.stat(root).catch(() => undefined);
  if (context.signal.aborted) return cancelledResult();
  if (info === undefined) return errorResult(`Cannot search ${quote(shown)}: it does not exist`);
  const search: Search = {
    pattern: call.compiled,
    context,
    pacer: new Pacer(context.signal),
    lines: [],
    locations: [],
    bytes: 0,
    full: false,
    searched: 0,
    binary: 0,
    large: 0,
    unreadable: 0,
    scanned: 0,
    exhausted: false,
    cut: 0,
  };
  const stats: WalkStats = { entries: 0, limited: false, unreadable: 0 };
  if (info.isDirectory) await searchTree(search, root, call.filter, stats);
  else if (call.filter === undefined || call.filter.matches(basenamePath(root))) {
    await searchFile(search, root);
  }
  if (context.signal.aborted) return cancelledResult();
  const notes = searchNotes(search, stats);
  const locations = search.locations.length > 0 ? search.locations : [{ path: root }];
  if (search.lines.length === 0) {
    const content = [
      `No matches for ${quote(call.pattern)} in ${shown} (${
        plural(search.searched, "file")
      } searched)`,
      ...notes,
    ].join("\n");
    return { content, isError: false, locations };
  }
  return { content: [...search.lines, ...notes].join("\n"), isError: false, locations };
}

/** Searches the files under the directory `root` that `filter` lets through, in walk order. */
async function searchTree(
  search: Search,
  root: string,
  filter: Glob | undefined,
  stats: WalkStats,
): Promise<void> {
  const { context } = search;
  const walk = walkFiles(context.files, root, {
    signal: context.signal,
    pacer: search.pacer,
    maxEntries: SEARCH_TEXT_MAX_ENTRIES,
    enter: (_relative, name) => !SKIPPED_DIRECTORIES.includes(name) || filter?.names(name) === true,
  }, stats);
  for await (const entry of walk) {
    // A symlink may point out of the workspace; its target is searched where it lives, if inside.
    if (entry.isSymlink || (filter !== undefined && !filter.matches(entry.relative))) continue;
    await searchFile(search, entry.path);
    if (search.full || search.exhausted || context.signal.aborted) break;
  }
}

/** The notes that end a search's output: where it stopped early, what it skipped. */
function searchNotes(search: Search, stats: WalkStats): string[] {
  const window = search.pattern.window;
  const notes: string[] = [];
  if (search.full) {
    notes.push(
      `[stopped after ${search.lines.length} matches; narrow the pattern, path or include]`,
    );
  }
  if (stats.limited) {
    notes.push(
      `[search stopped after ${SEARCH_TEXT_MAX_ENTRIES} directory entries; use a narrower path or include]`,
    );
  }
  if (search.exhausted) {
    notes.push(
      `[search stopped after reading ${
        SEARCH_TEXT_MAX_SCANNED_BYTES / 1024 / 1024
      } MiB of files; use a narrower path or include]`,
    );
  }
  if (search.cut > 0) {
    notes.push(
      `[${
        plural(search.cut, "line")
      } longer than ${window} characters matched on their first ${window} characters only]`,
    );
  }
  const skipped: string[] = [];
  if (search.binary > 0) skipped.push(plural(search.binary, "binary file"));
  if (search.large > 0) skipped.push(`${plural(search.large, "file")} over 2 MiB`);
  const unreadable = search.unreadable + stats.unreadable;
  if (unreadable > 0) skipped.push(`${unreadable} unreadable`);
  if (skipped.length > 0) notes.push(`[skipped ${skipped.join(", ")}]`);
  return notes;
}

async function searchFile(search: Search, file: string): Promise<void> {
  const { context, pacer } = search;
  const info = await context.files.stat(file).catch(() => undefined);
  if (context.signal.aborted) return;
  if (info === undefined || !info.isFile) {
    search.unreadable++;
    return;
  }
  if (info.size > SEARCH_TEXT_MAX_FILE_BYTES) {
    search.large++;
    return;
  }
  if (search.scanned + info.size > SEARCH_TEXT_MAX_SCANNED_BYTES) {
    search.exhausted = true;
    return;
  }
  let bytes: Uint8Array;
  try {
    // Bounded even when the file grew since the stat: one byte more tells it is too large.
    bytes = await context.files.readFileRange(file, 0, SEARCH_TEXT_MAX_FILE_BYTES + 1);
  } catch {
    if (!context.signal.aborted) search.unreadable++;
    return;
  }
  pacer.rested();
  if (context.signal.aborted) return;
  if (bytes.length > SEARCH_TEXT_MAX_FILE_BYTES) {
    search.large++;
    return;
  }
  search.scanned += bytes.length;
  if (bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0)) {
    search.binary++;
    return;
  }
  search.searched++;
  const shown = displayPath(context.cwd, file);
  const text = new TextDecoder().decode(bytes);
  const window = search.pattern.window;
  let lineNumber = 0;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf("\n", start);
    if (end === -1) end = text.length;
    lineNumber++;
    let line = text.slice(start, end);
    if (line.endsWith("\r")) line = line.slice(0, -1);
    if (line.length > window) search.cut++;
    if (search.pattern.test(line)) {
      const entry = `${shown}:${lineNumber}: ${shorten(line, SEARCH_TEXT_MAX_LINE_CHARS)}`;
      const size = utf8Length(entry) + 1;
      if (
        search.lines.length >= SEARCH_TEXT_MAX_MATCHES ||
        search.bytes + size > SEARCH_TEXT_MAX_OUTPUT_BYTES
      ) {
        search.full = true;
        return;
      }
      search.lines.push(entry);
      search.bytes += size;
      if (search.locations.length < 100) search.locations.push({ path: file, line: lineNumber });
    }
    start = end + 1;
    // One unit is at most 2048 matching steps (see LinePattern.cost), whatever the line and the
    // pattern, so a slice of the pacer is as long for a complex pattern as for a literal one.
    const units = 1 + Math.floor((Math.min(line.length, window) * search.pattern.cost) / 2048);
    if (pacer.due(units) && !(await pacer.pause())) return;
  }
}
