/**
 * The `search_text` tool.
 *
 * @module
 */
import {
  cancelledResult,
  describeError,
  errorResult,
  type ObjectSchema,
  resolveOrError,
  stringField,
  validateInput,
} from "./_common.ts";
import { plural, quote, shorten, utf8Length } from "./_text.ts";
import { SKIPPED_DIRECTORIES, walkFiles, type WalkStats } from "./_walk.ts";
import { compileGlob, type Glob } from "./glob.ts";
import { displayPath } from "./paths.ts";
import { basenamePath, joinPath } from "./posix_path.ts";
import type { Tool, ToolContext, ToolLocation, ToolResult } from "./tool.ts";

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
/** How much of a file is checked for NUL bytes to tell binary files apart. */
const BINARY_SNIFF_BYTES = 8192;

const schema: ObjectSchema = {
  type: "object",
  properties: {
    pattern: {
      type: "string",
      minLength: 1,
      description:
        "JavaScript regular expression, matched against each line (case-sensitive; use [Aa] for both cases).",
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

/**
 * `search_text {pattern, path?, include?}`: a JavaScript regular expression searched line by
 * line in the text files under `path` (a file or a directory; default: the working directory),
 * optionally only in files matching the `include` glob. Output lines are `path:line: text`, with
 * paths relative to the working directory (absolute outside it), files in walk order (name order,
 * depth-first). Skips `.git`, `node_modules` (unless `include` names them), symlinks, binary files
 * and files over 2 MiB; stops at 500 matches or 50 KB.
 *
 * @example Calling the tool
 * ```ts ignore
 * import { searchTextTool } from "./search_text.ts";
 * const result = await searchTextTool.execute({ pattern: "TODO", include: "*.ts" }, context);
 * // result.content: "src/a.ts:12: // TODO: remove"
 * ```
 */
export const searchTextTool: Tool = {
  name: "search_text",
  description: [
    "Search file contents with a JavaScript regular expression, line by line (like grep -rn).",
    "Searches the text files under path (a file or a directory; default: the working directory), optionally only files matching the include glob.",
    "Returns matching lines as path:line: text, with paths relative to the working directory, at most 500 matches.",
    "Skips .git, node_modules, symlinks, binary files and files over 2 MiB.",
    "Paths outside the workspace are refused.",
  ].join(" "),
  inputSchema: schema,
  kind: "search",
  effect: "read",
  title(input: unknown): string {
    const pattern = stringField(input, "pattern");
    const path = stringField(input, "path");
    if (!pattern) return "Search text";
    const shown = shorten(pattern, 60);
    return path ? `Search ${shown} in ${path}` : `Search ${shown}`;
  },
  locations(input: unknown, cwd: string): readonly ToolLocation[] {
    const path = stringField(input, "path");
    return [{ path: joinPath(cwd, path && !path.includes("\0") ? path : ".") }];
  },
  execute(input: unknown, context: ToolContext): Promise<ToolResult> {
    return searchText(input, context);
  },
};

/** The running state of one search. */
interface Search {
  readonly regex: RegExp;
  readonly context: ToolContext;
  readonly lines: string[];
  readonly locations: ToolLocation[];
  bytes: number;
  full: boolean;
  searched: number;
  binary: number;
  large: number;
  unreadable: number;
}

async function searchText(input: unknown, context: ToolContext): Promise<ToolResult> {
  const invalid = validateInput(schema, input);
  if (invalid !== undefined) return errorResult(invalid);
  const { pattern, path, include } = input as SearchTextInput;
  let regex: RegExp;
  try {
    regex = new RegExp(pattern);
  } catch (error) {
    return errorResult(
      `Invalid input: "pattern" is not a valid JavaScript regular expression (${
        describeError(error)
      })`,
    );
  }
  let filter: Glob | undefined;
  if (include !== undefined && include !== null) {
    const glob = compileGlob(include);
    if (typeof glob === "string") return errorResult(`Invalid input: "include": ${glob}`);
    filter = glob;
  }
  if (context.signal.aborted) return cancelledResult();
  const resolved = await resolveOrError(context, path ?? ".");
  if (!resolved.ok) return resolved.result;
  const root = resolved.path;
  const shown = displayPath(context.cwd, root);
  const info = await context.host.stat(root).catch(() => undefined);
  if (context.signal.aborted) return cancelledResult();
  if (info === undefined) return errorResult(`Cannot search ${quote(shown)}: it does not exist`);
  const search: Search = {
    regex,
    context,
    lines: [],
    locations: [],
    bytes: 0,
    full: false,
    searched: 0,
    binary: 0,
    large: 0,
    unreadable: 0,
  };
  const stats: WalkStats = { entries: 0, limited: false, unreadable: 0 };
  if (!info.isDirectory) {
    if (filter === undefined || filter.matches(basenamePath(root))) await searchFile(search, root);
  } else {
    const walk = walkFiles(context.host, root, {
      signal: context.signal,
      maxEntries: SEARCH_TEXT_MAX_ENTRIES,
      enter: (_relative, name) =>
        !SKIPPED_DIRECTORIES.includes(name) || filter?.names(name) === true,
    }, stats);
    for await (const entry of walk) {
      // A symlink may point out of the workspace; its target is searched where it lives, if inside.
      if (entry.isSymlink || (filter !== undefined && !filter.matches(entry.relative))) continue;
      await searchFile(search, entry.path);
      if (search.full || context.signal.aborted) break;
    }
  }
  if (context.signal.aborted) return cancelledResult();
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
  const skipped: string[] = [];
  if (search.binary > 0) skipped.push(plural(search.binary, "binary file"));
  if (search.large > 0) skipped.push(`${plural(search.large, "file")} over 2 MiB`);
  const unreadable = search.unreadable + stats.unreadable;
  if (unreadable > 0) skipped.push(`${unreadable} unreadable`);
  if (skipped.length > 0) notes.push(`[skipped ${skipped.join(", ")}]`);
  const locations = search.locations.length > 0 ? search.locations : [{ path: root }];
  if (search.lines.length === 0) {
    const content = [
      `No matches for ${quote(pattern)} in ${shown} (${plural(search.searched, "file")} searched)`,
      ...notes,
    ].join("\n");
    return { content, isError: false, locations };
  }
  return { content: [...search.lines, ...notes].join("\n"), isError: false, locations };
}

async function searchFile(search: Search, file: string): Promise<void> {
  const { context } = search;
  const info = await context.host.stat(file).catch(() => undefined);
  if (context.signal.aborted) return;
  if (info === undefined || !info.isFile) {
    search.unreadable++;
    return;
  }
  if (info.size > SEARCH_TEXT_MAX_FILE_BYTES) {
    search.large++;
    return;
  }
  let bytes: Uint8Array;
  try {
    bytes = await context.host.readFile(file, { signal: context.signal });
  } catch {
    if (!context.signal.aborted) search.unreadable++;
    return;
  }
  if (bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0)) {
    search.binary++;
    return;
  }
  search.searched++;
  const shown = displayPath(context.cwd, file);
  const text = new TextDecoder().decode(bytes);
  let lineNumber = 0;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf("\n", start);
    if (end === -1) end = text.length;
    lineNumber++;
    let line = text.slice(start, end);
    if (line.endsWith("\r")) line = line.slice(0, -1);
    if (search.regex.test(line)) {
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
  }
}
