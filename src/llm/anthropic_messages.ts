/**
 * The `anthropic-messages` provider: streaming `/v1/messages` (Anthropic, and Anthropic-format
 * endpoints such as DeepSeek's `/anthropic`).
 *
 * @module
 */
import { isRecord, parseJson } from "../util/json.ts";
import type { LlmEventBatch, LlmFinishEvent, LlmStreamDecoder } from "./event_stream.ts";
import { HttpProviderCore, requestOrigin } from "./http_provider_core.ts";
import { streamError, truncatedStreamError, unparsableEventError } from "./provider_errors.ts";
import {
  type FinishReason,
  type LlmContentPart,
  type LlmEvent,
  type LlmMessage,
  type LlmProvider,
  type LlmRequest,
  type LlmStreamOptions,
  type LlmToolResultPart,
  type LlmUsage,
  toolResultPartText,
} from "./provider.ts";

/** The `anthropic-version` header sent unless configured otherwise. */
export const DEFAULT_ANTHROPIC_VERSION = "2023-06-01";

/** `max_tokens` when the request sets no `maxOutputTokens` (the API requires the field). */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 8192;

/** The image types Anthropic takes; other images go as their text placeholder. */
const ANTHROPIC_IMAGE_TYPES: ReadonlySet<string> = new Set([
  "image/jpeg",
  "image/png",
  "image/gif",
  "image/webp",
]);

/**
 * Thinking budgets (`thinking: {type: "enabled", budget_tokens}`) by reasoning effort.
 * `low`, `medium` and `high` are 2048, 8192 and 24576 tokens; `minimal` is the API minimum and
 * `xhigh`/`max` allow 32768. Other efforts (`none` included) send no `thinking` field.
 */
export const ANTHROPIC_THINKING_BUDGETS: Readonly<Record<string, number>> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 24576,
  xhigh: 32768,
  max: 32768,
};

/** The smallest `budget_tokens` the API accepts. */
const MIN_THINKING_BUDGET = 1024;

/** Options for {@link AnthropicMessagesProvider}. */
export interface AnthropicMessagesProviderOptions {
  /** Provider id (the part before the slash of a model id). */
  readonly id: string;
  /**
   * API root the path `/v1/messages` is appended to, e.g. `https://api.anthropic.com` or
   * `https://api.deepseek.com/anthropic`.
   */
  readonly baseUrl: string;
  /** Sent as `x-api-key`; never included in error messages. */
  readonly apiKey?: string;
  /** Extra request headers (they override the defaults), e.g. `anthropic-beta`. */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * The fetch to use.
   *
   * @default globalThis.fetch
   */
  readonly fetch?: typeof fetch;
  /**
   * The `anthropic-version` header.
   *
   * @default "2023-06-01"
   */
  readonly anthropicVersion?: string;
}

/** What this provider keeps in an assistant message's `providerState`. */
export interface AnthropicMessagesProviderState {
  /**
   * The assistant content blocks exactly as received (`thinking` and `redacted_thinking` with
   * their signatures, `text`, `tool_use` with its parsed input), re-sent unchanged.
   */
  readonly content: readonly Record<string, unknown>[];
}

/**
 * A provider for Anthropic Messages streaming.
 *
 * `text_delta` streams as `text-delta` and `thinking_delta` as `reasoning-delta` (consecutive
 * deltas that arrive in one network chunk are joined into one event). Each
 * `tool_use` block is emitted as a `tool-call` when its block stops (an empty input is `{}`).
 * At the end come one `provider-state` (the content blocks as received, so thinking signatures
 * go back unchanged on the next request), one `usage` (input counts cache reads and writes) and
 * `finish`. Failures, including `error` events, end the stream with `finish: error`; an abort
 * ends it with `finish: aborted`.
 *
 * @example Streaming from a server
 * ```ts ignore
 * import { AnthropicMessagesProvider } from "./anthropic_messages.ts";
 * const provider = new AnthropicMessagesProvider({
 *   id: "anthropic",
 *   baseUrl: "https://api.anthropic.com",
 *   apiKey: "sk-ant-…",
 * });
 * for await (const event of provider.stream({
 *   sessionId: "s", model: "claude-haiku-4-5", system: "Be brief.", tools: [],
 *   messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
 * }, { signal: AbortSignal.timeout(60_000) })) console.log(event);
 * ```
 */
export class AnthropicMessagesProvider implements LlmProvider {
  /** Provider id. */
  readonly id: string;
  readonly #core: HttpProviderCore;

