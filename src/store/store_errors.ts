/**
 * Errors of the JSONL session store that callers may catch, besides the contract's
 * `SessionLockedError` and `InvalidCursorError` (in `session_store.ts`).
 *
 * @module
 */

/** A session id that cannot name a file: not 1 to 128 of `A-Z a-z 0-9 _ -`, first alphanumeric. */
export class InvalidSessionIdError extends TypeError {
  /**
   * Creates it.
   *
   * @param id The rejected id
   */
  constructor(id: string) {
    super(`Cannot use session id ${JSON.stringify(id.slice(0, 200))}: expected a UUID-like id`);
    this.name = "InvalidSessionIdError";
  }
}

export { SessionNotFoundError } from "../util/session_not_found_error.ts";

/** `SessionStore.create` for an id that already has a log. */
export class SessionExistsError extends Error {
  /**
   * Creates it.
   *
   * @param id The session
   */
  constructor(id: string) {
    super(`Cannot create session "${id}": it already exists`);
    this.name = "SessionExistsError";
  }
}

/** A session log with a bad line before its last one: not a torn tail, so not silently skipped. */
export class CorruptSessionLogError extends Error {
  /** The log file. */
  readonly path: string;
  /** 1-based line number of the bad line. */
  readonly line: number;
  /** What is wrong, without the path: `line 5 is not valid JSON`. */
  readonly reason: string;

  /**
   * @param path The log file
   * @param line 1-based line number
   * @param detail What is wrong with it
   */
  constructor(path: string, line: number, detail: string) {
    super(`Cannot load session log "${path}": line ${line} ${detail}`);
    this.name = "CorruptSessionLogError";
    this.path = path;
    this.line = line;
    this.reason = `line ${line} ${detail}`;
  }
}
