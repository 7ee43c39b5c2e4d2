/**
 * A small server-sent events (SSE) parser over WHATWG streams.
 *
 * Follows the event-stream interpretation of the HTML standard: lines end with CRLF, LF or CR;
 * `event:`, `data:` and `id:` fields (one optional space after the colon); lines starting with
 * `:` are comments; a blank line dispatches the event; an event with no `data:` line is not
 * dispatched; an incomplete event at the end of the stream is discarded. `retry:` and unknown
 * fields are ignored.
 *
 * @module
 */

/** One dispatched server-sent event. */
export interface SseEvent {
  /** The `event:` field, or `message` when the event had none. */
  readonly event: string;
  /** The `data:` lines joined with `\n`. */
  readonly data: string;
  /** The last `id:` field seen so far in the stream, when there was one. */
  readonly id?: string;
}

/**
 * The incremental parser behind {@link SseParserStream}: feed it decoded text in chunks of any
 * size and it returns the events completed so far.
 *
 * @example Feeding text in pieces
 * ```ts
 * import assert from "node:assert/strict";
 * import { SseDecoder } from "./sse.ts";
 * const decoder = new SseDecoder();
 * assert.deepEqual(decoder.decode("data: he"), []);
 * assert.deepEqual(decoder.decode("llo\r\n\r\n"), [{ event: "message", data: "hello" }]);
 * ```
 */
export class SseDecoder {
  #buffer = "";
  /** The previous chunk ended in CR, so an LF at the start of the next one ends nothing. */
  #afterCr = false;
  #event = "";
  #data: string[] = [];
  #id: string | undefined;

  /**
   * Parses the next piece of the stream.
   *
   * @param text Decoded text, split anywhere
   * @returns The events this piece completed, in order
   */
  decode(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    if (this.#afterCr && text.startsWith("\n")) text = text.slice(1);
    this.#afterCr = false;
    const buffer = this.#buffer + text;
    let start = 0;
    // Next LF and CR at or after `start`; -1 once there are none left (each is searched once).
    let lf = -2;
    let cr = -2;
    for (;;) {
      if (lf !== -1 && lf < start) lf = buffer.indexOf("\n", start);
      if (cr !== -1 && cr < start) cr = buffer.indexOf("\r", start);
      const end = cr === -1 ? lf : lf === -1 ? cr : Math.min(cr, lf);
      if (end === -1) break;
      this.#line(buffer.slice(start, end), events);
      if (buffer[end] === "\r") {
        if (end + 1 === buffer.length) {
          this.#afterCr = true;
          start = end + 1;
          break;
        }
        start = buffer[end + 1] === "\n" ? end + 2 : end + 1;
      } else {
        start = end + 1;
      }
    }
    this.#buffer = buffer.slice(start);
    return events;
  }

  #line(line: string, events: SseEvent[]): void {
    if (line === "") return this.#dispatch(events);
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        this.#event = value;
        break;
      case "data":
        this.#data.push(value);
        break;
      case "id":
        if (!value.includes("\0")) this.#id = value;
        break;
    }
  }

  #dispatch(events: SseEvent[]): void {
    const data = this.#data;
    const event = this.#event || "message";
    this.#data = [];
    this.#event = "";
    if (data.length === 0) return;
    const id = this.#id;
    events.push({ event, data: data.join("\n"), ...(id === undefined ? {} : { id }) });
  }
}

/**
 * A `TransformStream` from decoded text to {@link SseEvent}s.
 *
 * @example Parsing two events
 * ```ts
 * import assert from "node:assert/strict";
 * import { SseParserStream } from "./sse.ts";
 * const events = await Array.fromAsync(
 *   ReadableStream.from(["event: a\r\ndata: 1\r\n", "data: 2\r\n\r\n: note\n\ndata: x\n\n"])
 *     .pipeThrough(new SseParserStream()),
 * );
 * assert.deepEqual(events, [
 *   { event: "a", data: "1\n2" },
 *   { event: "message", data: "x" },
 * ]);
 * ```
 */
export class SseParserStream extends TransformStream<string, SseEvent> {
  /** Creates the parser. */
  constructor() {
    const decoder = new SseDecoder();
    super({
      transform(chunk, controller): void {
        for (const event of decoder.decode(chunk)) controller.enqueue(event);
      },
    });
  }
}

/**
 * Decodes an HTTP body (UTF-8 bytes) into server-sent events.
 *
 * Cancelling the returned stream cancels `body`, which closes the connection under it.
 *
 * @example Reading a response body
 * ```ts
 * import assert from "node:assert/strict";
 * import { sseEvents } from "./sse.ts";
 * const body = new Response("data: [DONE]\n\n").body as ReadableStream<Uint8Array>;
 * const events = await Array.fromAsync(sseEvents(body));
 * assert.deepEqual(events, [{ event: "message", data: "[DONE]" }]);
 * ```
 *
 * @param body The response body
 * @returns The events, in order
 */
export function sseEvents(body: ReadableStream<Uint8Array>): ReadableStream<SseEvent> {
  return body.pipeThrough(new TextDecoderStream()).pipeThrough(new SseParserStream());
}
