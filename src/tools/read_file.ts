/**
 * The `read_file` tool.
 *
 * @module
 */
import {
  cancelledResult,
  errorResult,
  pathLocations,
  pathTitle,
  readTextOrError,
  resolveOrError,
} from "./_common.ts";
import { Pacer } from "./_pace.ts";
import { plural, quote, utf8Length } from "./_text.ts";
import { displayPath } from "./paths.ts";
import {
  defineTool,
  type ObjectSchema,
  type Tool,
  type ToolContext,
  type ToolLocation,
  type ToolResult,
} from "./tool.ts";
import type { FileInfo } from "./workspace.ts";

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
export const readFileTool: Tool = defineTool<ReadFileInput>({
  name: "read_file",
  description: [
    "Read a text file from the workspace.",
    `Returns up to ${READ_FILE_DEFAULT_LINES} lines (and at most 100 KB) starting at line \`offset\`, numbered like \`cat -n\`: each line is prefixed with its 1-based line number, right-aligned to 6 columns, and a tab.`,
    "The prefix is not part of the file: leave it out when you copy text into edit_file's old_text.",
    "When the file has more lines, the output ends with a note giving the offset to continue from; read large files in pieces with offset and limit.",
    `Lines longer than ${READ_FILE_MAX_LINE_CHARS} characters are cut. Binary files are refused; use list_directory for directories.`,
    "Relative paths are resolved against the working directory; paths outside the workspace are refused.",
  ].join(" "),
  schema,
  kind: "read",
  effect: "read",
  title: (input) => pathTitle(input, "Read", "Read file"),
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
  run: readFile,
});

async function readFile(
  { path, offset, limit }: ReadFileInput,
  context: ToolContext,
): Promise<ToolResult> {
  const resolved = await resolveOrError(context, path);
  if (!resolved.ok) return resolved.result;
  const file = resolved.path;
  const shown = displayPath(context.cwd, file);
  const info = await context.files.stat(file).catch(() => undefined);
  if (context.signal.aborted) return cancelledResult();
  const refused = refusal(info, shown);
  if (refused !== undefined) return errorResult(refused);
  const read = await readTextOrError(context, file, shown, "read");
  if (!read.ok) return read.result;
  const text = read.text;
  const locations: ToolLocation[] = [{ path: file, line: offset ?? 1 }];
  if (text === "") return { content: `${shown} is empty`, isError: false, locations };
  // Lines are found one at a time, pacing the scan: a 16 MiB file has up to 16 million lines,
  // and neither splitting it at once nor counting them in one go may block the event loop.
  const lines = new Lines(text, new Pacer(context.signal));
  const start = offset ?? 1;
  if (!(await lines.skipTo(start))) return cancelledResult();
  if (lines.position > lines.total) {
    return errorResult(
      `Cannot read ${quote(shown)} from line ${start}: it has only ${
        plural(lines.lineNumber, "line")
      }`,
    );
  }
  const page = lines.take(limit ?? READ_FILE_DEFAULT_LINES);
  const last = lines.lineNumber - 1;
  const lineCount = await lines.count();
  if (lineCount === undefined) return cancelledResult();
  const notes: string[] = [];
  if (last < lineCount) {
    const shownRange = `lines ${start}-${last} of ${lineCount}`;
    notes.push(
      page.byteCapped
        ? `[output capped at ${
          READ_FILE_MAX_OUTPUT_BYTES / 1024
        } KB: showing ${shownRange}; use offset=${last + 1} to read more]`
        : `[showing ${shownRange}; use offset=${last + 1} to read more]`,
    );
  }
  if (page.cutLines > 0) {
    notes.push(
      `[${plural(page.cutLines, "line")} longer than ${READ_FILE_MAX_LINE_CHARS} characters cut]`,
    );
  }
  const content = page.output.join("") + notes.join("\n");
  return {
    content: content.endsWith("\n") ? content.slice(0, -1) : content,
    isError: false,
    locations,
  };
}

