/**
 * The `find_files` tool.
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
import { plural, quote } from "./_text.ts";
import { Pacer, sortPaced } from "./_pace.ts";
import { SKIPPED_DIRECTORIES, walkFiles, type WalkStats } from "./_walk.ts";
import { compileGlob, type Glob } from "./glob.ts";
import { displayPath } from "./paths.ts";
import {
  defineTool,
  type ObjectSchema,
  type Tool,
  type ToolContext,
  type ToolLocation,
  type ToolResult,
} from "./tool.ts";

/** Most paths one call returns. */
export const FIND_FILES_MAX_RESULTS = 1000;
/** The walk stops after this many directory entries. */
export const FIND_FILES_MAX_ENTRIES = 200_000;

const schema: ObjectSchema = {
  type: "object",
  properties: {
    pattern: {
      type: "string",
      minLength: 1,
      description:
        'Glob pattern, e.g. "**/*.ts", "src/**/*_test.{ts,tsx}" or "*.md". A pattern without "/" matches file names at any depth.',
    },
    path: {
      type: "string",
      minLength: 1,
      description:
        "The directory to search in, relative to the working directory or absolute. Default: the working directory.",
    },
  },
  required: ["pattern"],
  additionalProperties: false,
};

interface FindFilesInput {
  readonly pattern: string;
  readonly path?: string | null;
}

/** A checked input with its pattern compiled. */
interface FindFilesCall extends FindFilesInput {
  readonly glob: Glob;
}

/**
 * `find_files {pattern, path?}`: the files under `path` (default: the working directory) whose
 * path relative to it matches a glob (see {@link compileGlob}), sorted, at most 1000. `.git` and
 * `node_modules` are skipped unless the pattern names them; symlinked directories are not
 * entered. Paths in the output are relative to the searched directory. The walk stops after
 * 200,000 entries, yields to the event loop every few milliseconds and stops when the call's
 * signal aborts; globs are matched in linear time.
 *
 * @example Calling the tool
 * ```ts ignore
 * import { findFilesTool } from "./find_files.ts";
 * const result = await findFilesTool.execute({ pattern: "src/**\/*.ts" }, context);
 * // result.content: "src/a.ts\nsrc/b/c.ts"
 * ```
 */
export const findFilesTool: Tool = defineTool<FindFilesInput, FindFilesCall>({
  name: "find_files",
  description: [
    "Find files by name with a glob pattern, recursively.",
    "Syntax: * (any characters but /), ? (one character), ** (any number of directories), {a,b} (alternatives), [abc] (character set).",
    'A pattern without "/" matches file names at any depth ("*.ts" finds every .ts file); otherwise it matches the path relative to the searched directory.',
    "Returns matching file paths relative to the searched directory, sorted, one per line, at most 1000.",
    ".git and node_modules are skipped unless the pattern names them.",
    "Paths outside the workspace are refused.",
  ].join(" "),
  schema,
  kind: "search",
  effect: "read",
  title(input: unknown): string {
    const pattern = stringField(input, "pattern");
    const path = stringField(input, "path");
    if (!pattern) return "Find files";
    return path ? `Find ${pattern} in ${path}` : `Find ${pattern}`;
  },
  locations: (input, cwd) => directoryLocations(input, cwd, "path"),
  async prepare(input: FindFilesInput): Promise<FindFilesCall | string> {
    const glob = await compileGlob(input.pattern);
    return typeof glob === "string" ? `Invalid input: "pattern": ${glob}` : { ...input, glob };
  },
  run: findFiles,
});

async function findFiles(
  { pattern, path, glob }: FindFilesCall,
  context: ToolContext,
): Promise<ToolResult> {
  const resolved = await resolveOrError(context, path ?? ".");
  if (!resolved.ok) return resolved.result;
  const root = resolved.path;
  const shown = displayPath(context.cwd, root);
  const info = await context.files.stat(root).catch(() => undefined);
  if (context.signal.aborted) return cancelledResult();
  if (info === undefined) return errorResult(`Cannot search ${quote(shown)}: it does not exist`);
  if (!info.isDirectory) return errorResult(`Cannot search ${quote(shown)}: it is not a directory`);
  const base = glob.base;
  const stats: WalkStats = { entries: 0, limited: false, unreadable: 0 };
  const matches: string[] = [];
  const pacer = new Pacer(context.signal);
  const walk = walkFiles(context.files, root, {
    signal: context.signal,
    pacer,
    maxEntries: FIND_FILES_MAX_ENTRIES,
    enter: (relative, name) =>
      (!SKIPPED_DIRECTORIES.includes(name) || glob.names(name)) &&
      (base === "" || base === relative || base.startsWith(`${relative}/`) ||
        relative.startsWith(`${base}/`)),
  }, stats);
  for await (const entry of walk) {
    if (glob.matches(entry.relative)) matches.push(entry.relative);
    // Matching is linear in the path; count long paths and complex globs as more work.
    if (pacer.due(Math.floor((entry.relative.length * glob.cost) / 2048))) {
      if (!(await pacer.pause())) break;
    }
  }
  if (context.signal.aborted) return cancelledResult();
  const locations: ToolLocation[] = [{ path: root }];
  const notes: string[] = [];
  if (stats.limited) {
    notes.push(
      `[search stopped after ${FIND_FILES_MAX_ENTRIES} entries; use a narrower path or pattern]`,
    );
  }
  if (stats.unreadable > 0) {
    notes.push(`[${plural(stats.unreadable, "directory", "directories")} could not be read]`);
  }
  if (matches.length === 0) {
    const content = [`No files match ${quote(pattern)} in ${shown}`, ...notes].join("\n");
    return { content, isError: false, locations };
  }
  if (!(await sortPaced(matches, (match) => match, pacer))) return cancelledResult();
  const lines = matches.slice(0, FIND_FILES_MAX_RESULTS);
  if (matches.length > FIND_FILES_MAX_RESULTS) {
    notes.unshift(
      `[showing the first ${FIND_FILES_MAX_RESULTS} of ${matches.length} matches; use a narrower pattern or path]`,
    );
  }
  return { content: [...lines, ...notes].join("\n"), isError: false, locations };
}
