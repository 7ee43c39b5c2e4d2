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
    for (let at = 0; at < answer.length || at === 0; at += CHUNK_CHARS) {
      if (options.signal.aborted) return yield { type: "finish", reason: "aborted" };
      yield { type: "text-delta", text: answer.slice(at, at + CHUNK_CHARS) };
    }
    const input = estimateTokens(request.system) +
      request.messages.reduce((sum, message) => sum + estimateTokens(messageText(message)), 0);
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

function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
