/**
 * The `run_command` tool.
 *
 * @module
 */
import {
  cancelledResult,
  describeError,
  directoryLocations,
  errorResult,
  resolveOrError,
  stringField,
} from "./_common.ts";
import { quote, shorten } from "./_text.ts";
import { displayPath } from "./paths.ts";
import {
  defineTool,
  type ObjectSchema,
  type Tool,
  type ToolContext,
  type ToolDisplay,
  type ToolResult,
} from "./tool.ts";
import type { CommandResult } from "./workspace.ts";

/** Timeout when the call gives none. */
export const RUN_COMMAND_DEFAULT_TIMEOUT_MS = 120_000;
/** Longest timeout a call may ask for. */
export const RUN_COMMAND_MAX_TIMEOUT_MS = 600_000;
/** Bytes of output kept (the end of it). */
export const RUN_COMMAND_OUTPUT_LIMIT = 30_000;
/** Characters of output a progress update shows (the end of it). */
export const RUN_COMMAND_PROGRESS_TAIL = 4_000;
/** Least time between two progress updates of one command. */
export const RUN_COMMAND_PROGRESS_INTERVAL_MS = 250;

const schema: ObjectSchema = {
  type: "object",
  properties: {
    command: {
      type: "string",
      minLength: 1,
      description: "The shell command line, run with /bin/sh -c.",
    },
    cwd: {
      type: "string",
      minLength: 1,
      description:
        "The directory to run in, relative to the working directory or absolute; must be inside the workspace. Default: the working directory.",
    },
    timeout_ms: {
      type: "integer",
      minimum: 1,
      maximum: RUN_COMMAND_MAX_TIMEOUT_MS,
      description:
        `Kill the command after this many milliseconds. Default: ${RUN_COMMAND_DEFAULT_TIMEOUT_MS}; at most ${RUN_COMMAND_MAX_TIMEOUT_MS}.`,
    },
  },
  required: ["command"],
  additionalProperties: false,
};

interface RunCommandInput {
  readonly command: string;
  readonly cwd?: string | null;
  readonly "timeout_ms"?: number | null;
}

/**
 * `run_command {command, cwd?, timeout_ms?}`: runs a shell command line in the workspace
 * (through {@link ToolContext.workspace}, so in a client terminal when the client offers one).
 * The result starts with how the command ended (exit code, signal, or timeout) followed by the
 * combined stdout and stderr, of which the last 30000 bytes are kept. A non-zero exit, a signal
 * or a timeout makes the result an error. On timeout or cancellation the command's whole process
 * group is killed, and so is whatever the command left running in it (background jobs) when it
 * ends.
 *
 * @example Calling the tool
 * ```ts ignore
 * import { runCommandTool } from "./run_command.ts";
 * const result = await runCommandTool.execute({ command: "npm test" }, context);
 * // result.content: "Exit code: 0\n\n> test\n…"
 * ```
 */
export const runCommandTool: Tool = defineTool<RunCommandInput>({
  name: "run_command",
  description: [
    "Run a shell command (/bin/sh -c) in the workspace and return its exit code and combined stdout and stderr.",
    `Only the last ${RUN_COMMAND_OUTPUT_LIMIT} bytes of output are returned; redirect long output to a file and search it if you need all of it.`,
    `The command is killed, with its child processes, after timeout_ms (default ${RUN_COMMAND_DEFAULT_TIMEOUT_MS} ms).`,
    "stdin is closed, so interactive commands get end-of-file: pass flags such as --yes instead.",
    "Background processes (&) are killed when the command ends, so a command cannot leave a server or watcher running: start it and use it in the same command.",
    "Prefer read_file, edit_file, find_files and search_text over cat, sed, find and grep.",
  ].join(" "),
  schema,
  kind: "execute",
  effect: "execute",
  title(input: unknown): string {
    const command = stringField(input, "command");
    if (!command) return "Run command";
    const firstLine = command.trim().split("\n")[0] ?? "";
    const more = command.trim().includes("\n") ? " …" : "";
    return `Run: ${shorten(firstLine, 80)}${more}`;
  },
  locations: (input, cwd) => directoryLocations(input, cwd, "cwd"),
  run: runCommand,
});

