/**
 * The usage text of `--help`, laid out from {@link SETTINGS}: each setting with a flag is an
 * option row (its flag, help, variable and default), beside the commands.
 *
 * @module
 */
import { type Setting, SETTING_KEYS, SETTINGS } from "./config.ts";

/**
 * How `--help` and the README name a setting's flag: `--max-steps <n>`, `--stream[=<bool>]`.
 *
 * @param setting A setting
 * @returns The flag with its value, or `undefined` for a setting without a flag
 */
export function flagTerm(setting: Setting<unknown>): string | undefined {
  if (setting.flag === undefined) return undefined;
  const placeholder = setting.placeholder ?? "<value>";
  return setting.bare === undefined
    ? `${setting.flag} ${placeholder}`
    : `${setting.flag}[=${placeholder}]`;
}

/**
 * How `--help` and the README show a setting's default: `50`, `off`, `32 MiB`.
 *
 * @param setting A setting
 * @returns The default as text, or `undefined` when there is none to show
 */
export function shownDefault(setting: Setting<unknown>): string | undefined {
  if (setting.shownDefault !== undefined) return setting.shownDefault;
  const value = setting.default;
  if (typeof value === "boolean") return value ? "on" : "off";
  if (typeof value === "string" || typeof value === "number") return String(value);
  return undefined;
}

/** Widest line of the usage text. */
const USAGE_WIDTH = 100;

/**
 * Lays out `[term, description]` rows in two columns: terms indented by two spaces, every
 * description starting in the same column, long descriptions wrapped at word boundaries with
 * continuation lines in that column; a newline in a description starts a new line.
 */
function twoColumns(rows: ReadonlyArray<readonly [string, string]>, column: number): string {
  const lines: string[] = [];
  for (const [term, description] of rows) {
    let line = `  ${term}`.padEnd(column);
    let start = true;
    for (const word of description.replaceAll("\n", " \n ").split(" ")) {
      if (word === "\n" || (!start && line.length + 1 + word.length > USAGE_WIDTH)) {
        lines.push(line);
        line = " ".repeat(column);
        start = true;
        if (word === "\n") continue;
      }
      line += start ? word : ` ${word}`;
      start = false;
    }
    lines.push(line);
  }
  return lines.join("\n");
}

/** The usage row of a setting with a flag (none without): help (env …; default …), the note. */
function optionRows(setting: Setting<unknown>): Array<readonly [string, string]> {
  const term = flagTerm(setting);
  if (term === undefined) return [];
  const shown = shownDefault(setting);
  const where = [
    ...(setting.env ? [`env ${setting.env}`] : []),
    ...(shown ? [`default ${shown}`] : []),
  ];
  const help = where.length ? `${setting.help} (${where.join("; ")})` : setting.help;
  return [[term, setting.note ? `${help}\n${setting.note}` : help]];
}

const OPTIONS: ReadonlyArray<readonly [string, string]> = [
  ...SETTING_KEYS.flatMap((key) => optionRows(SETTINGS[key])),
  ["-h, --help", "Print this help and exit"],
  ["-V, --version", "Print the version and exit"],
];

const COMMANDS: ReadonlyArray<readonly [string, string]> = [
  ["serve", "Serve ACP (the default): on stdio, or with --http over HTTP and WebSocket"],
  ["models [--json]", "List the models and whether each can be used now, then exit"],
  [
    "copy-sessions",
    "Copy sessions and their attachments from one store to another (--from, --to: a JSONL data " +
    "directory or a postgres:// URL); sessions already at the destination are skipped",
  ],
  [
    "export-script SESSION_ID",
    "Print a recorded session's model steps as a script of the scripted model (--script), " +
    "to replay it offline (docs/models.md)",
  ],
  [
    "hash-token",
    "Print the hash of a bearer token (read from the first line of stdin) as a tenants file " +
    "keeps it: sha256:<hex> (docs/http.md#tenants)",
  ],
  [
    "run [PROMPT...]",
    "Run one prompt (the words, or stdin for - or none) and exit: the final message on stdout, " +
    "progress on stderr. Exit 0 end_turn, 1 the turn failed, 2 bad usage or config, 3 refusal, " +
    "4 a limit (max_tokens, max_turn_requests), 130 interrupted",
  ],
];

/** The flags of `acp-harness run` besides the settings (docs/run.md). */
const RUN_OPTIONS: ReadonlyArray<readonly [string, string]> = [
  ["--json", "Print one JSON document (docs/run_result.schema.json) instead of the text"],
  ["--jsonl", "Print every session/update as a line as it happens, then the document"],
  ["--resume <id>", "Continue that session"],
  ["--continue", "Continue the newest session of the working directory"],
  ["--ephemeral", "Keep the session in memory only"],
  ["--file <path>", "Attach a file as a resource link (repeatable)"],
  ["--mcp-config <file>", "A JSON file with mcpServers as in session/new"],
];

const COLUMN = 2 +
  Math.max(...[...OPTIONS, ...COMMANDS, ...RUN_OPTIONS].map(([term]) => term.length)) + 2;

/** The usage text printed by `--help` and after a usage error. */
export const USAGE: string = `Usage: acp-harness [serve] [options]
       acp-harness serve --http [--host <addr>] [--port <n>] [options]
       acp-harness models [--json] [options]
       acp-harness copy-sessions --from <url-or-dir> --to <url-or-dir> [options]
       acp-harness export-script SESSION_ID [options] > script.json
       acp-harness hash-token < token.txt
       acp-harness run [--json|--jsonl] [--resume <id>|--continue|--ephemeral] [options] [PROMPT...]

Serves the Agent Client Protocol (ACP) on stdin/stdout until stdin closes, or with --http over
HTTP and WebSocket until SIGINT or SIGTERM; logs go to stderr.

Commands:
${twoColumns(COMMANDS, COLUMN)}

Options:
${twoColumns(OPTIONS, COLUMN)}

Options of run (besides the options above):
${twoColumns(RUN_OPTIONS, COLUMN)}
`;

/** The text `acp-harness hash-token --help` prints. */
export const HASH_TOKEN_USAGE: string = `Usage: acp-harness hash-token < token.txt

Reads a bearer token from the first line of stdin (surrounding white space dropped) and prints
its hash, sha256:<64 hex digits>, the form a tenants file (--tenants) keeps tokens in. The token
is never taken from the command line, where other users of the machine could read it.

  printf '%s\\n' "$TOKEN" | acp-harness hash-token
`;
