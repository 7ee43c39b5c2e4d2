import type {
  LlmEvent,
  LlmMessage,
  LlmProvider,
  LlmRequest,
  LlmStreamOptions,
} from "./provider.ts";

const CHUNK_CHARS = 64;

/**
 * The offline default model: answers every prompt by echoing it back.
 *
 * Deterministic and network-free. Each step streams one reasoning delta and the answer
 * (`Echo: <prompt text>`) in deltas of at most 64 characters, then an estimated usage.
 *
 * @example Echoing a prompt
 * ```ts
 * import assert from "node:assert/strict";
 * import { EchoProvider } from "./echo.ts";
 * const events = [];
 * for await (const event of new EchoProvider().stream({
 *   sessionId: "s", model: "echo", system: "", tools: [],
 *   messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
 * }, { signal: new AbortController().signal })) events.push(event);
 * assert(events.at(-1)?.type === "finish");
 * ```
 */
export class EchoProvider implements LlmProvider {
  /** Always `echo`. */
  readonly id: string = "echo";
  // A session's history is one array that only grows, so the estimate for it is remembered with
  // the length and last message it covered; the next request adds up only what is new. Any other
  // array (or one that changed in place) is estimated from scratch.
  readonly #estimates = new WeakMap<
    readonly LlmMessage[],
    { length: number; last: LlmMessage | undefined; tokens: number }
  >();

  #historyTokens(messages: readonly LlmMessage[]): number {
    const known = this.#estimates.get(messages);
    const reusable = known !== undefined && known.length <= messages.length &&
      (known.length === 0 || messages[known.length - 1] === known.last);
    let tokens = reusable ? known.tokens : 0;
    for (let index = reusable ? known.length : 0; index < messages.length; index++) {
      tokens += estimateTokens(messageText(messages[index] as LlmMessage));
    }
    this.#estimates.set(messages, { length: messages.length, last: messages.at(-1), tokens });
    return tokens;
  }

  /**
   * Streams the echo of the last user message.
   *
   * @param request The conversation
   * @param options Carries the abort signal
   * @returns Reasoning, text deltas, usage and `finish: stop`
   */
  async *stream(request: LlmRequest, options: LlmStreamOptions): AsyncIterable<LlmEvent> {
    const prompt = lastUserText(request.messages);
    const answer = `Echo: ${prompt}`;
    if (options.signal.aborted) return yield { type: "finish", reason: "aborted" };
    yield {
      type: "reasoning-delta",
      text: `The user sent ${prompt.length} characters; echoing them back.`,
    };
    for (let at = 0; at < answer.length;) {
      if (options.signal.aborted) return yield { type: "finish", reason: "aborted" };
      let end = Math.min(at + CHUNK_CHARS, answer.length);
      // Never split a surrogate pair between two deltas.
      if (end < answer.length && isHighSurrogate(answer.charCodeAt(end - 1))) end--;
      yield { type: "text-delta", text: answer.slice(at, end) };
      at = end;
    }
    const input = estimateTokens(request.system) + this.#historyTokens(request.messages);
    yield { type: "usage", usage: { input, output: estimateTokens(answer) } };
    yield { type: "finish", reason: "stop" };
  }
}

function lastUserText(messages: readonly LlmMessage[]): string {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index];
    if (message?.role === "user") return messageText(message);
  }
  return "";
}

function messageText(message: LlmMessage): string {
  switch (message.role) {
    case "user":
      return message.content
        .map((part) => part.type === "text" ? part.text : `[image ${part.mimeType}]`)
        .join("");
    case "assistant":
      return message.text;
    case "tool":
      return message.content;
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
