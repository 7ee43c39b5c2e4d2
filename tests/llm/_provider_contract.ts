/**
 * The contract every HTTP {@link LlmProvider} meets, as one suite a provider's test file runs
 * against the fake LLM server with its own wire format: `providerContract(wire)`. It covers what
 * the two wire formats share: the request's headers, streaming text, tool calls, reasoning and
 * usage, the state sent back on the next request, finish reasons, errors and their
 * classification, cancellation (no socket left behind) and timeouts. What only one wire format
 * does stays in that provider's test file.
 *
 * @module
 */
import assert from "node:assert/strict";
import type {
  FinishReason,
  LlmEvent,
  LlmMessage,
  LlmProvider,
  LlmRequest,
  LlmToolCall,
  ProviderErrorKind,
} from "../../src/llm/provider.ts";
import {
  type FakeLlmServer,
  type JsonResponse,
  serializeSseItem,
  sse,
  type SseItem,
  startFakeLlmServer,
} from "../_helpers/fake_llm_server.ts";

/** A signal that never aborts. */
export const NEVER: AbortSignal = new AbortController().signal;

/** The user's message of {@link request}. */
export const USER: LlmMessage = { role: "user", content: [{ type: "text", text: "hi" }] };

/** What a provider is made from in the suite. */
export interface WireProviderOptions {
  readonly baseUrl: string;
  readonly apiKey?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly fetch?: typeof fetch;
}

/** A scripted stream and the events it must turn into. */
export interface StreamCase {
  readonly items: readonly SseItem[];
  /** Every event of the stream, in order, when the case fixes them all. */
  readonly events?: readonly LlmEvent[];
}

/** A stream that ends with an error inside the 2xx answer. */
export interface StreamErrorCase {
  readonly items: readonly SseItem[];
  /** The text streamed before the error. */
  readonly text?: string;
  readonly kind: ProviderErrorKind;
  readonly retryable: boolean;
  readonly message?: string;
}

/** A failed HTTP answer and its classification. */
export interface HttpErrorCase {
  readonly response: JsonResponse;
  /** The whole message, when the case fixes it. */
  readonly message?: string;
  readonly retryAfterMs?: number;
}

/** One wire format, as {@link providerContract} drives it. */
export interface ProviderWire {
  /** The provider's class name, which starts every test name. */
  readonly name: string;
  /** The API key the suite's providers send. */
  readonly key: string;
  /** The provider's base URL for a server at `url`. */
  baseUrl(url: string): string;
  /** The path the server sees (the base URL's path, then the wire format's). */
  readonly path: string;
  /** Makes the provider under test. */
  make(options: WireProviderOptions): LlmProvider;
  /** The headers that carry `key`. */
  credentials(key: string): Record<string, string>;
  /** Headers the wire format sends besides its credentials. */
  readonly wireHeaders: Readonly<Record<string, string>>;
  /** Credential headers of the other wire formats, which this one must not send. */
  readonly foreignCredentials: readonly string[];
  /** Caller's extra headers, sent as given. */
  readonly extraHeaders: Readonly<Record<string, string>>;

  /** The start of an answer whose first text delta is `text`. */
  opening(text: string): SseItem[];
  /** One more text delta. */
  delta(text: string): SseItem;
  /** The end of an answer, with a finish reason in the wire's words (a plain stop if none). */
  closing(reason?: string): SseItem[];
  /** A whole answer streaming `text`, its finish reason in the wire's words (a plain stop if none). */
  answer(text: string, reason?: string): SseItem[];

