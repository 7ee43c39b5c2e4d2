/**
 * The error for a session id that names no session, shared by the store and the session layer.
 *
 * @module
 */

/**
 * No session has this id: it was never created, or it was deleted. The protocol layer answers
 * it with ACP's "resource not found" error.
 *
 * @example Naming the session
 * ```ts
 * import assert from "node:assert/strict";
 * import { SessionNotFoundError } from "./session_not_found_error.ts";
 * const error = new SessionNotFoundError("s-1");
 * assert.equal(error.message, 'Cannot find session "s-1"');
 * assert.equal(error.sessionId, "s-1");
 * ```
 */
export class SessionNotFoundError extends Error {
  /** The id asked for. */
  readonly sessionId: string;

  /**
   * Creates it.
   *
   * @param sessionId The id asked for
   */
  constructor(sessionId: string) {
    super(`Cannot find session "${sessionId}"`);
    this.name = "SessionNotFoundError";
    this.sessionId = sessionId;
  }
}
