/**
 * The `openai-chat` provider: streaming `/chat/completions` (OpenAI, DeepSeek, Ollama `/v1`,
 * llama.cpp, vLLM, OpenRouter and other compatible servers).
 *
 * @module
 */
import { isRecord, parseJson } from "../util/json.ts";
import type { LlmEventBatch, LlmFinishEvent, LlmStreamDecoder } from "./event_stream.ts";
import { HttpProviderCore, requestOrigin } from "./http_provider_core.ts";
import { streamError, truncatedStreamError, unparsableEventError } from "./provider_errors.ts";
import type {
  FinishReason,
  LlmContentPart,
  LlmEvent,
  LlmMessage,
  LlmProvider,
  LlmRequest,
  LlmStreamOptions,
  LlmToolCall,
  LlmUsage,
} from "./provider.ts";

/** Options for {@link OpenAiChatProvider}. */
export interface OpenAiChatProviderOptions {
  /** Provider id (the part before the slash of a model id). */
  readonly id: string;
  /**
   * API root the path `/chat/completions` is appended to, e.g. `https://api.openai.com/v1`,
   * `https://api.deepseek.com` or `http://127.0.0.1:11434/v1`.
   */
  readonly baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`; never included in error messages. */
  readonly apiKey?: string;
  /** Extra request headers (they override the defaults). */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * The fetch to use.
   *
   * @default globalThis.fetch
   */
  readonly fetch?: typeof fetch;
  /**
   * The body field that carries `LlmRequest.maxOutputTokens`: OpenAI wants
   * `max_completion_tokens`; DeepSeek and local servers take `max_tokens`.
   *
   * @default "max_tokens"
   */
  readonly maxTokensField?: "max_tokens" | "max_completion_tokens";
}

/** What this provider keeps in an assistant message's `providerState`. */
export interface OpenAiChatProviderState {
  /** The streamed `reasoning_content` (or `reasoning`), sent back as `reasoning_content`. */
  readonly reasoningContent: string;
}

interface ToolCallParts {
  id: string;
  name: string;
  arguments: string;
}

/**
 * A provider for OpenAI-compatible `/chat/completions` streaming.
 *
 * Text deltas stream as `text-delta`; `delta.reasoning_content ?? delta.reasoning` streams as
 * `reasoning-delta` (consecutive deltas that arrive in one network chunk are joined into one
 * event) and is kept (as `providerState`) to be sent back as `reasoning_content`,
 * which DeepSeek requires on tool-call turns. Tool-call fragments are joined by `index` and
 * emitted when the stream ends, before the usage (the last non-null `usage` seen) and `finish`.
 * Failures end the stream with `finish: error`; an abort ends it with `finish: aborted`.
 *
 * @example Streaming from a server
 * ```ts ignore
 * import { OpenAiChatProvider } from "./openai_chat.ts";
 * const provider = new OpenAiChatProvider({
 *   id: "deepseek",
 *   baseUrl: "https://api.deepseek.com",
 *   apiKey: "sk-…",
 * });
 * for await (const event of provider.stream({
 *   sessionId: "s", model: "deepseek-flash", system: "Be brief.", tools: [],
 *   messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
 * }, { signal: AbortSignal.timeout(60_000) })) console.log(event);
 * ```
 */
export class OpenAiChatProvider implements LlmProvider {
  /** Provider id. */
  readonly id: string;
  readonly #core: HttpProviderCore;
  readonly #maxTokensField: "max_tokens" | "max_completion_tokens";

  /**
   * Makes a provider for one endpoint.
   *
   * @param options Endpoint, credentials and wire options
   */
  constructor(options: OpenAiChatProviderOptions) {
    this.id = options.id;
    this.#core = new HttpProviderCore({
      ...options,
      path: "/chat/completions",
      wireHeaders: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
    });
    this.#maxTokensField = options.maxTokensField ?? "max_tokens";
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
      () => buildOpenAiChatBody(request, { maxTokensField: this.#maxTokensField }),
      new OpenAiChatDecoder(core.secrets),
      requestOrigin(request),
    );
  }
}

/** An empty record, read in place of a missing `delta` or `function`. */
const NOTHING: Readonly<Record<string, unknown>> = Object.freeze({});

/** Reads the chunks of one `/chat/completions` stream (see {@link OpenAiChatProvider}). */
class OpenAiChatDecoder implements LlmStreamDecoder {
  readonly #secrets: readonly string[];
  readonly #calls = new Map<number, ToolCallParts>();
  #reasoning = "";
  #usage: LlmUsage | undefined;
  #finishReason: string | undefined;
  #refused = false;
  #done = false;

  constructor(secrets: readonly string[]) {
    this.#secrets = secrets;
  }

  event(data: string, event: string, out: LlmEventBatch): undefined | "end" | LlmFinishEvent {
    if (data === "[DONE]") {
      this.#done = true;
      return "end";
    }
    const chunk = parseJson(data);
    if (!isRecord(chunk)) {
      return { type: "finish", reason: "error", error: unparsableEventError("chunk", data) };
    }
    if ((chunk.error !== undefined && chunk.error !== null) || event === "error") {
      const error = streamError(chunk.error ?? chunk, this.#secrets);
      return { type: "finish", reason: "error", error };
    }
    if (isRecord(chunk.usage)) this.#usage = readUsage(chunk.usage) ?? this.#usage;
    const choices = chunk.choices;
    if (!Array.isArray(choices)) return undefined;
    for (const choice of choices) {
      if (!isRecord(choice) || (typeof choice.index === "number" && choice.index !== 0)) continue;
      const delta = isRecord(choice.delta) ? choice.delta : NOTHING;
      const thought = isNonEmptyString(delta.reasoning_content)
        ? delta.reasoning_content
        : isNonEmptyString(delta.reasoning)
        ? delta.reasoning
        : undefined;
      if (thought !== undefined) {
        this.#reasoning += thought;
        out.reasoning(thought);
      }
      if (isNonEmptyString(delta.content)) out.text(delta.content);
      if (isNonEmptyString(delta.refusal)) {
        this.#refused = true;
        out.text(delta.refusal);
      }
      if (Array.isArray(delta.tool_calls)) addToolCallFragments(this.#calls, delta.tool_calls);
      if (isNonEmptyString(choice.finish_reason)) this.#finishReason = choice.finish_reason;
    }
    return undefined;
  }

  end(out: LlmEventBatch): LlmFinishEvent {
    if (!this.#done && this.#finishReason === undefined) {
      const error = truncatedStreamError("The stream ended before [DONE] or a finish_reason");
      return { type: "finish", reason: "error", error };
    }
    const calls = this.#calls;
    const sorted = [...calls.entries()].sort(([a], [b]) => a - b);
    for (const [, call] of sorted) {
      const id = call.id || `call_${crypto.randomUUID()}`;
      out.push({ type: "tool-call", call: { id, name: call.name, arguments: call.arguments } });
    }
    if (this.#reasoning) {
      const state: OpenAiChatProviderState = { reasoningContent: this.#reasoning };
      out.push({ type: "provider-state", state });
    }
    if (this.#usage) out.push({ type: "usage", usage: this.#usage });
    return { type: "finish", reason: finishOf(this.#finishReason, calls.size > 0, this.#refused) };
  }
}

/** Options for {@link buildOpenAiChatBody}. */
export interface OpenAiChatBodyOptions {
  /**
   * The body field for `maxOutputTokens`.
   *
   * @default "max_tokens"
   */
  readonly maxTokensField?: "max_tokens" | "max_completion_tokens";
}

/**
 * Builds the `/chat/completions` request body for an {@link LlmRequest}.
 *
 * The system prompt comes first. A user message with only text is sent as one string (its parts
 * joined), otherwise as parts with images as `image_url` data URLs. Assistant messages carry
 * `tool_calls` and, when their `providerState` holds reasoning from this provider,
 * `reasoning_content`. Tool results are `role: "tool"` messages, which take text only: a result's
 * images are placeholders there (`[image: image/png]`, resource links are text lines too), and,
 * unless the request says the model takes no images, the images follow the run of tool messages
 * in one user message (a text part naming the call, then its images as `image_url` data URLs).
 *
 * @example A body with a tool
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildOpenAiChatBody } from "./openai_chat.ts";
 * const body = buildOpenAiChatBody({
 *   sessionId: "s", model: "m", system: "sys",
 *   messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
 *   tools: [{ name: "read", description: "Read a file", inputSchema: { type: "object" } }],
 *   maxOutputTokens: 100,
 * });
 * assert.deepEqual(body.messages, [
 *   { role: "system", content: "sys" },
 *   { role: "user", content: "hi" },
 * ]);
 * assert.equal(body.max_tokens, 100);
 * ```
 *
 * @param request The request
 * @param options Wire options
 * @returns The JSON body
 */
export function buildOpenAiChatBody(
  request: LlmRequest,
  options: OpenAiChatBodyOptions = {},
): Record<string, unknown> {
  const messages: Record<string, unknown>[] = [];
  if (request.system) messages.push({ role: "system", content: request.system });
  // Images of tool results wait for the end of the run of tool messages they belong to.
  let images: Record<string, unknown>[] = [];
  for (const message of request.messages) {
    if (message.role !== "tool" && images.length > 0) {
      messages.push({ role: "user", content: images });
      images = [];
    }
    messages.push(toWireMessage(message));
    if (message.role === "tool" && request.imageInput !== false) {
      images.push(...toolResultImages(message));
    }
  }
  if (images.length > 0) messages.push({ role: "user", content: images });
  const body: Record<string, unknown> = {
    model: request.model,
    messages,
    stream: true,
    "stream_options": { "include_usage": true },
  };
  if (request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
    }));
  }
  if (request.reasoningEffort !== undefined) body.reasoning_effort = request.reasoningEffort;
  if (request.maxOutputTokens !== undefined) {
    body[options.maxTokensField ?? "max_tokens"] = request.maxOutputTokens;
  }
  return body;
}

