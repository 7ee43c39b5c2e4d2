import type { AnyMessage } from "../transport/acp.ts";
import type { MessageSource } from "../transport/acp.ts";

/** The default of {@link RequestBoundOptions.max}. */
export const DEFAULT_MAX_REQUESTS_IN_FLIGHT = 64;

/** Options of {@link RequestBound}. */
export interface RequestBoundOptions {
  /** Most requests counted at once; reading waits while this many are. */
  readonly max: number;
  /** Told each time reading pauses because the bound is reached. */
  readonly onFull?: (max: number) => void;
}

/** What is counted under one answer key (the id an answer will carry). */
interface Entry {
  /** Requests read and not answered (nor started, for a prompt). */
  requests: number;
  /** Of those, prompts whose turn has not started. */
  prompts: number;
  /** Prompts whose turn started: no longer counted; their answer is still to come. */
  started: number;
}

/** The answer key of the answers written with `id: null` (invalid messages, `id: null` requests). */
const NULL_KEY = "null";

/**
 * Bounds the requests of one connection being handled at once, by reading its input only while
 * fewer than `max` are: the client's further messages wait in the transport (a pipe's or socket's
 * buffer, the WebSocket session's inbound queue), which pushes back on the client.
 *
 * A request counts from the moment it is read until its answer is handed to the transport (an
 * answer stuck behind a client that does not read keeps counting, so the answers waiting to be
 * written are bounded too). A `session/prompt` stops counting once its turn has started
 * ({@link started}): a turn can wait on the client (a permission question), whose answer must
 * still be read, and a session runs one prompt at a time. Every message the SDK answers with
 * `id: null` (an invalid message, a request with a `null` id) counts under one key until such an
 * answer is written, so that they too are bounded.
 *
 * @example Reading waits at the bound until an answer is written
 * ```ts
 * import assert from "node:assert/strict";
 * import { RequestBound } from "./request_bound.ts";
 * const messages = [1, 2, 3].map((id) => ({ jsonrpc: "2.0", id, method: "session/list" }));
 * const bound = new RequestBound({ max: 2 });
 * const source = bound.guard({
 *   read: () => Promise.resolve(messages.shift() as never),
 *   cancel: () => Promise.resolve(),
 * });
 * await source.read();
 * await source.read();
 * let third = false;
 * const reading = source.read().then(() => third = true);
 * await new Promise((resolve) => setTimeout(resolve, 0));
 * assert.equal(third, false);
 * bound.answered(1);
 * await reading;
 * assert.equal(bound.size, 2);
 * ```
 */
export class RequestBound {
  readonly #max: number;
  readonly #onFull: ((max: number) => void) | undefined;
  readonly #entries = new Map<string, Entry>();
  #count = 0;
  #wake: (() => void) | undefined;
  #cancelled = false;

  /** @param options The bound */
  constructor(options: RequestBoundOptions) {
    if (!Number.isSafeInteger(options.max) || options.max < 1) {
      throw new RangeError(
        `Cannot bound requests: max must be a positive integer (${options.max})`,
      );
    }
    this.#max = options.max;
    this.#onFull = options.onFull;
  }

  /** How many requests are counted now. */
  get size(): number {
    return this.#count;
  }

  /**
   * The input, read only while fewer than `max` requests are counted.
   *
   * @param source The connection's inbound messages
   * @returns The same messages, counted as they are read
   */
  guard(source: MessageSource): MessageSource {
    return {
      read: async (): Promise<AnyMessage | undefined> => {
        if (this.#count >= this.#max && !this.#cancelled) this.#onFull?.(this.#max);
        while (this.#count >= this.#max && !this.#cancelled) {
          await new Promise<void>((resolve) => this.#wake = resolve);
        }
        if (this.#cancelled) return undefined;
        const message = await source.read();
        if (message !== undefined) this.#arrived(message);
        return message;
      },
      cancel: (reason?: unknown): Promise<void> => {
        this.#cancelled = true;
        this.#release();
        return source.cancel(reason);
      },
    };
  }

  /**
   * Says that an answer was handed to the transport: its request no longer counts.
   *
   * @param id The answer's id
   */
  answered(id: unknown): void {
    const key = answerKey(id);
    const entry = this.#entries.get(key);
    if (!entry) return;
    if (entry.started > 0) entry.started--;
    else if (entry.requests > 0) {
      entry.requests--;
      entry.prompts = Math.min(entry.prompts, entry.requests);
      this.#count--;
    }
    if (entry.requests === 0 && entry.started === 0) this.#entries.delete(key);
    this.#release();
  }

  /**
   * Says that a request took effect; for a prompt, that its turn started: it no longer counts.
   *
   * @param id The request's id
   */
  started(id: unknown): void {
    const entry = this.#entries.get(answerKey(id));
    if (!entry || entry.prompts === 0) return;
    entry.prompts--;
    entry.requests--;
    entry.started++;
    this.#count--;
    this.#release();
  }

  #arrived(message: AnyMessage): void {
    const key = requestKey(message);
    if (key === undefined) return;
    let entry = this.#entries.get(key);
    if (!entry) this.#entries.set(key, entry = { requests: 0, prompts: 0, started: 0 });
    entry.requests++;
    if ((message as { method?: unknown }).method === "session/prompt") entry.prompts++;
    this.#count++;
  }

  #release(): void {
    if (this.#count >= this.#max && !this.#cancelled) return;
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}

/**
 * The key of the answer a message will get, as the SDK's connection answers it; `undefined` for
 * a message that gets none (a notification, a response).
 */
function requestKey(message: unknown): string | undefined {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return NULL_KEY;
  const record = message as Record<string, unknown>;
  if ("method" in record) {
    if (record.jsonrpc === "2.0" && typeof record.method === "string") {
      if (!("id" in record)) return undefined;
      if (isJsonRpcId(record.id)) return answerKey(record.id);
    }
    return NULL_KEY;
  }
  return "id" in record || "result" in record || "error" in record ? undefined : NULL_KEY;
}

function isJsonRpcId(value: unknown): boolean {
  return value === null || typeof value === "string" ||
    (typeof value === "number" && Number.isFinite(value));
}

function answerKey(id: unknown): string {
  if (typeof id === "string") return `s${id}`;
  if (typeof id === "number") return `n${id}`;
  return NULL_KEY;
}
