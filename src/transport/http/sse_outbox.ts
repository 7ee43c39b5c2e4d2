import type { AnyMessage } from "../acp.ts";
import { restoreExactIds } from "./exact_ids.ts";

/** Options for {@link SseOutbox}. */
export interface SseOutboxOptions {
  /** How many bytes of events may wait for a reader before `room()` holds the writer back. */
  readonly maxBufferedBytes: number;
  /**
   * How long the events may sit over `maxBufferedBytes` with nothing read before the outbox gives
   * up (it discards everything and calls `onStall`); also how long the last reader gets to take
   * what is left once the outbox has ended.
   */
  readonly maxStallMs: number;
  /** How many delivered events are kept for `Last-Event-ID` replay (at most `maxBufferedBytes`). */
  readonly replayMessages: number;
  /** How often a reader waiting for events gets a keep-alive comment. */
  readonly keepAliveMs: number;
  /** Called once when the output stalled: the outbox has discarded everything by then. */
  readonly onStall: () => void;
}

/** One framed event. */
interface SseEvent {
  readonly id: number;
  readonly frame: Uint8Array;
}

/** The attached reader: one SSE response body. */
interface Reader {
  readonly controller: ReadableStreamDefaultController<Uint8Array>;
  /** Delivered events it asked to see again (`Last-Event-ID`), sent before the unread ones. */
  readonly replay: SseEvent[];
  /** Its body has asked for a chunk that is not there yet. */
  waiting: boolean;
  keepAlive: ReturnType<typeof setInterval> | undefined;
}

const encoder = new TextEncoder();
const KEEP_ALIVE: Uint8Array = encoder.encode(": keep-alive\n\n");

/**
 * The server-sent event output of one connection: frames each message as
 * `event: message` / `id: <n>` / `data: <json>` with an id that grows by one per message, keeps
 * what no reader has taken yet (holding the writer back past `maxBufferedBytes`), hands it to one
 * reader at a time as that reader pulls, and keeps the last delivered events for a reader that
 * comes back with `Last-Event-ID`.
 *
 * @example Reading the events of an outbox that then ends
 * ```ts
 * import assert from "node:assert/strict";
 * import { SseOutbox } from "./sse_outbox.ts";
 * const outbox = new SseOutbox({
 *   maxBufferedBytes: 1 << 20, maxStallMs: 1000, replayMessages: 16, keepAliveMs: 15_000,
 *   onStall: () => {},
 * });
 * const body = outbox.attach(undefined);
 * outbox.add({ jsonrpc: "2.0", method: "ping" });
 * outbox.end();
 * const text = await new Response(body).text();
 * assert(text === 'event: message\nid: 1\ndata: {"jsonrpc":"2.0","method":"ping"}\n\n');
 * await outbox.finished;
 * ```
 */
export class SseOutbox {
  readonly #options: SseOutboxOptions;
  /** Unread events from `#head` on. */
  #queue: Array<SseEvent | undefined> = [];
  #head = 0;
  #queueBytes = 0;
  /** Delivered events, oldest first. */
  #ring: SseEvent[] = [];
  #ringBytes = 0;
  #nextId = 1;
  /** The id of the last event a reader took. */
  #takenUpTo = 0;
  /** Waits for events to be delivered. */
  readonly #deliveries = new Set<
    { readonly id: number; readonly done: (taken: boolean) => void }
  >();
  #reader: Reader | undefined;
  /** Writers held back until the unread bytes are under the limit again. */
  #writers: Array<() => void> = [];
  #stallTimer: ReturnType<typeof setTimeout> | undefined;
  #flushTimer: ReturnType<typeof setTimeout> | undefined;
  #ended = false;
  #done = false;
  #markFinished!: () => void;
  /** Settles once the outbox has ended and its last reader has taken everything or gone. */
  readonly finished: Promise<void>;

