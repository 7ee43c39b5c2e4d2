/**
 * The outbound half of the NDJSON stream: messages framed and coalesced into few writes on a
 * byte writer (see {@link WriteCoalescer}).
 *
 * @module
 */
import type { AnyMessage, WriteMessageOptions } from "./acp.ts";

/** Characters handed to the output and not written, past which producers and reading wait. */
const HIGH_WATER_CHARS = 1 << 20;
/** Messages of a burst written one by one before the rest are coalesced. */
const WRITE_THROUGH = 8;

/** What a {@link WriteCoalescer} is built from. */
export interface WriteCoalescerOptions {
  /**
   * Schedules the write of a burst; runtimes pass `setImmediate`. See {@link WriteCoalescer}.
   * @default {setTimeout(flush, 0)}
   */
  readonly defer?: ((flush: () => void) => void) | undefined;
  /**
   * A message as one compact JSON text, without the newline.
   * @default {JSON.stringify}
   */
  readonly serialize?: ((message: unknown) => string) | undefined;
}

/**
 * Frames messages as NDJSON onto a byte writer, in order, coalescing what comes in bursts into
 * one write instead of one small write each.
 *
 * - Without a `defer` as quick as `setImmediate`, the first few messages after a quiet spell are
 *   written at once (no added latency: a turn's last updates and its answer); when more keep
 *   coming before `setTimeout(flush, 0)` fires (a burst: a replay, streamed deltas) the rest go
 *   out together then.
 * - With one, a message is written at once when no write is under way (a streamed delta just
 *   read from the model goes out without waiting for anything), and the messages sent while one
 *   is under way go out together when it ends. While an inbound message is being answered
 *   ({@link hold}), what its task sends waits for its answer or for `defer`: one write. An answer
 *   goes out at once with what was held before it, unless it is `followed`: then what its task
 *   sends next shares its write.
 *
 * Accepting a message does not wait for it to reach the output unless a lot is already waiting:
 * the producer can go on while the previous batch is written.
 *
 * @example A burst in order
 * ```ts
 * import assert from "node:assert/strict";
 * import { WriteCoalescer } from "./_write_coalescer.ts";
 * const chunks: Uint8Array[] = [];
 * const output = new WritableStream<Uint8Array>({ write: (chunk) => void chunks.push(chunk) });
 * const out = new WriteCoalescer(output.getWriter());
 * for (let id = 0; id < 20; id++) out.write({ jsonrpc: "2.0", id, result: {} });
 * await out.drained();
 * const text = chunks.map((chunk) => new TextDecoder().decode(chunk)).join("");
 * assert.equal(text.split("\n").length, 21);
 * assert(chunks.length < 20);
 * ```
 */
export class WriteCoalescer {
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #encoder = new TextEncoder();
  /** Whether bursts end when `setTimeout(flush, 0)` fires (no `defer` given). */
  readonly #timed: boolean;
  readonly #defer: (flush: () => void) => void;
  readonly #serialize: (message: unknown) => string;
  /** The last write handed to the output, settled or not. */
  #writes: Promise<void> = Promise.resolve();
  /** Framed messages not handed to the output yet. */
  #batch: string[] = [];
  #batchChars = 0;
  #bursting = false;
  #sentInBurst = 0;
  /** The promise shared by the messages waiting in the batch, and how to settle it. */
  #nextWrite: Promise<void> | undefined;
  #settleNext: (write: Promise<void>) => void = () => {};
  /** With a `defer`: writes handed to the output and not finished. */
  #inFlight = 0;
  /** With a `defer`: whether what is sent now is held (an inbound message is being answered). */
  #holding = false;
  /** Bytes handed to the output and not written yet: a client that does not read holds them. */
  #unwritten = 0;

  /**
   * @param writer The output's writer, used by this alone
   * @param options `defer` and `serialize`
   */
  constructor(
    writer: WritableStreamDefaultWriter<Uint8Array>,
    options: WriteCoalescerOptions = {},
  ) {
    this.#writer = writer;
    this.#timed = options.defer === undefined;
    this.#defer = options.defer ?? ((flush: () => void) => setTimeout(flush, 0));
    this.#serialize = options.serialize ?? JSON.stringify;
  }

  /** Whether a lot is handed to the output and not written: reading more should wait. */
  get backedUp(): boolean {
    return this.#unwritten > HIGH_WATER_CHARS;
  }

  /** Resolves once what was handed to the output so far is written. */
  handedOver(): Promise<void> {
    return this.#writes;
  }

