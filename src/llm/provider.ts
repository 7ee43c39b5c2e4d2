/**
 * The contract between the agent loop and a language model.
 *
 * A provider turns one {@link LlmRequest} into a stream of {@link LlmEvent}s. Failures never
 * throw across the stream: they end it with a `finish` event whose reason is `error` and which
 * carries a {@link ProviderError}.
 *
 * @module
 */

/** One piece of message content the model sees. */
export type LlmContentPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image"; readonly mimeType: string; readonly data: string };

/** A tool call the model asked for, as it was committed. */
export interface LlmToolCall {
  /** Provider-assigned call id. */
  readonly id: string;
  /** Tool name as the model spelled it. */
  readonly name: string;
  /** Raw JSON arguments as the model produced them (possibly malformed). */
  readonly arguments: string;
}

/** One message of the conversation sent to the model. */
export type LlmMessage =
  | { readonly role: "user"; readonly content: readonly LlmContentPart[] }
  | {
    readonly role: "assistant";
    readonly text: string;
    readonly reasoning?: string;
    readonly toolCalls?: readonly LlmToolCall[];
    /** Opaque provider data sent back unchanged on later requests to the same provider. */
    readonly providerState?: unknown;
    /** Id of the provider that produced the message (and its `providerState`). */
    readonly provider?: string;
  }
  | {
    readonly role: "tool";
    readonly toolCallId: string;
    readonly name: string;
    readonly content: string;
    readonly isError: boolean;
  };

/** A tool the model may call. */
export interface LlmToolSpec {
  /** Tool name. */
  readonly name: string;
  /** What the tool does, for the model. */
  readonly description: string;
  /** JSON schema of the input object. */
  readonly inputSchema: Readonly<Record<string, unknown>>;
}

/** What the agent loop asks a provider for. */
export interface LlmRequest {
  /** The ACP session the request belongs to. */
  readonly sessionId: string;
  /** Model id within the provider. */
  readonly model: string;
  /** System prompt. */
  readonly system: string;
  /** The conversation; read it while streaming, do not keep it (it grows after the step). */
  readonly messages: readonly LlmMessage[];
  /** Tools the model may call. */
  readonly tools: readonly LlmToolSpec[];
  /** Reasoning effort, when the model declares efforts. */
  readonly reasoningEffort?: string;
  /** Most output tokens for this request; the provider's default when absent. */
  readonly maxOutputTokens?: number;
}

/** Token usage of one model request. */
export interface LlmUsage {
  /** Input tokens, including cached ones. */
  readonly input: number;
  /** Output tokens. */
  readonly output: number;
  /** Input tokens read from the cache, when reported. */
  readonly cacheRead?: number;
  /** Input tokens written to the cache, when reported. */
  readonly cacheWrite?: number;
  /** Reasoning tokens (counted in `output`), when reported. */
  readonly reasoning?: number;
}

/** Why a model step ended. */
export type FinishReason = "stop" | "tool-calls" | "max-tokens" | "refusal" | "error" | "aborted";

/** Classification of a provider failure. */
export type ProviderErrorKind =
  | "auth"
  | "quota"
  | "rate-limit"
  | "context-overflow"
  | "bad-request"
  | "server"
  | "transport"
  | "script";

/** Options for {@link ProviderError}. */
export interface ProviderErrorOptions {
  /** What went wrong. */
  readonly kind: ProviderErrorKind;
  /** Whether the same request may succeed when sent again. */
  readonly retryable: boolean;
  /** HTTP status, when there was a response. */
  readonly status?: number;
  /** Server-requested wait before a retry, in milliseconds. */
  readonly retryAfterMs?: number;
  /** The underlying error. */
  readonly cause?: unknown;
}

/**
 * A typed model-request failure.
 *
 * @example Classifying a failure
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderError } from "./provider.ts";
 * const error = new ProviderError("Rate limited", { kind: "rate-limit", retryable: true, status: 429 });
 * assert(error.retryable);
 * ```
 */
export class ProviderError extends Error {
  /** What went wrong. */
  readonly kind: ProviderErrorKind;
  /** Whether the same request may succeed when sent again. */
  readonly retryable: boolean;
  /** HTTP status, when there was a response. */
  readonly status: number | undefined;
  /** Server-requested wait before a retry. */
  readonly retryAfterMs: number | undefined;

  /**
   * Creates the error.
   *
   * @param message Human-readable reason
   * @param options Classification
   */
  constructor(message: string, options: ProviderErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ProviderError";
    this.kind = options.kind;
    this.retryable = options.retryable;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** One event of a model stream. */
export type LlmEvent =
  | { readonly type: "text-delta"; readonly text: string }
  | { readonly type: "reasoning-delta"; readonly text: string }
  | { readonly type: "tool-call"; readonly call: LlmToolCall }
  | { readonly type: "usage"; readonly usage: LlmUsage }
  | { readonly type: "provider-state"; readonly state: unknown }
  | {
    readonly type: "finish";
    readonly reason: FinishReason;
    readonly error?: ProviderError;
  };

/** Options for {@link LlmProvider.stream}. */
export interface LlmStreamOptions {
  /** Aborts the request; the stream then ends with `finish: aborted`. */
  readonly signal: AbortSignal;
  /**
   * Which attempt at the same model step this request is (1 for the first, 2 for the first
   * retry, …). Only logged; providers behave the same for every attempt.
   */
  readonly attempt?: number;
}

/** A language model backend. */
export interface LlmProvider {
  /** Provider id, the part before the slash of a model id. */
  readonly id: string;
  /**
   * Streams one model step.
   *
   * @param request What to send
   * @param options Carries the abort signal
   * @returns Events ending with exactly one `finish`
   */
  stream(request: LlmRequest, options: LlmStreamOptions): AsyncIterable<LlmEvent>;
}
