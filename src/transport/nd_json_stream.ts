import type { AnyMessage, FastStream, MessageSource } from "./acp.ts";
import { ExactIds, LineReader } from "./_line_reader.ts";
import { WriteCoalescer } from "./_write_coalescer.ts";
/** Default cap on one inbound message, in bytes. */
export const DEFAULT_MAX_MESSAGE_BYTES: number = 32 * 1024 * 1024;

/** Options for {@link ndJsonStream}. */
export interface NdJsonStreamOptions {
  /**
   * Largest inbound message in bytes. A longer line is dropped and answered with a -32600 error;
   * the stream keeps going.
   * @default {32 MiB}
   */
  readonly maxMessageBytes?: number;
  /** Told about every line that could not be delivered. */
  readonly onInvalid?: (reason: string) => void;
  /**
   * Schedules the write of a burst of messages; runtimes pass `setImmediate`.
   *
   * - Given: a message goes out at once when no write is under way, else with the others sent
   *   meanwhile when that write ends; what the task delivering an inbound message sends waits
   *   for its answer (or for `defer`), so a prompt's last updates and its answer share one write.
   * - Not given: the first few messages of a burst go out at once, the rest together when
   *   `setTimeout(flush, 0)` fires.
   * @default {setTimeout(flush, 0)}
   */
  readonly defer?: (flush: () => void) => void;
  /**
   * Awaited when the input ends, after every earlier message was consumed and before the
   * readable side closes: the place to finish in-flight work while answers can still be written.
   */
  readonly onInputEnd?: () => Promise<void>;
}

/** A framed stream pair with its fast paths, that can also say when its output is written. */
export interface NdJsonStream extends FastStream {
  /** Resolves once every message written so far has reached the output. */
  drained(): Promise<void>;
}

/**
 * Frames JSON-RPC messages as newline-delimited JSON over a pair of byte streams.
 *
 * Unlike a plain framer it never gives up on the input: a line that is not JSON gets a -32700
 * answer, a JSON value that is not a message object (or a batch) gets -32600, and a line over the
 * size cap is skipped and answered with -32600 (with the request id when it can be read from the
 * start of the line). Each message is one compact JSON text plus `\n`; the first messages of a
 * burst are written at once, the rest coalesced into one write when `defer` fires.
 *
 * @example Framing a pair of byte streams (stdout and stdin in the runtime entry points)
 * ```ts
 * import assert from "node:assert/strict";
 * import { ndJsonStream } from "./nd_json_stream.ts";
 * const bytes = new TextEncoder().encode('{"jsonrpc":"2.0","id":1,"method":"ping"}\nnot json\n');
 * const input = new Blob([bytes]).stream();
 * const output = new TransformStream<Uint8Array, Uint8Array>();
 * const stream = ndJsonStream(output.writable, input, { maxMessageBytes: 1 << 20 });
 * const written = new Response(output.readable).text();
 * assert.deepEqual(await stream.messages.read(), { jsonrpc: "2.0", id: 1, method: "ping" });
 * assert.equal(await stream.messages.read(), undefined);
 * await stream.writable.close();
 * assert.match(await written, /"code":-32700/);
 * ```
 *
 * @param output Where encoded messages go
 * @param input Where encoded messages come from
 * @param options Size cap and diagnostics
 * @returns The message stream pair, plus `drained()`
 */
export function ndJsonStream(
  output: WritableStream<Uint8Array>,
  input: ReadableStream<Uint8Array>,
  options: NdJsonStreamOptions = {},
): NdJsonStream {
  const exactIds = new ExactIds();
  const out = new WriteCoalescer(output.getWriter(), {
    defer: options.defer,
    serialize: (message) => exactIds.serialize(message),
  });
  const lines = new LineReader({
    maxMessageBytes: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    exactIds,
    answer: (message) => void out.send(message).catch(() => {}),
    onInvalid: options.onInvalid,
  });
  const reader = input.getReader();
  const messages = inbound(reader, lines, out, options.onInputEnd);
  return {
    readable: new ReadableStream<AnyMessage>({
      async pull(controller) {
        const message = await messages.read();
        if (message === undefined) controller.close();
        else controller.enqueue(message);
      },
      cancel: (reason) => reader.cancel(reason),
    }, { highWaterMark: 0 }),
    writable: new WritableStream<AnyMessage>({
      write: (message) => out.write(message),
      close: () => out.close(),
      abort: () => out.abort(),
    }),
    messages,
    writeMessage: (message, options) => out.write(message, options),
    writeMany: (many) => out.writeMany(many),
    writeFrames: (frames) => out.writeFrames(frames),
    drained: () => out.drained(),
  };
}

/**
 * The inbound messages, pulled with no buffering: a chunk is read from the input only when the
 * consumer asks and no message is waiting, so when the input ends every earlier message has
 * already been taken.
 */
function inbound(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  lines: LineReader,
  out: WriteCoalescer,
  onInputEnd: (() => Promise<void>) | undefined,
): MessageSource {
  let ended = false;
  /** What follows the end of the input (`onInputEnd`), once begun. */
  let finished: Promise<void> | undefined;
  return {
    async read(): Promise<AnyMessage | undefined> {
      while (!lines.hasReady) {
        if (ended) {
          finished ??= (async () => {
            await onInputEnd?.();
            reader.releaseLock();
          })();
          await finished;
          return undefined;
        }
        // Answers (and errors for bad lines) wait for a client that does not read: read no more
        // until they are written.
        if (out.backedUp) await out.handedOver();
        const { value, done } = await reader.read();
        if (done) {
          ended = true;
          lines.end();
        } else lines.push(value);
      }
      out.hold();
      return lines.shift() as AnyMessage;
    },
    cancel(reason?: unknown): Promise<void> {
      return ended ? Promise.resolve() : reader.cancel(reason);
    },
  };
}