  /**
   * Sends a message (see the class); the promise tells when it is written.
   *
   * @param message The message
   * @param followed Whether it is an answer that its task follows with more messages
   * @returns Settles once the message is written
   */
  send(message: unknown, followed = false): Promise<void> {
    const text = this.#serialize(message) + "\n";
    this.#batch.push(text);
    this.#batchChars += text.length;
    if (this.#timed) {
      if (!this.#bursting) this.#startBurst();
      if (++this.#sentInBurst <= WRITE_THROUGH) return this.#flush();
    } else if (!followed && isAnswer(message)) {
      // The client waits for an answer; whatever else the task does meanwhile can follow in the
      // next write.
      return this.flush();
    } else if (!this.#holding && this.#inFlight === 0) {
      return this.#flush();
    }
    this.#nextWrite ??= new Promise<void>((resolve, reject) => {
      this.#settleNext = (write) => write.then(resolve, reject);
    });
    return this.#nextWrite;
  }

  /**
   * Sends a message without waiting for it unless a lot is waiting (to be written, or for the
   * client to read): then it is written now and the promise returned is to wait on.
   *
   * @param message The message
   * @param options `followed` (see {@link send})
   * @returns A promise to wait on before sending more, or `undefined`
   */
  write(message: AnyMessage, options?: WriteMessageOptions): Promise<void> | undefined {
    const written = this.send(message, options?.followed);
    written.catch(() => {});
    if (this.#batchChars + this.#unwritten <= HIGH_WATER_CHARS) return undefined;
    this.flush();
    return written;
  }

  /**
   * Sends messages in order, waiting whenever a lot is waiting.
   *
   * @param messages The messages
   * @returns Settles once the last is written
   */
  async writeMany(messages: readonly AnyMessage[]): Promise<void> {
    let last: Promise<void> = Promise.resolve();
    for (const message of messages) {
      last = this.send(message);
      last.catch(() => {});
      if (this.#batchChars + this.#unwritten > HIGH_WATER_CHARS) {
        this.flush();
        await last;
      }
    }
    await last;
  }

  /**
   * Writes bytes already framed, in one write after everything sent before.
   *
   * @param frames NDJSON lines; must not change afterwards
   * @returns Settles once they are written
   */
  writeFrames(frames: Uint8Array): Promise<void> {
    this.flush();
    return this.#handOver(frames);
  }

  /** An inbound message is being delivered: with a `defer`, what its task sends is held. */
  hold(): void {
    if (this.#timed || this.#holding) return;
    this.#holding = true;
    this.#defer(() => {
      this.#holding = false;
      this.flush();
    });
  }

  /**
   * Writes what is waiting now, held or not, and settles the promise the waiting messages share.
   *
   * @returns Settles once it is written
   */
  flush(): Promise<void> {
    const settle = this.#settleNext;
    this.#settleNext = () => {};
    this.#nextWrite = undefined;
    const write = this.#flush();
    settle(write);
    return write;
  }

  /**
   * Resolves once every message sent so far has reached the output. Messages can still come from
   * a writable's queue when the last batch finishes, so it waits until a whole round passes with
   * nothing new to write.
   */
  async drained(): Promise<void> {
    let last: Promise<void>;
    do {
      last = this.#writes;
      await last;
      await new Promise((resolve) => setTimeout(resolve, 0));
    } while (
      last !== this.#writes || this.#batch.length > 0 || this.#bursting || this.#holding
    );
  }

  /** Writes what is waiting and closes the output. */
  async close(): Promise<void> {
    this.flush();
    await this.#writes;
    await this.#writer.close().catch(() => {});
  }

  /** Aborts the output. */
  async abort(): Promise<void> {
    await this.#writer.abort().catch(() => {});
  }

  #startBurst(): void {
    this.#bursting = true;
    this.#sentInBurst = 0;
    this.#defer(() => {
      this.#bursting = false;
      this.flush();
    });
  }

  /** Hands the batch to the output as one write. */
  #flush(): Promise<void> {
    if (this.#batch.length === 0) return this.#writes;
    const batch = this.#batch;
    const bytes = this.#encoder.encode(batch.length === 1 ? batch[0] : batch.join(""));
    this.#batch = [];
    this.#batchChars = 0;
    const write = this.#handOver(bytes);
    if (!this.#timed) {
      this.#inFlight++;
      void this.#writes.then(this.#afterWrite);
    }
    return write;
  }

  #handOver(bytes: Uint8Array): Promise<void> {
    this.#unwritten += bytes.byteLength;
    const write = this.#writes.then(() => this.#writer.write(bytes));
    const written = (): void => {
      this.#unwritten -= bytes.byteLength;
    };
    this.#writes = write.then(written, written);
    return write;
  }

  /** The messages sent while the write was under way go out now, unless they are held. */
  readonly #afterWrite = (): void => {
    if (--this.#inFlight === 0 && this.#batch.length > 0 && !this.#holding) this.flush();
  };
}

/** Whether a message is an answer (a result or an error), not a request or a notification. */
function isAnswer(message: unknown): boolean {
  return typeof message === "object" && message !== null && !("method" in message) &&
    "id" in message;
}
