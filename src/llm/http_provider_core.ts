/**
 * What the two HTTP providers (`openai_chat.ts`, `anthropic_messages.ts`) share: the endpoint,
 * the request headers, the secrets kept out of error messages, the fetch, and the wiring of a
 * request to {@link streamLlmEvents}. Each provider holds one and keeps only its wire format
 * (the request body and the {@link LlmStreamDecoder}).
 *
 * @module
 */
import { type LlmStreamDecoder, streamLlmEvents } from "./event_stream.ts";
import type { PostJsonOptions, RequestOrigin } from "./post_json.ts";
import type { LlmEvent, LlmRequest } from "./provider.ts";

/** Options for {@link HttpProviderCore}. */
export interface HttpProviderCoreOptions {
  /** API root, trailing slashes dropped. */
  readonly baseUrl: string;
  /** Appended to `baseUrl`, e.g. `/chat/completions`. */
  readonly path: string;
  /**
   * The wire format's own headers (its credentials included), sent after
   * `accept: text/event-stream` and before `headers`.
   */
  readonly wireHeaders: Readonly<Record<string, string>>;
  /** The caller's extra headers; they override the others. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Replaced by `[redacted]` wherever it would appear in an error message. */
  readonly apiKey?: string;
  /**
   * The fetch to use.
   *
   * @default globalThis.fetch
   */
  readonly fetch?: typeof fetch;
}

/**
 * The endpoint of an HTTP provider and how it streams one request.
 *
 * @example Streaming through a fake fetch
 * ```ts
 * import assert from "node:assert/strict";
 * import { HttpProviderCore } from "./http_provider_core.ts";
 * let url = "";
 * const core = new HttpProviderCore({
 *   baseUrl: "http://127.0.0.1:9/v1/",
 *   path: "/x",
 *   wireHeaders: {},
 *   fetch: (input) => {
 *     url = String(input);
 *     return Promise.resolve(new Response("data: hi\n\n"));
 *   },
 * });
 * const events = await Array.fromAsync(core.stream(new AbortController().signal, () => ({}), {
 *   event: (data, _event, out) => void out.text(data),
 *   end: () => ({ type: "finish", reason: "stop" }),
 * }));
 * assert.equal(url, "http://127.0.0.1:9/v1/x");
 * assert.deepEqual(events, [
 *   { type: "text-delta", text: "hi" },
 *   { type: "finish", reason: "stop" },
 * ]);
 * ```
 */
export class HttpProviderCore {
  /** Values replaced by `[redacted]` in error messages (the API key, when there is one). */
  readonly secrets: readonly string[];
  readonly #url: string;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #fetch: typeof fetch | undefined;

  /**
   * Fixes the URL and the headers of every request.
   *
   * @param options The endpoint, headers and credentials
   */
  constructor(options: HttpProviderCoreOptions) {
    this.#url = `${options.baseUrl.replace(/\/+$/, "")}${options.path}`;
    this.#headers = {
      accept: "text/event-stream",
      ...options.wireHeaders,
      ...options.headers,
    };
    this.#fetch = options.fetch;
    this.secrets = options.apiKey ? [options.apiKey] : [];
  }

  /**
   * Streams one request (see {@link streamLlmEvents}).
   *
   * @param signal Aborts the request and ends the stream with `finish: aborted`
   * @param body Builds the JSON body; called once, when iteration starts
   * @param decoder Turns the wire format's events into {@link LlmEvent}s
   * @param origin The request's session and roots, for a recording or replaying fetch
   * @returns Events ending with exactly one `finish`
   */
  stream(
    signal: AbortSignal,
    body: () => unknown,
    decoder: LlmStreamDecoder,
    origin?: RequestOrigin,
  ): AsyncIterable<LlmEvent> {
    return streamLlmEvents(signal, (): PostJsonOptions => ({
      url: this.#url,
      body: body(),
      headers: this.#headers,
      signal,
      secrets: this.secrets,
      ...(this.#fetch ? { fetch: this.#fetch } : {}),
      ...(origin ? { origin } : {}),
    }), decoder);
  }
}

/**
 * The origin of a model request (its session and roots), for a recording or replaying fetch.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { requestOrigin } from "./http_provider_core.ts";
 * const request = { sessionId: "s1", roots: ["/w"], model: "m", system: "", messages: [], tools: [] };
 * assert.deepEqual(requestOrigin(request), { sessionId: "s1", roots: ["/w"] });
 * ```
 *
 * @param request The request
 * @returns Its origin
 */
export function requestOrigin(request: LlmRequest): RequestOrigin {
  return request.roots
    ? { sessionId: request.sessionId, roots: request.roots }
    : { sessionId: request.sessionId };
}
