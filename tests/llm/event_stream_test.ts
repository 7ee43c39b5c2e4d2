import assert from "node:assert/strict";
import {
  httpError,
  type LlmStreamDecoder,
  parseRetryAfter,
  postJson,
  streamError,
  streamLlmEvents,
  transportError,
} from "../../src/llm/event_stream.ts";
import { type LlmEvent, ProviderError } from "../../src/llm/provider.ts";
import { jsonResponse, startFakeLlmServer } from "../_helpers/fake_llm_server.ts";

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

// streamLlmEvents

/** A decoder that turns each event's data into text and ends at `.`. */
const TEXT_DECODER: LlmStreamDecoder = {
  event: (data, _event, out) => data === "." ? "end" : void out.text(data),
  end: () => ({ type: "finish", reason: "stop" }),
};

/** A fetch that answers with a 200 body made of `chunks`, recording whether it was cancelled. */
function bodyFetch(
  chunks: readonly (string | Uint8Array)[],
  options: { readonly contentType?: string; readonly hold?: boolean } = {},
): { readonly fetch: typeof fetch; readonly cancelled: () => boolean } {
  let cancelled = false;
  const fetchImpl = (): Promise<Response> => {
    const body = new ReadableStream<Uint8Array>({
      start(stream): void {
        const encoder = new TextEncoder();
        for (const chunk of chunks) {
          stream.enqueue(typeof chunk === "string" ? encoder.encode(chunk) : chunk);
        }
        if (!options.hold) stream.close();
      },
      cancel(): void {
        cancelled = true;
      },
    });
    const headers = { "content-type": options.contentType ?? "text/event-stream" };
    return Promise.resolve(new Response(body, { headers }));
  };
  return { fetch: fetchImpl, cancelled: () => cancelled };
}

function stream(
  fetchImpl: typeof fetch,
  decoder: LlmStreamDecoder = TEXT_DECODER,
  signal: AbortSignal = NEVER,
): Promise<LlmEvent[]> {
  return Array.fromAsync(streamLlmEvents(
    signal,
    () => ({ url: "http://127.0.0.1:9/s", body: {}, signal, fetch: fetchImpl }),
    decoder,
  ));
}

Deno.test("streamLlmEvents() classifies a 200 JSON body as a failed request", async () => {
  await using server = await startFakeLlmServer();
  server.enqueue(
    jsonResponse(200, { error: { message: "Insufficient Balance", code: "insufficient_quota" } }),
    jsonResponse(200, { id: "not a stream" }),
  );
  const request = () => ({ url: `${server.url}/s`, body: {}, signal: NEVER });
  const [first] = await Array.fromAsync(streamLlmEvents(NEVER, request, TEXT_DECODER));
  assert.ok(first?.type === "finish" && first.error);
  assert.equal(first.error.kind, "quota");
  assert.equal(first.error.message, "HTTP 200: Insufficient Balance");
  const [second] = await Array.fromAsync(streamLlmEvents(NEVER, request, TEXT_DECODER));
  assert.ok(second?.type === "finish" && second.error);
  assert.equal(second.error.kind, "bad-request");
  assert.match(second.error.message, /expected an event stream, got application\/json/);
});

Deno.test("streamLlmEvents() decodes UTF-8 split inside a character and strips a BOM", async () => {
  const bytes = new TextEncoder().encode("\uFEFFdata: héllo 😀\n\ndata: .\n\n");
  for (let at = 0; at <= bytes.length; at++) {
    const { fetch } = bodyFetch([bytes.slice(0, at), bytes.slice(at)]);
    assert.deepEqual(await stream(fetch), [
      { type: "text-delta", text: "héllo 😀" },
      { type: "finish", reason: "stop" },
    ], `split at ${at}`);
  }
});

Deno.test("streamLlmEvents() parses a body delivered one byte at a time", async () => {
  const text = "event: delta\r\ndata: ü\r\n\r\n: ping\r\n\r\ndata: .\r\n\r\n";
  const bytes = [...new TextEncoder().encode(text)].map((byte) => Uint8Array.of(byte));
  assert.deepEqual(await stream(bodyFetch(bytes).fetch), [
    { type: "text-delta", text: "ü" },
    { type: "finish", reason: "stop" },
  ]);
});

