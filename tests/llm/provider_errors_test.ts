import assert from "node:assert/strict";
import {
  httpError,
  parseRetryAfter,
  streamError,
  transportError,
} from "../../src/llm/provider_errors.ts";
import { ProviderError } from "../../src/llm/provider.ts";

// parseRetryAfter

Deno.test("parseRetryAfter() reads seconds, fractions and HTTP dates", () => {
  assert.equal(parseRetryAfter(new Headers({ "retry-after": "20" })), 20_000);
  assert.equal(parseRetryAfter(new Headers({ "retry-after": " 0.25 " })), 250);
  assert.equal(parseRetryAfter(new Headers({ "retry-after": "0" })), 0);
  const now = Date.parse("2026-11-30T12:00:00Z");
  const date = new Headers({ "retry-after": "Mon, 30 Nov 2026 12:00:07 GMT" });
  assert.equal(parseRetryAfter(date, now), 7000);
});

Deno.test("parseRetryAfter() clamps a past date to 0", () => {
  const now = Date.parse("2026-11-30T12:00:00Z");
  const past = new Headers({ "retry-after": "Mon, 30 Nov 2026 11:00:00 GMT" });
  assert.equal(parseRetryAfter(past, now), 0);
});

Deno.test("parseRetryAfter() prefers retry-after-ms", () => {
  const headers = new Headers({ "retry-after-ms": "1234", "retry-after": "9" });
  assert.equal(parseRetryAfter(headers), 1234);
  assert.equal(parseRetryAfter(new Headers({ "retry-after-ms": "12.6" })), 13);
});

Deno.test("parseRetryAfter() ignores missing and unreadable values", () => {
  assert.equal(parseRetryAfter(new Headers()), undefined);
  assert.equal(parseRetryAfter(new Headers({ "retry-after": "soon" })), undefined);
  assert.equal(parseRetryAfter(new Headers({ "retry-after": "-5" })), undefined);
  assert.equal(
    parseRetryAfter(new Headers({ "retry-after-ms": "x", "retry-after": "3" })),
    3000,
  );
});

// httpError

function classify(status: number, body: unknown): ProviderError {
  return httpError({ status, body: typeof body === "string" ? body : JSON.stringify(body) });
}