function toWireMessage(message: LlmMessage): Record<string, unknown> {
  switch (message.role) {
    case "user":
      return { role: "user", content: userContent(message.content) };
    case "assistant": {
      const calls = message.toolCalls ?? [];
      const wire: Record<string, unknown> = {
        role: "assistant",
        content: message.text === "" && calls.length > 0 ? null : message.text,
      };
      if (calls.length > 0) {
        wire.tool_calls = calls.map((call: LlmToolCall) => ({
          id: call.id,
          type: "function",
          function: { name: call.name, arguments: call.arguments },
        }));
      }
      const reasoning = reasoningOf(message.providerState);
      if (reasoning !== undefined) wire.reasoning_content = reasoning;
      return wire;
    }
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId, content: message.content };
  }
}

function userContent(parts: readonly LlmContentPart[]): string | Record<string, unknown>[] {
  if (parts.every((part) => part.type === "text")) {
    return parts.map((part) => part.type === "text" ? part.text : "").join("");
  }
  return parts.map((part) =>
    part.type === "text"
      ? { type: "text", text: part.text }
      : { type: "image_url", image_url: { url: `data:${part.mimeType};base64,${part.data}` } }
  );
}

function toolResultImages(
  message: Extract<LlmMessage, { role: "tool" }>,
): Record<string, unknown>[] {
  const images = (message.parts ?? []).filter((part) => part.type === "image");
  if (images.length === 0) return [];
  return [
    {
      type: "text",
      text: `The images of the result of tool call ${message.toolCallId} (${message.name}):`,
    },
    ...images.map((image) => ({
      type: "image_url",
      image_url: { url: `data:${image.mimeType};base64,${image.data}` },
    })),
  ];
}