  /** Text deltas, usage and finish, each event fixed. */
  readonly textWithUsage: Required<StreamCase>;
  /** Two tool calls after a first text delta; their state when the wire keeps one. */
  readonly toolCalls: StreamCase & {
    readonly calls: readonly LlmToolCall[];
    readonly state?: unknown;
  };
  /** Reasoning deltas, then text; the reasoning kept as provider state. */
  readonly reasoning: StreamCase & {
    readonly reasoning: string;
    readonly text: string;
    readonly state: unknown;
  };
  /** A step with reasoning and a tool call whose state goes back on the next request. */
  readonly stateRoundTrip: {
    readonly first: readonly SseItem[];
    readonly request: Partial<LlmRequest>;
    /** The result of the first step's tool call. */
    readonly result: LlmMessage;
    /** Fields of the second request's body, each compared in full. */
    readonly secondBody: Readonly<Record<string, unknown>>;
  };
  /** `[wire finish reason, FinishReason]`. */
  readonly finishReasons: ReadonlyArray<readonly [string, FinishReason]>;
  /** Errors reported inside the stream. */
  readonly streamErrors: readonly StreamErrorCase[];
  /** A stream cut before its wire format's end (a tool call half streamed, if the wire allows). */
  readonly truncated: readonly SseItem[];
  /** What the server sends before it destroys the socket. */
  readonly dropped: readonly SseItem[];
  /** An event whose data is not JSON, and the start of the error message. */
  readonly malformed: { readonly items: readonly SseItem[]; readonly message: RegExp };
  /** A 401 whose message quotes the key (shown redacted). */
  readonly unauthorized: HttpErrorCase & { readonly message: string };
  /** A 429 with Retry-After. */
  readonly rateLimited: HttpErrorCase & { readonly retryAfterMs: number };
  /** A 5xx. */
  readonly serverError: HttpErrorCase;
  /** A 400 (or 413) that says the context is too long. */
  readonly contextOverflow: HttpErrorCase;
}

/** A request with a system prompt and {@link USER}, changed by `overrides`. */
export function request(overrides: Partial<LlmRequest> = {}): LlmRequest {
  return { sessionId: "s", model: "m", system: "sys", messages: [USER], tools: [], ...overrides };
}

/** Every event of one stream. */
export async function collect(
  source: LlmProvider,
  req: LlmRequest = request(),
  signal: AbortSignal = NEVER,
): Promise<LlmEvent[]> {
  const events: LlmEvent[] = [];
  for await (const event of source.stream(req, { signal })) events.push(event);
  return events;
}

/** The `finish` that ends `events`, checked to be the only one. */
export function finishOf(events: readonly LlmEvent[]): Extract<LlmEvent, { type: "finish" }> {
  const last = events.at(-1);
  assert.ok(last?.type === "finish", `ends with finish: ${JSON.stringify(events)}`);
  assert.equal(events.filter((event) => event.type === "finish").length, 1);
  return last;
}

/** The text of every delta of one kind, joined. */
export function textOf(
  events: readonly LlmEvent[],
  type: "text-delta" | "reasoning-delta",
): string {
  return events.map((event) => event.type === type ? event.text : "").join("");
}

/** The tool calls of `events`, in order. */
export function callsOf(events: readonly LlmEvent[]): LlmToolCall[] {
  return events.flatMap((event) => event.type === "tool-call" ? [event.call] : []);
}

/** The state of the one `provider-state` event of `events`. */
export function stateOf(events: readonly LlmEvent[]): unknown {
  const states = events.filter((event) => event.type === "provider-state");
  assert.equal(states.length, 1, "one provider-state event");
  return states[0]?.type === "provider-state" ? states[0].state : undefined;
}

/** The JSON body of the server's `index`th request. */
export function bodyOf(server: FakeLlmServer, index = 0): Record<string, unknown> {
  const body = server.requests[index]?.body;
  assert.ok(typeof body === "object" && body !== null, "request body is JSON");
  return body as Record<string, unknown>;
}

/** Registers the contract's tests for one wire format. */
export function providerContract(wire: ProviderWire): void {
  requestTests(wire);
  streamTests(wire);
  failureTests(wire);
  httpFailureTests(wire);
  cancellationTests(wire);
}

/** Registers one test of the contract, named after the provider. */
function contractTest(wire: ProviderWire, what: string, fn: () => Promise<void>): void {
  Deno.test(`${wire.name} (contract): ${what}`, fn);
}

/** The provider under test for `server`, with the key unless `apiKey` says otherwise. */
function providerFor(
  wire: ProviderWire,
  server: FakeLlmServer,
  extra: Omit<WireProviderOptions, "baseUrl"> = { apiKey: wire.key },
): LlmProvider {
  return wire.make({ baseUrl: wire.baseUrl(server.url), ...extra });
}

