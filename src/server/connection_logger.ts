import { dropEntry, type Logger } from "../log/logger.ts";

/**
 * A logger that adds `fields` to every line it writes (after the line's own fields), such as the
 * connection id of everything a connection and its sessions log.
 *
 * @example Tagging lines with a connection id
 * ```ts
 * import assert from "node:assert/strict";
 * import { createLogger } from "../log/logger.ts";
 * import { withFields } from "./connection_logger.ts";
 * const lines: string[] = [];
 * withFields(createLogger("info", (line) => lines.push(line)), { connectionId: "c1" })
 *   .info("session created", { sessionId: "s" });
 * assert.equal(lines[0], 'acp-harness info: session created {"sessionId":"s","connectionId":"c1"}\n');
 * ```
 *
 * @param logger Where the lines go
 * @param fields Added to every line
 * @returns The tagging logger
 */
export function withFields(logger: Logger, fields: Readonly<Record<string, unknown>>): Logger {
  // A level the logger drops stays a call that does nothing: no fields are merged for it.
  const at = (write: Logger["info"]): Logger["info"] =>
    write === dropEntry
      ? dropEntry
      : (message, own) => write.call(logger, message, own ? { ...own, ...fields } : { ...fields });
  return {
    error: at(logger.error),
    warn: at(logger.warn),
    info: at(logger.info),
    debug: at(logger.debug),
  };
}
