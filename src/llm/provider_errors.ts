/**
 * How the network providers classify a failure as a {@link ProviderError} (errors as data): a
 * non-2xx response ({@link httpError}), an error inside a 2xx stream ({@link streamError}), a
 * request without a response ({@link transportError}), and a stream that cannot be read or ends
 * early. Every message has the API keys and the URL credentials redacted.
 *
 * @module
 */
import { ProviderError, type ProviderErrorKind } from "./provider.ts";
import { isRecord, parseJson } from "../util/json.ts";
import { describeNetworkError } from "../util/network_error.ts";
import { redactUrls } from "../util/redact_urls.ts";

/** Longest piece of a non-JSON error body quoted in an error message. */
const MAX_QUOTED_BODY = 300;

/** Longest piece of an unreadable stream event quoted in an error message. */
const MAX_QUOTED_EVENT = 200;

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
 * import { httpError } from "./provider_errors.ts";
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
 * import { streamError } from "./provider_errors.ts";
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
 * import { transportError } from "./provider_errors.ts";
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
 * import { parseRetryAfter } from "./provider_errors.ts";
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
 * The error of a 2xx answer that is not an event stream: a JSON body without an `error` (one
 * with an `error` is classified by {@link httpError}).
 *
 * @param status The HTTP status
 * @param contentType The response's content type
 * @returns A `bad-request` error
 */
export function notEventStreamError(status: number, contentType: string): ProviderError {
  return new ProviderError(`HTTP ${status}: expected an event stream, got ${contentType}`, {
    kind: "bad-request",
    retryable: false,
    status,
  });
}

/**
 * The error of a 2xx answer without a body.
 *
 * @param status The HTTP status
 * @returns A retryable `transport` error
 */
export function noBodyError(status: number): ProviderError {
  return new ProviderError(`HTTP ${status}: response has no body`, {
    kind: "transport",
    retryable: true,
    status,
  });
}

/**
 * The error of a stream whose body could not be read (or whose decoder threw something other
 * than a {@link ProviderError}).
 *
 * @param cause What was thrown
 * @returns A retryable `transport` error
 */
export function streamReadError(cause: unknown): ProviderError {
  return new ProviderError(
    redactUrls(
      `Cannot read the response stream: ${cause instanceof Error ? cause.message : cause}`,
    ),
    { kind: "transport", retryable: true, cause },
  );
}

/**
 * The error of a stream that ended before its wire format's end (the connection was cut).
 *
 * @param message What is missing, e.g. "The stream ended before message_stop"
 * @returns A retryable `transport` error
 */
export function truncatedStreamError(message: string): ProviderError {
  return new ProviderError(message, { kind: "transport", retryable: true });
}

/**
 * The error of a stream event whose data is not the JSON object its wire format promises.
 *
 * @param what The wire format's name for one event ("chunk", "event")
 * @param data The event's data, quoted in part
 * @returns A non-retryable `server` error
 */
export function unparsableEventError(what: string, data: string): ProviderError {
  return new ProviderError(`Cannot parse stream ${what}: ${data.slice(0, MAX_QUOTED_EVENT)}`, {
    kind: "server",
    retryable: false,
  });
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
