/**
 * The `read_file` tool.
 *
 * @module
 */
import {
  cancelledResult,
  errorResult,
  type ObjectSchema,
  pathLocations,
  readTextOrError,
  resolveOrError,
  stringField,
  validateInput,
} from "./_common.ts";
import { Pacer } from "./_pace.ts";
import { plural, quote, utf8Length } from "./_text.ts";
import { displayPath } from "./paths.ts";
import type { Tool, ToolContext, ToolLocation, ToolResult } from "./tool.ts";

/** Lines returned when the call gives no `limit`. */
export const READ_FILE_DEFAULT_LINES = 2000;
/** Most bytes of numbered output one call returns. */
export const READ_FILE_MAX_OUTPUT_BYTES: number = 100 * 1024;
/** Longer lines are cut to this many characters. */
export const READ_FILE_MAX_LINE_CHARS = 2000;
/** Files larger than this are not read at all. */
export const READ_FILE_MAX_FILE_BYTES: number = 16 * 1024 * 1024;

const schema: ObjectSchema = {
  type: "object",
  properties: {
    path: {
      type: "string",
      minLength: 1,
      description: "The file to read, relative to the working directory or absolute.",
    },
    offset: {
      type: "integer",
      minimum: 1,
      description: "The 1-based line number to start at. Default: 1.",
    },
    limit: {
      type: "integer",
      minimum: 1,
      description: `How many lines to return. Default: ${READ_FILE_DEFAULT_LINES}.`,
    },
  },
  required: ["path"],
  additionalProperties: false,
};

interface ReadFileInput {
  readonly path: string;
  readonly offset?: number | null;
  readonly limit?: number | null;
}

/**
 * `read_file {path, offset?, limit?}`: reads a text file in the workspace and returns its lines
 * numbered the way `cat -n` does: the 1-based line number right-aligned in 6 columns, a tab, then
 * the line (a trailing `\r` removed). At most 2000 lines (or `limit`) and 100 KB of output per
 * call; lines over 2000 characters are cut. When more remains, the output ends with a note that
 * gives the `offset` to continue at. Empty files, binary files (NUL bytes), directories and files
 * over 16 MiB get a clear message instead.
 *
 * @example Calling the tool
 * ```ts ignore
 * import { readFileTool } from "./read_file.ts";
 * const result = await readFileTool.execute({ path: "src/a.ts", offset: 10, limit: 5 }, context);
 * // result.content: "    10\tconst a = 1;\n    11\t…"
 * ```
 */
export const readFileTool: Tool = {
  name: "read_file",
  description: [
    "Read a text file from the workspace.",
    `Returns up to ${READ_FILE_DEFAULT_LINES} lines (and at most 100 KB) starting at line \`offset\`, numbered like \`cat -n\`: each line is prefixed with its 1-based line number, right-aligned to 6 columns, and a tab.`,
    "The prefix is not part of the file: leave it out when you copy text into edit_file's old_text.",
    "When the file has more lines, the output ends with a note giving the offset to continue from; read large files in pieces with offset and limit.",
    `Lines longer than ${READ_FILE_MAX_LINE_CHARS} characters are cut. Binary files are refused; use list_directory for directories.`,
    "Relative paths are resolved against the working directory; paths outside the workspace are refused.",
  ].join(" "),
  inputSchema: schema,
  kind: "read",
  effect: "read",
  title(input: unknown): string {
    const path = stringField(input, "path");
    return path ? `Read ${path}` : "Read file";
  },
  locations(input: unknown, cwd: string): readonly ToolLocation[] {
    const offset = typeof input === "object" && input !== null
      ? (input as { offset?: unknown }).offset
      : undefined;
    return pathLocations(input, cwd).map((location) =>
      typeof offset === "number" && Number.isInteger(offset) && offset >= 1
        ? { ...location, line: offset }
        : location
    );
  },
  execute(input: unknown, context: ToolContext): Promise<ToolResult> {
    return readFile(input, context);
  },
};

