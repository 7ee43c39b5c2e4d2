/**
 * The inbound half of the NDJSON stream: bytes split into lines under a size cap, each line made
 * a message or refused with the answer it is owed (see {@link LineReader}).
 *
 * @module
 */
import type { AnyMessage } from "./acp.ts";
import { topLevelNumber } from "./json_number.ts";

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
/** Bytes of an oversized line kept to read its request id from. */
const HEAD_BYTES = 256;

/** Prefix of the placeholder ids that stand for ids a number cannot hold exactly. */
const EXACT_ID_PREFIX = "\u0000acp-harness-exact-id:";

/**
 * Request ids that a number cannot hold exactly (beyond 2^53, fractions): inside the process
 * they travel as a placeholder string, and go back out as the client wrote them.
 */
export class ExactIds {
  readonly #raw = new Map<string, string>();
  #next = 0;

  /**
   * The id to use inside the process for a number id written as `raw`.
   *
   * @param raw The id as the client wrote it
   * @param value What `JSON.parse` made of it
   * @returns `value` when it is exact, else a placeholder that {@link serialize} turns back
   */
  idFor(raw: string, value: number): string | number {
    if (Number.isSafeInteger(value) && String(value) === raw) return value;
    const placeholder = `${EXACT_ID_PREFIX}${this.#next++}`;
    this.#raw.set(placeholder, raw);
    return placeholder;
  }

  /**
   * A message as one compact JSON text, its id as the client wrote it when it is a placeholder.
   * An answer uses its placeholder up.
   *
   * @param message The outbound message
   * @returns The JSON text, without a newline
   */
  serialize(message: unknown): string {
    const text = JSON.stringify(message);
    const id = (message as { id?: unknown } | null)?.id;
    if (typeof id !== "string" || this.#raw.size === 0 || !this.#raw.has(id)) return text;
    const raw = this.#raw.get(id) as string;
    if ((message as { method?: unknown }).method === undefined) this.#raw.delete(id);
    return text.replace(`"id":${JSON.stringify(id)}`, () => `"id":${raw}`);
  }
}

/** What a {@link LineReader} is built from. */
export interface LineReaderOptions {
  /** Largest line in bytes, line ending not counted: a longer one is skipped and refused. */
  readonly maxMessageBytes: number;
  /** The request ids beyond what a number holds, shared with the outbound side. */
  readonly exactIds: ExactIds;
  /** Takes the error answer owed to a line that was refused, to write back. */
  readonly answer: (message: AnyMessage) => void;
  /** Told about every line that could not be delivered. */
  readonly onInvalid?: ((reason: string) => void) | undefined;
}

/**
 * Splits inbound bytes into lines and makes each a message, never giving up on the input: a line
 * that is not JSON is answered with -32700, a JSON value that is not a message object (or is a
 * batch) with -32600, and a line over the size cap is skipped, never held whole, and answered
 * with -32600 (with the request id when it can be read from the start of the line). A malformed
 * answer to one of our requests is not answered (nothing answers an answer): an error answer for
 * its id is delivered instead, so the request it answers fails at once. A CR before the LF is not
 * part of the line.
 *
 * Push-based like the SDK's `LineBuffer`: {@link push} takes a chunk, {@link end} the end of the
 * input, and the messages they complete are taken with {@link shift}.
 *
 * @example Two messages in three chunks
 * ```ts
 * import assert from "node:assert/strict";
 * import { ExactIds, LineReader } from "./_line_reader.ts";
 * const answers: unknown[] = [];
 * const lines = new LineReader({
 *   maxMessageBytes: 1024,
 *   exactIds: new ExactIds(),
 *   answer: (message) => answers.push(message),
 * });
 * const bytes = new TextEncoder().encode('{"jsonrpc":"2.0","method":"a"}\r\nnot json\n{"jsonrpc"');
 * lines.push(bytes);
 * lines.push(new TextEncoder().encode(':"2.0","id":1,"result":{}}'));
 * lines.end();
 * assert.deepEqual(lines.shift(), { jsonrpc: "2.0", method: "a" });
 * assert.deepEqual(lines.shift(), { jsonrpc: "2.0", id: 1, result: {} });
 * assert.equal(lines.shift(), undefined);
 * assert.equal((answers[0] as { error: { code: number } }).error.code, -32700);
 * ```
 */
export class LineReader {
  readonly #max: number;
  readonly #exactIds: ExactIds;
  readonly #answer: (message: AnyMessage) => void;
  readonly #onInvalid: ((reason: string) => void) | undefined;
  readonly #decoder = new TextDecoder();
  readonly #ready: AnyMessage[] = [];
  /** The line so far, in pieces copied out of the chunks. */
  #parts: Uint8Array[] = [];
  #size = 0;
  /** Whether the line so far is over the cap: the rest of it is skipped. */
  #oversized = false;
  /** The start of an oversized line. */
  #head: Uint8Array | undefined;

