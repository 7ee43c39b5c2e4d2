/**
 * A `session/load` replay written as NDJSON bytes: each `session/update` notification is the
 * connection's envelope, serialized and encoded once per session, around the update's JSON.
 *
 * @module
 */
import type { SessionUpdate } from "../protocol/acp_types.ts";

/** Where a replay can write its notifications already framed. */
export interface ReplayFrameSink {
  /** A notification's text before its update's JSON (`{"jsonrpc":"2.0",…,"update":`). */
  readonly head: string;
  /** A notification's text after its update's JSON, the newline included (`}}` and `\n`). */
  readonly tail: string;
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
 * The notifications of a replay, built batch by batch: each is the sink's envelope around its
 * update's JSON, and a batch is encoded at once when `take` hands it over (one encoding of a
 * batch costs less than one per update).
 *
 * @example An update written as a notification
 * ```ts
 * import assert from "node:assert/strict";
 * import { ReplayFrames } from "./replay_frames.ts";
 * const frames = new ReplayFrames({
 *   head: '{"method":"session/update","params":{"sessionId":"s1","update":',
 *   tail: "}}\n",
 * });
 * frames.update({ sessionUpdate: "session_info_update", title: "Fix it" });
 * assert.deepEqual(JSON.parse(new TextDecoder().decode(frames.take())), {
 *   method: "session/update",
 *   params: { sessionId: "s1", update: { sessionUpdate: "session_info_update", title: "Fix it" } },
 * });
 * ```
 */
export class ReplayFrames {
  readonly #head: string;
  readonly #tail: string;
  #text = "";

  /** @param sink The envelope of each notification */
  constructor(sink: Pick<ReplayFrameSink, "head" | "tail">) {
    this.#head = sink.head;
    this.#tail = sink.tail;
  }

  /** Whether nothing was built since the last {@link take}. */
  get empty(): boolean {
    return this.#text === "";
  }

  /**
   * Adds the notification of an update.
   *
   * @param update The update
   */
  update(update: SessionUpdate): void {
    this.#text += this.#head + JSON.stringify(update) + this.#tail;
  }

  /**
   * Hands over the notifications built so far.
   *
   * @returns Their bytes
   */
  take(): Uint8Array {
    const bytes = encoder.encode(this.#text);
    this.#text = "";
    return bytes;
  }
}
