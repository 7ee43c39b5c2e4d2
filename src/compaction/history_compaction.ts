/**
 * What a compaction does to a conversation, as pure functions: where the verbatim tail starts,
 * which old tool results are pruned, the transcript the summary is written from, and applying a
 * recorded compaction (live, and again on restore, with the same result).
 *
 * @module
 */
import type { LlmMessage } from "../llm/provider.ts";

/** How the note of a pruned tool result starts. */
const PRUNED = "[Pruned when the context was compacted";

/** The text a pruned tool result is replaced with. */
export function prunedNote(name: string, chars: number): string {
  return `${PRUNED}: the ${name} result of ${chars} characters. ` +
    "Run the tool again if you need it.]";
}

/** The heading of the user message that carries a summary. */
export const SUMMARY_HEADING =
  "[Summary of the earlier conversation, written when the context was compacted]";

/** Tool results at least this long (characters) are pruned from the older history. */
export const PRUNE_MIN_CHARS = 1_000;

/**
 * The message a summary becomes: a user message, first in the history.
 *
 * @param summary The summary text
 * @returns The message
 */
export function summaryMessage(summary: string): LlmMessage {
  return { role: "user", content: [{ type: "text", text: `${SUMMARY_HEADING}\n\n${summary}` }] };
}

/**
 * Where the verbatim tail can start: at a user message or an assistant message (never between a
 * tool call and its result), never at 0 (nothing would be summarized) nor at the end (the latest
 * step stays verbatim).
 *
 * @param history The conversation
 * @returns The indexes, ascending
 */
export function tailStarts(history: readonly LlmMessage[]): number[] {
  const starts: number[] = [];
  for (let index = 1; index < history.length; index++) {
    if (history[index]?.role !== "tool") starts.push(index);
  }
  return starts;
}

/**
 * Chooses the start of the verbatim tail: the earliest start whose tail fits the budget, else the
 * latest start (only the last step stays), or undefined when there is none.
 *
 * @param history The conversation
 * @param tokensFrom The estimated tokens from an index to the end
 * @param budget Most tokens the tail should hold
 * @returns The index, or undefined
 */
export function chooseTailStart(
  history: readonly LlmMessage[],
  tokensFrom: (index: number) => number,
  budget: number,
): number | undefined {
  const starts = tailStarts(history);
  for (const start of starts) if (tokensFrom(start) <= budget) return start;
  return starts.at(-1);
}

/**
 * The tool calls whose results before `end` are long enough to prune (not pruned already).
 *
 * @param history The conversation
 * @param end Where the verbatim tail starts
 * @returns The calls' ids
 */
export function prunable(history: readonly LlmMessage[], end: number): string[] {
  const ids: string[] = [];
  for (let index = 0; index < end; index++) {
    const message = history[index];
    if (message?.role !== "tool" || message.content.length < PRUNE_MIN_CHARS) continue;
    if (message.content.startsWith(PRUNED)) continue;
    ids.push(message.toolCallId);
  }
  return ids;
}

/** What a recorded compaction says to do. */
export interface CompactionChange {
  /** How many messages from the start the summary replaces. */
  readonly replaced: number;
  /** The summary (none when only tool results were pruned). */
  readonly summary?: string;
  /** The tool calls whose results are cut to a note. */
  readonly pruned?: readonly string[];
}

/**
 * Applies a compaction to a conversation in place.
 *
 * @example Summarizing the first two messages
 * ```ts
 * import assert from "node:assert/strict";
 * import { applyCompaction } from "./history_compaction.ts";
 * import type { LlmMessage } from "../llm/provider.ts";
 * const history: LlmMessage[] = [
 *   { role: "user", content: [{ type: "text", text: "fix the build" }] },
 *   { role: "assistant", text: "Fixed." },
 *   { role: "user", content: [{ type: "text", text: "now the tests" }] },
 * ];
 * applyCompaction(history, { replaced: 2, summary: "The build was fixed." });
 * assert.equal(history.length, 2);
 * assert.equal(history[1]?.role, "user");
 * ```
 *
 * @param history The conversation (changed in place)
 * @param change The compaction
 */