/** Why a file with these stats is not read (`undefined`: it is, or it is missing and says so). */
function refusal(info: FileInfo | undefined, shown: string): string | undefined {
  if (info === undefined) return undefined;
  if (info.isDirectory) return `Cannot read ${quote(shown)}: it is a directory; use list_directory`;
  // A FIFO, socket or device would block the read forever or never end.
  if (!info.isFile) return `Cannot read ${quote(shown)}: it is not a regular file`;
  if (info.size > READ_FILE_MAX_FILE_BYTES) {
    return `Cannot read ${quote(shown)}: it has ${info.size} bytes, more than the ${
      READ_FILE_MAX_FILE_BYTES / 1024 / 1024
    } MiB this tool reads; use search_text or run_command (e.g. sed -n) to look at parts of it`;
  }
  return undefined;
}

/** One page of numbered lines. */
interface Page {
  /** The numbered lines, each ending with `\n`. */
  readonly output: readonly string[];
  /** How many lines were cut at {@link READ_FILE_MAX_LINE_CHARS}. */
  readonly cutLines: number;
  /** Whether {@link READ_FILE_MAX_OUTPUT_BYTES} ended the page before its line count. */
  readonly byteCapped: boolean;
}

/**
 * A cursor over the lines of a text (a final `\n` ends the last line rather than starting an
 * empty one). The scans that may cover the whole text pause by the pacer.
 */
class Lines {
  readonly #text: string;
  readonly #pacer: Pacer;
  /** The offset of the last character that belongs to a line. */
  readonly total: number;
  /** Where the current line starts; past {@link total} at the end. */
  position = 0;
  /** The current line's 1-based number. */
  lineNumber = 1;

  constructor(text: string, pacer: Pacer) {
    this.#text = text;
    this.#pacer = pacer;
    this.total = text.endsWith("\n") ? text.length - 1 : text.length;
  }

  /** Moves to line `start`, or past the end; `false` when the call was cancelled meanwhile. */
  async skipTo(start: number): Promise<boolean> {
    const text = this.#text;
    while (this.lineNumber < start && this.position <= this.total) {
      const next = text.indexOf("\n", this.position);
      if (next === -1 || next >= this.total) {
        this.position = this.total + 1;
        break;
      }
      this.position = next + 1;
      this.lineNumber++;
      if (this.#pacer.due() && !(await this.#pacer.pause())) return false;
    }
    return true;
  }

  /** Numbers up to `wanted` lines from here, within {@link READ_FILE_MAX_OUTPUT_BYTES}. */
  take(wanted: number): Page {
    const text = this.#text;
    const output: string[] = [];
    let bytes = 0;
    let cutLines = 0;
    while (this.position <= this.total && output.length < wanted) {
      let end = text.indexOf("\n", this.position);
      if (end === -1 || end > this.total) end = this.total;
      let line = text.slice(this.position, end);
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line.length > READ_FILE_MAX_LINE_CHARS) {
        line = `${line.slice(0, READ_FILE_MAX_LINE_CHARS)}… [line cut: ${line.length} characters]`;
        cutLines++;
      }
      const numbered = `${String(this.lineNumber).padStart(6)}\t${line}\n`;
      const size = utf8Length(numbered);
      if (bytes + size > READ_FILE_MAX_OUTPUT_BYTES && output.length > 0) {
        return { output, cutLines, byteCapped: true };
      }
      output.push(numbered);
      bytes += size;
      this.position = end + 1;
      this.lineNumber++;
    }
    return { output, cutLines, byteCapped: false };
  }

  /**
   * How many lines the text has: those before the current one, and those from here on counted;
   * `undefined` when the call was cancelled meanwhile. Leaves the cursor where it is.
   */
  async count(): Promise<number | undefined> {
    const text = this.#text;
    let lineCount = this.lineNumber - 1;
    for (let at = this.position; at <= this.total;) {
      const next = text.indexOf("\n", at);
      lineCount++;
      if (next === -1 || next >= this.total) break;
      at = next + 1;
      if (this.#pacer.due() && !(await this.#pacer.pause())) return undefined;
    }
    return lineCount;
  }
}
