/**
 * The `edit_file` tool.
 *
 * @module
 */
import {
  cancelledResult,
  describeError,
  errorResult,
  pathLocations,
  pathTitle,
  readTextOrError,
  resolveOrError,
} from "./_common.ts";
import { plural, quote } from "./_text.ts";
import { diffDisplay } from "./_diff.ts";
import { displayPath } from "./paths.ts";
import {
  defineTool,
  type ObjectSchema,
  type Tool,
  type ToolContext,
  type ToolResult,
} from "./tool.ts";

const schema: ObjectSchema = {
  type: "object",
  properties: {
    path: {
      type: "string",
      minLength: 1,
      description: "The file to edit, relative to the working directory or absolute.",
    },
    old_text: {
      type: "string",
      minLength: 1,
      description:
        "The exact text to replace, whitespace and indentation included (without read_file's line-number prefixes). It must occur exactly once unless replace_all is true.",
    },
    new_text: { type: "string", description: "The text to put in its place." },
    replace_all: {
      type: "boolean",
      description: "Replace every occurrence of old_text instead of exactly one. Default: false.",
    },
  },
  required: ["path", "old_text", "new_text"],
  additionalProperties: false,
};

interface EditFileInput {
  readonly path: string;
  readonly "old_text": string;
  readonly "new_text": string;
  readonly "replace_all"?: boolean | null;
}

/** Text that looks like it was copied from read_file output, line-number prefix included. */
const NUMBERED_LINE = /^ *\d+\t/m;

/**
 * `edit_file {path, old_text, new_text, replace_all?}`: replaces text in an existing file.
 * `old_text` must occur exactly once (the error says how often it occurs otherwise) unless
 * `replace_all` is set. In a file with CRLF line ends, `\n` in both texts is read as `\r\n` when
 * that is the only way to match. The result shows a diff of the whole file.
 *
 * @example Calling the tool
 * ```ts ignore
 * import { editFileTool } from "./edit_file.ts";
 * const result = await editFileTool.execute(
 *   { path: "src/a.ts", old_text: "const a = 1;", new_text: "const a = 2;" },
 *   context,
 * );
 * // result.content: "Edited src/a.ts: replaced 1 occurrence at line 3"
 * ```
 */
export const editFileTool: Tool = defineTool<EditFileInput>({
  name: "edit_file",
  description: [
    "Replace text in an existing file in the workspace.",
    "old_text must match the file exactly, whitespace and indentation included, and must occur exactly once: include enough surrounding lines to make it unique, or set replace_all to replace every occurrence.",
    "Copy old_text from read_file output without the line-number prefix (the number and the tab before each line).",
    "To create a file or rewrite it completely use write_file.",
    "Relative paths are resolved against the working directory; paths outside the workspace are refused.",
  ].join(" "),
  schema,
  kind: "edit",
  effect: "write",
  title: (input) => pathTitle(input, "Edit", "Edit file"),
  locations: (input, cwd) => pathLocations(input, cwd),
  prepare: (input) =>
    input.old_text === input.new_text
      ? "Cannot edit: old_text and new_text are the same, so nothing would change"
      : input,
  run: editFile,
});

async function editFile(input: EditFileInput, context: ToolContext): Promise<ToolResult> {
  const { path, old_text: oldText, new_text: newText, replace_all: replaceAll } = input;
  const resolved = await resolveOrError(context, path);
  if (!resolved.ok) return resolved.result;
  const file = resolved.path;
  const shown = displayPath(context.cwd, file);
  const info = await context.files.stat(file).catch(() => undefined);
  if (context.signal.aborted) return cancelledResult();
  if (info === undefined) {
    return errorResult(
      `Cannot edit ${quote(shown)}: it does not exist; use write_file to create it`,
    );
  }
  if (info.isDirectory) return errorResult(`Cannot edit ${quote(shown)}: it is a directory`);
  const read = await readTextOrError(context, file, shown, "edit");
  if (!read.ok) return read.result;
  const before = read.text;
  const found = findOccurrences(before, oldText, newText);
  if (found.positions.length === 0) {
    const hint = NUMBERED_LINE.test(oldText)
      ? " old_text seems to include read_file's line-number prefixes; leave them out."
      : " Read the file again and copy the text exactly, whitespace included.";
    return errorResult(`Cannot edit ${quote(shown)}: old_text was not found in it.${hint}`);
  }
  const { positions, search, replacement } = found;
  if (positions.length > 1 && replaceAll !== true) {
    const lines = positions.slice(0, 10).map((at) => lineAt(before, at)).join(", ");
    return errorResult(
      `Cannot edit ${quote(shown)}: old_text occurs ${positions.length} times (at lines ${lines}${
        positions.length > 10 ? ", …" : ""
      }). Include more surrounding text to make it unique, or set replace_all to true to replace every occurrence.`,
    );
  }
  let after = "";
  let from = 0;
  for (const at of positions) {
    after += before.slice(from, at) + replacement;
    from = at + search.length;
  }
  after += before.slice(from);
  try {
    await context.workspace.writeTextFile(file, after, { signal: context.signal });
  } catch (error) {
    if (context.signal.aborted) return cancelledResult();
    return errorResult(`Cannot edit ${quote(shown)}: ${describeError(error)}`);
  }
  const firstLine = lineAt(before, positions[0] as number);
  const where = positions.length === 1
    ? `at line ${firstLine}`
    : `(the first at line ${firstLine})`;
  return {
    content: `Edited ${shown}: replaced ${plural(positions.length, "occurrence")} ${where}`,
    isError: false,
    display: diffDisplay(file, before, after),
    locations: [{ path: file, line: firstLine }],
  };
}

/**
 * Where `oldText` occurs in `text`, and the texts to search and replace with: as given, or with
 * CRLF line ends in a CRLF file when that is the only way to match.
 */
function findOccurrences(
  text: string,
  oldText: string,
  newText: string,
): { positions: number[]; search: string; replacement: string } {
  const positions = occurrences(text, oldText);
  if (positions.length === 0 && text.includes("\r\n") && oldText.includes("\n")) {
    const search = toCrlf(oldText);
    const crlfPositions = occurrences(text, search);
    if (crlfPositions.length > 0) {
      return { positions: crlfPositions, search, replacement: toCrlf(newText) };
    }
  }
  return { positions, search: oldText, replacement: newText };
}

/** Start offsets of the non-overlapping occurrences of `search` in `text`. */
function occurrences(text: string, search: string): number[] {
  const found: number[] = [];
  for (let at = text.indexOf(search); at !== -1; at = text.indexOf(search, at + search.length)) {
    found.push(at);
  }
  return found;
}

/** The 1-based line of offset `at`. */
function lineAt(text: string, at: number): number {
  let line = 1;
  for (
    let index = text.indexOf("\n");
    index !== -1 && index < at;
    index = text.indexOf("\n", index + 1)
  ) {
    line++;
  }
  return line;
}

function toCrlf(text: string): string {
  return text.replace(/\r?\n/g, "\r\n");
}
