import { redactUrls } from "../util/redact_urls.ts";

/** Log levels, most severe first. */
export type LogLevel = "error" | "warn" | "info" | "debug";

/** All log levels, most severe first. */
export const LOG_LEVELS: readonly LogLevel[] = ["error", "warn", "info", "debug"];

/** Where diagnostics go. In stdio mode this is stderr; never stdout. */
export interface Logger {
  /** Logs a failure. */
  error(message: string, fields?: Record<string, unknown>): void;
  /** Logs a problem that was worked around. */
  warn(message: string, fields?: Record<string, unknown>): void;
  /** Logs a notable event. */
  info(message: string, fields?: Record<string, unknown>): void;
  /** Logs detail for debugging. */
  debug(message: string, fields?: Record<string, unknown>): void;
}

/**
 * What the loggers of this module have for a level they do not write: it does nothing. A wrapper
 * that adds to each entry (`withFields`) can pass it on as it is, so an entry below the level
 * costs no more than the call.
 */
export const dropEntry: (message: string, fields?: Record<string, unknown>) => void = () => {};

/** A logger that drops everything. */
export const nullLogger: Logger = {
  error: dropEntry,
  warn: dropEntry,
  info: dropEntry,
  debug: dropEntry,
};

/**
 * Field names whose values are never written: a value under such a key (at any depth) is
 * replaced by `[redacted]`, so a header map or an options object logged by mistake cannot leak
 * a credential at any level.
 */
const SECRET_KEY =
  /^(?:authorization|proxy-authorization|x-api-key|api[-_]?key|cookie|set-cookie|password|secret|token|access[-_]?token|bearer)$/i;

/** How log lines are written: `text` for people, `json` (one object a line) for machines. */
export type LogFormat = "text" | "json";

/** All log formats. */
export const LOG_FORMATS: readonly LogFormat[] = ["text", "json"];

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  /** The line format. @default {"text"} */
  readonly format?: LogFormat;
  /**
   * Whether a text line starts with its time (ISO 8601, UTC); JSON lines always carry `time`.
   * @default {false}
   */
  readonly timestamps?: boolean;
  /** The clock, in ms since the epoch. @default {Date.now} */
  readonly now?: () => number;
}

/** The keys of a JSON line that fields cannot take (a field of that name is written `_name`). */
const JSON_LINE_KEYS = new Set(["time", "level", "message"]);

/** JSON.stringify's replacer for fields: credentials redacted, errors as `name: message`. */
function fieldValue(key: string, value: unknown): unknown {
  return SECRET_KEY.test(key)
    ? "[redacted]"
    : value instanceof Error
    ? redactUrls(`${value.name}: ${value.message}`)
    : typeof value === "string"
    ? redactUrls(value)
    : value;
}

/**
 * A logger that writes one line per entry at or above `level`.
 *
 * Text lines read `acp-harness <level>: <message> {fields as compact JSON}`, after the time when
 * `timestamps` is set. JSON lines are one object: `time`, `level`, `message`, then the fields.
 * Either way an `Error` is written as `name: message`, and the value of any key that names a
 * credential (`authorization`, `x-api-key`, `apiKey`, `token`, `password`, …) as `[redacted]`;
 * URLs in string fields and error messages lose their user name and password and the values of
 * credential-like query parameters (see `redactUrls`).
 *
 * @example Logging to a buffer
 * ```ts
 * import assert from "node:assert/strict";
 * import { createLogger } from "./logger.ts";
 * const lines: string[] = [];
 * createLogger("info", (line) => lines.push(line)).warn("disk low", { free: 1 });
 * assert(lines[0] === 'acp-harness warn: disk low {"free":1}\n');
 * createLogger("info", (line) => lines.push(line), { format: "json", now: () => 0 })
 *   .info("up", { port: 1 });
 * assert.equal(lines[1], '{"time":"1970-01-01T00:00:00.000Z","level":"info","message":"up","port":1}\n');
 * ```
 *
 * @param level The least severe level written
 * @param write Receives each line, newline included
 * @param options The format and whether text lines carry the time
 * @returns The logger
 */
export function createLogger(
  level: LogLevel,
  write: (line: string) => void,
  options: LoggerOptions = {},
): Logger {
  const limit = LOG_LEVELS.indexOf(level);
  const now = options.now ?? Date.now;
  const json = options.format === "json";
  const timestamps = options.timestamps === true;
  const text = (entry: LogLevel, message: string, fields?: Record<string, unknown>): string => {
    let suffix = "";
    if (fields && Object.keys(fields).length > 0) {
      try {
        suffix = " " + JSON.stringify(fields, fieldValue);
      } catch {
        suffix = " [unserializable fields]";
      }
    }
    const time = timestamps ? `${new Date(now()).toISOString()} ` : "";
    return `${time}acp-harness ${entry}: ${message}${suffix}\n`;
  };
  const object = (entry: LogLevel, message: string, fields?: Record<string, unknown>): string => {
    const line: Record<string, unknown> = {
      time: new Date(now()).toISOString(),
      level: entry,
      message,
    };
    for (const [key, value] of Object.entries(fields ?? {})) {
      line[JSON_LINE_KEYS.has(key) ? `_${key}` : key] = value;
    }
    try {
      return `${JSON.stringify(line, fieldValue)}\n`;
    } catch {
      const bare = { time: line["time"], level: entry, message, unserializableFields: true };
      return `${JSON.stringify(bare)}\n`;
    }
  };
  const format = json ? object : text;
  const at = (entry: LogLevel) => (message: string, fields?: Record<string, unknown>): void =>
    write(format(entry, message, fields));
  const method = (entry: LogLevel) => LOG_LEVELS.indexOf(entry) > limit ? dropEntry : at(entry);
  return {
    error: method("error"),
    warn: method("warn"),
    info: method("info"),
    debug: method("debug"),
  };
}
