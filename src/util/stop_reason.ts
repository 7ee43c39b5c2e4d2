/**
 * Why a prompt turn ended: the one definition shared by the turn loop, the session, the
 * protocol answer and the store.
 *
 * @module
 */

/**
 * Why a prompt turn ended, as the ACP `session/prompt` answer's `stopReason` says it (the same
 * union as the ACP schema's `StopReason`).
 *
 * - `end_turn`: the model finished its answer.
 * - `max_tokens`: the model hit its output limit.
 * - `max_turn_requests`: the turn hit its limit of model requests.
 * - `refusal`: the model refused to go on.
 * - `cancelled`: the client cancelled the turn.
 */
export type StopReason = "end_turn" | "max_tokens" | "max_turn_requests" | "refusal" | "cancelled";

/**
 * Why a turn ended, as a session log records it: a {@link StopReason}, or `interrupted` (the
 * process ended during the turn; written when the log is repaired) or `error` (the turn failed).
 */
export type RecordedStopReason = StopReason | "interrupted" | "error";
