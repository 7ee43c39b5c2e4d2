/**
 * The `write_file` tool.
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
import { plural, quote, utf8Length } from "./_text.ts";
import { diffDisplay } from "./_diff.ts";
import { displayPath } from "./paths.ts";
import { dirnamePath } from "./posix_path.ts";
import {
  defineTool,
  type ObjectSchema,
  type Tool,
  type ToolContext,
  type ToolLocation,
  type ToolResult,
} from "./tool.ts";

const schema: ObjectSchema = {
  type: "object",
  properties: {
    path: {
      type: "string",
      minLength: 1,
      description: "The file to create or replace, relative to the working directory or absolute.",
    },
    content: { type: "string", description: "The complete new content of the file." },
  },
  required: ["path", "content"],
  additionalProperties: false,
};

interface WriteFileInput {
  readonly path: string;
  readonly content: string;
}

/**
 * `write_file {path, content}`: creates a file (and its missing parent directories) or replaces
 * its whole content. The result shows a diff against the previous content (`oldText: null` for
 * a new file); writing the same content again changes nothing.
 *
 * @example Calling the tool
 * ```ts ignore
 * import { writeFileTool } from "./write_file.ts";
 * const result = await writeFileTool.execute({ path: "notes/todo.md", content: "- a\n" }, context);
 * // result.content: "Created notes/todo.md (1 line, 4 bytes)"
 * ```
 */
export const writeFileTool: Tool = defineTool<WriteFileInput>({
  name: "write_file",
  description: [
    "Create a file, or replace the whole content of an existing one, in the workspace.",
    "Missing parent directories are created.",
    "To change part of an existing file prefer edit_file, which does not need the whole file.",
    "Relative paths are resolved against the working directory; paths outside the workspace are refused.",
  ].join(" "),
  schema,
  kind: "edit",
  effect: "write",
  title: (input) => pathTitle(input, "Write", "Write file"),
  locations: (input, cwd) => pathLocations(input, cwd),
  run: writeFile,
});

async function writeFile(
  { path, content }: WriteFileInput,
  context: ToolContext,
): Promise<ToolResult> {
  const resolved = await resolveOrError(context, path);
  if (!resolved.ok) return resolved.result;
  const file = resolved.path;
  const shown = displayPath(context.cwd, file);
  const info = await context.files.stat(file).catch(() => undefined);
  if (context.signal.aborted) return cancelledResult();
  if (info?.isDirectory) return errorResult(`Cannot write ${quote(shown)}: it is a directory`);
  let oldText: string | null = null;
  if (info !== undefined) {
    try {
      oldText = await context.workspace.readTextFile(file, { signal: context.signal });
    } catch (error) {
      if (context.signal.aborted) return cancelledResult();
      return errorResult(
        `Cannot write ${quote(shown)}: its current content cannot be read (${
          describeError(error)
        })`,
      );
    }
  }
  const locations: ToolLocation[] = [{ path: file }];
  const size = `${plural(lineCount(content), "line")}, ${plural(utf8Length(content), "byte")}`;
  if (oldText === content) {
    return {
      content: `${shown} already has this content (${size}); nothing changed`,
      isError: false,
      locations,
    };
  }
  try {
    await context.files.mkdir(dirnamePath(file));
    if (context.signal.aborted) return cancelledResult();
    await context.workspace.writeTextFile(file, content, { signal: context.signal });
  } catch (error) {
    if (context.signal.aborted) return cancelledResult();
    return errorResult(`Cannot write ${quote(shown)}: ${describeError(error)}`);
  }
  return {
    content: `${oldText === null ? "Created" : "Wrote"} ${shown} (${size})`,
    isError: false,
    display: diffDisplay(file, oldText, content),
    locations,
  };
}

function lineCount(text: string): number {
  if (text === "") return 0;
  let count = 1;
  for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) count++;
  return text.endsWith("\n") ? count - 1 : count;
}