async function runCommand(input: RunCommandInput, context: ToolContext): Promise<ToolResult> {
  const { command, cwd, timeout_ms: timeoutMs } = input;
  const resolved = await resolveOrError(context, cwd ?? ".");
  if (!resolved.ok) return resolved.result;
  const dir = resolved.path;
  const info = await context.files.stat(dir).catch(() => undefined);
  if (context.signal.aborted) return cancelledResult();
  if (!info?.isDirectory) {
    const shown = displayPath(context.cwd, dir);
    return errorResult(
      `Cannot run in ${quote(shown)}: ${
        info === undefined ? "it does not exist" : "it is not a directory"
      }`,
    );
  }
  const timeout = timeoutMs ?? RUN_COMMAND_DEFAULT_TIMEOUT_MS;
  let result: CommandResult;
  const progress = context.progress ? new OutputProgress(context.progress) : undefined;
  try {
    result = await context.workspace.runCommand(command, {
      cwd: dir,
      timeoutMs: timeout,
      outputLimit: RUN_COMMAND_OUTPUT_LIMIT,
      signal: context.signal,
      ...(progress ? { onOutput: (text: string) => progress.add(text) } : {}),
    });
  } catch (error) {
    if (context.signal.aborted) return cancelledResult();
    return errorResult(`Cannot run the command: ${describeError(error)}`);
  } finally {
    progress?.stop();
  }
  const cancelled = context.signal.aborted && !result.timedOut;
  const status = cancelled
    ? "Cancelled: the command and its child processes were killed"
    : result.timedOut
    ? `Timed out after ${timeout} ms: the command and its child processes were killed`
    : result.exitCode !== null
    ? `Exit code: ${result.exitCode}`
    : `Killed by signal ${result.signal ?? "unknown"}`;
  const parts = [status];
  if (result.truncated) {
    parts.push(
      `[output truncated: showing the last ${RUN_COMMAND_OUTPUT_LIMIT} bytes]`,
    );
  }
  parts.push(result.output === "" ? "(no output)" : result.output.replace(/\n$/, ""));
  const content = parts.join("\n");
  const display: ToolDisplay[] = result.terminalId !== undefined
    ? [{ type: "terminal", terminalId: result.terminalId }]
    : [{ type: "text", text: content }];
  return {
    content,
    isError: cancelled || result.timedOut || result.exitCode !== 0,
    display,
    locations: [{ path: dir }],
  };
}

/**
 * Shows a running command's output in its tool call as it arrives: the last
 * {@link RUN_COMMAND_PROGRESS_TAIL} characters, at most one update per
 * {@link RUN_COMMAND_PROGRESS_INTERVAL_MS} (the first at once). The updates are live only: the
 * final result, which the session records and replays, carries the output.
 */
class OutputProgress {
  readonly #show: (display: readonly ToolDisplay[]) => void;
  #tail = "";
  #shownAt = -Infinity;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  constructor(show: (display: readonly ToolDisplay[]) => void) {
    this.#show = show;
  }

  /** Adds output; shows it now, or once the interval since the last update has passed. */
  add(text: string): void {
    if (this.#stopped || text === "") return;
    const joined = this.#tail + text;
    this.#tail = joined.length > RUN_COMMAND_PROGRESS_TAIL
      ? joined.slice(joined.length - RUN_COMMAND_PROGRESS_TAIL)
      : joined;
    if (this.#timer !== undefined) return;
    const wait = this.#shownAt + RUN_COMMAND_PROGRESS_INTERVAL_MS - Date.now();
    if (wait <= 0) this.#flush();
    else this.#timer = setTimeout(() => this.#flush(), wait);
  }

  /** Stops: no update after this one (the result follows). */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #flush(): void {
    this.#timer = undefined;
    if (this.#stopped) return;
    this.#shownAt = Date.now();
    this.#show([{ type: "text", text: `Running…\n${this.#tail.replace(/\n$/, "")}` }]);
  }
}
