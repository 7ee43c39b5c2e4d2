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

/** A link to a resource a tool result names (an MCP `resource_link`): the model sees it as text. */
export interface LlmResourceLink {
  /** Always `resource_link`. */
  readonly type: "resource_link";
  /** Where the resource is. */
  readonly uri: string;
  /** Its name, for people and the model. */
  readonly name: string;
  /** Its media type, when known. */
  readonly mimeType?: string;
}

/** One piece of a tool result: text, an image (base64) or a resource link. */
export type LlmToolResultPart = LlmContentPart | LlmResourceLink;

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
    /** The result as text; when `parts` is set, their text form (see {@link toolResultText}). */
    readonly content: string;
    /**
     * The result as parts, when it carries images or resource links. Providers that take images
     * in a tool result send these instead of `content`.
     */
    readonly parts?: readonly LlmToolResultPart[];
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
  /** The session's roots, the cwd first (a recording or replay replaces them by placeholders). */
  readonly roots?: readonly string[];
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
  /**
   * Whether the model takes image input. When false, images in tool results are sent as their
   * text placeholders (see {@link toolResultText}) only. @default {true}
   */
  readonly imageInput?: boolean;
}

/**
 * Tool result parts as one text, for wires that take only text: text parts joined by newlines, an
 * image as the placeholder `[image: <mimeType>]`, a resource link as the line
 * `[resource: <name> <uri> (<mimeType>)]` (the media type only when known).
 *
 * @example Flattening a result with an image and a link
 * ```ts
 * import assert from "node:assert/strict";
 * import { toolResultText } from "./provider.ts";
 * assert.equal(
 *   toolResultText([
 *     { type: "text", text: "Screenshot taken" },
 *     { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
 *     { type: "resource_link", uri: "file:///tmp/a.png", name: "a.png" },
 *   ]),
 *   "Screenshot taken\n[image: image/png]\n[resource: a.png file:///tmp/a.png]",
 * );
 * ```
 *
 * @param parts The result's parts
 * @returns Their text form
 */
export function toolResultText(parts: readonly LlmToolResultPart[]): string {
  return parts.map(toolResultPartText).join("\n");
}

/**
 * One tool result part as text (see {@link toolResultText}).
 *
 * @param part The part
 * @returns Its text form
 */
export function toolResultPartText(part: LlmToolResultPart): string {
  switch (part.type) {
    case "text":
      return part.text;
    case "image":
      return `[image: ${part.mimeType}]`;
    case "resource_link":
      return `[resource: ${part.name} ${part.uri}${
        part.mimeType === undefined ? "" : ` (${part.mimeType})`
      }]`;
  }
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
  | "script"
  | "replay-miss";

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
