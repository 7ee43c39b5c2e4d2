/**
 * Keeps a session's conversation within its model's context window: decides when the history is
 * compacted, prunes or summarizes it, records the change and tells the user. It works on the
 * session through the narrow views below ({@link CompactedHistory}, {@link CompactionOutput},
 * {@link CompactionUsage}), so this layer sits under the session that owns those parts.
 *
 * @module
 */
import type { RequestParts } from "../agent/run_turn.ts";
import type { ModelInfo } from "../llm/catalog.ts";
import type { LlmMessage, LlmProvider, LlmUsage, ProviderError } from "../llm/provider.ts";
import type { Logger } from "../log/logger.ts";
import type { SessionUpdate } from "../transport/acp_types.ts";
import type { StoredEvent } from "../store/session_store.ts";
import type { ContextMeter } from "./context_meter.ts";
import {
  applyCompaction,
  chooseTailStart,
  describeCompaction,
  prunable,
  transcript,
} from "./history_compaction.ts";

/** The default share of the context window at which the conversation is compacted. */
export const DEFAULT_COMPACT_THRESHOLD = 0.8;

/** The share of the window the verbatim tail may keep. */
const RETAIN_RATIO = 0.2;
/** Pruning old tool results alone is enough when it brings the context under this share of the threshold. */
const PRUNE_GOAL = 0.7;
/** The share of the window the transcript sent to the summarizer may fill. */
const TRANSCRIPT_RATIO = 0.6;
/** Most tokens of a summary. */
const SUMMARY_TOKENS = 4_096;
/**
 * After a compaction, the next one by threshold waits until the context has grown by this share
 * of the window (so a tail too big to shrink is not summarized again at every step).
 */
const REGROW_RATIO = 0.1;

const SUMMARY_SYSTEM =
  `You compact the context of a coding agent's session. Write a summary that lets the agent carry on the work without the earlier messages. Keep:
- the user's goal and every instruction still in force, in the user's words where they matter;
- decisions made, and why;
- files read, created or changed (with paths) and what changed in them;
- commands run and what came of them;
- errors and open problems;
- what was being done last, and the next steps.
Be concrete and brief: short sections and bullet points. Do not invent anything that is not in the transcript.`;

/** The conversation a compactor rewrites (a session's `Conversation`). */
export interface CompactedHistory {
  /** The messages, as the model sees them; a compaction replaces some in place. */
  readonly messages: LlmMessage[];
}

/** Where a compaction's record and updates go (a session's `SessionOutput`). */
export interface CompactionOutput {
  /**
   * Records events; `commit` makes them durable with the turn, `later` lets them wait for the
   * next write.
   */
  record(events: readonly StoredEvent[], commit: boolean, when?: "soon" | "later"): void;
  /** Sends an update to the client, after everything recorded so far. */
  send(update: SessionUpdate): Promise<void> | undefined;
}

/** Counts the usage of the summarizing request (a session's `UsageMeter`). */
export interface CompactionUsage {
  /**
   * Adds one request's usage.
   *
   * @returns Its record, and the `usage_update` when the context size is known
   */
  add(
    usage: LlmUsage,
    model: ModelInfo,
    inContext?: number,
  ): { readonly event: StoredEvent; readonly update?: SessionUpdate };
}

/** How the user is told about compactions: what the client advertised. */
export interface CompactionNotices {
  /** The client takes `compaction_update` and `compaction_summary_chunk` (`session.compaction`). */
  readonly compaction: boolean;
  /** The client takes `notice` (`session.notices`). */
  readonly notices: boolean;
}

/** What a {@link Compactor} is built from. */
export interface CompactorOptions {
  readonly sessionId: string;
  /** The share of the window at which to compact before a request (0 < threshold ≤ 1). */
  readonly threshold: number;
  readonly conversation: CompactedHistory;
  readonly meter: ContextMeter;
  readonly usage: CompactionUsage;
  readonly output: CompactionOutput;
  readonly notices: CompactionNotices;
  readonly logger: Logger;
}

/** Why a compaction runs. */
export type CompactReason = "threshold" | "overflow" | "command";

/** One compaction's inputs: the model of the turn and what its next request is made of. */
export interface CompactRequest {
  readonly provider: LlmProvider;
  readonly info: ModelInfo;
  readonly system: string;
  readonly tools: RequestParts["tools"];
  readonly reason: CompactReason;
  readonly signal: AbortSignal;
}

