/**
 * The error of a PostgreSQL store call that failed in the database or on the way to it (the
 * server is down, a connection broke, a statement failed), with the client's error as `cause`.
 *
 * @module
 */
import { InvalidCursorError, SessionLockedError } from "../session_store.ts";
import {
  CorruptSessionLogError,
  InvalidSessionIdError,
  SessionExistsError,
  SessionLogFailedError,
  SessionNotFoundError,
} from "../store_errors.ts";

/**
 * A store call failed in PostgreSQL: the message says what the store was doing and what the
 * database or the connection reported.
 *
 * @example Telling a database failure from a contract error
 * ```ts
 * import assert from "node:assert/strict";
 * import { PostgresStoreError, toStoreError } from "./postgres_store_error.ts";
 * const error = toStoreError("load session \"a1\"", new Error("connect ECONNREFUSED"));
 * assert.ok(error instanceof PostgresStoreError);
 * assert.equal(error.message, 'Cannot load session "a1": PostgreSQL: connect ECONNREFUSED');
 * ```
 */
export class PostgresStoreError extends Error {
  /**
   * Creates it.
   *
   * @param action What the store was doing ("append to session …")
   * @param cause What the client reported
   */
  constructor(action: string, cause: unknown) {
    super(`Cannot ${action}: PostgreSQL: ${describe(cause)}`, { cause });
    this.name = "PostgresStoreError";
  }
}

/**
 * Passes the store's own errors (and an abort reason) through and wraps anything else, which came
 * from the database or the connection, in a {@link PostgresStoreError}.
 *
 * @param action What the store was doing
 * @param error What was thrown
 * @param signal The call's signal: its reason passes through untouched
 * @returns The error to reject with
 */
export function toStoreError(action: string, error: unknown, signal?: AbortSignal): unknown {
  if (signal?.aborted && error === signal.reason) return error;
  if (
    error instanceof SessionLockedError || error instanceof SessionNotFoundError ||
    error instanceof SessionExistsError || error instanceof InvalidSessionIdError ||
    error instanceof InvalidCursorError || error instanceof CorruptSessionLogError ||
    error instanceof PostgresStoreError || error instanceof SessionLogFailedError ||
    error instanceof RangeError ||
    error instanceof TypeError
  ) {
    return error;
  }
  return new PostgresStoreError(action, error);
}

function describe(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause);
  const code = (cause as { code?: unknown }).code;
  return typeof code === "string" && !cause.message.includes(code)
    ? `${cause.message} (${code})`
    : cause.message;
}