  /**
   * Makes a provider for one endpoint.
   *
   * @param options Endpoint, credentials and API version
   */
  constructor(options: AnthropicMessagesProviderOptions) {
    this.id = options.id;
    this.#core = new HttpProviderCore({
      ...options,
      path: "/v1/messages",
      wireHeaders: {
        "anthropic-version": options.anthropicVersion ?? DEFAULT_ANTHROPIC_VERSION,
        ...(options.apiKey ? { "x-api-key": options.apiKey } : {}),
      },
    });
  }

  /**
   * Streams one model step.
   *
   * @param request What to send
   * @param options Carries the abort signal
   * @returns Events ending with exactly one `finish`
   */
  stream(request: LlmRequest, options: LlmStreamOptions): AsyncIterable<LlmEvent> {
    const core = this.#core;
    return core.stream(
      options.signal,
      () => buildAnthropicMessagesBody(request),
      new AnthropicMessagesDecoder(core.secrets),
      requestOrigin(request),
    );
  }
}

/** An empty record, read in place of a missing `message` or `delta`. */
const NOTHING: Readonly<Record<string, unknown>> = Object.freeze({});

/**
 * Reads the events of one `/v1/messages` stream (see {@link AnthropicMessagesProvider}): one
 * method per event type; `ping` and unknown events are ignored.
 */
class AnthropicMessagesDecoder implements LlmStreamDecoder {
  readonly #secrets: readonly string[];
  readonly #blocks = new Map<number, Record<string, unknown>>();
  readonly #partialJson = new Map<number, string>();
  #usage: Record<string, unknown> = {};
  #stopReason: string | undefined;
  #done = false;
  #hasToolCalls = false;

  constructor(secrets: readonly string[]) {
    this.#secrets = secrets;
  }