  /** @param options The cap, the shared exact ids and where refusals go */
  constructor(options: LineReaderOptions) {
    this.#max = options.maxMessageBytes;
    this.#exactIds = options.exactIds;
    this.#answer = options.answer;
    this.#onInvalid = options.onInvalid;
  }

  /** Whether a message is waiting to be taken. */
  get hasReady(): boolean {
    return this.#ready.length > 0;
  }

  /** The next message, in order, or `undefined` when none is waiting. */
  shift(): AnyMessage | undefined {
    return this.#ready.shift();
  }

  /**
   * Takes a chunk of the input: the lines it ends become messages or refusals.
   *
   * @param chunk Bytes of the input; must not change afterwards (the start of a line over the
   *   cap may be kept as a view of it)
   */
  push(chunk: Uint8Array): void {
    let start = 0;
    while (start < chunk.length) {
      const end = chunk.indexOf(NEWLINE, start);
      const piece = chunk.subarray(start, end === -1 ? chunk.length : end);
      const counted = end !== -1 && piece[piece.length - 1] === CARRIAGE_RETURN
        ? piece.length - 1
        : piece.length;
      if (!this.#oversized) {
        if (this.#size + counted > this.#max) {
          this.#oversized = true;
          this.#head ??= concat(this.#parts, this.#size, HEAD_BYTES, piece);
          this.#parts = [];
        } else if (piece.length > 0) {
          this.#parts.push(piece.slice());
          this.#size += piece.length;
        }
      }
      if (end === -1) return;
      this.#endLine();
      start = end + 1;
    }
  }

  /** The input has ended: a last line without a newline counts as a line. */
  end(): void {
    this.#endLine();
  }

  #endLine(): void {
    if (this.#oversized) {
      const head = this.#head;
      this.#fail(
        -32600,
        `Invalid request: message exceeds ${this.#max} bytes`,
        head ? sniffId(this.#decoder.decode(head), this.#exactIds) : null,
      );
    } else if (this.#size > 0) this.#deliver(concat(this.#parts, this.#size));
    this.#parts = [];
    this.#size = 0;
    this.#oversized = false;
    this.#head = undefined;
  }

  #deliver(line: Uint8Array): void {
    const text = this.#decoder.decode(line).trim();
    if (text === "") return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      // An answer to one of our requests that does not parse fails that request at once.
      const answerId = answerIdInText(text);
      if (answerId !== undefined) {
        this.#ready.push(
          invalidAnswer(answerId, -32700, "Parse error: the answer is not valid JSON"),
        );
      }
      return this.#fail(-32700, "Parse error: the line is not valid JSON");
    }
    if (Array.isArray(value)) {
      return this.#fail(-32600, "Invalid request: JSON-RPC batches are not supported");
    }
    const request = value as { id?: unknown; method?: unknown } | null;
    if (typeof request?.id === "number" && !Number.isSafeInteger(request.id) && request.method) {
      const raw = topLevelNumber(text, "id");
      if (raw !== undefined) request.id = this.#exactIds.idFor(raw, request.id);
    }
    if (isMessage(value)) {
      this.#ready.push(value);
      return;
    }
    const answerId = answerIdOf(value);
    if (answerId === undefined) {
      return this.#fail(
        -32600,
        'Invalid request: expected a JSON-RPC 2.0 object with "jsonrpc": "2.0" and a method or an id',
        idOf(value),
      );
    }
    this.#onInvalid?.(`${INVALID_ANSWER} (id ${JSON.stringify(answerId)})`);
    this.#ready.push(invalidAnswer(answerId, -32600, INVALID_ANSWER));
  }

  #fail(code: number, message: string, id: string | number | null = null): void {
    this.#onInvalid?.(message);
    this.#answer({ jsonrpc: "2.0", id, error: { code, message } } as AnyMessage);
  }
}

/** The first `limit` bytes of `parts` (of `size` bytes in all) and then `extra`, in one array. */
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

function idOf(value: unknown): string | number | null {
  if (typeof value !== "object" || value === null) return null;
  const id = (value as Record<string, unknown>).id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/** The request id read from the start of a line too long to parse, or `null`. */
function sniffId(head: string, exactIds: ExactIds): string | number | null {
  const match = /"id"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"(?:[^"\\]|\\.)*")/.exec(head);
  if (!match?.[1]) return null;
  try {
    const value = JSON.parse(match[1]) as string | number;
    return typeof value === "number" ? exactIds.idFor(match[1], value) : value;
  } catch {
    return null;
  }
}

/** Why an answer-shaped object is not an answer. */
const INVALID_ANSWER =
  'Invalid answer: expected a JSON-RPC 2.0 object with "jsonrpc": "2.0", an id and either a result or an error';

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
