/**
 * How much of the model's context window a request fills: the provider's count of the latest
 * request when there is one, an estimate for what came after it, an estimate throughout otherwise.
 *
 * @module
 */
import type { RequestParts } from "../agent/run_turn.ts";
import type { LlmMessage, LlmToolSpec, LlmUsage } from "../llm/provider.ts";

/** Tokens an image is taken to cost when nothing better is known. */
const IMAGE_TOKENS = 1_500;
/** Tokens of framing per message (role, separators). */
const MESSAGE_TOKENS = 4;

/**
 * A rough token count of text: four characters a token, as the providers' own rules of thumb.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { estimateTextTokens } from "./context_meter.ts";
 * assert.equal(estimateTextTokens("12345678"), 2);
 * ```
 *
 * @param text The text
 * @returns Its estimated tokens
 */
export function estimateTextTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * The estimated tokens of one message: its text, reasoning, tool calls, results and images.
 *
 * @param message The message
 * @returns Its estimated tokens
 */
export function estimateMessageTokens(message: LlmMessage): number {
  let tokens = MESSAGE_TOKENS;
  switch (message.role) {
    case "user":
      for (const part of message.content) {
        tokens += part.type === "text" ? estimateTextTokens(part.text) : IMAGE_TOKENS;
      }
      return tokens;
    case "assistant":
      tokens += estimateTextTokens(message.text) + estimateTextTokens(message.reasoning ?? "");
      for (const call of message.toolCalls ?? []) {
        tokens += MESSAGE_TOKENS + estimateTextTokens(call.name) +
          estimateTextTokens(call.arguments);
      }
      return tokens;
    case "tool": {
      const images = message.parts?.filter((part) => part.type === "image").length ?? 0;
      return tokens + estimateTextTokens(message.content) + images * IMAGE_TOKENS;
    }
  }
}

/**
 * Measures what a session's next model request fills of the context window. After a request,
 * the provider's count (input plus output: the reply is in the next request) is the base, and
 * only the messages after the reply are estimated; without one (a restored session, after a
 * compaction) everything is estimated. Message estimates are remembered, so a long history is
 * not estimated again on every request.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ContextMeter } from "./context_meter.ts";
 * const meter = new ContextMeter();
 * const reply = { role: "assistant" as const, text: "done" };
 * const history = [{ role: "user" as const, content: [{ type: "text" as const, text: "hi" }] }, reply];
 * meter.reported(reply, { input: 100, output: 20 });
 * assert.equal(meter.measure({ system: "", tools: [], history }), 120);
 * ```
 */
export class ContextMeter {
  readonly #estimates = new WeakMap<LlmMessage, number>();
  readonly #specs = new WeakMap<readonly LlmToolSpec[], number>();
  #base: { readonly after: LlmMessage; readonly tokens: number } | undefined;

  /**
   * Takes the provider's count of a request.
   *
   * @param reply The message the request produced (the history's last message then)
   * @param usage The request's usage
   */
  reported(reply: LlmMessage, usage: LlmUsage): void {
    this.#base = { after: reply, tokens: usage.input + usage.output };
  }

  /** Forgets the provider's count: the history changed before its end (compaction, clear). */
  reset(): void {
    this.#base = undefined;
  }

  /**
   * The tokens a request with these parts fills.
   *
   * @param parts The system prompt, tools and history
   * @returns Tokens, counted where the provider said, estimated where not
   */
  measure(parts: RequestParts): number {
    const { history } = parts;
    const base = this.#base;
    if (base) {
      // The reported reply is at or near the end: look for it from there.
      for (let index = history.length - 1; index >= 0; index--) {
        if (history[index] !== base.after) continue;
        return base.tokens + this.messages(history, index + 1);
      }
    }
    return this.fixed(parts) + this.messages(history, 0);
  }

  /**
   * The estimated tokens of what every request carries besides the conversation: the system
   * prompt and the tools.
   *
   * @param parts The system prompt and tools
   * @returns Their estimated tokens
   */
  fixed(parts: Omit<RequestParts, "history">): number {
    return estimateTextTokens(parts.system) + this.#toolTokens(parts.tools);
  }

  /**
   * The estimated tokens of the messages from `start` on.
   *
   * @param history The messages
   * @param start The first one counted
   * @param end After the last one counted
   * @returns Their estimated tokens
   */
  messages(history: readonly LlmMessage[], start = 0, end: number = history.length): number {
    let tokens = 0;
    for (let index = start; index < end; index++) {
      const message = history[index] as LlmMessage;
      let estimate = this.#estimates.get(message);
      if (estimate === undefined) {
        estimate = estimateMessageTokens(message);
        this.#estimates.set(message, estimate);
      }
      tokens += estimate;
    }
    return tokens;
  }

  #toolTokens(tools: readonly LlmToolSpec[]): number {
    let tokens = this.#specs.get(tools);
    if (tokens === undefined) {
      tokens = 0;
      for (const tool of tools) {
        tokens += MESSAGE_TOKENS + estimateTextTokens(tool.name) +
          estimateTextTokens(tool.description) +
          estimateTextTokens(JSON.stringify(tool.inputSchema));
      }
      this.#specs.set(tools, tokens);
    }
    return tokens;
  }
}
