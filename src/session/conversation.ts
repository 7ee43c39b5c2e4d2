/**
 * A session's conversation as the model sees it.
 *
 * @module
 */
import type { LlmMessage } from "../llm/provider.ts";

/**
 * The messages of a session (the turn appends to them in place) and which providers left state
 * (reasoning, thinking signatures) in them, so a turn knows cheaply whether the history holds
 * state that its provider must not be sent.
 */
export class Conversation {
  /** The messages, oldest first; the turn appends to this array. */
  readonly messages: LlmMessage[];
  readonly #stateProviders = new Set<string>();

  /** @param messages The history so far (a restored session's) */
  constructor(messages: LlmMessage[] = []) {
    this.messages = messages;
    for (const message of messages) this.noteCommitted(message);
  }

  /**
   * Notes a message the turn committed to {@link messages}.
   *
   * @param message The message
   */
  noteCommitted(message: LlmMessage): void {
    if (message.role === "assistant" && message.providerState !== undefined) {
      this.#stateProviders.add(message.provider ?? "");
    }
  }

  /** Empties the conversation (`/clear`): the model starts afresh. */
  clear(): void {
    this.messages.length = 0;
    this.#stateProviders.clear();
  }

  /**
   * Whether another provider than this one left state in the history.
   *
   * @param providerId The provider of the next turn
   */
  hasForeignState(providerId: string): boolean {
    for (const id of this.#stateProviders) if (id !== providerId) return true;
    return false;
  }
}
