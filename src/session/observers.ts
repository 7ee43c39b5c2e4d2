/**
 * Read-only observers of running sessions: a connection of the same tenant attaches to a session
 * another connection of this server owns (`session/load` with `_meta["acp-harness"].observe`),
 * gets its replay, then every update the owner gets, as the owner gets it. Observers never act:
 * they are not asked permission, and a slow one is dropped rather than holding back the owner.
 *
 * @module
 */
import type { SessionUpdate } from "../transport/acp_types.ts";
import { SessionNotFoundError } from "../util/session_not_found_error.ts";
import { MAX_OBSERVERS_PER_SESSION, OBSERVER_BACKLOG } from "./observer_limits.ts";
import { SessionStateError } from "./session_state.ts";
import type { UpdateSink } from "./update_queue.ts";

export { MAX_OBSERVERS_PER_SESSION, OBSERVER_BACKLOG };

/** Why an observer observes no more: its session closed, or it fell too far behind. */
export type DetachReason = "closed" | "behind";

/** How an observer's connection is reached. */
export interface ObserverLink {
  /** Writes one live update to the observer's client; resolves once written. */
  readonly sink: UpdateSink;
  /**
   * Told once when the server drops the observer (not when it detaches itself).
   *
   * @param reason Why
   * @param message The same, in words
   */
  readonly detached: (reason: DetachReason, message: string) => void;
}

/** A session as its observers see it: what the answer to their `session/load` carries. */
export interface ObservedSession<S> {
  /** The owner's session. */
  readonly session: S;
  /** The tenant of the connection that owns it (`undefined` on a server without tenants). */
  readonly tenant: string | undefined;
}

/**
 * The key of an update that a replay also carries (a message by its id, a tool call's
 * announcement and its end), for the seam between replay and live stream; `undefined` for the
 * others, which either carry no record or show the same thing twice harmlessly (a plan, a title).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { replayKey } from "./observers.ts";
 * const text = { type: "text" as const, text: "hi" };
 * assert.equal(
 *   replayKey({ sessionUpdate: "agent_message_chunk", messageId: "m1", content: text }),
 *   "agent_message_chunk:m1",
 * );
 * assert.equal(replayKey({ sessionUpdate: "tool_call_update", toolCallId: "c1" }), undefined);
 * ```
 *
 * @param update The update
 * @returns Its key, or `undefined`
 */
export function replayKey(update: SessionUpdate): string | undefined {
  switch (update.sessionUpdate) {
    case "user_message_chunk":
    case "agent_message_chunk":
    case "agent_thought_chunk":
      return update.messageId ? `${update.sessionUpdate}:${update.messageId}` : undefined;
    case "tool_call":
      return `tool_call:${update.toolCallId}`;
    case "tool_call_update":
      return update.status === "completed" || update.status === "failed"
        ? `tool_end:${update.toolCallId}`
        : undefined;
    default:
      return undefined;
  }
}

/**
 * One observer of one session: buffers the live updates while its replay is written, then
 * writes them (less what the replay carried) and every later one, with a bound on what is
 * unwritten.
 */
export class Observation<S> {
  readonly sessionId: string;
  readonly observed: ObservedSession<S>;
  readonly #link: ObserverLink;
  readonly #leave: (observation: Observation<S>) => void;
  /** Live updates held while the replay is written; `undefined` once live. */
  #held: SessionUpdate[] | undefined = [];
  #unwritten = 0;
  #gone: DetachReason | "left" | undefined;

  /**
   * @param sessionId The session observed
   * @param observed The session and its owner's tenant
   * @param link The observer's connection
   * @param leave Takes the observation off the session's list
   */
  constructor(
    sessionId: string,
    observed: ObservedSession<S>,
    link: ObserverLink,
    leave: (observation: Observation<S>) => void,
  ) {
    this.sessionId = sessionId;
    this.observed = observed;
    this.#link = link;
    this.#leave = leave;
  }

  /** Why it observes no more, once it does not. */
  get gone(): DetachReason | "left" | undefined {
    return this.#gone;
  }

  /**
   * Takes one live update of the session (never waits: the owner's write does not).
   *
   * @param update The update the owner was sent
   */
  deliver(update: SessionUpdate): void {
    if (this.#gone) return;
    if (this.#held) {
      if (this.#held.length >= OBSERVER_BACKLOG) this.#behind();
      else this.#held.push(update);
      return;
    }
    this.#write(update);
  }

  /**
   * Ends the replay: writes the updates held since the observer attached, less those whose
   * record the replay showed already (see {@link replayKey}), and writes every later one at once.
   *
   * @param replayed The keys of the replayed updates
   */
  live(replayed: ReadonlySet<string>): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const update of held) {
      const key = replayKey(update);
      if (key === undefined || !replayed.has(key)) this.#write(update);
    }
  }

  /** Stops observing at the observer's wish (its `session/close`, its connection's end). */
  leave(): void {
    this.#end("left");
  }

