/**
 * A network provider's answer as {@link LlmEvent}s: {@link streamLlmEvents} POSTs (see
 * `post_json.ts`), reads the server-sent events of the body and hands each to the provider's
 * {@link LlmStreamDecoder}, which turns its wire format into events collected in an
 * {@link LlmEventBatch}. Every failure ends the stream as data (a `finish` with its error).
 *
 * @module
 */
import { type LlmEvent, ProviderError } from "./provider.ts";
import { openEventStream, type PostJsonOptions } from "./post_json.ts";
import { streamReadError, truncatedStreamError } from "./provider_errors.ts";
import { SseDecoder } from "./sse.ts";

/** The `finish` event that ends every provider stream. */
export type LlmFinishEvent = Extract<LlmEvent, { type: "finish" }>;

/** Any provider event but `finish`. */
export type LlmStreamEvent = Exclude<LlmEvent, { type: "finish" }>;

/** What {@link LlmEventBatch.take} returns when there is nothing to take. */
const NO_EVENTS: readonly LlmStreamEvent[] = Object.freeze([]);

/** `TextDecoder.decode` options for a chunk of a longer body. */
const STREAMING: TextDecodeOptions = { stream: true };

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
 * counts as a failed request, see {@link openEventStream}); a decoder throw ends it with that
 * {@link ProviderError}, or with a retryable `transport` error for any other throw, as does a
 * failed read. The body is cancelled (closing the connection) when the stream fails, when the
 * consumer stops early, and once the consumer has taken the `finish` of a stream that completed
 * before its body ended: after its last events, because a cancel holds them up (on Node.js,
 * fetch's cancel costs about as much as the rest of the way from the socket to the client, and a
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
    const opened = await openEventStream(request());
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
    const chunks = new ChunkDecoder(decoder);
    read: for (;;) {
      const next = await reader.read();
      if (signal.aborted) break;
      const finish = chunks.feed(next);
      bodyEnded = next.done;
      for (const event of chunks.batch.take()) {
        if (signal.aborted) break read;
        yield event;
      }
      if (finish !== undefined) {
        if (signal.aborted) break;
        return yield finish;
      }
    }
  } catch (error) {
    if (!signal.aborted) failure = error instanceof ProviderError ? error : streamReadError(error);
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
    error: failure ?? truncatedStreamError("The provider stream ended without a finish"),
  };
}

/**
 * Decodes the body of one stream chunk by chunk: UTF-8, then server-sent events, each handed to
 * the provider's decoder, whose events collect in {@link ChunkDecoder.batch}.
 */
class ChunkDecoder {
  /** The events of the chunks fed so far, to take after each. */
  readonly batch: LlmEventBatch = new LlmEventBatch();
  readonly #decoder: LlmStreamDecoder;
  readonly #text = new TextDecoder();
  readonly #sse = new SseDecoder();
  /** What the decoder said last: read on, the stream is complete, or its `finish`. */
  #outcome: undefined | "end" | LlmFinishEvent = undefined;
  readonly #listener = (data: string, event: string): boolean => {
    this.#outcome = this.#decoder.event(data, event, this.batch);
    return this.#outcome === undefined;
  };

  constructor(decoder: LlmStreamDecoder) {
    this.#decoder = decoder;
  }

  /**
   * Decodes one read of the body (its last one when `done`).
   *
   * @returns The `finish` that ends the stream once there is one (read nothing more), else
   *   `undefined`
   */
  feed(next: ReadableStreamReadResult<Uint8Array>): LlmFinishEvent | undefined {
    const text = next.done ? this.#text.decode() : this.#text.decode(next.value, STREAMING);
    this.#sse.feed(text, this.#listener);
    if (this.#outcome === undefined && next.done) this.#outcome = "end";
    if (this.#outcome === "end") this.#outcome = this.#decoder.end(this.batch);
    return this.#outcome;
  }
}
