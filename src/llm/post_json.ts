/**
 * POSTing a JSON body for the network providers: the request is bound to its signal, never
 * throws, and every failure comes back as a classified {@link ProviderError} (see
 * `provider_errors.ts`). Time limits are the caller's: a signal from `AbortSignal.timeout()`
 * (or any signal) ends the request, its body read included.
 *
 * @module
 */
import { ProviderError } from "./provider.ts";
import { isRecord, parseJson } from "../util/json.ts";
import { httpError, noBodyError, notEventStreamError, transportError } from "./provider_errors.ts";

/**
 * Where a model request comes from, for a fetch that records or replays it (`cassette_fetch.ts`):
 * handed to the fetch in its `init` under {@link REQUEST_ORIGIN}, never sent.
 */
export interface RequestOrigin {
  /** The ACP session the request belongs to. */
  readonly sessionId: string;
  /** The session's roots, the cwd first, when the request knows them. */
  readonly roots?: readonly string[];
}

/** The key of a {@link RequestOrigin} in a fetch's `init`. */
export const REQUEST_ORIGIN: unique symbol = Symbol("acp-harness request origin");

/**
 * The origin a fetch's `init` carries, if any.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { originOf, REQUEST_ORIGIN } from "./post_json.ts";
 * assert.deepEqual(originOf({ [REQUEST_ORIGIN]: { sessionId: "s1" } } as RequestInit), { sessionId: "s1" });
 * assert.equal(originOf({}), undefined);
 * ```
 *
 * @param init The fetch's options
 * @returns The origin
 */
export function originOf(init: RequestInit | undefined): RequestOrigin | undefined {
  return (init as { [REQUEST_ORIGIN]?: RequestOrigin } | undefined)?.[REQUEST_ORIGIN];
}

/** Options for {@link postJson} and {@link openEventStream}. */
export interface PostJsonOptions {
  /** Absolute URL to POST to. */
  readonly url: string;
  /** Sent as JSON. */
  readonly body: unknown;
  /** Extra request headers; `content-type: application/json` is always set. */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * The fetch to use.
   *
   * @default globalThis.fetch
   */
  readonly fetch?: typeof fetch;
  /** Aborts the request and the response body. */
  readonly signal: AbortSignal;
  /** Values (API keys) replaced by `[redacted]` wherever they would appear in an error message. */
  readonly secrets?: readonly string[];
  /** Where the request comes from, for a recording or replaying fetch (never sent). */
  readonly origin?: RequestOrigin;
}

/** What {@link postJson} got: a 2xx response, an abort, or a classified failure. */
export type PostJsonResult =
  | { readonly type: "response"; readonly response: Response }
  | { readonly type: "aborted" }
  | { readonly type: "error"; readonly error: ProviderError };

/**
 * POSTs a JSON body; never throws.
 *
 * A transport failure (fetch threw while `signal` was not aborted) becomes a retryable
 * `transport` error; a non-2xx response is read and classified with {@link httpError}.
 *
 * @example Posting to a fake fetch
 * ```ts
 * import assert from "node:assert/strict";
 * import { postJson } from "./post_json.ts";
 * const result = await postJson({
 *   url: "http://127.0.0.1:9/v1/x",
 *   body: { a: 1 },
 *   signal: new AbortController().signal,
 *   fetch: () => Promise.resolve(Response.json({ error: { message: "Slow down" } }, { status: 429 })),
 * });
 * assert(result.type === "error");
 * assert.equal(result.error.message, "HTTP 429: Slow down");
 * assert.equal(result.error.kind, "rate-limit");
 * ```
 *
 * @param options Where, what and how
 * @returns The response, `aborted`, or the error
 */
export async function postJson(options: PostJsonOptions): Promise<PostJsonResult> {
  const { signal, secrets = [] } = options;
  if (signal.aborted) return { type: "aborted" };
  const fetchImpl = options.fetch ?? fetch;
  let response: Response;
  try {
    const init: RequestInit & { [REQUEST_ORIGIN]?: RequestOrigin } = {
      method: "POST",
      headers: { ...options.headers, "content-type": "application/json" },
      body: JSON.stringify(options.body),
      signal,
    };
    if (options.origin) init[REQUEST_ORIGIN] = options.origin;
    response = await fetchImpl(options.url, init);
  } catch (error) {
    if (signal.aborted) return { type: "aborted" };
    if (error instanceof ProviderError) return { type: "error", error };
    return { type: "error", error: transportError(error, { url: options.url, secrets }) };
  }
  if (signal.aborted) {
    await discardBody(response);
    return { type: "aborted" };
  }
  if (response.ok) return { type: "response", response };
  let body = "";
  try {
    body = await whileNotAborted(response.text(), signal);
  } catch {
    // An unreadable error body still leaves the status to classify.
  }
  if (signal.aborted) return { type: "aborted" };
  return {
    type: "error",
    error: httpError({ status: response.status, body, headers: response.headers, secrets }),
  };
}

/** What {@link openEventStream} got: the body of a 2xx event stream, an abort, or a failure. */
export type OpenEventStreamResult =
  | { readonly type: "body"; readonly body: ReadableStream<Uint8Array> }
  | { readonly type: "aborted" }
  | { readonly type: "error"; readonly error: ProviderError };

/**
 * POSTs (see {@link postJson}) and checks that the answer is an event stream: a 2xx response
 * with a JSON body (some servers answer errors that way) is classified like an error response,
 * and one without a body is a retryable `transport` error. Never throws.
 *
 * @example A 200 that carries an error
 * ```ts
 * import assert from "node:assert/strict";
 * import { openEventStream } from "./post_json.ts";
 * const opened = await openEventStream({
 *   url: "http://127.0.0.1:9/v1/x",
 *   body: {},
 *   signal: new AbortController().signal,
 *   fetch: () => Promise.resolve(Response.json({ error: { message: "Overloaded", code: 529 } })),
 * });
 * assert(opened.type === "error");
 * assert.equal(opened.error.kind, "server");
 * ```
 *
 * @param options Where, what and how
 * @returns The body to read, `aborted`, or the error
 */
export async function openEventStream(options: PostJsonOptions): Promise<OpenEventStreamResult> {
  const posted = await postJson(options);
  if (posted.type !== "response") return posted;
  const { response } = posted;
  const contentType = response.headers.get("content-type") ?? "";
  if (/\bjson\b/i.test(contentType)) return await jsonAnswerError(response, contentType, options);
  if (!response.body) return { type: "error", error: noBodyError(response.status) };
  return { type: "body", body: response.body };
}

/** Classifies the JSON body of a 2xx answer that should have been an event stream. */
async function jsonAnswerError(
  response: Response,
  contentType: string,
  options: PostJsonOptions,
): Promise<Exclude<OpenEventStreamResult, { type: "body" }>> {
  const { signal, secrets = [] } = options;
  let text = "";
  try {
    text = await whileNotAborted(response.text(), signal);
  } catch (error) {
    if (signal.aborted) return { type: "aborted" };
    return { type: "error", error: transportError(error, { url: options.url, secrets }) };
  }
  if (signal.aborted) return { type: "aborted" };
  const payload = parseJson(text);
  if (isRecord(payload) && payload.error !== undefined && payload.error !== null) {
    return { type: "error", error: httpError({ status: response.status, body: text, secrets }) };
  }
  return { type: "error", error: notEventStreamError(response.status, contentType) };
}

/** Resolves with `promise`, or rejects as soon as `signal` aborts. */
function whileNotAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

async function discardBody(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => {});
}
