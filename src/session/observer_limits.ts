/**
 * The limits of read-only observers (`session/load` with `_meta["acp-harness"].observe`), apart
 * from `./observers.ts` so that `initialize` advertises them without loading the session side.
 *
 * @module
 */

/** Most observers one session may have at once; one more is refused. */
export const MAX_OBSERVERS_PER_SESSION = 8;

/**
 * Most updates one observer may have unwritten (its client not reading, or its replay still
 * being written): one more and the observer is dropped, so that it never holds back the owner.
 */
export const OBSERVER_BACKLOG = 1024;

/**
 * The notification that tells an observer it observes a session no more:
 * `{sessionId, reason: "closed" | "behind", message}`.
 */
export const OBSERVER_DETACHED_METHOD = "_acp-harness/observer_detached";