Deno.test("httpError() classifies statuses", () => {
  const cases: ReadonlyArray<readonly [number, unknown, string, boolean]> = [
    [401, { error: { message: "Incorrect API key", code: "invalid_api_key" } }, "auth", false],
    [403, { type: "error", error: { type: "permission_error", message: "no" } }, "auth", false],
    [402, { error: { message: "Insufficient Balance" } }, "quota", false],
    [
      429,
      {
        error: { message: "You exceeded your current quota", code: "insufficient_quota" },
      },
      "quota",
      false,
    ],
    [
      429,
      { error: { message: "Your credit balance is too low", type: "billing_error" } },
      "quota",
      false,
    ],
    [429, { error: { message: "Rate limit reached", type: "requests" } }, "rate-limit", true],
    [
      400,
      {
        error: {
          message: "maximum context length is 8192 tokens",
          code: "context_length_exceeded",
        },
      },
      "context-overflow",
      false,
    ],
    [
      400,
      {
        type: "error",
        error: { type: "invalid_request_error", message: "prompt is too long: 210000 tokens" },
      },
      "context-overflow",
      false,
    ],
    [413, { error: { message: "too many tokens in request" } }, "context-overflow", false],
    [
      413,
      {
        type: "error",
        error: { type: "request_too_large", message: "Request exceeds the maximum size" },
      },
      "bad-request",
      false,
    ],
    [
      400,
      { error: { message: "Unknown parameter", type: "invalid_request_error" } },
      "bad-request",
      false,
    ],
    [404, { error: "model 'x' not found" }, "bad-request", false],
    [422, "unprocessable", "bad-request", false],
    [408, "timeout", "transport", true],
    [500, { error: { message: "boom" } }, "server", true],
    [502, "<html>Bad gateway</html>", "server", true],
    [503, "", "server", true],
    [
      529,
      { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
      "server",
      true,
    ],
  ];
  for (const [status, body, kind, retryable] of cases) {
    const error = classify(status, body);
    assert.ok(error instanceof ProviderError);
    assert.equal(error.kind, kind, `${status} ${JSON.stringify(body)}`);
    assert.equal(error.retryable, retryable, `${status} ${JSON.stringify(body)}`);
    assert.equal(error.status, status);
  }
});

Deno.test("httpError() names the status and the provider's message", () => {
  assert.equal(
    classify(429, { error: { message: "Rate limit reached", type: "requests" } }).message,
    "HTTP 429: Rate limit reached",
  );
  assert.equal(
    classify(529, { type: "error", error: { type: "overloaded_error", message: "Overloaded" } })
      .message,
    "HTTP 529: Overloaded",
  );
  assert.equal(classify(404, { error: "model not found" }).message, "HTTP 404: model not found");
  assert.equal(classify(422, { detail: "bad field" }).message, "HTTP 422: bad field");
  assert.equal(
    classify(502, "<html>\n  Bad   gateway\n</html>").message,
    "HTTP 502: <html> Bad gateway </html>",
  );
  assert.equal(classify(503, "").message, "HTTP 503: Server error");
  const long = classify(500, "x".repeat(1000)).message;
  assert.ok(long.length < 320, long);
});

Deno.test("httpError() reads Retry-After", () => {
  const error = httpError({
    status: 429,
    body: "{}",
    headers: new Headers({ "retry-after": "3" }),
  });
  assert.equal(error.retryAfterMs, 3000);
  assert.equal(httpError({ status: 429, body: "" }).retryAfterMs, undefined);
});

Deno.test("httpError() never shows the API key", () => {
  const key = "sk-test-1234567890abcdef";
  const error = httpError({
    status: 401,
    body: JSON.stringify({ error: { message: `Incorrect API key provided: ${key}.` } }),
    secrets: [key],
  });
  assert.equal(error.message, "HTTP 401: Incorrect API key provided: [redacted].");
});

Deno.test("httpError() classifies a 2xx error body by its content", () => {
  const error = httpError({ status: 200, body: '{"error":{"message":"rate limit exceeded"}}' });
  assert.equal(error.kind, "rate-limit");
  assert.equal(error.message, "HTTP 200: rate limit exceeded");
});

// streamError

Deno.test("streamError() classifies mid-stream error payloads", () => {
  const cases: ReadonlyArray<readonly [unknown, string, boolean]> = [
    [{ type: "overloaded_error", message: "Overloaded" }, "server", true],
    [{ type: "api_error", message: "Internal server error" }, "server", true],
    [{ type: "rate_limit_error", message: "slow down" }, "rate-limit", true],
    [{ code: "insufficient_quota", message: "quota" }, "quota", false],
    [{ code: "context_length_exceeded", message: "too long" }, "context-overflow", false],
    [{ type: "authentication_error", message: "bad key" }, "auth", false],
    [{ type: "invalid_request_error", message: "bad" }, "bad-request", false],
    [{ code: 502, message: "Provider returned error" }, "server", true],
    [{ code: 429, message: "Rate limited upstream" }, "rate-limit", true],
    [{ message: "something odd" }, "server", true],
    ["plain string error", "server", true],
  ];
  for (const [payload, kind, retryable] of cases) {
    const error = streamError(payload);
    assert.equal(error.kind, kind, JSON.stringify(payload));
    assert.equal(error.retryable, retryable, JSON.stringify(payload));
  }
  assert.equal(streamError({ code: 502, message: "x" }).status, 502);
});

Deno.test("streamError() names the error type and message", () => {
  assert.equal(
    streamError({ type: "overloaded_error", message: "Overloaded" }).message,
    "Stream error (overloaded_error): Overloaded",
  );
  assert.equal(streamError({ message: "oops" }).message, "Stream error: oops");
  assert.equal(streamError("oops").message, "Stream error: oops");
  assert.equal(
    streamError({ message: "key sk-secret-value leaked" }, ["sk-secret-value"]).message,
    "Stream error: key [redacted] leaked",
  );
});

// transportError

Deno.test("transportError() is retryable and hides the URL's query and credentials", () => {
  const error = transportError(new TypeError("connection refused"), {
    url: "http://user:pass@127.0.0.1:1/v1/chat/completions?key=sk-x",
  });
  assert.equal(error.kind, "transport");
  assert.equal(error.retryable, true);
  assert.equal(
    error.message,
    "Cannot reach http://127.0.0.1:1/v1/chat/completions: connection refused",
  );
  assert.ok(error.cause instanceof TypeError);
});

Deno.test("transportError() redacts a URL the runtime's error quotes", () => {
  const error = transportError(
    new TypeError("error sending request for url (http://user:SECRETP@127.0.0.1:1/v1?key=SECRETK)"),
    { url: "http://user:SECRETP@127.0.0.1:1/v1?key=SECRETK" },
  );
  assert.equal(
    error.message,
    "Cannot reach http://127.0.0.1:1/v1: error sending request for url " +
      "(http://127.0.0.1:1/v1?key=[redacted]",
  );
});