  event(data: string, event: string, out: LlmEventBatch): undefined | "end" | LlmFinishEvent {
    const payload = parseJson(data);
    if (!isRecord(payload)) {
      return { type: "finish", reason: "error", error: unparsableEventError("event", data) };
    }
    switch (typeof payload.type === "string" ? payload.type : event) {
      case "message_start":
        this.#messageStart(payload);
        break;
      case "content_block_start":
        this.#blockStart(payload, out);
        break;
      case "content_block_delta":
        this.#blockDelta(payload, out);
        break;
      case "content_block_stop":
        this.#blockStop(payload, out);
        break;
      case "message_delta":
        this.#messageDelta(payload);
        break;
      case "message_stop":
        this.#done = true;
        return "end";
      case "error": {
        const error = streamError(payload.error ?? payload, this.#secrets);
        return { type: "finish", reason: "error", error };
      }
    }
    return undefined;
  }

  end(out: LlmEventBatch): LlmFinishEvent {
    if (!this.#done && this.#stopReason === undefined) {
      const error = truncatedStreamError("The stream ended before message_stop");
      return { type: "finish", reason: "error", error };
    }
    const content = [...this.#blocks.entries()].sort(([a], [b]) => a - b).map(([, block]) => block);
    if (content.length > 0) {
      const state: AnthropicMessagesProviderState = { content };
      out.push({ type: "provider-state", state });
    }
    const total = readUsage(this.#usage);
    if (total) out.push({ type: "usage", usage: total });
    return { type: "finish", reason: finishOf(this.#stopReason, this.#hasToolCalls) };
  }

  #messageStart(payload: Record<string, unknown>): void {
    const message = isRecord(payload.message) ? payload.message : NOTHING;
    if (isRecord(message.usage)) this.#usage = { ...this.#usage, ...withoutNulls(message.usage) };
  }

  #blockStart(payload: Record<string, unknown>, out: LlmEventBatch): void {
    const index = indexOf(payload);
    const block = isRecord(payload.content_block) ? payload.content_block : undefined;
    if (index === undefined || !block) return;
    this.#blocks.set(index, block);
    if (block.type === "tool_use") this.#partialJson.set(index, "");
    if (block.type === "text" && isNonEmptyString(block.text)) out.text(block.text);
    if (block.type === "thinking" && isNonEmptyString(block.thinking)) {
      out.reasoning(block.thinking);
    }
  }

  #blockDelta(payload: Record<string, unknown>, out: LlmEventBatch): void {
    const index = indexOf(payload);
    const delta = isRecord(payload.delta) ? payload.delta : NOTHING;
    const block = index === undefined ? undefined : this.#blocks.get(index);
    if (index === undefined || !block) return;
    switch (delta.type) {
      case "text_delta":
        if (!isNonEmptyString(delta.text)) return;
        block.text = stringOf(block.text) + delta.text;
        return out.text(delta.text);
      case "thinking_delta":
        if (!isNonEmptyString(delta.thinking)) return;
        block.thinking = stringOf(block.thinking) + delta.thinking;
        return out.reasoning(delta.thinking);
      case "signature_delta":
        if (typeof delta.signature !== "string") return;
        block.signature = stringOf(block.signature) + delta.signature;
        return;
      case "input_json_delta":
        if (typeof delta.partial_json !== "string") return;
        this.#partialJson.set(index, (this.#partialJson.get(index) ?? "") + delta.partial_json);
        return;
      case "citations_delta":
        if (delta.citation === undefined) return;
        block.citations = [
          ...(Array.isArray(block.citations) ? block.citations : []),
          delta.citation,
        ];
    }
  }

  /** Ends a block: a `tool_use` block's streamed input is parsed and its call emitted. */
  #blockStop(payload: Record<string, unknown>, out: LlmEventBatch): void {
    const index = indexOf(payload);
    const block = index === undefined ? undefined : this.#blocks.get(index);
    if (index === undefined || !block || !this.#partialJson.has(index)) return;
    const raw = this.#partialJson.get(index) ?? "";
    this.#partialJson.delete(index);
    const args = raw.trim() === "" ? "{}" : raw;
    const input = parseJson(args);
    // The API takes the input back only as an object; a malformed one is kept as `{}`.
    block.input = isRecord(input) ? input : {};
    if (block.type !== "tool_use") return;
    this.#hasToolCalls = true;
    out.push({
      type: "tool-call",
      call: { id: stringOf(block.id), name: stringOf(block.name), arguments: args },
    });
  }

  #messageDelta(payload: Record<string, unknown>): void {
    const delta = isRecord(payload.delta) ? payload.delta : NOTHING;
    if (isNonEmptyString(delta.stop_reason)) this.#stopReason = delta.stop_reason;
    if (isRecord(payload.usage)) this.#usage = { ...this.#usage, ...withoutNulls(payload.usage) };
  }
}

/**
 * Builds the `/v1/messages` request body for an {@link LlmRequest}.
 *
 * The system prompt is the top-level `system`. Messages alternate user/assistant: tool results
 * become `tool_result` blocks (with `is_error`) of one user message, merged with any user
 * message that follows; images become base64 sources; empty text blocks are dropped. A tool
 * result with parts is sent as blocks: text and images (JPEG, PNG, GIF, WebP, unless the request
 * says the model takes no images) as themselves, anything else as its text placeholder. An
 * assistant message whose `providerState` holds content blocks from this provider is sent with
 * exactly those blocks (thinking signatures unchanged), otherwise with its text and `tool_use`
 * blocks. `max_tokens` is `maxOutputTokens`, else 8192 (plus the thinking budget when thinking
 * is on); `reasoningEffort` maps to a thinking budget by {@link ANTHROPIC_THINKING_BUDGETS},
 * capped below `maxOutputTokens` when that is set.
 *
 * @example A body with a tool result
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildAnthropicMessagesBody } from "./anthropic_messages.ts";
 * const body = buildAnthropicMessagesBody({
 *   sessionId: "s", model: "m", system: "sys", tools: [],
 *   messages: [
 *     { role: "user", content: [{ type: "text", text: "hi" }] },
 *     { role: "assistant", text: "", toolCalls: [{ id: "t1", name: "read", arguments: "{}" }] },
 *     { role: "tool", toolCallId: "t1", name: "read", content: "data", isError: false },
 *   ],
 * });
 * assert.equal(body.system, "sys");
 * assert.equal(body.max_tokens, 8192);
 * assert.deepEqual(body.messages, [
 *   { role: "user", content: [{ type: "text", text: "hi" }] },
 *   { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "read", input: {} }] },
 *   {
 *     role: "user",
 *     content: [{ type: "tool_result", tool_use_id: "t1", content: "data", is_error: false }],
 *   },
 * ]);
 * ```
 *
 * @param request The request
 * @returns The JSON body
 */
export function buildAnthropicMessagesBody(request: LlmRequest): Record<string, unknown> {
  const { maxTokens, thinking } = thinkingOf(request);
  const body: Record<string, unknown> = {
    model: request.model,
    "max_tokens": maxTokens,
    stream: true,
  };
  if (request.system) body.system = request.system;
  body.messages = wireMessages(request);
  if (request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      input_schema: tool.inputSchema,
    }));
  }
  if (thinking) body.thinking = thinking;
  return body;
}