async function readFile(input: unknown, context: ToolContext): Promise<ToolResult> {
  const invalid = validateInput(schema, input);
  if (invalid !== undefined) return errorResult(invalid);
  const { path, offset, limit } = input as ReadFileInput;
  if (context.signal.aborted) return cancelledResult();
  const resolved = await resolveOrError(context, path);
  if (!resolved.ok) return resolved.result;
  const file = resolved.path;
  const shown = displayPath(context.cwd, file);
  const info = await context.files.stat(file).catch(() => undefined);
  if (context.signal.aborted) return cancelledResult();
  if (info?.isDirectory) {
    return errorResult(`Cannot read ${quote(shown)}: it is a directory; use list_directory`);
  }
  // A FIFO, socket or device would block the read forever or never end.
  if (info !== undefined && !info.isFile) {
    return errorResult(`Cannot read ${quote(shown)}: it is not a regular file`);
  }
  if (info !== undefined && info.size > READ_FILE_MAX_FILE_BYTES) {
    return errorResult(
      `Cannot read ${quote(shown)}: it has ${info.size} bytes, more than the ${
        READ_FILE_MAX_FILE_BYTES / 1024 / 1024
      } MiB this tool reads; use search_text or run_command (e.g. sed -n) to look at parts of it`,
    );
  }
  const read = await readTextOrError(context, file, shown, "read");
  if (!read.ok) return read.result;
  const text = read.text;
  const locations: ToolLocation[] = [{ path: file, line: offset ?? 1 }];
  if (text === "") return { content: `${shown} is empty`, isError: false, locations };
  // Lines are found one at a time, pacing the scan: a 16 MiB file has up to 16 million lines,
  // and neither splitting it at once nor counting them in one go may block the event loop.
  const pacer = new Pacer(context.signal);
  const total = text.endsWith("\n") ? text.length - 1 : text.length;
  const start = offset ?? 1;
  let position = 0;
  let lineNumber = 1;
  while (lineNumber < start && position <= total) {
    const next = text.indexOf("\n", position);
    if (next === -1 || next >= total) {
      position = total + 1;
      break;
    }
    position = next + 1;
    lineNumber++;
    if (pacer.due() && !(await pacer.pause())) return cancelledResult();
  }
  if (position > total) {
    return errorResult(
      `Cannot read ${quote(shown)} from line ${start}: it has only ${plural(lineNumber, "line")}`,
    );
  }
  const wanted = limit ?? READ_FILE_DEFAULT_LINES;
  const output: string[] = [];
  let bytes = 0;
  let cutLines = 0;
  let byteCapped = false;
  while (position <= total && output.length < wanted) {
    let end = text.indexOf("\n", position);
    if (end === -1 || end > total) end = total;
    let line = text.slice(position, end);
    if (line.endsWith("\r")) line = line.slice(0, -1);
    if (line.length > READ_FILE_MAX_LINE_CHARS) {
      line = `${line.slice(0, READ_FILE_MAX_LINE_CHARS)}… [line cut: ${line.length} characters]`;
      cutLines++;
    }
    const numbered = `${String(lineNumber).padStart(6)}\t${line}\n`;
    const size = utf8Length(numbered);
    if (bytes + size > READ_FILE_MAX_OUTPUT_BYTES && output.length > 0) {
      byteCapped = true;
      break;
    }
    output.push(numbered);
    bytes += size;
    position = end + 1;
    lineNumber++;
  }
  const last = lineNumber - 1;
  let lineCount = last;
  for (let at = position; at <= total;) {
    const next = text.indexOf("\n", at);
    lineCount++;
    if (next === -1 || next >= total) break;
    at = next + 1;
    if (pacer.due() && !(await pacer.pause())) return cancelledResult();
  }
  const notes: string[] = [];
  if (last < lineCount) {
    const shownRange = `lines ${start}-${last} of ${lineCount}`;
    notes.push(
      byteCapped
        ? `[output capped at ${
          READ_FILE_MAX_OUTPUT_BYTES / 1024
        } KB: showing ${shownRange}; use offset=${last + 1} to read more]`
        : `[showing ${shownRange}; use offset=${last + 1} to read more]`,
    );
  }
  if (cutLines > 0) {
    notes.push(
      `[${plural(cutLines, "line")} longer than ${READ_FILE_MAX_LINE_CHARS} characters cut]`,
    );
  }
  const content = output.join("") + notes.join("\n");
  return {
    content: content.endsWith("\n") ? content.slice(0, -1) : content,
    isError: false,
    locations,
  };
}