  /** @param options Limits, keep-alive period and what to do on a stall */
  constructor(options: SseOutboxOptions) {
    this.#options = options;
    this.finished = new Promise((resolve) => this.#markFinished = resolve);
  }

  /** Bytes of events no reader has taken yet. */
  get bufferedBytes(): number {
    return this.#queueBytes;
  }

  /** Whether a reader is attached. */
  get attached(): boolean {
    return this.#reader !== undefined;
  }

  /**
   * Adds one message as the next event. Dropped once the outbox has ended.
   *
   * @param message The message
   * @returns The event id, or `undefined` when the message was dropped
   */
  add(message: AnyMessage): number | undefined {
    if (this.#ended) return undefined;
    const id = this.#nextId++;
    const data = restoreExactIds(JSON.stringify(message));
    const frame = encoder.encode(`event: message\nid: ${id}\ndata: ${data}\n\n`);
    this.#queue.push({ id, frame });
    this.#queueBytes += frame.byteLength;
    const reader = this.#reader;
    if (reader?.waiting) this.#pull(reader);
    return id;
  }

  /**
   * Waits while the unread events are over `maxBufferedBytes`: until a reader takes enough, the
   * outbox ends, or `maxStallMs` pass with nothing read (then everything is discarded and
   * `onStall` is called).
   *
   * @returns Settles when the writer may go on
   */
  room(): Promise<void> {
    if (this.#ended || this.#queueBytes <= this.#options.maxBufferedBytes) return Promise.resolve();
    this.#stallTimer ??= setTimeout(() => this.#stall(), this.#options.maxStallMs);
    return new Promise((resolve) => this.#writers.push(resolve));
  }

  /**
   * Waits until an event has been handed to a reader. Settles with `false` at once when no reader
   * is attached, and when the reader goes before taking it, the outbox is done, `maxStallMs` pass
   * or `signal` aborts.
   *
   * @param id The event id
   * @param signal Ends the wait early
   * @returns Whether a reader took the event
   */
  delivered(id: number, signal?: AbortSignal): Promise<boolean> {
    if (id <= this.#takenUpTo) return Promise.resolve(true);
    if (!this.#reader || this.#done || signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (taken: boolean): void => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.#deliveries.delete(delivery);
        resolve(taken);
      };
      const onAbort = (): void => done(false);
      const delivery = { id, done };
      const timer = setTimeout(onAbort, this.#options.maxStallMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#deliveries.add(delivery);
    });
  }

  /**
   * Attaches a reader, ending the stream of the one attached before. With `lastEventId` the
   * reader first gets the delivered events still kept whose id is greater; then every event not
   * delivered yet, in order, and each event pushed later. The stream ends when another reader
   * takes over or, once the outbox has ended, when everything is taken. The reader is gone when
   * its consumer cancels the stream (a listener does when the client disconnects).
   *
   * @param lastEventId The last event id the reader saw, if it says
   * @returns The response body
   */
  attach(lastEventId: number | undefined): ReadableStream<Uint8Array> {
    const previous = this.#reader;
    if (previous) {
      this.#reader = undefined;
      this.#closeReader(previous);
    }
    if (this.#done) {
      return new ReadableStream<Uint8Array>({ start: (controller) => controller.close() });
    }
    const replay = lastEventId === undefined
      ? []
      : this.#ring.filter((event) => event.id > lastEventId);
    let reader!: Reader;
    return new ReadableStream<Uint8Array>({
      start: (controller) => {
        reader = { controller, replay, waiting: false, keepAlive: undefined };
        this.#reader = reader;
        reader.keepAlive = setInterval(() => {
          if (!reader.waiting) return;
          reader.waiting = false;
          controller.enqueue(KEEP_ALIVE);
        }, this.#options.keepAliveMs);
      },
      pull: () => this.#pull(reader),
      cancel: () => this.#readerGone(reader),
    }, { highWaterMark: 0 });
  }

  /**
   * No more events: held writers go on, later messages are dropped, the attached reader gets what
   * is left (within `maxStallMs`) and its stream ends. Without a reader the rest is dropped.
   */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#releaseWriters();
    const reader = this.#reader;
    if (!reader) {
      this.#finish();
    } else if (this.#queueBytes > 0 || reader.replay.length > 0) {
      this.#flushTimer = setTimeout(() => this.discard(), this.#options.maxStallMs);
      if (reader.waiting) this.#pull(reader);
    } else {
      this.#reader = undefined;
      this.#closeReader(reader);
      this.#finish();
    }
  }

  /** Drops every unread event and ends at once: held writers go on, the reader's stream ends. */
  discard(): void {
    this.#ended = true;
    this.#queue = [];
    this.#head = 0;
    this.#queueBytes = 0;
    this.#releaseWriters();
    const reader = this.#reader;
    if (reader) {
      this.#reader = undefined;
      this.#closeReader(reader);
    }
    this.#finish();
  }

  #pull(reader: Reader): void {
    if (reader !== this.#reader) return;
    const next = reader.replay.shift() ?? this.#take();
    if (next) {
      reader.waiting = false;
      reader.controller.enqueue(next.frame);
      return;
    }
    if (this.#ended) {
      this.#reader = undefined;
      this.#closeReader(reader);
      this.#finish();
      return;
    }
    reader.waiting = true;
  }

  /** Takes the oldest unread event: it counts as delivered from now on. */
  #take(): SseEvent | undefined {
    const event = this.#queue[this.#head];
    if (!event) return undefined;
    this.#queue[this.#head++] = undefined;
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    this.#queueBytes -= event.frame.byteLength;
    this.#keep(event);
    this.#takenUpTo = event.id;
    for (const delivery of this.#deliveries) {
      if (delivery.id <= event.id) delivery.done(true);
    }
    clearTimeout(this.#stallTimer);
    this.#stallTimer = undefined;
    if (this.#queueBytes <= this.#options.maxBufferedBytes) {
      this.#releaseWriters();
    } else if (!this.#ended) {
      // Reading goes on, however slowly: the stall clock starts again.
      this.#stallTimer = setTimeout(() => this.#stall(), this.#options.maxStallMs);
    }
    return event;
  }

  #keep(event: SseEvent): void {
    const { replayMessages, maxBufferedBytes } = this.#options;
    this.#ring.push(event);
    this.#ringBytes += event.frame.byteLength;
    while (
      this.#ring.length > 0 &&
      (this.#ring.length > replayMessages || this.#ringBytes > maxBufferedBytes)
    ) {
      this.#ringBytes -= this.#ring.shift()!.frame.byteLength;
    }
  }

  #stall(): void {
    this.#stallTimer = undefined;
    if (this.#done) return;
    this.discard();
    this.#options.onStall();
  }

  #readerGone(reader: Reader): void {
    if (reader !== this.#reader) return;
    this.#reader = undefined;
    this.#closeReader(reader);
    this.#giveUpDeliveries();
    if (this.#ended) this.#finish();
  }

  #giveUpDeliveries(): void {
    for (const delivery of this.#deliveries) delivery.done(false);
  }

  #closeReader(reader: Reader): void {
    clearInterval(reader.keepAlive);
    reader.keepAlive = undefined;
    reader.waiting = false;
    try {
      reader.controller.close();
    } catch {
      // Cancelled by its consumer, or closed already.
    }
  }

  #releaseWriters(): void {
    const writers = this.#writers;
    this.#writers = [];
    for (const resume of writers) resume();
  }

  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    clearTimeout(this.#stallTimer);
    this.#stallTimer = undefined;
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    this.#queue = [];
    this.#head = 0;
    this.#queueBytes = 0;
    this.#giveUpDeliveries();
    this.#markFinished();
  }
}
