import assert from "node:assert/strict";
import {
  guardEvents,
  httpError,
  openEventStream,
  parseRetryAfter,
  postJson,
  streamError,
  transportError,
} from "../../src/llm/http.ts";
import { type LlmEvent, ProviderError } from "../../src/llm/provider.ts";
import { jsonResponse, sse, startFakeLlmServer } from "../_helpers/fake_llm_server.ts";

const NEVER = new AbortController().signal;

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

// postJson over loopback HTTP

Deno.test("postJson() sends the JSON body and headers", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(jsonResponse(200, { ok: true }));
  const result = await postJson({
    url: `${server.url}/v1/x`,
    body: { hello: "wörld" },
    headers: { "x-extra": "1" },
    signal: NEVER,
  });
  assert.equal(result.type, "response");
  if (result.type === "response") assert.deepEqual(await result.response.json(), { ok: true });
  assert.equal(server.requests.length, 1);
  const request = server.requests[0];
  assert.equal(request?.method, "POST");
  assert.equal(request?.path, "/v1/x");
  assert.equal(request?.headers["content-type"], "application/json");
  assert.equal(request?.headers["x-extra"], "1");
  assert.deepEqual(request?.body, { hello: "wörld" });
});

Deno.test("postJson() maps a 429 with Retry-After", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(
    jsonResponse(429, { error: { message: "Rate limit reached", type: "requests" } }, {
      "retry-after": "2",
    }),
  );
  const result = await postJson({ url: `${server.url}/v1/x`, body: {}, signal: NEVER });
  assert.equal(result.type, "error");
  if (result.type !== "error") return;
  assert.equal(result.error.message, "HTTP 429: Rate limit reached");
  assert.equal(result.error.kind, "rate-limit");
  assert.equal(result.error.retryable, true);
  assert.equal(result.error.retryAfterMs, 2000);
  assert.equal(result.error.status, 429);
});

Deno.test("postJson() maps a 401 and a 500", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(
    jsonResponse(401, { error: { message: "Invalid API key" } }),
    jsonResponse(500, { error: { message: "internal" } }),
  );
  const first = await postJson({ url: `${server.url}/a`, body: {}, signal: NEVER });
  const second = await postJson({ url: `${server.url}/b`, body: {}, signal: NEVER });
  assert.ok(first.type === "error" && second.type === "error");
  assert.equal(first.error.kind, "auth");
  assert.equal(first.error.retryable, false);
  assert.equal(second.error.kind, "server");
  assert.equal(second.error.retryable, true);
});

Deno.test("postJson() maps a refused connection to a transport error", async () => {
  const server = await startFakeLlmServer();
  const url = `${server.url}/v1/x`;
  await server.close();
  const result = await postJson({ url, body: {}, signal: NEVER, secrets: ["sk-hidden"] });
  assert.equal(result.type, "error");
  if (result.type !== "error") return;
  assert.equal(result.error.kind, "transport");
  assert.equal(result.error.retryable, true);
  assert.match(result.error.message, /^Cannot reach http:\/\/127\.0\.0\.1:\d+\/v1\/x: /);
});

Deno.test("postJson() returns aborted for a signal aborted before or during the request", async () => {
  await using server = await startFakeLlmServer();
  const before = await postJson({
    url: `${server.url}/x`,
    body: {},
    signal: AbortSignal.abort(),
  });
  assert.equal(before.type, "aborted");
  assert.equal(server.requests.length, 0);

  const controller = new AbortController();
  let called = false;
  const during = await postJson({
    url: `${server.url}/x`,
    body: {},
    signal: controller.signal,
    fetch: (_input, init) => {
      called = true;
      controller.abort();
      return Promise.reject(init?.signal?.reason);
    },
  });
  assert.ok(called);
  assert.equal(during.type, "aborted");
});

// openEventStream

Deno.test("openEventStream() yields the events of a 2xx stream", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(
    sse([{ event: "a", data: { n: 1 } }, { raw: ": comment\n\n" }, { data: "[DONE]" }]),
  );
  const opened = await openEventStream({ url: `${server.url}/s`, body: {}, signal: NEVER });
  assert.equal(opened.type, "events");
  if (opened.type !== "events") return;
  const events = [];
  for await (const event of opened.events) events.push(event);
  assert.deepEqual(events, [
    { event: "a", data: '{"n":1}' },
    { event: "message", data: "[DONE]" },
  ]);
});

