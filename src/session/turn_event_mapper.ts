/**
 * Turns a turn's events into the client's updates and the log's records.
 *
 * @module
 */
import type { TurnEvent } from "../agent/turn_event.ts";
import type { ModelInfo } from "../llm/catalog.ts";
import type { LlmMessage } from "../llm/provider.ts";
import type { Logger } from "../log/logger.ts";
import type { Conversation } from "./conversation.ts";
import type { SessionOutput } from "./outbox.ts";
import { toSessionUpdate } from "./to_session_update.ts";
import type { UsageMeter } from "./usage_meter.ts";
import { toolResultEvent } from "./stored_content.ts";

/** What a {@link TurnEventMapper} is built from. */
export interface TurnEventMapperOptions {
  readonly sessionId: string;
  readonly output: SessionOutput;
  readonly conversation: Pick<Conversation, "noteCommitted">;
  readonly usage: UsageMeter;
  readonly logger: Logger;
  readonly now: () => number;
}

/**
 * Maps each turn event to what the client is sent and what the log records: committed assistant
 * messages and usage are held for the next write, tool calls are recorded as announced and as
 * finished (with what the client was shown), and the tool calls' ends are logged with timings.
 */
export class TurnEventMapper {
  readonly #options: TurnEventMapperOptions;
  /** Tool names by call id, for the results' records. */
  readonly #callNames = new Map<string, string>();
  /** When each announced tool call was announced, by call id, for the logs. */
  readonly #callStarts = new Map<string, number>();

  /** @param options Where records and updates go, and what is logged */
  constructor(options: TurnEventMapperOptions) {
    this.#options = options;
  }

  /**
   * Records and sends one event.
   *
   * @param event The event
   * @param model The model of the turn (for usage)
   * @returns A promise to await before relaying more, when the client is behind
   */
  apply(event: TurnEvent, model: ModelInfo): Promise<void> | undefined {
    switch (event.type) {
      case "history":
        // runTurn appended it to the history already; tool messages are recorded from their
        // final update, which carries what the client was shown.
        this.#committed(event.message, event.messageId, event.thoughtId);
        return undefined;
      case "usage": {
        const report = this.#options.usage.add(event.usage, model);
        this.#options.output.record([report.event], false, "later");
        return report.update ? this.#options.output.send(report.update) : undefined;
      }
      case "tool-call": {
        this.#announced(event);
        // Recorded and announced before the tool runs.
        const sent = this.#options.output.send(toSessionUpdate(event));
        this.#options.output.flush();
        return sent;
      }
      case "tool-call-update":
        if (event.status !== "in_progress") this.#ended(event);
        break;
      case "plan":
        this.#options.output.record([{ type: "plan", entries: event.entries }], false);
        break;
      default:
        break;
    }
    return this.#options.output.send(toSessionUpdate(event));
  }

  #committed(message: LlmMessage, messageId?: string, thoughtId?: string): void {
    this.#options.conversation.noteCommitted(message);
    if (message.role !== "assistant") return;
    this.#options.output.record(
      [{
        type: "assistant",
        text: message.text,
        ...(messageId ? { messageId } : {}),
        ...(thoughtId ? { thoughtId } : {}),
        ...(message.reasoning ? { reasoning: message.reasoning } : {}),
        ...(message.toolCalls ? { toolCalls: message.toolCalls } : {}),
        ...(message.providerState === undefined ? {} : { providerState: message.providerState }),
        ...(message.provider === undefined ? {} : { provider: message.provider }),
      }],
      true,
      "later",
    );
  }

  #announced(event: Extract<TurnEvent, { type: "tool-call" }>): void {
    const { logger, now, sessionId, output } = this.#options;
    this.#callNames.set(event.toolCallId, event.name);
    this.#callStarts.set(event.toolCallId, now());
    logger.debug("tool call", { sessionId, toolCallId: event.toolCallId, tool: event.name });
    output.record([{
      type: "tool_call",
      toolCallId: event.toolCallId,
      name: event.name,
      title: event.title,
      kind: event.kind,
      rawInput: event.rawInput,
      locations: event.locations,
    }], false);
  }

  #ended(event: Extract<TurnEvent, { type: "tool-call-update" }>): void {
    const { logger, now, sessionId, output } = this.#options;
    const startedAt = this.#callStarts.get(event.toolCallId);
    const name = this.#callNames.get(event.toolCallId) ?? "";
    this.#callStarts.delete(event.toolCallId);
    this.#callNames.delete(event.toolCallId);
    logger.info("tool call ended", {
      sessionId,
      toolCallId: event.toolCallId,
      tool: name,
      status: event.status,
      ...(startedAt === undefined ? {} : { ms: now() - startedAt }),
    });
    output.record([toolResultEvent(event, name)], true);
  }
}
