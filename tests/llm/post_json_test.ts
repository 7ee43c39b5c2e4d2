import assert from "node:assert/strict";
import { postJson } from "../../src/llm/post_json.ts";
import { jsonResponse, startFakeLlmServer } from "../_helpers/fake_llm_server.ts";

const NEVER = new AbortController().signal;

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
