/**
 * The messages a client sends into a running turn (`_session/steering`), until the model's next
 * step takes them.
 *
 * @module
 */
import type { TurnSteering } from "../agent/run_turn.ts";
import type { LlmContentPart, LlmMessage } from "../llm/provider.ts";
import type { StoredContentPart } from "../store/session_store.ts";
import type { SessionOutput } from "./outbox.ts";
import { SessionStateError } from "./session_state.ts";

/** Most messages waiting for a turn's next step; past it a steer is refused. */
export const STEERING_LIMIT = 16;

/** A message sent into a running turn. */
export interface SteeredMessage {
  /** What the model gets. */
  readonly content: readonly LlmContentPart[];
  /** What the log keeps (images as references to the attachment store). */
  readonly stored: readonly StoredContentPart[];
}

/**
 * One turn's steered messages: {@link push} while the turn runs, {@link take} at each of the
 * turn's step boundaries (each message is recorded as a `user` event and shown to the client as a
 * `user_message_chunk`, where it joined the conversation, as a replay shows it), {@link close}
 * when the turn's loop is over (what no step took is handed back).
 *
 * @example A message pushed, taken at the next step
 * ```ts
 * import assert from "node:assert/strict";
 * import { SteeringInbox } from "./steering_inbox.ts";
 * const recorded: unknown[] = [];
 * const inbox = new SteeringInbox({
 *   record: (events) => void recorded.push(...events),
 *   send: () => undefined,
 *   flush: () => {},
 * });
 * const content = [{ type: "text", text: "use tabs" }] as const;
 * assert.equal(inbox.push({ content, stored: content }), true);
 * assert.equal(inbox.pending, true);
 * assert.deepEqual(inbox.take(), [{ role: "user", content }]);
 * assert.equal(recorded.length, 1);
 * assert.deepEqual(inbox.close(), []);
 * assert.equal(inbox.push({ content, stored: content }), false);
 * ```
 */
export class SteeringInbox implements TurnSteering {
  readonly #output: SessionOutput;
  #waiting: SteeredMessage[] = [];
  #open = true;

  /** @param output Where the taken messages are recorded and shown */
  constructor(output: SessionOutput) {
    this.#output = output;
  }

  /** Whether messages wait for the next step. */
  get pending(): boolean {
    return this.#waiting.length > 0;
  }

  /** Whether {@link STEERING_LIMIT} messages wait already (a {@link push} would be refused). */
  get full(): boolean {
    return this.#waiting.length >= STEERING_LIMIT;
  }

  /**
   * Adds a message for the turn's next step.
   *
   * @param message The message
   * @returns `false` once the turn's loop is over (the message was not taken)
   * @throws {SessionStateError} When {@link STEERING_LIMIT} messages wait already
   */
  push(message: SteeredMessage): boolean {
    if (!this.#open) return false;
    if (this.full) {
      throw new SessionStateError(
        `${STEERING_LIMIT} steered messages already wait for the turn's next step (the limit)`,
      );
    }
    this.#waiting.push(message);
    return true;
  }

  /**
   * Takes the waiting messages: each is recorded and shown to the client now.
   *
   * @returns Them as user messages, in the order they were sent
   */
  take(): readonly LlmMessage[] {
    if (this.#waiting.length === 0) return [];
    const taken = this.#waiting;
    this.#waiting = [];
    const output = this.#output;
    return taken.map(({ content, stored }) => {
      const messageId = crypto.randomUUID();
      output.record([{ type: "user", messageId, content: stored }], false);
      for (const part of content) {
        output.send({
          sessionUpdate: "user_message_chunk",
          messageId,
          content: part.type === "text"
            ? { type: "text", text: part.text }
            : { type: "image", mimeType: part.mimeType, data: part.data },
        });
      }
      return { role: "user", content };
    });
  }

  /**
   * Ends the turn's taking: later {@link push}es are refused.
   *
   * @returns The messages no step took, in order
   */
  close(): SteeredMessage[] {
    this.#open = false;
    const left = this.#waiting;
    this.#waiting = [];
    return left;
  }
}
