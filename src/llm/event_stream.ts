/**
 * HTTP helpers shared by the network providers: POST a JSON body, stream the server-sent events
 * of the answer as {@link LlmEvent}s, and turn every failure into a {@link ProviderError} (errors
 * as data).
 *
 * @module
 */
import { type LlmEvent, ProviderError, type ProviderErrorKind } from "./provider.ts";
import { SseDecoder } from "./sse.ts";
import { isRecord, parseJson } from "../util/json.ts";
import { describeNetworkError } from "../util/network_error.ts";
import { redactUrls } from "../util/redact_urls.ts";

/** The `finish` event that ends every provider stream. */
export type LlmFinishEvent = Extract<LlmEvent, { type: "finish" }>;

/** Any provider event but `finish`. */
export type LlmStreamEvent = Exclude<LlmEvent, { type: "finish" }>;

/** Longest piece of a non-JSON error body quoted in an error message. */
const MAX_QUOTED_BODY = 300;

/** What {@link LlmEventBatch.take} returns when there is nothing to take. */
const NO_EVENTS: readonly LlmStreamEvent[] = Object.freeze([]);

/** `TextDecoder.decode` options for a chunk of a longer body. */
const STREAMING: TextDecodeOptions = { stream: true };

/** Options for {@link postJson} and the requests of {@link streamLlmEvents}. */
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
 * import { postJson } from "./event_stream.ts";
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
    response = await fetchImpl(options.url, {
      method: "POST",
      headers: { ...options.headers, "content-type": "application/json" },
      body: JSON.stringify(options.body),
      signal,
    });
  } catch (error) {
    if (signal.aborted) return { type: "aborted" };
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

/** What {@link openBody} got: the body of a 2xx event stream, an abort, or a failure. */
type OpenBodyResult =
  | { readonly type: "body"; readonly body: ReadableStream<Uint8Array> }
  | { readonly type: "aborted" }
  | { readonly type: "error"; readonly error: ProviderError };

/**
 * POSTs and checks that the answer is an event stream: a 2xx response with a JSON body (some
 * servers answer errors that way) is classified like an error response.
 */
async function openBody(options: PostJsonOptions): Promise<OpenBodyResult> {
  const { signal, secrets = [] } = options;
  const posted = await postJson(options);
  if (posted.type !== "response") return posted;
  const { response } = posted;
  const contentType = response.headers.get("content-type") ?? "";
  if (/\bjson\b/i.test(contentType)) {
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
    return {
      type: "error",
      error: new ProviderError(
        `HTTP ${response.status}: expected an event stream, got ${contentType}`,
        { kind: "bad-request", retryable: false, status: response.status },
      ),
    };
  }
  if (!response.body) {
    return {
      type: "error",
      error: new ProviderError(`HTTP ${response.status}: response has no body`, {
        kind: "transport",
        retryable: true,
        status: response.status,
      }),
    };
  }
  return { type: "body", body: response.body };
}

/** What {@link httpError} classifies. */
export interface HttpErrorInput {
  /** The HTTP status. */
  readonly status: number;
  /** The response body as text (JSON or not). */
  readonly body: string;
  /** The response headers, for `Retry-After`. */
  readonly headers?: Headers;
  /** Values replaced by `[redacted]` in the message. */
  readonly secrets?: readonly string[];
  /**
   * The current time, for `Retry-After` dates.
   *
   * @default Date.now()
   */
  readonly now?: number;
}

/**
 * Classifies a non-2xx response.
 *
 * | status | kind | retryable |
 * |---|---|---|
 * | 401, 403 | `auth` | no |
 * | 402; 429 whose body mentions insufficient quota, billing or balance | `quota` | no |
 * | 429 | `rate-limit` | yes |
 * | 400, 413 whose body mentions context length, too many tokens or prompt is too long | `context-overflow` | no |
 * | 408 | `transport` | yes |
 * | other 4xx | `bad-request` | no |
 * | 5xx (529 included) | `server` | yes |
 *
 * The message is `HTTP <status>: <message>`, the message taken from the JSON body
 * (`error.message`, or `error` or `message` when it is a string), else from the start of the
 * body text, else the status text. `retryAfterMs` comes from `retry-after-ms` or
 * `Retry-After` (seconds or an HTTP date).
 *
 * @example A rate limit with Retry-After
 * ```ts
 * import assert from "node:assert/strict";
 * import { httpError } from "./event_stream.ts";
 * const error = httpError({
 *   status: 429,
 *   body: '{"error":{"message":"Rate limit reached","type":"requests"}}',
 *   headers: new Headers({ "retry-after": "2" }),
 * });
 * assert.equal(error.message, "HTTP 429: Rate limit reached");
 * assert.equal(error.kind, "rate-limit");
 * assert.equal(error.retryAfterMs, 2000);
 * ```
 *
 * @param input The status, body and headers
 * @returns The classified error
 */
export function httpError(input: HttpErrorInput): ProviderError {
  const { status, body, secrets = [] } = input;
  const payload = parseJson(body);
  const details = errorDetails(payload);
  const text = details.message ?? quoteBody(body) ?? statusText(status);
  const haystack = `${details.code ?? ""} ${details.type ?? ""} ${details.message ?? body}`;
  // A 2xx carrying an error body is classified by what the body says.
  const effective = status >= 400 ? status : details.status;
  const kind = effective === undefined ? kindOfText(haystack) : kindOfStatus(effective, haystack);
  const retryAfterMs = input.headers ? parseRetryAfter(input.headers, input.now) : undefined;
  return new ProviderError(redact(`HTTP ${status}: ${text}`, secrets), {
    kind,
    retryable: isRetryable(kind),
    status,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

/**
 * Classifies an error reported inside a 2xx stream: an OpenAI-style `data: {"error": …}`
 * payload or an Anthropic `error` event.
 *
 * The kind comes from a numeric HTTP-like `code`/`status` when there is one, else from the
 * `type`/`code` strings (`rate_limit_error`, `overloaded_error`, `insufficient_quota`,
 * `context_length_exceeded`, `authentication_error`, `invalid_request_error`, …). Unknown
 * errors count as retryable `server` failures.
 *
 * @example An Anthropic overload
 * ```ts
 * import assert from "node:assert/strict";
 * import { streamError } from "./event_stream.ts";
 * const error = streamError({ type: "overloaded_error", message: "Overloaded" });
 * assert.equal(error.kind, "server");
 * assert(error.retryable);
 * assert.equal(error.message, "Stream error (overloaded_error): Overloaded");
 * ```
 *
 * @param error The value of the payload's `error` field
 * @param secrets Values replaced by `[redacted]` in the message
 * @returns The classified error
 */
export function streamError(error: unknown, secrets: readonly string[] = []): ProviderError {
  const details = errorDetails({ error });
  const label = details.type ?? details.code;
  const message = details.message ?? (typeof error === "string" ? error : JSON.stringify(error));
  const text = `Stream error${label ? ` (${label})` : ""}: ${message}`;
  const status = details.status;
  const haystack = `${details.code ?? ""} ${details.type ?? ""} ${message}`;
  const kind = status !== undefined ? kindOfStatus(status, haystack) : kindOfText(haystack);
  return new ProviderError(redact(text, secrets), {
    kind,
    retryable: isRetryable(kind),
    ...(status === undefined ? {} : { status }),
  });
}

/** Options for {@link transportError}. */
export interface TransportErrorOptions {
  /** The URL that could not be reached (named in the message). */
  readonly url?: string;
  /** Values replaced by `[redacted]` in the message. */
  readonly secrets?: readonly string[];
}

/**
 * A retryable `transport` error for a request that failed without a response (or whose body
 * could not be read).
 *
 * @example Naming the endpoint
 * ```ts
 * import assert from "node:assert/strict";
 * import { transportError } from "./event_stream.ts";
 * const error = transportError(new TypeError("connection refused"), {
 *   url: "http://127.0.0.1:9/v1/chat/completions",
 * });
 * assert.equal(
 *   error.message,
 *   "Cannot reach http://127.0.0.1:9/v1/chat/completions: connection refused",
 * );
 * assert(error.retryable);
 * ```
 *
 * @param cause What fetch (or the body read) threw
 * @param options The URL and the secrets to redact
 * @returns The error
 */
export function transportError(cause: unknown, options: TransportErrorOptions = {}): ProviderError {
  const reason = describeNetworkError(cause);
  const where = options.url === undefined ? "" : ` ${safeUrl(options.url)}`;
  return new ProviderError(redact(`Cannot reach${where}: ${reason}`, options.secrets ?? []), {
    kind: "transport",
    retryable: true,
    cause,
  });
}

/**
 * Reads the server's requested wait from `retry-after-ms` (milliseconds, sent by OpenAI) or
 * `Retry-After` (seconds or an HTTP date).
 *
 * @example Seconds and dates
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseRetryAfter } from "./event_stream.ts";
 * assert.equal(parseRetryAfter(new Headers({ "retry-after": "1.5" })), 1500);
 * const now = Date.parse("Wed, 21 Oct 2026 07:28:00 GMT");
 * const headers = new Headers({ "retry-after": "Wed, 21 Oct 2026 07:28:30 GMT" });
 * assert.equal(parseRetryAfter(headers, now), 30_000);
 * assert.equal(parseRetryAfter(new Headers()), undefined);
 * ```
 *
 * @param headers Response headers
 * @param now The current time in ms since the epoch
 * @returns Milliseconds to wait (never negative), or `undefined` when not given or unreadable
 */
export function parseRetryAfter(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = headers.get("retry-after-ms")?.trim();
  if (ms && /^\d+(\.\d+)?$/.test(ms)) return Math.round(Number(ms));
  const value = headers.get("retry-after")?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  // Only an HTTP date (it has a weekday and month name); Date.parse reads "-5" as a year.
  const date = /[a-z]/i.test(value) ? Date.parse(value) : Number.NaN;
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * Collects the events of one network chunk for {@link streamLlmEvents}, in order. Consecutive
 * text deltas are joined into one `text-delta` event (and reasoning deltas into one
 * `reasoning-delta`), so a chunk carrying many small deltas costs one event, not one per delta.
 *
 * @example Joining deltas
 * ```ts
 * import assert from "node:assert/strict";
 * import { LlmEventBatch } from "./event_stream.ts";
 * const batch = new LlmEventBatch();
 * batch.text("Hel");
 * batch.text("lo");
 * batch.reasoning("hmm");
 * batch.push({ type: "usage", usage: { input: 1, output: 2 } });
 * assert.deepEqual(batch.take(), [
 *   { type: "text-delta", text: "Hello" },
 *   { type: "reasoning-delta", text: "hmm" },
 *   { type: "usage", usage: { input: 1, output: 2 } },
 * ]);
 * assert.deepEqual(batch.take(), []);
 * ```
 */
export class LlmEventBatch {
  #events: LlmStreamEvent[] = [];
  /** The kind of the delta text being joined, if any. */
  #kind: "text-delta" | "reasoning-delta" | undefined;
  #text = "";

  /**
   * Adds streamed answer text (joined with the text added just before it).
   *
   * @param text The delta
   */
  text(text: string): void {
    if (this.#kind !== "text-delta") {
      this.#flush();
      this.#kind = "text-delta";
    }
    this.#text += text;
  }

  /**
   * Adds streamed reasoning (joined with the reasoning added just before it).
   *
   * @param text The delta
   */
  reasoning(text: string): void {
    if (this.#kind !== "reasoning-delta") {
      this.#flush();
      this.#kind = "reasoning-delta";
    }
    this.#text += text;
  }

  /**
   * Adds an event after everything added so far.
   *
   * @param event Any event but `finish`
   */
  push(event: LlmStreamEvent): void {
    if (event.type === "text-delta") return this.text(event.text);
    if (event.type === "reasoning-delta") return this.reasoning(event.text);
    this.#flush();
    this.#events.push(event);
  }

  /**
   * Takes the events added since the last call.
   *
   * @returns The events, in order
   */
  take(): readonly LlmStreamEvent[] {
    this.#flush();
    const events = this.#events;
    if (events.length === 0) return NO_EVENTS;
    this.#events = [];
    return events;
  }

  #flush(): void {
    const kind = this.#kind;
    if (kind === undefined) return;
    if (this.#text !== "") this.#events.push({ type: kind, text: this.#text });
    this.#kind = undefined;
    this.#text = "";
  }
}

/**
 * Turns one provider's server-sent events into {@link LlmEvent}s for {@link streamLlmEvents}.
 * It may throw: a {@link ProviderError} ends the stream with it, anything else with a
 * `transport` error.
 */
export interface LlmStreamDecoder {
  /**
   * Reads one server-sent event.
   *
   * @param data The event's data
   * @param event The event's name (`message` when it had none)
   * @param out Where the events it produces go
   * @returns `undefined` to read on; `"end"` when the stream is complete ({@link
   *   LlmStreamDecoder.end} is called next, and nothing more is read); or the `finish` that ends
   *   the stream at once
   */
  event(data: string, event: string, out: LlmEventBatch): undefined | "end" | LlmFinishEvent;
  /**
   * Ends the stream, called once: after `event` returned `"end"` or when the body ended.
   *
   * @param out Where the last events go
   * @returns The `finish` event
   */
  end(out: LlmEventBatch): LlmFinishEvent;
}

/**
 * A provider's whole stream in one loop: POSTs (building the request when iteration starts),
 * then reads the body chunk by chunk, decoding UTF-8 and server-sent events and handing each
 * event's data to `decoder`, and yields what it produced chunk by chunk (consecutive deltas of a
 * chunk joined, see {@link LlmEventBatch}).
 *
 * Keeps the {@link LlmProvider} contract: it never throws, ends with exactly one `finish`, and
 * ends with `finish: aborted` (dropping anything after) once `signal` has aborted; an abort also
 * cancels the body, so a pending read ends at once even when the fetch in use ignores the
 * signal. A failed request ends with its classified error (a 2xx response with a JSON body
 * counts as a failed request, see {@link httpError}); a decoder throw ends it with that
 * {@link ProviderError}, or with a retryable `transport` error for any other throw, as does a
 * failed read. The body is cancelled (closing the connection) when the stream fails, when the
 * consumer stops early, and once the consumer has taken the `finish` of a stream that completed
 * before its body ended: after its last events, which a cancel would hold up (on Node.js, fetch's
 * cancel takes about 60 µs, as long as the rest of the way from the socket to the client, and a
 * short answer's first delta often comes with its end).
 *
 * @example Streaming from a fake fetch
 * ```ts
 * import assert from "node:assert/strict";
 * import { streamLlmEvents } from "./event_stream.ts";
 * const events = await Array.fromAsync(streamLlmEvents(
 *   new AbortController().signal,
 *   () => ({
 *     url: "http://127.0.0.1:9/v1/x",
 *     body: {},
 *     signal: new AbortController().signal,
 *     fetch: () => Promise.resolve(new Response("data: a\n\ndata: b\n\ndata: .\n\n")),
 *   }),
 *   {
 *     event: (data, _event, out) => data === "." ? "end" : void out.text(data),
 *     end: () => ({ type: "finish", reason: "stop" }),
 *   },
 * ));
 * assert.deepEqual(events, [
 *   { type: "text-delta", text: "ab" },
 *   { type: "finish", reason: "stop" },
 * ]);
 * ```
 *
 * @param signal The request's signal (the one the request options carry)
 * @param request Builds the request options; called once, when iteration starts
 * @param decoder Turns the provider's events into {@link LlmEvent}s
 * @returns The events, ending with exactly one `finish`
 */
export async function* streamLlmEvents(
  signal: AbortSignal,
  request: () => PostJsonOptions,
  decoder: LlmStreamDecoder,
): AsyncGenerator<LlmEvent, void, undefined> {
  if (signal.aborted) return yield { type: "finish", reason: "aborted" };
  let failure: ProviderError | undefined;
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  /** Whether the body was read to its end (nothing left to cancel). */
  let bodyEnded = false;
  // Cancelling the reader ends a pending read even when the fetch in use ignores the signal.
  const onAbort = (): void => void reader?.cancel(signal.reason).catch(() => {});
  try {
    const options = request();
    const opened = await openBody(options);
    if (opened.type !== "body") {
      if (opened.type === "aborted" || signal.aborted) {
        return yield { type: "finish", reason: "aborted" };
      }
      return yield { type: "finish", reason: "error", error: opened.error };
    }
    // Reading the body directly (rather than through piped streams) makes a cancel reach the
    // connection at once.
    reader = opened.body.getReader();
    signal.addEventListener("abort", onAbort, { once: true });
    const text = new TextDecoder();
    const sse = new SseDecoder();
    const batch = new LlmEventBatch();
    let outcome = undefined as undefined | "end" | LlmFinishEvent;
    const listener = (data: string, event: string): boolean => {
      outcome = decoder.event(data, event, batch);
      return outcome === undefined;
    };
    read: for (;;) {
      const next = await reader.read();
      if (signal.aborted) break;
      sse.feed(next.done ? text.decode() : text.decode(next.value, STREAMING), listener);
      bodyEnded = next.done;
      if (outcome === undefined && next.done) outcome = "end";
      if (outcome === "end") outcome = decoder.end(batch);
      for (const event of batch.take()) {
        if (signal.aborted) break read;
        yield event;
      }
      if (outcome !== undefined) {
        if (signal.aborted) break;
        return yield outcome;
      }
    }
  } catch (error) {
    if (!signal.aborted) {
      failure = error instanceof ProviderError ? error : new ProviderError(
        redactUrls(
          `Cannot read the response stream: ${error instanceof Error ? error.message : error}`,
        ),
        { kind: "transport", retryable: true, cause: error },
      );
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    // Ends the body (and closes the connection) unless it was read to its end: the stream failed,
    // the caller stopped, or the stream was complete before its body ended.
    if (reader !== undefined && !bodyEnded) await reader.cancel().catch(() => {});
  }
  if (signal.aborted) return yield { type: "finish", reason: "aborted" };
  yield {
    type: "finish",
    reason: "error",
    error: failure ??
      new ProviderError("The provider stream ended without a finish", {
        kind: "transport",
        retryable: true,
      }),
  };
}

// Internals.

interface ErrorDetails {
  readonly message?: string;
  readonly type?: string;
  readonly code?: string;
  readonly status?: number;
}

/** Reads `{error: {message, type, code}}`, `{error: "…"}`, `{message}` and `{detail}` bodies. */
function errorDetails(payload: unknown): ErrorDetails {
  if (!isRecord(payload)) return {};
  const error = payload.error;
  if (typeof error === "string" && error !== "") return { message: error };
  const source = isRecord(error) ? error : payload;
  const message = [source.message, payload.message, payload.detail].find(
    (value): value is string => typeof value === "string" && value !== "",
  );
  const type = typeof source.type === "string" && source.type !== "error" ? source.type : undefined;
  const code = typeof source.code === "string" ? source.code : undefined;
  const numeric = [source.status, source.code].find((value): value is number =>
    typeof value === "number" && Number.isInteger(value) && value >= 400 && value <= 599
  );
  return {
    ...(message === undefined ? {} : { message }),
    ...(type === undefined ? {} : { type }),
    ...(code === undefined ? {} : { code }),
    ...(numeric === undefined ? {} : { status: numeric }),
  };
}

const QUOTA =
  /insufficient[_ ]?quota|exceeded your current quota|billing|insufficient[_ ]balance|credit balance/i;
const CONTEXT =
  /context[_ ]?length|context[_ ]window|too many tokens|prompt is too long|maximum context|reduce the length of the (?:messages|prompt)/i;

function kindOfStatus(status: number, text: string): ProviderErrorKind {
  if (status === 401 || status === 403) return "auth";
  if (status === 402) return "quota";
  if (status === 429) return QUOTA.test(text) ? "quota" : "rate-limit";
  if ((status === 400 || status === 413) && CONTEXT.test(text)) return "context-overflow";
  if (status === 408) return "transport";
  if (status >= 500) return "server";
  return "bad-request";
}

function kindOfText(text: string): ProviderErrorKind {
  if (QUOTA.test(text)) return "quota";
  if (CONTEXT.test(text)) return "context-overflow";
  if (/rate[_ ]?limit|too many requests/i.test(text)) return "rate-limit";
  if (/authentication|permission|api[_ ]?key|unauthori[sz]ed|forbidden/i.test(text)) return "auth";
  if (/invalid[_ ]request|bad[_ ]request|not[_ ]found|request_too_large/i.test(text)) {
    return "bad-request";
  }
  return "server";
}

function isRetryable(kind: ProviderErrorKind): boolean {
  return kind === "rate-limit" || kind === "server" || kind === "transport";
}

function quoteBody(body: string): string | undefined {
  const text = body.replace(/\s+/g, " ").trim();
  if (text === "") return undefined;
  return text.length > MAX_QUOTED_BODY ? `${text.slice(0, MAX_QUOTED_BODY)}…` : text;
}

function statusText(status: number): string {
  if (status === 429) return "Too Many Requests";
  if (status >= 500) return "Server error";
  return "Request failed";
}

/** The URL without credentials, query or fragment (a key could hide in any of them). */
function safeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}

function redact(text: string, secrets: readonly string[]): string {
  // A runtime's fetch error may quote the URL: a base URL's `user:pw@` or `?key=` with it.
  let result = redactUrls(text);
  for (const secret of secrets) {
    if (secret.length >= 4) result = result.split(secret).join("[redacted]");
  }
  return result;
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