function requestTests(wire: ProviderWire): void {
  contractTest(
    wire,
    "posts JSON to its path with its credentials and the caller's headers",
    async () => {
      await using server = await startFakeLlmServer();
      server.enqueue(sse(wire.answer("ok")));
      await collect(providerFor(wire, server, { apiKey: wire.key, headers: wire.extraHeaders }));
      const captured = server.requests[0];
      assert.equal(captured?.method, "POST");
      assert.equal(captured?.path, wire.path);
      const expected = {
        ...wire.credentials(wire.key),
        ...wire.wireHeaders,
        ...wire.extraHeaders,
        "content-type": "application/json",
        accept: "text/event-stream",
      };
      for (const [name, value] of Object.entries(expected)) {
        assert.equal(captured?.headers[name], value, name);
      }
      for (const name of wire.foreignCredentials) assert.equal(captured?.headers[name], undefined);
    },
  );

  contractTest(wire, "sends no credentials without an API key", async () => {
    await using server = await startFakeLlmServer();
    server.enqueue(sse(wire.answer("ok")));
    await collect(providerFor(wire, server, {}));
    for (const name of Object.keys(wire.credentials(wire.key))) {
      assert.equal(server.requests[0]?.headers[name], undefined, name);
    }
  });
}

function streamTests(wire: ProviderWire): void {
  contractTest(wire, "streams text deltas, then the usage and finish", async () => {
    await using server = await startFakeLlmServer();
    server.enqueue(sse(wire.textWithUsage.items));
    assert.deepEqual(await collect(providerFor(wire, server)), wire.textWithUsage.events);
  });

  contractTest(wire, "joins streamed tool calls and emits them after the deltas", async () => {
    await using server = await startFakeLlmServer();
    server.enqueue(sse(wire.toolCalls.items));
    const events = await collect(providerFor(wire, server));
    assert.deepEqual(callsOf(events), wire.toolCalls.calls);
    assert.equal(finishOf(events).reason, "tool-calls");
    // The first text delta comes first, then the calls.
    assert.equal(events.findIndex((event) => event.type === "tool-call"), 1);
    if (wire.toolCalls.state !== undefined) assert.deepEqual(stateOf(events), wire.toolCalls.state);
  });

  contractTest(wire, "streams reasoning as reasoning deltas and keeps it as state", async () => {
    await using server = await startFakeLlmServer();
    const { items, events: expected, reasoning, text, state } = wire.reasoning;
    server.enqueue(sse(items));
    const events = await collect(providerFor(wire, server));
    if (expected !== undefined) assert.deepEqual(events, expected);
    assert.equal(textOf(events, "reasoning-delta"), reasoning);
    assert.equal(textOf(events, "text-delta"), text);
    assert.deepEqual(stateOf(events), state);
  });

  contractTest(wire, "sends a step's state back on the next request", async () => {
    await using server = await startFakeLlmServer();
    const trip = wire.stateRoundTrip;
    server.enqueue(sse(trip.first), sse(wire.answer("It says hi.")));
    const provider = providerFor(wire, server);
    const first = await collect(provider, request(trip.request));
    // What the agent loop commits for the step, then the tool result.
    const history: LlmMessage[] = [
      USER,
      {
        role: "assistant",
        text: textOf(first, "text-delta"),
        reasoning: textOf(first, "reasoning-delta"),
        toolCalls: callsOf(first),
        providerState: stateOf(first),
      },
      trip.result,
    ];
    await collect(provider, request({ ...trip.request, messages: history }));
    const second = bodyOf(server, 1);
    for (const [field, value] of Object.entries(trip.secondBody)) {
      assert.deepEqual(second[field], value, field);
    }
  });

  contractTest(wire, "maps finish reasons", async () => {
    await using server = await startFakeLlmServer();
    for (const [reason] of wire.finishReasons) server.enqueue(sse(wire.answer("x", reason)));
    const provider = providerFor(wire, server);
    for (const [reason, expected] of wire.finishReasons) {
      assert.equal(finishOf(await collect(provider)).reason, expected, reason);
    }
  });
}