/** The request's messages as alternating user and assistant messages. */
function wireMessages(request: LlmRequest): { role: "user" | "assistant"; content: unknown[] }[] {
  const messages: { role: "user" | "assistant"; content: unknown[] }[] = [];
  const push = (role: "user" | "assistant", blocks: readonly unknown[]): void => {
    if (blocks.length === 0) return;
    const last = messages.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else messages.push({ role, content: [...blocks] });
  };
  for (const message of request.messages) {
    switch (message.role) {
      case "user":
        push("user", userBlocks(message.content));
        break;
      case "assistant":
        push("assistant", assistantBlocks(message));
        break;
      case "tool": {
        const content = message.parts
          ? toolResultBlocks(message.parts, request.imageInput !== false)
          : message.content;
        push("user", [{
          type: "tool_result",
          tool_use_id: message.toolCallId,
          ...(content.length === 0 ? {} : { content }),
          is_error: message.isError,
        }]);
        break;
      }
    }
  }
  return messages;
}

/** `max_tokens` and the `thinking` field (if any) for the request's reasoning effort. */
function thinkingOf(
  request: LlmRequest,
): { maxTokens: number; thinking?: Record<string, unknown> } {
  const maxTokens = request.maxOutputTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS;
  const budget = request.reasoningEffort === undefined
    ? undefined
    : ANTHROPIC_THINKING_BUDGETS[request.reasoningEffort];
  if (budget === undefined) return { maxTokens };
  // budget_tokens must be below max_tokens.
  const capped = request.maxOutputTokens === undefined
    ? budget
    : Math.min(budget, request.maxOutputTokens - 1);
  if (capped < MIN_THINKING_BUDGET) return { maxTokens };
  return {
    maxTokens: request.maxOutputTokens === undefined
      ? capped + DEFAULT_ANTHROPIC_MAX_TOKENS
      : maxTokens,
    thinking: { type: "enabled", budget_tokens: capped },
  };
}

function userBlocks(parts: readonly LlmContentPart[]): Record<string, unknown>[] {
  return parts.flatMap((part): Record<string, unknown>[] => {
    if (part.type === "text") return part.text === "" ? [] : [{ type: "text", text: part.text }];
    return [{
      type: "image",
      source: { type: "base64", media_type: part.mimeType, data: part.data },
    }];
  });
}

function toolResultBlocks(
  parts: readonly LlmToolResultPart[],
  images: boolean,
): Record<string, unknown>[] {
  return parts.flatMap((part): Record<string, unknown>[] => {
    if (part.type === "image" && images && ANTHROPIC_IMAGE_TYPES.has(part.mimeType)) {
      return [{
        type: "image",
        source: { type: "base64", media_type: part.mimeType, data: part.data },
      }];
    }
    const text = toolResultPartText(part);
    return text === "" ? [] : [{ type: "text", text }];
  });
}

function assistantBlocks(message: Extract<LlmMessage, { role: "assistant" }>): unknown[] {
  const state = message.providerState;
  if (
    isRecord(state) && Array.isArray(state.content) && state.content.length > 0 &&
    state.content.every((block) => isRecord(block) && typeof block.type === "string")
  ) {
    return state.content;
  }
  const blocks: unknown[] = [];
  if (message.text !== "") blocks.push({ type: "text", text: message.text });
  for (const call of message.toolCalls ?? []) {
    const input = parseJson(call.arguments.trim() === "" ? "{}" : call.arguments);
    blocks.push({
      type: "tool_use",
      id: call.id,
      name: call.name,
      input: isRecord(input) ? input : {},
    });
  }
  return blocks;
}

function readUsage(usage: Record<string, unknown>): LlmUsage | undefined {
  const input = countOf(usage.input_tokens);
  const output = countOf(usage.output_tokens);
  if (input === undefined && output === undefined) return undefined;
  const cacheWrite = countOf(usage.cache_creation_input_tokens);
  const cacheRead = countOf(usage.cache_read_input_tokens);
  const details = isRecord(usage.output_tokens_details) ? usage.output_tokens_details : {};
  const reasoning = countOf(details.thinking_tokens);
  return {
    input: (input ?? 0) + (cacheWrite ?? 0) + (cacheRead ?? 0),
    output: output ?? 0,
    ...(cacheRead === undefined ? {} : { cacheRead }),
    ...(cacheWrite === undefined ? {} : { cacheWrite }),
    ...(reasoning === undefined ? {} : { reasoning }),
  };
}

function finishOf(reason: string | undefined, hasToolCalls: boolean): FinishReason {
  switch (reason) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return "max-tokens";
    case "tool_use":
      return "tool-calls";
    case "refusal":
      return "refusal";
    default:
      // end_turn, stop_sequence, pause_turn and unknown reasons.
      return hasToolCalls ? "tool-calls" : "stop";
  }
}

function indexOf(payload: Record<string, unknown>): number | undefined {
  return typeof payload.index === "number" ? payload.index : undefined;
}

function withoutNulls(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== null));
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === "string" && value !== "";
}

function stringOf(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function countOf(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined;
}