/** What came of a compaction. */
export type CompactOutcome = "compacted" | "skipped" | "failed" | "cancelled";

/**
 * Compacts a session's conversation: before a request that would fill more than the threshold of
 * the window, after the provider's "context too long" error, and on `/compact`. Old, long tool
 * results are pruned first (cheap); when that is not enough, the history before a verbatim tail of
 * recent steps is summarized by the session's model into one message. The change is recorded (so
 * a reload or a restart continues from the same history), the context meter is told, and the user
 * sees it as `compaction_update`s, a `notice` or a short agent message, as the client supports.
 * A cancelled or failed compaction leaves the history as it was.
 */
export class Compactor {
  readonly #options: CompactorOptions;
  /** The context after the latest compaction: the threshold waits for it to regrow. */
  #floor = 0;

  /** @param options The conversation, meters, output and settings */
  constructor(options: CompactorOptions) {
    this.#options = options;
  }

  /**
   * Whether the next request needs a compaction first.
   *
   * @param parts What the request is made of
   * @param info The model
   * @returns Whether it passes the threshold
   */
  needed(parts: RequestParts, info: ModelInfo): boolean {
    const window = info.contextWindow;
    if (window === undefined) return false;
    const { meter, threshold } = this.#options;
    const tokens = meter.measure(parts);
    const limit = Math.max(window * threshold, this.#floor + window * REGROW_RATIO);
    // When the system prompt and tools alone pass the threshold, compacting cannot help: only a
    // context error from the provider sets it off then.
    return tokens >= limit && meter.fixed(parts) < window * threshold;
  }

  /**
   * Compacts the conversation.
   *
   * @param request The model, the next request's system prompt and tools, why, and a signal
   * @returns What came of it
   */
  async compact(request: CompactRequest): Promise<CompactOutcome> {
    const { conversation, meter, threshold } = this.#options;
    const history = conversation.messages;
    const parts = { system: request.system, tools: request.tools, history };
    const before = meter.measure(parts);
    const window = request.info.contextWindow ?? before;
    const start = chooseTailStart(
      history,
      (index) => meter.messages(history, index),
      window * RETAIN_RATIO,
    );
    const pruned = prunable(history, start ?? 0);
    if (request.reason === "threshold" && pruned.length > 0) {
      const trial = [...history];
      applyCompaction(trial, { replaced: 0, pruned });
      const after = meter.measure({ ...parts, history: trial });
      if (start === undefined || after <= window * threshold * PRUNE_GOAL) {
        return this.#commit(request, { replaced: 0, pruned }, before, undefined);
      }
    }
    if (start === undefined) {
      if (pruned.length === 0) return "skipped";
      return this.#commit(request, { replaced: 0, pruned }, before, undefined);
    }
    const compactionId = crypto.randomUUID();
    const summary = await this.#summarize(request, history.slice(0, start), window, compactionId);
    if (summary.outcome !== "compacted") return summary.outcome;
    return this.#commit(
      request,
      { replaced: start, summary: summary.text },
      before,
      summary.usage,
      compactionId,
    );
  }

