import type { AnyMessage, Stream } from "./acp.ts";
import { topLevelNumber } from "./json_number.ts";

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
   * Schedules the write of a burst of messages; runtimes pass `setImmediate`. Given, what is sent
   * in the task that delivered an inbound message waits for it or for an answer, whichever comes
   * first (a prompt's updates go out with its answer, in one write); an answer is written at once
   * unless it is `followed` (see `writeMessage`); any other message is written at once when no
   * write is under way (a streamed delta), else with the others sent meanwhile when that write
   * ends.
   * Without it, the first few messages of a burst are written at once and the rest when
   * `setTimeout(flush, 0)` fires.
   * @default {setTimeout(flush, 0)}
   */
  readonly defer?: (flush: () => void) => void;
  /**
   * Awaited when the input ends, after every earlier message was consumed and before the
   * readable side closes: the place to finish in-flight work while answers can still be written.
   */
  readonly onInputEnd?: () => Promise<void>;
}

/** A framed stream pair that can say when its output is written. */
export interface NdJsonStream extends Stream {
  /**
   * Writes messages in order, coalesced into few writes; resolves once they are written.
   * They may go out ahead of messages still queued in the writable.
   */
  writeMany(messages: readonly AnyMessage[]): Promise<void>;
  /**
   * Writes messages already framed: JSON texts on one line each, each followed by a newline (a
   * `session/load` replay). They go out in one write after every message written before (like
   * {@link writeMany}'s, they may pass messages still queued in the writable); the bytes are
   * written as they are, so must not change afterwards. Resolves once they are written.
   */
  writeFrames(frames: Uint8Array): Promise<void>;
  /** Resolves once every message written so far has reached the output. */
  drained(): Promise<void>;
  /**
   * Writes a message as `writable`'s `write` does, without the stream around it (one hand-off
   * less per message): in order with every message written through `writable` and these methods.
   * Returns a promise only when a lot is waiting, to wait on before writing more.
   *
   * @param message The message
   * @param options `followed`: an answer that the task sending it follows with more messages
   *   (`session/new`'s and the session's commands), which then go out in the same write
   */
  writeMessage(
    message: AnyMessage,
    options?: { readonly followed?: boolean },
  ): Promise<void> | undefined;
  /**
   * The inbound messages without the stream around them: what `readable` delivers, read by a
   * consumer that takes them one at a time. Read from this or from `readable`, not both.
   */
  readonly messages: MessageSource;
}

/** Inbound messages read one at a time: the part of a stream reader a consumer needs. */
export interface MessageSource {
  /** The next message, or `undefined` once the input has ended. */
  read(): Promise<AnyMessage | undefined>;
  /** Stops reading: the input is cancelled. */
  cancel(reason?: unknown): Promise<void>;
}

/** A transport that can take many outbound messages at once, past its writable's queue. */
export type BulkWriter = Pick<NdJsonStream, "writeMany">;