  /**
   * Stops observing because the session closed, telling the observer.
   */
  sessionClosed(): void {
    if (this.#gone) return;
    this.#end("closed");
    this.#link.detached(
      "closed",
      `Session ${this.sessionId} was closed by the connection that owns it: it is observed no more`,
    );
  }

  #write(update: SessionUpdate): void {
    if (this.#unwritten >= OBSERVER_BACKLOG) {
      this.#behind();
      return;
    }
    this.#unwritten++;
    const done = (): void => {
      this.#unwritten--;
    };
    this.#link.sink(update).then(done, done);
  }

  #behind(): void {
    this.#end("behind");
    this.#link.detached(
      "behind",
      `This connection fell more than ${OBSERVER_BACKLOG} updates behind session ${this.sessionId}: ` +
        "it observes it no more (load it again to observe it from its log)",
    );
  }

  #end(reason: DetachReason | "left"): void {
    if (this.#gone) return;
    this.#gone = reason;
    this.#held = undefined;
    this.#leave(this);
  }
}

/** A session open on a connection of this server, with its observers. */
interface Owned<S> {
  readonly observed: ObservedSession<S>;
  readonly observers: Set<Observation<S>>;
}

/**
 * The sessions open on the connections of one server, by id, with their observers: shared by
 * every session manager of the server. An owner's session reports its updates here
 * ({@link tap}); observers attach here ({@link attach}).
 *
 * @example An observer sees what the owner is sent
 * ```ts
 * import assert from "node:assert/strict";
 * import { ObserverRegistry } from "./observers.ts";
 * const registry = new ObserverRegistry<string>();
 * const owner: unknown[] = [];
 * const sink = registry.tap("s1", (update) => {
 *   owner.push(update);
 *   return Promise.resolve();
 * });
 * registry.opened("s1", { session: "the session", tenant: undefined });
 * const seen: unknown[] = [];
 * const observation = registry.attach("s1", undefined, {
 *   sink: (update) => {
 *     seen.push(update);
 *     return Promise.resolve();
 *   },
 *   detached: () => {},
 * });
 * observation.live(new Set());
 * await sink({ sessionUpdate: "session_info_update", title: "Fix it" });
 * assert.deepEqual(seen, owner);
 * ```
 */
export class ObserverRegistry<S> {
  readonly #owned = new Map<string, Owned<S>>();

  /**
   * Says that a session is open on a connection of this server.
   *
   * @param sessionId The session
   * @param observed The session and its owner's tenant
   */
  opened(sessionId: string, observed: ObservedSession<S>): void {
    this.#owned.set(sessionId, { observed, observers: new Set() });
  }

  /**
   * Says that a session closed: each of its observers is told and dropped.
   *
   * @param sessionId The session
   */
  closed(sessionId: string): void {
    const owned = this.#owned.get(sessionId);
    if (!owned) return;
    this.#owned.delete(sessionId);
    for (const observation of [...owned.observers]) observation.sessionClosed();
  }

  /**
   * How many observers a session has.
   *
   * @param sessionId The session
   * @returns The count (0 for a session not open here)
   */
  observersOf(sessionId: string): number {
    return this.#owned.get(sessionId)?.observers.size ?? 0;
  }

  /**
   * The update sink of an owner's session: each update goes to the owner's sink and, at once,
   * to the session's observers (whose writes are never waited for).
   *
   * @param sessionId The session
   * @param sink The owner's sink
   * @returns The sink the session writes to
   */
  tap(sessionId: string, sink: UpdateSink): UpdateSink {
    return (update) => {
      const observers = this.#owned.get(sessionId)?.observers;
      if (observers !== undefined && observers.size > 0) {
        for (const observation of observers) observation.deliver(update);
      }
      return sink(update);
    };
  }

  /**
   * Attaches an observer to an open session: from now on it holds the session's live updates
   * until {@link Observation.live} (after its replay).
   *
   * @param sessionId The session
   * @param tenant The observer's tenant: another tenant's session is "not found"
   * @param link The observer's connection
   * @returns The observation
   * @throws {SessionNotFoundError} The session is open here for another tenant
   * @throws {SessionStateError} The session is not open on this server, or has its most observers
   */
  attach(sessionId: string, tenant: string | undefined, link: ObserverLink): Observation<S> {
    const owned = this.#owned.get(sessionId);
    if (owned === undefined) {
      throw new SessionStateError(
        `session ${sessionId} is not open on this server, so there is nothing to observe here: ` +
          "observing works only on the server instance that runs the session. If a connection " +
          "owns it on another instance (a shared store), observe it there (connect to that " +
          "instance); if none owns it, load it without observe to own it",
      );
    }
    if (owned.observed.tenant !== tenant) throw new SessionNotFoundError(sessionId);
    if (owned.observers.size >= MAX_OBSERVERS_PER_SESSION) {
      throw new SessionStateError(
        `session ${sessionId} has ${MAX_OBSERVERS_PER_SESSION} observers, the most it may have`,
      );
    }
    const observation = new Observation(
      sessionId,
      owned.observed,
      link,
      (gone) => owned.observers.delete(gone),
    );
    owned.observers.add(observation);
    return observation;
  }
}
