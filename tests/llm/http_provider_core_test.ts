import assert from "node:assert/strict";
import type { LlmStreamDecoder } from "../../src/llm/event_stream.ts";
import { HttpProviderCore } from "../../src/llm/http_provider_core.ts";

const NEVER = new AbortController().signal;

/** A decoder that turns each event's data into text. */
const TEXT: LlmStreamDecoder = {
  event: (data, _event, out) => void out.text(data),
  end: () => ({ type: "finish", reason: "stop" }),
};

/** A fetch that records what it was asked and answers one event. */
function recordingFetch(): { fetch: typeof fetch; calls: { url: string; init: RequestInit }[] } {
  const calls: { url: string; init: RequestInit }[] = [];
  const fetchImpl = (input: RequestInfo | URL, init: RequestInit = {}): Promise<Response> => {
    calls.push({ url: String(input), init });
    return Promise.resolve(new Response("data: ok\n\n"));
  };
  return { fetch: fetchImpl, calls };
}

Deno.test("HttpProviderCore joins the URL and lets the caller's headers override the others", async () => {
  const recorded = recordingFetch();
  const core = new HttpProviderCore({
    baseUrl: "http://127.0.0.1:9/api//",
    path: "/v1/messages",
    wireHeaders: { "x-api-key": "k-0123", "anthropic-version": "1" },
    headers: { "anthropic-version": "2", accept: "application/x-ndjson" },
    apiKey: "k-0123",
    fetch: recorded.fetch,
  });
  await Array.fromAsync(core.stream(NEVER, () => ({ a: 1 }), TEXT));
  const [call] = recorded.calls;
  assert.equal(call?.url, "http://127.0.0.1:9/api/v1/messages");
  assert.deepEqual(call?.init.headers, {
    accept: "application/x-ndjson",
    "x-api-key": "k-0123",
    "anthropic-version": "2",
    "content-type": "application/json",
  });
  assert.equal(call?.init.body, '{"a":1}');
  assert.deepEqual(core.secrets, ["k-0123"]);
});

Deno.test("HttpProviderCore builds the body when iteration starts, once per stream", async () => {
  const recorded = recordingFetch();
  const core = new HttpProviderCore({
    baseUrl: "http://127.0.0.1:9",
    path: "/x",
    wireHeaders: {},
    fetch: recorded.fetch,
  });
  let built = 0;
  const events = core.stream(NEVER, () => ({ n: ++built }), TEXT);
  assert.equal(built, 0);
  assert.deepEqual(await Array.fromAsync(events), [
    { type: "text-delta", text: "ok" },
    { type: "finish", reason: "stop" },
  ]);
  assert.equal(built, 1);
  assert.deepEqual(core.secrets, []);
});
