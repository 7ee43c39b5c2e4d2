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

/**
 * An append refused because an earlier write of the session's log failed: what the session
 * recorded since is not in the store, so nothing more is appended after the hole (which would
 * close it up). The session's log is readable again, as stored, once it is loaded anew (`load`,
 * `loadStream`) or its lease is taken again, after the store is back.
 */
export class SessionLogFailedError extends Error {
  /**
   * Creates it.
   *
   * @param id The session
   * @param cause The failure of the earlier write
   */
  constructor(id: string, cause: unknown) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(
      `Cannot append to session "${id}": an earlier write of its log failed (${detail}); ` +
        "load the session again once the store is back",
      { cause },
    );
    this.name = "SessionLogFailedError";
  }
}

/**
 * The store did not confirm a session's records within the commit timeout: the turn that waited
 * for them fails (and the session's later appends are refused, see {@link SessionLogFailedError}).
 */
export class StoreCommitTimeoutError extends Error {
  /**
   * Creates it.
   *
   * @param id The session
   * @param store How the store is named ("PostgreSQL", "JSONL", "memory")
   * @param timeoutMs The bound that passed
   */
  constructor(id: string, store: string, timeoutMs: number) {
    super(
      `Cannot commit session "${id}": the ${store} session store did not confirm its records ` +
        `within ${timeoutMs / 1000} s (store-commit-timeout)`,
    );
    this.name = "StoreCommitTimeoutError";
  }
}
