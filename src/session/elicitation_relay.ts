/**
 * A session's questions to the user from its running tool calls (`ask_user`, an MCP server's
 * elicitation): asked through the client, each logged with its answer and recorded in the
 * session's log, as permission answers are.
 *
 * @module
 */
import type { Logger } from "../log/logger.ts";
import type { StoredEvent } from "../store/session_store.ts";
import type {
  ElicitationAnswer,
  ElicitationAsker,
  RelayedElicitation,
} from "../tools/elicitation.ts";
import { redactUrls } from "../util/redact_urls.ts";

/** The most characters of a question's message kept in its record. */
const MAX_RECORDED_MESSAGE = 4000;

/** The most characters of an accepted form's content (as JSON) kept in its record. */
const MAX_RECORDED_CONTENT = 16 * 1024;

/**
 * How a connection's client takes questions from its sessions' tool calls (asked when a session
 * opens): `ask` is absent when it advertised no elicitation mode, and then nobody can answer.
 */
export interface ClientQuestions {
  /** Asks the client (`elicitation/create`). */
  readonly ask?: ElicitationAsker;
  /** The client shows forms (`elicitation.form`): the session offers `ask_user`. */
  readonly form: boolean;
  /** The client sends the user to URLs (`elicitation.url`): MCP servers may ask that. */
  readonly url: boolean;
  /** Tells the client a URL question's flow is done (`elicitation/complete`). */
  readonly complete?: (elicitationId: string) => void;
}

/** What an {@link ElicitationRelay} is built from. */
export interface ElicitationRelayOptions {
  readonly sessionId: string;
  /** Asks the client. */
  readonly ask: ElicitationAsker;
  /** Where questions and answers are recorded (the session's log, committed with the turn). */
  readonly output: {
    record(events: readonly StoredEvent[], commit: boolean): void;
    /** Hands what the session holds to the store and the client: before the question. */
    flush(): void;
  };
  readonly logger: Logger;
}

/**
 * Relays a running tool call's question to the session's client: what the session holds goes
 * first (the question follows the call's updates), then the question; the answer is logged
 * (one line, with the action and the wait) and recorded as an `elicitation` event.
 *
 * @example A question and its answer, recorded
 * ```ts
 * import assert from "node:assert/strict";
 * import { nullLogger } from "../log/logger.ts";
 * import type { StoredEvent } from "../store/session_store.ts";
 * import { ElicitationRelay } from "./elicitation_relay.ts";
 * const records: StoredEvent[] = [];
 * const relay = new ElicitationRelay({
 *   sessionId: "s1",
 *   ask: () => Promise.resolve({ action: "accept", content: { answer: "yes" } }),
 *   output: { record: (events) => records.push(...events), flush: () => {} },
 *   logger: nullLogger,
 * });
 * const answer = await relay.relay({
 *   tool: "ask_user",
 *   toolCallId: "c1",
 *   request: {
 *     mode: "form",
 *     message: "Proceed?",
 *     requestedSchema: { type: "object", properties: { answer: { type: "string" } } },
 *   },
 *   signal: new AbortController().signal,
 * });
 * assert.deepEqual(answer, { action: "accept", content: { answer: "yes" } });
 * assert.deepEqual(records, [{
 *   type: "elicitation", toolCallId: "c1", tool: "ask_user", mode: "form",
 *   message: "Proceed?", action: "accept", content: { answer: "yes" },
 * }]);
 * ```
 */
export class ElicitationRelay {
  readonly #options: ElicitationRelayOptions;

  /** @param options The asker and where answers go */
  constructor(options: ElicitationRelayOptions) {
    this.#options = options;
  }

  /**
   * Asks the client what a running call asks.
   *
   * @param question The question and the call asking it
   * @returns The answer (`cancel` when the call was cancelled or the question withdrawn)
   */
  async relay(question: RelayedElicitation): Promise<ElicitationAnswer> {
    const { sessionId, ask, output, logger } = this.#options;
    const { request, toolCallId, tool } = question;
    const asked = Date.now();
    let answer: ElicitationAnswer;
    if (question.signal.aborted) answer = { action: "cancel" };
    else {
      output.flush();
      try {
        answer = await ask({ sessionId, toolCallId, request, signal: question.signal });
      } catch (error) {
        // Askers never reject; one that did is a refusal.
        logger.warn("elicitation failed; declining", { sessionId, toolCallId, tool, error });
        answer = { action: "decline" };
      }
    }
    logger.info("elicitation: answered", {
      sessionId,
      toolCallId,
      tool,
      mode: request.mode,
      action: answer.action,
      ms: Date.now() - asked,
    });
    output.record([record(question, answer)], true);
    return answer;
  }
}

/** The log record of a question and its answer. */
function record(question: RelayedElicitation, answer: ElicitationAnswer): StoredEvent {
  const { request } = question;
  const message = request.message.length > MAX_RECORDED_MESSAGE
    ? `${request.message.slice(0, MAX_RECORDED_MESSAGE)}…`
    : request.message;
  let content: { content?: Readonly<Record<string, unknown>>; contentLeftOut?: true } = {};
  if (answer.action === "accept" && answer.content !== undefined) {
    content = JSON.stringify(answer.content).length <= MAX_RECORDED_CONTENT
      ? { content: answer.content }
      : { contentLeftOut: true };
  }
  return {
    type: "elicitation",
    toolCallId: question.toolCallId,
    tool: question.tool,
    mode: request.mode,
    message,
    ...(request.mode === "url" ? { url: redactUrls(request.url) } : {}),
    action: answer.action,
    ...content,
  };
}