/** A transport that can take outbound messages already framed as NDJSON bytes. */
export type FrameWriter = Pick<NdJsonStream, "writeFrames">;

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const HIGH_WATER_CHARS = 1 << 20;
/** Messages of a burst written one by one before the rest are coalesced. */
const WRITE_THROUGH = 8;

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
 * ```ts ignore
 * import { ndJsonStream } from "./nd_json_stream.ts";
 * const stream = ndJsonStream(output, input, { maxMessageBytes: 1 << 20 });
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
  const maxBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const encoder = new TextEncoder();
  const writer = output.getWriter();
  // Without a `defer` as quick as `setImmediate`, the first few messages after a quiet spell are
  // written at once (no added latency: a turn's last updates and its answer); when more keep
  // coming before `defer` fires (a burst: a replay, streamed deltas) the rest are coalesced into
  // one write then, instead of one small write each.
  // With one, a message is written at once when no write is under way (a streamed delta just read
  // from the model goes out without waiting for anything), and the messages sent while one is
  // under way go out together when it ends; what an inbound message brings about in the task that
  // delivered it (a request's updates) waits for its answer or for `defer`: one write.
  const timed = options.defer === undefined;
  const defer = options.defer ?? ((flush: () => void) => setTimeout(flush, 0));
  let writes: Promise<void> = Promise.resolve();
  let batch: string[] = [];
  let batchChars = 0;
  let bursting = false;
  let sentInBurst = 0;
  let nextWrite: Promise<void> | undefined;
  // With a `defer`: writes handed to the output and not finished, and whether the messages sent
  // now are held for `defer` (an inbound message is being answered).
  let inFlight = 0;
  let holding = false;
  // Bytes handed to the output and not written yet: a client that does not read holds them.
  let unwritten = 0;
  const flush = (): Promise<void> => {
    if (batch.length === 0) return writes;
    const bytes = encoder.encode(batch.length === 1 ? batch[0] : batch.join(""));
    batch = [];
    batchChars = 0;
    unwritten += bytes.byteLength;
    const write = writes.then(() => writer.write(bytes));
    const written = (): void => {
      unwritten -= bytes.byteLength;
    };
    writes = write.then(written, written);
    if (!timed) {
      inFlight++;
      void writes.then(afterWrite);
    }
    return write;
  };
  // The messages sent while the write was under way go out now, unless they are held.
  const afterWrite = (): void => {
    if (--inFlight === 0 && batch.length > 0 && !holding) flushBurst();
  };
  // Ids that a number cannot hold exactly (beyond 2^53, fractions) travel inside the process as
  // a placeholder string and go back out as the client wrote them.
  const exactIds = new Map<string, string>();
  let nextExactId = 0;
  const exactId = (raw: string, value: number): string | number => {
    if (Number.isSafeInteger(value) && String(value) === raw) return value;
    const placeholder = `${EXACT_ID_PREFIX}${nextExactId++}`;
    exactIds.set(placeholder, raw);
    return placeholder;
  };
  const serialize = (message: unknown): string => {
    const text = JSON.stringify(message);
    const id = (message as { id?: unknown } | null)?.id;
    if (typeof id !== "string" || exactIds.size === 0 || !exactIds.has(id)) return text;
    const raw = exactIds.get(id) as string;
    if ((message as { method?: unknown }).method === undefined) exactIds.delete(id);
    return text.replace(`"id":${JSON.stringify(id)}`, () => `"id":${raw}`);
  };
  const send = (message: unknown, followed = false): Promise<void> => {
    const text = serialize(message) + "\n";
    batch.push(text);
    batchChars += text.length;
    if (timed) {
      if (!bursting) {
        bursting = true;
        sentInBurst = 0;
        defer(() => {
          bursting = false;
          flushBurst();
        });
      }
      if (++sentInBurst <= WRITE_THROUGH) return flush();
    } else if (!followed && isAnswer(message)) {
      // An answer goes out at once, with what was held before it (a prompt's updates): the client
      // waits for it, and whatever else the task does meanwhile can follow in the next write.
      return flushBurst();
    } else if (!holding && inFlight === 0) {
      return flush();
    }
    nextWrite ??= new Promise<void>((resolve, reject) => {
      settleNext = (write) => write.then(resolve, reject);
    });
    return nextWrite;
  };
  // An inbound message is being delivered: with a `defer`, what it brings about in this task is
  // held for one write.
  const holdAnswers = timed ? undefined : (): void => {
    if (holding) return;
    holding = true;
    defer(() => {
      holding = false;
      flushBurst();
    });
  };
  // Writes the messages held back in a burst and settles their shared promise.
  let settleNext: (write: Promise<void>) => void = () => {};
  const flushBurst = (): Promise<void> => {
    const settle = settleNext;
    settleNext = () => {};
    nextWrite = undefined;
    const write = flush();
    settle(write);
    return write;
  };
  const fail = (code: number, message: string, id: string | number | null = null): void => {
    options.onInvalid?.(message);
    void send({ jsonrpc: "2.0", id, error: { code, message } }).catch(() => {});
  };
  const decoder = new TextDecoder();
  const reader = input.getReader();
  const ready: AnyMessage[] = [];
  let parts: Uint8Array[] = [];
  let size = 0;
  let oversized = false;
  let head: Uint8Array | undefined;
  const deliver = (line: Uint8Array): void => {
    const text = decoder.decode(line).trim();
    if (text === "") return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      // An answer to one of our requests that does not parse fails that request at once.
      const answerId = answerIdInText(text);
      if (answerId !== undefined) {
        ready.push(invalidAnswer(answerId, -32700, "Parse error: the answer is not valid JSON"));
      }
      return fail(-32700, "Parse error: the line is not valid JSON");
    }
    if (Array.isArray(value)) {
      return fail(-32600, "Invalid request: JSON-RPC batches are not supported");
    }
    const request = value as { id?: unknown; method?: unknown } | null;
    if (typeof request?.id === "number" && !Number.isSafeInteger(request.id) && request.method) {
      const raw = topLevelNumber(text, "id");
      if (raw !== undefined) request.id = exactId(raw, request.id);
    }
    if (!isMessage(value)) {
      const answerId = answerIdOf(value);
      if (answerId !== undefined) {
        // A malformed answer to one of our requests is not answered (nothing answers an answer):
        // the request it answers fails at once.
        options.onInvalid?.(`${INVALID_ANSWER} (id ${JSON.stringify(answerId)})`);
        ready.push(invalidAnswer(answerId, -32600, INVALID_ANSWER));
        return;
      }
      return fail(
        -32600,
        'Invalid request: expected a JSON-RPC 2.0 object with "jsonrpc": "2.0" and a method or an id',
        idOf(value),
      );
    }
    ready.push(value);
  };
  const endLine = (): void => {
    if (oversized) {
      fail(
        -32600,
        `Invalid request: message exceeds ${maxBytes} bytes`,
        head ? sniffId(decoder.decode(head), exactId) : null,
      );
    } else if (size > 0) deliver(concat(parts, size));
    parts = [];
    size = 0;
    oversized = false;
    head = undefined;
  };
  const split = (chunk: Uint8Array): void => {
    let start = 0;
    while (start < chunk.length) {
      const end = chunk.indexOf(NEWLINE, start);
      const piece = chunk.subarray(start, end === -1 ? chunk.length : end);
      // A CR of a CRLF line ending is not part of the message.
      const counted = end !== -1 && piece[piece.length - 1] === CARRIAGE_RETURN
        ? piece.length - 1
        : piece.length;
      if (!oversized) {
        if (size + counted > maxBytes) {
          oversized = true;
          head ??= concat(parts, size, 256, piece);
          parts = [];
        } else if (piece.length > 0) {
          parts.push(piece.slice());
          size += piece.length;
        }
      }
      if (end === -1) return;
      endLine();
      start = end + 1;
    }
  };

  // Pull-based with no buffering: a message is read from the input only when the consumer asks,
  // so when the input ends every earlier message has already been taken.
  // Whether the input has ended, and whether what follows its end (`onInputEnd`) has begun.
  let ended = false;
  let finished: Promise<void> | undefined;
  const next = async (): Promise<AnyMessage | undefined> => {
    while (ready.length === 0) {
      if (ended) {
        finished ??= (async () => {
          await options.onInputEnd?.();
          reader.releaseLock();
        })();
        await finished;
        return undefined;
      }
      // Answers (and errors for bad lines) wait for a client that does not read: read no more
      // until they are written.
      if (unwritten > HIGH_WATER_CHARS) await writes;
      const { value, done } = await reader.read();
      if (done) {
        ended = true;
        endLine();
      } else split(value);
    }
    holdAnswers?.();
    return ready.shift() as AnyMessage;
  };
  const readable = new ReadableStream<AnyMessage>({
    async pull(controller) {
      const message = await next();
      if (message === undefined) controller.close();
      else controller.enqueue(message);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
  const messages: MessageSource = {
    read: next,
    cancel(reason) {
      return ended ? Promise.resolve() : reader.cancel(reason);
    },
  };

  // Accepting a message does not wait for it to reach the output unless a lot is already
  // waiting: the writer can go on producing while the previous batch is written (order is
  // kept). `drained()` tells when everything has been written.
  const writeMessage = (
    message: AnyMessage,
    options?: { readonly followed?: boolean },
  ): Promise<void> | undefined => {
    const written = send(message, options?.followed);
    written.catch(() => {});
    if (batchChars + unwritten <= HIGH_WATER_CHARS) return undefined;
    // A lot is waiting (to be written, or for the client to read): write it now and let the
    // producer wait for it.
    flushBurst();
    return written;
  };
  const writable = new WritableStream<AnyMessage>({
    write: (message) => writeMessage(message),
    async close() {
      flushBurst();
      await writes;
      await writer.close().catch(() => {});
    },
    async abort() {
      await writer.abort().catch(() => {});
    },
  });
  return {
    readable,
    writable,
    messages,
    writeMessage,
    async writeMany(messages: readonly AnyMessage[]): Promise<void> {
      let last: Promise<void> = Promise.resolve();
      for (const message of messages) {
        last = send(message);
        last.catch(() => {});
        if (batchChars + unwritten > HIGH_WATER_CHARS) {
          flushBurst();
          await last;
        }
      }
      await last;
    },
    writeFrames(frames: Uint8Array): Promise<void> {
      // What was sent before goes out first.
      flushBurst();
      unwritten += frames.byteLength;
      const write = writes.then(() => writer.write(frames));
      const written = (): void => {
        unwritten -= frames.byteLength;
      };
      writes = write.then(written, written);
      return write;
    },
    // Messages can still sit in the writable's queue when the last batch finishes, so wait until
    // a whole round passes with nothing new to write.
    async drained(): Promise<void> {
      let last: Promise<void>;
      do {
        last = writes;
        await last;
        await new Promise((resolve) => setTimeout(resolve, 0));
      } while (last !== writes || batch.length > 0 || bursting || holding);
    },
  };
}

function concat(
  parts: readonly Uint8Array[],
  size: number,
  limit = Infinity,
  extra?: Uint8Array,
): Uint8Array {
  const all = extra ? [...parts, extra] : parts;
  const total = Math.min(limit, size + (extra?.length ?? 0));
  if (all.length === 1 && all[0] && all[0].length <= total) return all[0];
  const out = new Uint8Array(total);
  let at = 0;
  for (const part of all) {
    if (at >= total) break;
    const take = part.subarray(0, total - at);
    out.set(take, at);
    at += take.length;
  }
  return out;
}

function isMessage(value: unknown): value is AnyMessage {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  if (record.jsonrpc !== "2.0") return false;
  if ("method" in record) return typeof record.method === "string";
  return "id" in record && ("result" in record || "error" in record);
}

/** Whether a message is an answer (a result or an error), not a request or a notification. */
function isAnswer(message: unknown): boolean {
  return typeof message === "object" && message !== null && !("method" in message) &&
    "id" in message;
}

function idOf(value: unknown): string | number | null {
  if (typeof value !== "object" || value === null) return null;
  const id = (value as Record<string, unknown>).id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

function sniffId(
  head: string,
  exactId: (raw: string, value: number) => string | number,
): string | number | null {
  const match = /"id"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"(?:[^"\\]|\\.)*")/.exec(head);
  if (!match?.[1]) return null;
  try {
    const value = JSON.parse(match[1]) as string | number;
    return typeof value === "number" ? exactId(match[1], value) : value;
  } catch {
    return null;
  }
}

/** Why an answer-shaped object is not an answer. */
const INVALID_ANSWER =
  'Invalid answer: expected a JSON-RPC 2.0 object with "jsonrpc": "2.0", an id and either a result or an error';

/** Prefix of the placeholder ids that stand for ids a number cannot hold exactly. */
const EXACT_ID_PREFIX = "\u0000acp-harness-exact-id:";

const NUMBER = /^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?/;
const STRING = /^"(?:[^"\\]|\\.)*"/;

/**
 * The top-level keys of a JSON object's text, each with the start of its value (up to 400
 * characters); the last occurrence of a key wins, as in `JSON.parse`. Works on a text cut short
 * or otherwise broken too, as far as it goes.
 */
function topLevelValues(text: string): Map<string, string> {
  const found = new Map<string, string>();
  let depth = 0;
  let index = 0;
  while (index < text.length) {
    const char = text[index] as string;
    if (char === '"') {
      const start = index;
      index++;
      while (index < text.length && text[index] !== '"') index += text[index] === "\\" ? 2 : 1;
      index++;
      if (depth !== 1) continue;
      let after = index;
      while (after < text.length && /\s/.test(text[after] as string)) after++;
      if (text[after] !== ":") continue;
      let name: unknown;
      try {
        name = JSON.parse(text.slice(start, index));
      } catch {
        continue;
      }
      after++;
      while (after < text.length && /\s/.test(text[after] as string)) after++;
      found.set(String(name), text.slice(after, after + 400));
      index = after;
      continue;
    }
    if (char === "{" || char === "[") depth++;
    else if (char === "}" || char === "]") depth--;
    index++;
  }
  return found;
}

/**
 * The id of a line that looks like the client's answer to one of our requests (a top-level `id`
 * that is a number or a string, no `method`, and a `result`, an `error` or `"jsonrpc": "2.0"`),
 * read from the text of a line that is not JSON.
 */
function answerIdInText(text: string): string | number | undefined {
  if (!text.startsWith("{")) return undefined;
  const values = topLevelValues(text);
  const raw = values.get("id");
  if (raw === undefined || values.has("method")) return undefined;
  if (
    !values.has("result") && !values.has("error") && !values.get("jsonrpc")?.startsWith('"2.0"')
  ) {
    return undefined;
  }
  const token = NUMBER.exec(raw)?.[0] ?? STRING.exec(raw)?.[0];
  if (token === undefined) return undefined;
  try {
    const id = JSON.parse(token) as string | number;
    return typeof id === "string" || Number.isSafeInteger(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The id of a JSON value shaped like the client's answer to one of our requests (an object with
 * an `id` that is a string or a safe integer, no `method`, and a `result`, an `error` or
 * `"jsonrpc": "2.0"`) that is not a valid answer.
 */
function answerIdOf(value: unknown): string | number | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  if ("method" in value) return undefined;
  const record = value as Record<string, unknown>;
  if (!("result" in record) && !("error" in record) && record.jsonrpc !== "2.0") return undefined;
  const id = (value as { id?: unknown }).id;
  return typeof id === "string" || Number.isSafeInteger(id) ? id as string | number : undefined;
}

/**
 * What the consumer gets in place of an answer it cannot use: an error answer for its id, so the
 * request waiting for it fails at once (a permission question is refused) instead of waiting for
 * its timeout.
 */
function invalidAnswer(id: string | number, code: number, message: string): AnyMessage {
  return { jsonrpc: "2.0", id, error: { code, message } } as AnyMessage;
}
