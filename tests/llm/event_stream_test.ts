import assert from "node:assert/strict";
import { type LlmStreamDecoder, streamLlmEvents } from "../../src/llm/event_stream.ts";
import { type LlmEvent, ProviderError } from "../../src/llm/provider.ts";
import { jsonResponse, startFakeLlmServer } from "../_helpers/fake_llm_server.ts";

const NEVER = new AbortController().signal;

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
