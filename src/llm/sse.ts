/**
 * A small incremental server-sent events (SSE) parser: decoded text in, events out.
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
 * Receives each event an {@link SseDecoder} dispatches: the `data:` lines joined with `\n`, the
 * event name (`message` when the event had none) and the last `id:` seen so far in the stream.
 * Returning `false` stops the decoding (see {@link SseDecoder.feed}).
 */
export type SseListener = (data: string, event: string, id: string | undefined) => boolean | void;

const LF = 10;
const SPACE = 32;
const COLON = 58;

/**
 * The incremental parser: feed it decoded text in chunks of any size and it returns (or calls
 * back with) the events completed so far. An incomplete event is kept until the text that
 * completes it arrives (and is never dispatched if none does).
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
  /** The `data:` lines of the event so far, joined with `\n`; `undefined` before the first. */
  #data: string | undefined;
  #id: string | undefined;

  /**
   * Parses the next piece of the stream.
   *
   * @param text Decoded text, split anywhere
   * @returns The events this piece completed, in order
   */
  decode(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    this.feed(text, (data, event, id) => {
      events.push(id === undefined ? { event, data } : { event, data, id });
    });
    return events;
  }

  /**
   * Parses the next piece of the stream, calling `listener` for each event it completes, in
   * order, without building event objects.
   *
   * @example Reading data as it completes
   * ```ts
   * import assert from "node:assert/strict";
   * import { SseDecoder } from "./sse.ts";
   * const seen: string[] = [];
   * new SseDecoder().feed("data: 1\n\nevent: e\ndata: 2\n\n", (data, event) => {
   *   seen.push(`${event}:${data}`);
   * });
   * assert.deepEqual(seen, ["message:1", "e:2"]);
   * ```
   *
   * @param text Decoded text, split anywhere
   * @param listener Called per event; returning `false` stops at once (the rest of `text` is
   *   dropped, and the decoder must not be fed again)
   * @returns `false` when `listener` stopped the decoding, else `true`
   */
  feed(text: string, listener: SseListener): boolean {
    if (text === "") return true;
    if (this.#afterCr) {
      this.#afterCr = false;
      if (text.charCodeAt(0) === LF) text = text.slice(1);
    }
    const buffer = this.#buffer === "" ? text : this.#buffer + text;
    let start = 0;
    // Next LF and CR at or after `start`; -1 once there are none left (each is searched once).
    let lf = -2;
    let cr = -2;
    for (;;) {
      if (lf !== -1 && lf < start) lf = buffer.indexOf("\n", start);
      if (cr !== -1 && cr < start) cr = buffer.indexOf("\r", start);
      const end = cr === -1 ? lf : lf === -1 ? cr : cr < lf ? cr : lf;
      if (end === -1) break;
      if (!this.#line(buffer, start, end, listener)) {
        this.#buffer = "";
        return false;
      }
      if (end === cr) {
        if (end + 1 === buffer.length) {
          this.#afterCr = true;
          start = end + 1;
          break;
        }
        start = buffer.charCodeAt(end + 1) === LF ? end + 2 : end + 1;
      } else {
        start = end + 1;
      }
    }
    this.#buffer = start === 0 ? buffer : buffer.slice(start);
    return true;
  }

  /** Interprets the line `buffer[start, end)`; `false` when the listener stopped. */
  #line(buffer: string, start: number, end: number, listener: SseListener): boolean {
    if (start === end) return this.#dispatch(listener);
    // `data:` lines first: all but a few lines of a model stream are.
    if (buffer.startsWith("data:", start)) {
      let from = start + 5;
      if (from < end && buffer.charCodeAt(from) === SPACE) from++;
      const value = buffer.slice(from, end);
      this.#data = this.#data === undefined ? value : `${this.#data}\n${value}`;
      return true;
    }
    if (buffer.charCodeAt(start) === COLON) return true;
    const line = buffer.slice(start, end);
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === SPACE) value = value.slice(1);
    switch (field) {
      case "event":
        this.#event = value;
        break;
      case "data":
        this.#data = this.#data === undefined ? value : `${this.#data}\n${value}`;
        break;
      case "id":
        if (!value.includes("\0")) this.#id = value;
        break;
    }
    return true;
  }

  #dispatch(listener: SseListener): boolean {
    const data = this.#data;
    const event = this.#event || "message";
    this.#data = undefined;
    this.#event = "";
    if (data === undefined) return true;
    return listener(data, event, this.#id) !== false;
  }
}
