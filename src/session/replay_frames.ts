/**
 * A `session/load` replay written as NDJSON bytes: each `session/update` notification is the
 * connection's envelope, serialized and encoded once per session, around the update's JSON.
 *
 * @module
 */
import type { SessionUpdate } from "../transport/acp_types.ts";
import { concatBytes } from "../util/concat_bytes.ts";

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
 * Built text is encoded in pieces of about this many UTF-16 code units (at most 64 KiB of string
 * even when two bytes a unit). On Node.js 20 a string of 128 KiB or more costs about forty times
 * as much to make as smaller ones (it goes to the large-object space), and a replay batch built
 * as one string is about 130 KiB: encoding a `session/load` replay (8,402 notifications) in pieces
 * took a quarter less time. Deno and Bun take as long either way.
 */
const PIECE_UNITS = 32 * 1024;

/**
 * The notifications of a replay, built batch by batch: each is the sink's envelope around its
 * update's JSON; the text is encoded in pieces of about 32 Ki code units as it grows and handed
 * over as one array by `take`.
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
  /** Text not encoded yet. */
  #text = "";
  /** Pieces encoded since the last {@link take}. */
  #pieces: Uint8Array[] = [];

  /** @param sink The envelope of each notification */
  constructor(sink: Pick<ReplayFrameSink, "head" | "tail">) {
    this.#head = sink.head;
    this.#tail = sink.tail;
  }

  /** Whether nothing was built since the last {@link take}. */
  get empty(): boolean {
    return this.#text === "" && this.#pieces.length === 0;
  }

  /**
   * Adds the notification of an update.
   *
   * @param update The update
   */
  update(update: SessionUpdate): void {
    this.#text += this.#head + JSON.stringify(update) + this.#tail;
    if (this.#text.length >= PIECE_UNITS) this.#encode();
  }

  /**
   * Hands over the notifications built so far.
   *
   * @returns Their bytes
   */
  take(): Uint8Array {
    if (this.#text !== "" || this.#pieces.length === 0) this.#encode();
    const bytes = concatBytes(this.#pieces);
    this.#pieces = [];
    return bytes;
  }

  /** Encodes the text built since the last piece as the next piece. */
  #encode(): void {
    this.#pieces.push(encoder.encode(this.#text));
    this.#text = "";
  }
}
