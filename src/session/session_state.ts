/**
 * A session's lifecycle as one explicit state, and the one function that moves it:
 *
 * ```text
 * creating ─┐
 *           ├─► open ⇄ prompting
 * loading ──┘     │        │
 *    │            ▼        ▼
 *    └────────► closing ◄──┘ ──► closed
 * ```
 *
 * `creating` and `loading` last while the session manager builds a new session or reads a
 * stored one back (a session made by itself, outside a manager, starts `open`); `prompting`
 * while a turn holds the prompt slot; `closing` from a close until its turn has settled and
 * its updates are written. A request that does not fit the state is refused with a
 * {@link SessionStateError} (the client's mistake); a move the table does not allow is a
 * {@link SessionTransitionError} (this server's).
 *
 * @module
 */

/** Where a session is in its life. */
export type SessionState = "creating" | "loading" | "open" | "prompting" | "closing" | "closed";

/** Every state, in lifecycle order. */
export const SESSION_STATES: readonly SessionState[] = [
  "creating",
  "loading",
  "open",
  "prompting",
  "closing",
  "closed",
];

/** The states each state may move to; every other move is refused. */
export const SESSION_TRANSITIONS: Readonly<Record<SessionState, readonly SessionState[]>> = {
  creating: ["open", "closing"],
  loading: ["open", "closing"],
  open: ["prompting", "closing"],
  prompting: ["open", "closing"],
  closing: ["closed"],
  closed: [],
};

/** Thrown when a request does not fit the session's state (maps to -32602). */
export class SessionStateError extends Error {
  /** @param message Says what state the session is in */
  constructor(message: string) {
    super(message);
    this.name = "SessionStateError";
  }
}

/**
 * Thrown when the server tries a move the lifecycle does not allow: a defect of the server, not
 * of the request (the client sees an internal error).
 */
export class SessionTransitionError extends Error {
  /** The state the session was in. */
  readonly from: SessionState;
  /** The state it was to move to. */
  readonly to: SessionState;

  /**
   * @param sessionId The session
   * @param from The state it was in
   * @param to The state it was to move to
   */
  constructor(sessionId: string, from: SessionState, to: SessionState) {
    super(`Cannot move session ${sessionId} from ${from} to ${to}`);
    this.name = "SessionTransitionError";
    this.from = from;
    this.to = to;
  }
}

/**
 * The state a session moves to, when the lifecycle allows the move.
 *
 * @example Allowed and refused moves
 * ```ts
 * import assert from "node:assert/strict";
 * import { nextSessionState, SessionTransitionError } from "./session_state.ts";
 * assert.equal(nextSessionState("s1", "open", "prompting"), "prompting");
 * assert.throws(() => nextSessionState("s1", "closed", "open"), SessionTransitionError);
 * ```
 *
 * @param sessionId The session (for the error)
 * @param from The state it is in
 * @param to The state it is to move to
 * @returns `to`
 * @throws {SessionTransitionError} When the table does not allow the move
 */
export function nextSessionState(
  sessionId: string,
  from: SessionState,
  to: SessionState,
): SessionState {
  if (!SESSION_TRANSITIONS[from].includes(to)) {
    throw new SessionTransitionError(sessionId, from, to);
  }
  return to;
}

/**
 * The state of one session, moved only by {@link nextSessionState}. The session, its prompt
 * slot and its manager share it.
 *
 * @example A session's life
 * ```ts
 * import assert from "node:assert/strict";
 * import { SessionLifecycle } from "./session_state.ts";
 * const lifecycle = new SessionLifecycle("s1", "creating");
 * for (const state of ["open", "prompting", "open", "closing", "closed"] as const) {
 *   lifecycle.to(state);
 * }
 * assert.equal(lifecycle.state, "closed");
 * ```
 */
export class SessionLifecycle {
  /** The session's id. */
  readonly sessionId: string;
  #state: SessionState;

  /**
   * @param sessionId The session
   * @param initial Where it starts: `creating` or `loading` in a manager, else `open`
   */
  constructor(sessionId: string, initial: SessionState = "open") {
    this.sessionId = sessionId;
    this.#state = initial;
  }

  /** The current state. */
  get state(): SessionState {
    return this.#state;
  }

  /** Whether the session is closing or closed: it takes nothing more. */
  get ending(): boolean {
    return this.#state === "closing" || this.#state === "closed";
  }

  /**
   * Moves the session to another state.
   *
   * @param next The state to move to
   * @throws {SessionTransitionError} When the lifecycle does not allow the move
   */
  to(next: SessionState): void {
    this.#state = nextSessionState(this.sessionId, this.#state, next);
  }
}