function failureTests(wire: ProviderWire): void {
  contractTest(wire, "ends with the classified error of an error inside the stream", async () => {
    await using server = await startFakeLlmServer();
    for (const item of wire.streamErrors) server.enqueue(sse(item.items));
    const provider = providerFor(wire, server);
    for (const item of wire.streamErrors) {
      const events = await collect(provider);
      if (item.text !== undefined) assert.equal(textOf(events, "text-delta"), item.text);
      const finish = finishOf(events);
      assert.equal(finish.reason, "error");
      assert.equal(finish.error?.kind, item.kind);
      assert.equal(finish.error?.retryable, item.retryable);
      if (item.message !== undefined) assert.equal(finish.error?.message, item.message);
    }
  });

  contractTest(wire, "fails a stream cut before its end with a transport error", async () => {
    await using server = await startFakeLlmServer();
    server.enqueue(sse(wire.truncated));
    const events = await collect(providerFor(wire, server));
    const finish = finishOf(events);
    assert.equal(finish.reason, "error");
    assert.equal(finish.error?.kind, "transport");
    assert.equal(finish.error?.retryable, true);
    assert.deepEqual(callsOf(events), []);
  });

  contractTest(wire, "fails with transport when the connection drops mid-body", async () => {
    await using server = await startFakeLlmServer();
    server.enqueue(sse(wire.dropped, { end: "destroy" }));
    const finish = finishOf(await collect(providerFor(wire, server)));
    assert.equal(finish.reason, "error");
    assert.equal(finish.error?.kind, "transport");
    assert.equal(finish.error?.retryable, true);
  });

  contractTest(wire, "fails on an event that is not JSON", async () => {
    await using server = await startFakeLlmServer();
    server.enqueue(sse(wire.malformed.items));
    const finish = finishOf(await collect(providerFor(wire, server)));
    assert.equal(finish.reason, "error");
    assert.equal(finish.error?.kind, "server");
    assert.equal(finish.error?.retryable, false);
    assert.match(finish.error?.message ?? "", wire.malformed.message);
  });
}

function httpFailureTests(wire: ProviderWire): void {
  /** The `finish` of one request answered by `answer`. */
  const failed = async (answer: HttpErrorCase): Promise<Extract<LlmEvent, { type: "finish" }>> => {
    await using server = await startFakeLlmServer();
    server.enqueue(answer.response);
    const finish = finishOf(await collect(providerFor(wire, server)));
    assert.equal(finish.reason, "error");
    if (answer.message !== undefined) assert.equal(finish.error?.message, answer.message);
    return finish;
  };

  contractTest(wire, "maps a 401 to auth without revealing the key", async () => {
    const finish = await failed(wire.unauthorized);
    assert.equal(finish.error?.kind, "auth");
    assert.equal(finish.error?.retryable, false);
    assert.ok(!finish.error?.message.includes(wire.key));
  });

  contractTest(wire, "maps a 429 with Retry-After to a retryable rate limit", async () => {
    const finish = await failed(wire.rateLimited);
    assert.equal(finish.error?.kind, "rate-limit");
    assert.equal(finish.error?.retryable, true);
    assert.equal(finish.error?.retryAfterMs, wire.rateLimited.retryAfterMs);
  });

  contractTest(wire, "maps a context overflow", async () => {
    const finish = await failed(wire.contextOverflow);
    assert.equal(finish.error?.kind, "context-overflow");
    assert.equal(finish.error?.retryable, false);
  });

  contractTest(wire, "maps a 5xx to a retryable server error, and the retry streams", async () => {
    await using server = await startFakeLlmServer();
    server.enqueue(wire.serverError.response, sse(wire.answer("ok")));
    const provider = providerFor(wire, server);
    const finish = finishOf(await collect(provider));
    assert.equal(finish.reason, "error");
    assert.equal(finish.error?.kind, "server");
    assert.equal(finish.error?.retryable, true);
    const { message } = wire.serverError;
    if (message !== undefined) assert.equal(finish.error?.message, message);
    const retried = await collect(provider);
    assert.equal(textOf(retried, "text-delta"), "ok");
    assert.equal(finishOf(retried).reason, "stop");
  });

  contractTest(wire, "maps an unreachable server to transport", async () => {
    const server = await startFakeLlmServer();
    const unreachable = providerFor(wire, server);
    await server.close();
    const finish = finishOf(await collect(unreachable));
    assert.equal(finish.reason, "error");
    assert.equal(finish.error?.kind, "transport");
    assert.equal(finish.error?.retryable, true);
    assert.ok(!finish.error?.message.includes(wire.key));
  });
}

