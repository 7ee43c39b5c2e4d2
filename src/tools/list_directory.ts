/**
 * The `list_directory` tool.
 *
 * @module
 */
import {
  cancelledResult,
  describeError,
  errorResult,
  pathLocations,
  pathTitle,
  resolveOrError,
} from "./_common.ts";
import { Pacer, sortPaced } from "./_pace.ts";
import { quote } from "./_text.ts";
import { displayPath } from "./paths.ts";
import { joinPath } from "./posix_path.ts";
import {
  defineTool,
  type ObjectSchema,
  type Tool,
  type ToolContext,
  type ToolLocation,
  type ToolResult,
} from "./tool.ts";
import type { DirEntry } from "./workspace.ts";

/** Most entries one call lists. */
export const LIST_DIRECTORY_MAX_ENTRIES = 1000;

const schema: ObjectSchema = {
  type: "object",
  properties: {
    path: {
      type: "string",
      minLength: 1,
      description:
        'The directory to list, relative to the working directory ("." for it) or absolute.',
    },
  },
  required: ["path"],
  additionalProperties: false,
};

interface ListDirectoryInput {
  readonly path: string;
}

/**
 * `list_directory {path}`: the entries of one directory, one a line, sorted by name (code-unit
 * order). Directories end with `/`; symlinks are marked `(symlink)`, or `(broken symlink)` when
 * their target is missing, and end with `/` when they point to a directory. At most 1000 entries.
 *
 * @example Calling the tool
 * ```ts ignore
 * import { listDirectoryTool } from "./list_directory.ts";
 * const result = await listDirectoryTool.execute({ path: "." }, context);
 * // result.content: "README.md\nsrc/\ntests/"
 * ```
 */
export const listDirectoryTool: Tool = defineTool<ListDirectoryInput>({
  name: "list_directory",
  description: [
    "List the entries of one directory in the workspace, sorted by name.",
    "Directories end with '/'; symlinks are marked '(symlink)'.",
    `At most ${LIST_DIRECTORY_MAX_ENTRIES} entries are listed.`,
    "Use find_files to search a whole tree by name.",
    "Relative paths are resolved against the working directory; paths outside the workspace are refused.",
  ].join(" "),
  schema,
  kind: "read",
  effect: "read",
  title: (input) => pathTitle(input, "List", "List directory"),
  locations: (input, cwd) => pathLocations(input, cwd),
  run: listDirectory,
});

async function listDirectory(
  { path }: ListDirectoryInput,
  context: ToolContext,
): Promise<ToolResult> {
  const resolved = await resolveOrError(context, path);
  if (!resolved.ok) return resolved.result;
  const dir = resolved.path;
  const shown = displayPath(context.cwd, dir);
  const info = await context.files.stat(dir).catch(() => undefined);
  if (context.signal.aborted) return cancelledResult();
  if (info === undefined) return errorResult(`Cannot list ${quote(shown)}: it does not exist`);
  if (!info.isDirectory) {
    return errorResult(`Cannot list ${quote(shown)}: it is not a directory; use read_file`);
  }
  let entries: DirEntry[];
  try {
    entries = await context.files.readDir(dir);
  } catch (error) {
    if (context.signal.aborted) return cancelledResult();
    return errorResult(`Cannot list ${quote(shown)}: ${describeError(error)}`);
  }
  if (context.signal.aborted) return cancelledResult();
  const locations: ToolLocation[] = [{ path: dir }];
  if (entries.length === 0) return { content: `${shown} is empty`, isError: false, locations };
  // A directory may hold millions of entries: sort without blocking the event loop.
  if (!(await sortPaced(entries, (entry) => entry.name, new Pacer(context.signal)))) {
    return cancelledResult();
  }
  const lines: string[] = [];
  for (const entry of entries.slice(0, LIST_DIRECTORY_MAX_ENTRIES)) {
    if (entry.isSymlink) {
      // stat follows the link: it tells whether the target is a directory, or missing.
      const target = await context.files.stat(joinPath(dir, entry.name)).catch(() => undefined);
      if (context.signal.aborted) return cancelledResult();
      if (target === undefined) lines.push(`${entry.name} (broken symlink)`);
      else lines.push(`${entry.name}${target.isDirectory ? "/" : ""} (symlink)`);
    } else {
      lines.push(`${entry.name}${entry.isDirectory ? "/" : ""}`);
    }
  }
  if (entries.length > LIST_DIRECTORY_MAX_ENTRIES) {
    lines.push(
      `[showing the first ${LIST_DIRECTORY_MAX_ENTRIES} of ${entries.length} entries; use find_files to search]`,
    );
  }
  return { content: lines.join("\n"), isError: false, locations };
}
