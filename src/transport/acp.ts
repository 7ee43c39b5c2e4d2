/**
 * The transport contract: the ACP SDK's message types and its `Stream` (the one place they enter
 * the code base), and the fast paths a transport may offer beside it ({@link FastStream}).
 *
 * @module
 */
import type { AnyMessage, Stream } from "@agentclientprotocol/sdk";

export type {
  AnyMessage,
  AnyNotification,
  AnyRequest,
  AnyResponse,
  ErrorResponse,
  Result,
  Stream,
} from "@agentclientprotocol/sdk";

/** Inbound messages read one at a time: the part of a stream reader a consumer needs. */
export interface MessageSource {
  /** The next message, or `undefined` once the input has ended. */
  read(): Promise<AnyMessage | undefined>;
  /** Stops reading: the input is cancelled. */
  cancel(reason?: unknown): Promise<void>;
}

/** Options of {@link FastStream.writeMessage}. */
export interface WriteMessageOptions {
  /**
   * An answer that the task sending it follows with more messages (`session/new`'s and the
   * session's commands), which then go out in the same write.
   */
  readonly followed?: boolean;
}

/**
 * A stream pair that also offers the fast paths of a transport that frames messages itself (the
 * NDJSON stream of stdio): the same messages, in the same order, with fewer hand-offs. A consumer
 * finds them with {@link fastPathsOf} and falls back to `readable` and `writable` without them.
 *
 * Everything written through these methods and through `writable` goes out in call order, except
 * where a method says it may pass messages still queued in `writable`.
 */
export interface FastStream extends Stream {
  /**
   * Writes a message as `writable`'s `write` does, without the stream around it (one hand-off
   * less per message): in order with every message written through `writable` and these methods.
   * Returns a promise only when a lot is waiting, to wait on before writing more.
   *
   * @param message The message
   * @param options `followed`: the answer's task sends more that shares its write
   */
  writeMessage(message: AnyMessage, options?: WriteMessageOptions): Promise<void> | undefined;
  /**
   * Writes messages in order, coalesced into few writes; resolves once they are written.
   * They may go out ahead of messages still queued in the writable.
   */
  writeMany(messages: readonly AnyMessage[]): Promise<void>;
  /**
   * Writes messages already framed: JSON texts on one line each, each followed by a newline (a
   * `session/load` replay, the transport's half of the session's replay sink). They go out in one
   * write after every message written before (like {@link writeMany}'s, they may pass messages
   * still queued in the writable); the bytes are written as they are, so must not change
   * afterwards. Resolves once they are written.
   */
  writeFrames(frames: Uint8Array): Promise<void>;
  /**
   * The inbound messages without the stream around them: what `readable` delivers, read by a
   * consumer that takes them one at a time. Read from this or from `readable`, not both.
   */
  readonly messages: MessageSource;
}

/**
 * The fast paths of a stream, when it offers them all (see {@link FastStream}); `undefined` for
 * a plain stream pair (memory, HTTP), which is then used through `readable` and `writable`.
 *
 * @example A memory pair has none
 * ```ts
 * import assert from "node:assert/strict";
 * import { fastPathsOf } from "./acp.ts";
 * import { createMemoryPair } from "./memory.ts";
 * const [stream] = createMemoryPair();
 * assert.equal(fastPathsOf(stream), undefined);
 * ```
 *
 * @example An NDJSON stream has them
 * ```ts
 * import assert from "node:assert/strict";
 * import { fastPathsOf } from "./acp.ts";
 * import { ndJsonStream } from "./nd_json_stream.ts";
 * const stream = ndJsonStream(new WritableStream(), new ReadableStream());
 * const fast = fastPathsOf(stream);
 * assert(fast !== undefined);
 * void fast.writeMessage({ jsonrpc: "2.0", method: "ping" });
 * ```
 *
 * @param stream A transport's stream pair
 * @returns The same stream typed as a {@link FastStream}, or `undefined`
 */
export function fastPathsOf(stream: Stream): FastStream | undefined {
  const fast = stream as Partial<FastStream>;
  return typeof fast.writeMessage === "function" && typeof fast.writeMany === "function" &&
      typeof fast.writeFrames === "function" && typeof fast.messages === "object" &&
      fast.messages !== null
    ? stream as FastStream
    : undefined;
}