export function applyCompaction(history: LlmMessage[], change: CompactionChange): void {
  if (change.summary !== undefined) {
    const replaced = Math.max(0, Math.min(change.replaced, history.length));
    history.splice(0, replaced, summaryMessage(change.summary));
  }
  if (!change.pruned || change.pruned.length === 0) return;
  const pruned = new Set(change.pruned);
  for (let index = 0; index < history.length; index++) {
    const message = history[index];
    if (message?.role !== "tool" || !pruned.has(message.toolCallId)) continue;
    history[index] = {
      role: "tool",
      toolCallId: message.toolCallId,
      name: message.name,
      content: prunedNote(message.name, message.content.length),
      isError: message.isError,
    };
  }
}

/** Longest text of one tool result or tool call arguments in a transcript. */
const TRANSCRIPT_ITEM_CHARS = 2_000;

/**
 * The conversation as a plain-text transcript for the summarizer: roles as headings, tool calls
 * and results abridged. When it is longer than `maxChars`, the first message (the original
 * request, or an earlier summary) and the latest messages that fit are kept.
 *
 * @param messages The messages to summarize
 * @param maxChars Most characters
 * @returns The transcript
 */
export function transcript(messages: readonly LlmMessage[], maxChars: number): string {
  const items = messages.map(transcriptItem);
  const first = items[0] ?? "";
  let used = first.length;
  let from = items.length;
  while (from > 1 && used + (items[from - 1] as string).length + 2 <= maxChars) {
    from--;
    used += (items[from] as string).length + 2;
  }
  const kept = from > 1
    ? [first, `[${from - 1} earlier messages omitted]`, ...items.slice(from)]
    : items;
  return kept.join("\n\n");
}

function transcriptItem(message: LlmMessage): string {
  switch (message.role) {
    case "user":
      return `## User\n${
        message.content.map((part) => part.type === "text" ? part.text : `[image]`).join("\n")
      }`;
    case "assistant": {
      const calls = (message.toolCalls ?? []).map((call) =>
        `-> ${call.name}(${abridge(call.arguments)})`
      );
      return ["## Assistant", message.text, ...calls].filter((line) => line !== "").join("\n");
    }
    case "tool":
      return `## Result of ${message.name}${message.isError ? " (failed)" : ""}\n${
        abridge(message.content)
      }`;
  }
}

/** Text cut to {@link TRANSCRIPT_ITEM_CHARS}, keeping its start and end. */
function abridge(text: string): string {
  if (text.length <= TRANSCRIPT_ITEM_CHARS) return text;
  const half = TRANSCRIPT_ITEM_CHARS / 2;
  return `${text.slice(0, half)}\n[… ${text.length - TRANSCRIPT_ITEM_CHARS} characters …]\n${
    text.slice(-half)
  }`;
}

/** What a compaction record says, for {@link describeCompaction}. */
export interface CompactionFacts extends CompactionChange {
  readonly reason: "threshold" | "overflow" | "command";
  readonly tokensBefore: number;
  readonly tokensAfter: number;
}

/**
 * One line for the user about a compaction: why, what it did, and the context before and after.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { describeCompaction } from "./history_compaction.ts";
 * assert.equal(
 *   describeCompaction({
 *     reason: "command", replaced: 12, summary: "…", tokensBefore: 9000, tokensAfter: 1200,
 *   }),
 *   "Context compacted (/compact): 12 earlier messages summarized; about 9,000 → 1,200 tokens.",
 * );
 * ```
 *
 * @param facts The compaction
 * @returns The sentence
 */
export function describeCompaction(facts: CompactionFacts): string {
  const why = facts.reason === "command"
    ? "/compact"
    : facts.reason === "overflow"
    ? "the model's context was full"
    : "the context neared its limit";
  const did: string[] = [];
  if (facts.summary !== undefined) did.push(`${facts.replaced} earlier messages summarized`);
  const pruned = facts.pruned?.length ?? 0;
  if (pruned > 0) did.push(`${pruned} old tool result${pruned === 1 ? "" : "s"} pruned`);
  return `Context compacted (${why}): ${did.join(", ")}; about ${
    facts.tokensBefore.toLocaleString("en-US")
  } → ${facts.tokensAfter.toLocaleString("en-US")} tokens.`;
}