  /** Asks the model for the summary of `messages`, streaming it to clients that show it. */
  async #summarize(
    request: CompactRequest,
    messages: readonly LlmMessage[],
    window: number,
    compactionId: string,
  ): Promise<
    | { outcome: "compacted"; text: string; usage: LlmUsage | undefined }
    | { outcome: "failed" | "cancelled" }
  > {
    const { notices, output, sessionId, logger } = this.#options;
    const { signal, info, provider } = request;
    if (notices.compaction) {
      output.send({ sessionUpdate: "compaction_update", compactionId, status: "in_progress" });
    }
    const maxOutputTokens = Math.min(info.maxOutputTokens ?? SUMMARY_TOKENS, SUMMARY_TOKENS);
    const text = transcript(messages, Math.floor(window * TRANSCRIPT_RATIO * 4));
    let summary = "";
    let usage: LlmUsage | undefined;
    let failure: ProviderError | string | undefined;
    let aborted = false;
    try {
      const events = provider.stream({
        sessionId,
        model: info.model,
        system: SUMMARY_SYSTEM,
        messages: [{
          role: "user",
          content: [{
            type: "text",
            text: `${text}\n\n---\nSummarize the conversation above as instructed.`,
          }],
        }],
        tools: [],
        maxOutputTokens,
        imageInput: false,
      }, { signal });
      for await (const event of events) {
        if (event.type === "text-delta" && event.text) {
          summary += event.text;
          if (notices.compaction && !signal.aborted) {
            output.send({
              sessionUpdate: "compaction_summary_chunk",
              compactionId,
              content: { type: "text", text: event.text },
            });
          }
        } else if (event.type === "usage") usage = event.usage;
        else if (event.type === "finish") {
          if (event.reason === "aborted") aborted = true;
          else if (event.reason === "error") failure = event.error ?? "the model request failed";
          break;
        }
      }
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error);
    }
    if (aborted || signal.aborted) {
      if (notices.compaction) {
        output.send({ sessionUpdate: "compaction_update", compactionId, status: "cancelled" });
      }
      return { outcome: "cancelled" };
    }
    if (failure === undefined && summary.trim() === "") failure = "the model wrote no summary";
    if (failure !== undefined) {
      const message = typeof failure === "string" ? failure : failure.message;
      logger.warn("compaction failed", { sessionId, model: info.id, error: message });
      this.#tellFailure(compactionId, message);
      return { outcome: "failed" };
    }
    return { outcome: "compacted", text: summary.trim(), usage };
  }

  /** Applies and records a compaction, and tells the meter and the user. */
  #commit(
    request: CompactRequest,
    change: { replaced: number; summary?: string; pruned?: readonly string[] },
    before: number,
    usage: LlmUsage | undefined,
    compactionId: string = crypto.randomUUID(),
  ): CompactOutcome {
    const { conversation, meter, output, logger, sessionId } = this.#options;
    const history = conversation.messages;
    applyCompaction(history, change);
    meter.reset();
    const after = meter.measure({ system: request.system, tools: request.tools, history });
    this.#floor = after;
    const event: StoredEvent = {
      type: "compaction",
      compactionId,
      reason: request.reason,
      replaced: change.replaced,
      ...(change.summary === undefined ? {} : { summary: change.summary }),
      ...(change.pruned && change.pruned.length > 0 ? { pruned: change.pruned } : {}),
      tokensBefore: before,
      tokensAfter: after,
    };
    output.record([event], true);
    logger.info("context compacted", {
      sessionId,
      reason: request.reason,
      replaced: change.replaced,
      pruned: change.pruned?.length ?? 0,
      tokensBefore: before,
      tokensAfter: after,
    });
    for (const update of compactionUpdates(event, this.#options.notices, true)) output.send(update);
    const report = this.#options.usage.add(usage ?? { input: 0, output: 0 }, request.info, after);
    output.record([report.event], false, "later");
    if (report.update) output.send(report.update);
    return "compacted";
  }

  #tellFailure(compactionId: string, message: string): void {
    const { notices, output } = this.#options;
    if (notices.compaction) {
      output.send({
        sessionUpdate: "compaction_update",
        compactionId,
        status: "failed",
        error: message,
      });
    } else if (notices.notices) {
      output.send({
        sessionUpdate: "notice",
        severity: "warning",
        title: "Context compaction failed",
        description: message,
      });
    } else {
      output.send({
        sessionUpdate: "agent_message_chunk",
        messageId: crypto.randomUUID(),
        content: { type: "text", text: `Context compaction failed: ${message}\n\n` },
      });
    }
  }
}

/**
 * The updates that show a recorded compaction: a `compaction_update` with the summary to clients
 * that take them; else, live, a `notice` where the client takes notices; else (and on replay,
 * where notices do not belong) a short agent message.
 *
 * @param record The compaction record
 * @param notices What the client takes
 * @param live Whether it happens now (not a replay)
 * @returns The updates
 */
export function compactionUpdates(
  record: Extract<StoredEvent, { type: "compaction" }>,
  notices: CompactionNotices,
  live: boolean,
): SessionUpdate[] {
  const line = describeCompaction(record);
  if (notices.compaction) {
    return [{
      sessionUpdate: "compaction_update",
      compactionId: record.compactionId,
      status: "completed",
      summary: [{ type: "text", text: record.summary ?? line }],
    }];
  }
  if (live && notices.notices) {
    return [{
      sessionUpdate: "notice",
      severity: "info",
      title: "Context compacted",
      description: line,
    }];
  }
  return [{
    sessionUpdate: "agent_message_chunk",
    messageId: `${record.compactionId}-note`,
    content: { type: "text", text: `${line}\n\n` },
  }];
}
