/**
 * Logs every model request a provider serves: what was asked (sizes only, never content),
 * how long it took and how it ended.
 *
 * @module
 */
import type { Logger } from "../log/logger.ts";
import type {
  LlmEvent,
  LlmProvider,
  LlmRequest,
  LlmStreamOptions,
  LlmUsage,
  ProviderError,
} from "./provider.ts";

/**
 * Wraps a provider so each request is logged.
 *
 * - `debug` `model request`: session id, provider, model, attempt, the number of messages and
 *   tools, the reasoning effort. Never the prompt, the system prompt or any message content.
 * - `debug` `model response`: the same ids plus `ms` (duration), `firstEventMs` (time to the
 *   first streamed event), `finish`, `toolCalls` (count) and `usage` (token counts).
 * - `debug` `model request aborted`: the ids and `ms`.
 *   A failed request's `model response` has `finish: "error"` and the error's `kind`, HTTP
 *   `status`, `retryable` and message (providers redact API keys from their messages); the
 *   session reports the failure at `warn`.
 *
 * Events pass through unchanged and in order.
 *
 * @example Logging a request to the echo model
 * ```ts
 * import assert from "node:assert/strict";
 * import { EchoProvider } from "./echo.ts";
 * import { LoggedProvider } from "./logged_provider.ts";
 * import { createLogger } from "../log/logger.ts";
 * const lines: string[] = [];
 * const provider = new LoggedProvider(new EchoProvider(), createLogger("debug", (l) => lines.push(l)));
 * const request = {
 *   sessionId: "s1", model: "echo", system: "", tools: [],
 *   messages: [{ role: "user" as const, content: [{ type: "text" as const, text: "secret plan" }] }],
 * };
 * await Array.fromAsync(provider.stream(request, { signal: new AbortController().signal }));
 * assert(lines.some((line) => line.includes("model response") && line.includes('"finish":"stop"')));
 * assert(lines.every((line) => !line.includes("secret plan")));
 * ```
 */
export class LoggedProvider implements LlmProvider {
  /** The wrapped provider's id. */
  readonly id: string;
  readonly #provider: LlmProvider;
  readonly #logger: Logger;

  /**
   * Wraps `provider`.
   *
   * @param provider The provider whose requests are logged
   * @param logger Where the lines go
   */
  constructor(provider: LlmProvider, logger: Logger) {
    this.id = provider.id;
    this.#provider = provider;
    this.#logger = logger;
  }

  /**
   * Streams one model step through the wrapped provider, logging it.
   *
   * @param request What to send
   * @param options The signal and the attempt number
   * @returns The wrapped provider's events, unchanged
   */
  async *stream(
    request: LlmRequest,
    options: LlmStreamOptions,
  ): AsyncGenerator<LlmEvent, void, undefined> {
    const logger = this.#logger;
    const ids: Record<string, unknown> = {
      sessionId: request.sessionId,
      provider: this.id,
      model: request.model,
      ...(options.attempt === undefined ? {} : { attempt: options.attempt }),
    };
    logger.debug("model request", {
      ...ids,
      messages: request.messages.length,
      tools: request.tools.length,
      ...(request.reasoningEffort === undefined ? {} : { effort: request.reasoningEffort }),
      ...(request.maxOutputTokens === undefined
        ? {}
        : { maxOutputTokens: request.maxOutputTokens }),
    });
    const started = performance.now();
    const elapsed = (): number => Math.round(performance.now() - started);
    let firstEventMs: number | undefined;
    let toolCalls = 0;
    let usage: LlmUsage | undefined;
    let finished = false;
    try {
      for await (const event of this.#provider.stream(request, options)) {
        firstEventMs ??= elapsed();
        if (event.type === "tool-call") toolCalls++;
        else if (event.type === "usage") usage = event.usage;
        else if (event.type === "finish") {
          finished = true;
          const ms = elapsed();
          if (event.reason === "aborted") logger.debug("model request aborted", { ...ids, ms });
          else if (event.reason === "error") {
            // The session reports failures at warn (with the retry decision); this is the detail.
            logger.debug("model response", {
              ...ids,
              ms,
              firstEventMs,
              finish: "error",
              ...errorFields(event.error),
            });
          } else {
            logger.debug("model response", {
              ...ids,
              ms,
              firstEventMs,
              finish: event.reason,
              toolCalls,
              ...(usage === undefined ? {} : { usage }),
            });
          }
        }
        yield event;
      }
    } finally {
      // The consumer stopped early (or the stream broke its contract): still say how it went.
      if (!finished) logger.debug("model request ended early", { ...ids, ms: elapsed() });
    }
  }
}

function errorFields(error: ProviderError | undefined): Record<string, unknown> {
  if (error === undefined) return { error: "unknown error" };
  return {
    kind: error.kind,
    ...(error.status === undefined ? {} : { status: error.status }),
    retryable: error.retryable,
    ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
    error: error.message,
  };
}
