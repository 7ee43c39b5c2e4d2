/**
 * A `session/load` replay written as NDJSON bytes: each `session/update` notification is the
 * connection's envelope, serialized and encoded once per session, around the update's JSON.
 *
 * @module
 */
import type { SessionUpdate } from "../protocol/acp_types.ts";

/** Where a replay can write its notifications already framed. */
export interface ReplayFrameSink {
  /** A notification's bytes before its update's JSON (`{"jsonrpc":"2.0",…,"update":`). */
  readonly head: Uint8Array;
  /** A notification's bytes after its update's JSON, the newline included (`}}` and `\n`). */
  readonly tail: Uint8Array;
  /**
   * Writes whole notifications (each a JSON text and a newline), in order with everything else
   * the connection writes.
   *
   * @param frames The notifications
   * @returns Once they are written
   */
  write(frames: Uint8Array): Promise<void>;
}

const encoder = new TextEncoder();

/**
 * The notifications of a replay, built batch by batch into one buffer: each is the sink's
 * envelope, encoded once, around its update's JSON; `take` hands over what was built so far.
 *
 * @example An update written as a notification
 * ```ts
 * import assert from "node:assert/strict";
 * import { ReplayFrames } from "./replay_frames.ts";
 * const encoder = new TextEncoder();
 * const frames = new ReplayFrames({
 *   head: encoder.encode('{"method":"session/update","params":{"sessionId":"s1","update":'),
 *   tail: encoder.encode("}}\n"),
 * });
 * frames.update({ sessionUpdate: "session_info_update", title: "Fix it" });
 * assert.deepEqual(JSON.parse(new TextDecoder().decode(frames.take())), {
 *   method: "session/update",
 *   params: { sessionId: "s1", update: { sessionUpdate: "session_info_update", title: "Fix it" } },
 * });
 * ```
 */
export class ReplayFrames {
  readonly #head: Uint8Array;
  readonly #tail: Uint8Array;
  #bytes: Uint8Array = new Uint8Array(64 * 1024);
  #length = 0;

  /** @param sink The envelope of each notification */
  constructor(sink: Pick<ReplayFrameSink, "head" | "tail">) {
    this.#head = sink.head;
    this.#tail = sink.tail;
  }

  /** Whether nothing was built since the last {@link take}. */
  get empty(): boolean {
    return this.#length === 0;
  }

  /**
   * Adds the notification of an update.
   *
   * @param update The update
   */
  update(update: SessionUpdate): void {
    const json = JSON.stringify(update);
    // Room for the worst case: three bytes of UTF-8 per UTF-16 unit.
    this.#reserve(this.#head.byteLength + json.length * 3 + this.#tail.byteLength);
    this.#bytes.set(this.#head, this.#length);
    this.#length += this.#head.byteLength;
    this.#length += encoder.encodeInto(json, this.#bytes.subarray(this.#length)).written;
    this.#bytes.set(this.#tail, this.#length);
    this.#length += this.#tail.byteLength;
  }

  /**
   * Hands over the notifications built so far (the buffer is not touched again).
   *
   * @returns Their bytes
   */
  take(): Uint8Array {
    const taken = this.#bytes.subarray(0, this.#length);
    this.#bytes = new Uint8Array(Math.max(64 * 1024, this.#length + (this.#length >> 3)));
    this.#length = 0;
    return taken;
  }

  #reserve(bytes: number): void {
    if (this.#length + bytes <= this.#bytes.byteLength) return;
    const grown = new Uint8Array(Math.max(this.#bytes.byteLength * 2, this.#length + bytes));
    grown.set(this.#bytes.subarray(0, this.#length));
    this.#bytes = grown;
  }
}