function cancellationTests(wire: ProviderWire): void {
  contractTest(wire, "ends aborted mid-stream and the server sees the socket close", async () => {
    await using server = await startFakeLlmServer();
    server.enqueue(sse([
      ...wire.opening("first"),
      { ...wire.delta("never"), delayMs: 5000 },
      ...wire.closing(),
    ]));
    const controller = new AbortController();
    const events: LlmEvent[] = [];
    for await (
      const event of providerFor(wire, server).stream(request(), { signal: controller.signal })
    ) {
      events.push(event);
      if (event.type === "text-delta") controller.abort();
    }
    assert.deepEqual(events, [
      { type: "text-delta", text: "first" },
      { type: "finish", reason: "aborted" },
    ]);
    await server.waitForCutOff(1);
    assert.equal(server.responsesCutOff, 1);
    await server.waitForConnectionsClosed(1);
  });

  contractTest(wire, "ends aborted while waiting for the next chunk", async () => {
    await using server = await startFakeLlmServer();
    server.enqueue(sse(wire.opening("a"), { end: "hold" }));
    const controller = new AbortController();
    const events: LlmEvent[] = [];
    let firstEvent!: () => void;
    const gotFirst = new Promise<void>((resolve) => firstEvent = resolve);
    const done = (async () => {
      for await (
        const event of providerFor(wire, server).stream(request(), { signal: controller.signal })
      ) {
        events.push(event);
        firstEvent();
      }
    })();
    // The first chunk is in; the server holds the rest, so the stream is waiting for more.
    await gotFirst;
    controller.abort();
    await done;
    assert.deepEqual(events.at(-1), { type: "finish", reason: "aborted" });
    await server.waitForCutOff(1);
    await server.waitForConnectionsClosed(1);
  });

  contractTest(wire, "ends aborted at its deadline and closes the connection", async () => {
    await using server = await startFakeLlmServer();
    server.enqueue(sse(wire.opening("a"), { end: "hold" }));
    const signal = AbortSignal.timeout(300);
    const events = await collect(providerFor(wire, server), request(), signal);
    assert.equal(finishOf(events).reason, "aborted");
    assert.ok(events.slice(0, -1).every((event) => event.type === "text-delta"));
    await server.waitForCutOff(1);
    await server.waitForConnectionsClosed(1);
  });

  contractTest(wire, "ends aborted without a request when already aborted", async () => {
    await using server = await startFakeLlmServer();
    const events = await collect(providerFor(wire, server), request(), AbortSignal.abort());
    assert.deepEqual(events, [{ type: "finish", reason: "aborted" }]);
    assert.equal(server.requests.length, 0);
  });

  contractTest(wire, "closes the connection when the consumer stops early", async () => {
    await using server = await startFakeLlmServer();
    server.enqueue(sse([...wire.opening("a"), wire.delta("b")], { end: "hold" }));
    for await (const event of providerFor(wire, server).stream(request(), { signal: NEVER })) {
      assert.equal(event.type, "text-delta");
      break;
    }
    await server.waitForCutOff(1);
    await server.waitForConnectionsClosed(1);
  });

  contractTest(wire, "ends aborted with an injected fetch that ignores the signal", async () => {
    const controller = new AbortController();
    const encoder = new TextEncoder();
    let cancelled = false;
    const fake: typeof fetch = () =>
      Promise.resolve(
        new Response(
          new ReadableStream<Uint8Array>({
            start(stream) {
              for (const item of wire.opening("x")) {
                stream.enqueue(encoder.encode(serializeSseItem(item)));
              }
            },
            cancel() {
              cancelled = true;
            },
          }),
          { headers: { "content-type": "text/event-stream" } },
        ),
      );
    const local = wire.make({ baseUrl: "http://127.0.0.1:9", fetch: fake });
    const events: LlmEvent[] = [];
    for await (const event of local.stream(request(), { signal: controller.signal })) {
      events.push(event);
      controller.abort();
    }
    assert.deepEqual(events, [
      { type: "text-delta", text: "x" },
      { type: "finish", reason: "aborted" },
    ]);
    assert.ok(cancelled);
  });
}
