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

/**
 * A logger that writes one line per entry at or above `level`.
 *
 * Fields are written as compact JSON: an `Error` as `name: message`, and the value of any key
 * that names a credential (`authorization`, `x-api-key`, `apiKey`, `token`, `password`, …) as
 * `[redacted]`. URLs in string fields and error messages lose their user name and password and
 * the values of credential-like query parameters (see `redactUrls`).
 *
 * @example Logging to a buffer
 * ```ts
 * import assert from "node:assert/strict";
 * import { createLogger } from "./logger.ts";
 * const lines: string[] = [];
 * createLogger("info", (line) => lines.push(line)).warn("disk low", { free: 1 });
 * assert(lines[0] === 'acp-harness warn: disk low {"free":1}\n');
 * ```
 *
 * @param level The least severe level written
 * @param write Receives each line, newline included
 * @returns The logger
 */
export function createLogger(level: LogLevel, write: (line: string) => void): Logger {
  const limit = LOG_LEVELS.indexOf(level);
  const at = (entry: LogLevel) => (message: string, fields?: Record<string, unknown>): void => {
    let suffix = "";
    if (fields && Object.keys(fields).length > 0) {
      try {
        suffix = " " +
          JSON.stringify(
            fields,
            (key, value) =>
              SECRET_KEY.test(key)
                ? "[redacted]"
                : value instanceof Error
                ? redactUrls(`${value.name}: ${value.message}`)
                : typeof value === "string"
                ? redactUrls(value)
                : value,
          );
      } catch {
        suffix = " [unserializable fields]";
      }
    }
    write(`acp-harness ${entry}: ${message}${suffix}\n`);
  };
  const method = (entry: LogLevel) => LOG_LEVELS.indexOf(entry) > limit ? dropEntry : at(entry);
  return {
    error: method("error"),
    warn: method("warn"),
    info: method("info"),
    debug: method("debug"),
  };
}