Deno.test("openEventStream() classifies a 200 JSON error body", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(
    jsonResponse(200, { error: { message: "Insufficient Balance", code: "insufficient_quota" } }),
    jsonResponse(200, { id: "not a stream" }),
  );
  const first = await openEventStream({ url: `${server.url}/s`, body: {}, signal: NEVER });
  assert.ok(first.type === "error");
  assert.equal(first.error.kind, "quota");
  assert.equal(first.error.message, "HTTP 200: Insufficient Balance");
  const second = await openEventStream({ url: `${server.url}/s`, body: {}, signal: NEVER });
  assert.ok(second.type === "error");
  assert.equal(second.error.kind, "bad-request");
  assert.match(second.error.message, /expected an event stream, got application\/json/);
});

Deno.test("openEventStream() closes the connection when the caller stops early", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(sse([{ data: "1" }, { data: "2" }], { end: "hold" }));
  const opened = await openEventStream({ url: `${server.url}/s`, body: {}, signal: NEVER });
  assert.ok(opened.type === "events");
  for await (const event of opened.events) {
    assert.equal(event.data, "1");
    break;
  }
  await server.waitForCutOff(1);
  assert.equal(server.responsesCutOff, 1);
});

Deno.test("openEventStream() ends the events when the signal aborts, even if fetch ignores it", async () => {
  const controller = new AbortController();
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    start(stream) {
      stream.enqueue(new TextEncoder().encode("data: 1\n\n"));
    },
    cancel() {
      cancelled = true;
    },
  });
  const opened = await openEventStream({
    url: "http://127.0.0.1:9/s",
    body: {},
    signal: controller.signal,
    fetch: () => Promise.resolve(new Response(body)),
  });
  assert.ok(opened.type === "events");
  const seen: string[] = [];
  for await (const event of opened.events) {
    seen.push(event.data);
    controller.abort();
  }
  assert.deepEqual(seen, ["1"]);
  assert.ok(cancelled);
});

// guardEvents

async function* events(
  list: readonly LlmEvent[],
  end?: () => never,
): AsyncGenerator<LlmEvent> {
  for (const event of list) yield event;
  end?.();
}

Deno.test("guardEvents() passes events through up to the finish and drops the rest", async () => {
  const out = await Array.fromAsync(guardEvents(
    events([
      { type: "text-delta", text: "a" },
      { type: "finish", reason: "stop" },
      { type: "text-delta", text: "late" },
    ]),
    NEVER,
  ));
  assert.deepEqual(out, [{ type: "text-delta", text: "a" }, { type: "finish", reason: "stop" }]);
});

Deno.test("guardEvents() turns throws into finish errors", async () => {
  const thrown = new ProviderError("typed", { kind: "quota", retryable: false });
  const typed = await Array.fromAsync(guardEvents(
    events([], () => {
      throw thrown;
    }),
    NEVER,
  ));
  assert.deepEqual(typed, [{ type: "finish", reason: "error", error: thrown }]);

  const other = await Array.fromAsync(guardEvents(
    events([], () => {
      throw new TypeError("error reading a body from connection");
    }),
    NEVER,
  ));
  const finish = other[0];
  assert.ok(finish?.type === "finish" && finish.error);
  assert.equal(finish.error.kind, "transport");
  assert.equal(finish.error.retryable, true);
  assert.equal(
    finish.error.message,
    "Cannot read the response stream: error reading a body from connection",
  );
});

Deno.test("guardEvents() adds a finish error to a stream without one", async () => {
  const out = await Array.fromAsync(
    guardEvents(events([{ type: "text-delta", text: "a" }]), NEVER),
  );
  assert.equal(out.length, 2);
  assert.ok(out[1]?.type === "finish" && out[1].reason === "error");
});

Deno.test("guardEvents() ends with aborted once the signal aborts", async () => {
  const controller = new AbortController();
  async function* source(): AsyncGenerator<LlmEvent> {
    yield { type: "text-delta", text: "a" };
    controller.abort();
    yield { type: "text-delta", text: "b" };
    yield { type: "finish", reason: "stop" };
  }
  const out = await Array.fromAsync(guardEvents(source(), controller.signal));
  assert.deepEqual(out, [{ type: "text-delta", text: "a" }, { type: "finish", reason: "aborted" }]);

  const thrown = await Array.fromAsync(guardEvents(
    events([], () => {
      throw new DOMException("aborted", "AbortError");
    }),
    AbortSignal.abort(),
  ));
  assert.deepEqual(thrown, [{ type: "finish", reason: "aborted" }]);
});