Deno.test("streamLlmEvents() ends at the decoder's finish and reads nothing after it", async () => {
  const seen: string[] = [];
  const body = bodyFetch(["data: a\n\ndata: stop\n\ndata: late\n\n"], { hold: true });
  const out = await stream(body.fetch, {
    event: (data, _event, out) => {
      seen.push(data);
      if (data === "stop") return { type: "finish", reason: "stop" };
      out.text(data);
      return undefined;
    },
    end: () => assert.fail("end() is not called after a finish"),
  });
  assert.deepEqual(out, [{ type: "text-delta", text: "a" }, { type: "finish", reason: "stop" }]);
  assert.deepEqual(seen, ["a", "stop"]);
  assert.ok(body.cancelled());
});

Deno.test("streamLlmEvents() hands over a complete stream's events before it cancels the body", async () => {
  // The body stays open after the stream's end: it is cancelled, but only once the consumer has
  // taken the finish, so the last deltas (often a short answer's first) do not wait for it.
  const body = bodyFetch(["data: a\n\ndata: b\n\ndata: .\n\n"], { hold: true });
  const seen: Array<[LlmEvent["type"], boolean]> = [];
  for await (
    const event of streamLlmEvents(
      NEVER,
      () => ({ url: "http://127.0.0.1:9/s", body: {}, signal: NEVER, fetch: body.fetch }),
      TEXT_DECODER,
    )
  ) seen.push([event.type, body.cancelled()]);
  assert.deepEqual(seen, [["text-delta", false], ["finish", false]]);
  assert.ok(body.cancelled(), "the body is cancelled when the consumer is done");

  // A consumer that stops at the delta cancels it too.
  const stopped = bodyFetch(["data: a\n\ndata: .\n\n"], { hold: true });
  for await (
    const _ of streamLlmEvents(
      NEVER,
      () => ({ url: "http://127.0.0.1:9/s", body: {}, signal: NEVER, fetch: stopped.fetch }),
      TEXT_DECODER,
    )
  ) break;
  assert.ok(stopped.cancelled());
});

Deno.test("streamLlmEvents() turns decoder throws into finish errors", async () => {
  const thrown = new ProviderError("typed", { kind: "quota", retryable: false });
  const typed = await stream(bodyFetch(["data: x\n\n"]).fetch, {
    event: () => {
      throw thrown;
    },
    end: () => assert.fail("end() is not called after a throw"),
  });
  assert.deepEqual(typed, [{ type: "finish", reason: "error", error: thrown }]);

  const body = bodyFetch(["data: a\n\ndata: x\n\n"], { hold: true });
  const other = await stream(body.fetch, {
    event: (data, _event, out) => {
      if (data === "x") throw new TypeError("bad chunk");
      out.text(data);
    },
    end: () => assert.fail("end() is not called after a throw"),
  });
  assert.equal(other.length, 1, "the deltas of the failed chunk are dropped");
  const finish = other[0];
  assert.ok(finish?.type === "finish" && finish.error);
  assert.equal(finish.error.kind, "transport");
  assert.equal(finish.error.retryable, true);
  assert.equal(finish.error.message, "Cannot read the response stream: bad chunk");
  assert.ok(body.cancelled(), "a failed stream cancels the body");
});

Deno.test("streamLlmEvents() ends with aborted once the signal aborts, even if fetch ignores it", async () => {
  const controller = new AbortController();
  const body = bodyFetch(["data: 1\n\n"], { hold: true });
  const out: LlmEvent[] = [];
  for await (
    const event of streamLlmEvents(
      controller.signal,
      () => ({ url: "http://127.0.0.1:9/s", body: {}, signal: NEVER, fetch: body.fetch }),
      TEXT_DECODER,
    )
  ) {
    out.push(event);
    controller.abort();
  }
  assert.deepEqual(out, [{ type: "text-delta", text: "1" }, { type: "finish", reason: "aborted" }]);
  assert.ok(body.cancelled());

  const before = await stream(bodyFetch([]).fetch, TEXT_DECODER, AbortSignal.abort());
  assert.deepEqual(before, [{ type: "finish", reason: "aborted" }]);
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