function reasoningOf(state: unknown): string | undefined {
  return isRecord(state) && typeof state.reasoningContent === "string"
    ? state.reasoningContent
    : undefined;
}

function addToolCallFragments(calls: Map<number, ToolCallParts>, fragments: unknown[]): void {
  for (let position = 0; position < fragments.length; position++) {
    const fragment = fragments[position];
    if (!isRecord(fragment)) continue;
    const fn = isRecord(fragment.function) ? fragment.function : NOTHING;
    // Some servers omit `index`; fall back to the matching id, then to the position.
    let index = typeof fragment.index === "number" ? fragment.index : undefined;
    if (index === undefined && isNonEmptyString(fragment.id)) {
      index = [...calls.entries()].find(([, call]) => call.id === fragment.id)?.[0] ??
        calls.size;
    }
    index ??= position;
    let call = calls.get(index);
    if (!call) {
      call = { id: "", name: "", arguments: "" };
      calls.set(index, call);
    }
    if (isNonEmptyString(fragment.id) && call.id === "") call.id = fragment.id;
    if (isNonEmptyString(fn.name) && call.name === "") call.name = fn.name;
    if (typeof fn.arguments === "string") call.arguments += fn.arguments;
    // A few servers send arguments as an already-parsed object.
    else if (isRecord(fn.arguments)) call.arguments += JSON.stringify(fn.arguments);
  }
}

function readUsage(raw: Record<string, unknown>): LlmUsage | undefined {
  const input = raw.prompt_tokens;
  const output = raw.completion_tokens;
  if (typeof input !== "number" || typeof output !== "number") return undefined;
  const prompt = isRecord(raw.prompt_tokens_details) ? raw.prompt_tokens_details : {};
  const completion = isRecord(raw.completion_tokens_details) ? raw.completion_tokens_details : {};
  const cacheRead = [prompt.cached_tokens, raw.prompt_cache_hit_tokens].find(isCount);
  const cacheWrite = [prompt.cache_write_tokens].find(isCount);
  const reasoning = [completion.reasoning_tokens].find(isCount);
  return {
    input,
    output,
    ...(cacheRead === undefined ? {} : { cacheRead }),
    ...(cacheWrite === undefined ? {} : { cacheWrite }),
    ...(reasoning === undefined ? {} : { reasoning }),
  };
}

function finishOf(reason: string | undefined, hasCalls: boolean, refused: boolean): FinishReason {
  switch (reason) {
    case "length":
      return "max-tokens";
    case "content_filter":
      return "refusal";
    case "tool_calls":
    case "function_call":
      return "tool-calls";
    default:
      return hasCalls ? "tool-calls" : refused ? "refusal" : "stop";
  }
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === "string" && value !== "";
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}
