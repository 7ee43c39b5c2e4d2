import type { Logger } from "../log/logger.ts";
import { type AnyMessage, fastPathsOf, type Stream } from "../transport/acp.ts";
import { redactUrls } from "../util/redact_urls.ts";

/** A connection's outbound side, as {@link outbound} makes it. */
export interface Outbound {
  /** Where the SDK writes the connection's messages. */
  readonly writable: WritableStream<AnyMessage>;
  /** Writes messages straight to the transport, in order (see {@link outbound}). */
  writeDirect(messages: readonly AnyMessage[]): Promise<void>;
  /** Writes serialized NDJSON frames straight to the transport, when it frames NDJSON itself. */
  readonly writeFrames?: (frames: Uint8Array) => Promise<void>;
}

/**
 * The outbound writer of a connection: wraps its outbound side so every error response names
 * what was wrong, and logs it.
 *
 * The SDK answers a schema violation with `-32602 "Invalid params"` and the zod error tree in
 * `data`; this adds the first offending field and its problem to the message
 * (`Invalid params: prompt.0.text: Invalid input: expected string, received number`), keeping
 * `data` as it was. Every error response is logged to the logger (stderr). A `data` nested deeper
 * than {@link MAX_DATA_DEPTH} (the SDK echoes an invalid message there, which a client may nest
 * thousands deep) is replaced by a note: serializing it could exhaust the stack of the transport
 * that writes it. URLs in an error's message lose their user name and password and the values of
 * credential-like query parameters.
 *
 * It also offers `writeDirect`: writes straight to the transport, past the SDK's one-at-a-time
 * send path, for bulk notifications (a `session/load` replay). Messages written directly go out
 * in call order, ahead of anything the SDK sends later. `writeFrames`, when the transport frames
 * NDJSON itself, writes messages already serialized the same way.
 *
 * @param stream The connection's streams
 * @param logger Where error responses are reported
 * @param onAnswer Told the id of every answer (result or error) as it is written; `true` when
 *   the task goes on to send more messages (they share the answer's write)
 * @returns The rewritten outbound side, and `writeDirect`
 */
export function outbound(
  stream: Stream,
  logger: Logger,
  onAnswer?: (id: unknown) => boolean | void,
): Outbound {
  const writer = stream.writable.getWriter();
  // An NDJSON transport takes a message without its writable around it: one hand-off less.
  const fast = fastPathsOf(stream);
  const write = (message: AnyMessage): Promise<void> | undefined => {
    const followed = onAnswer !== undefined && !("method" in message) &&
      onAnswer((message as { id?: unknown }).id) === true;
    if ("error" in message && message.error) {
      let error = message.error as { code: number; message: string; data?: unknown };
      if (error.data !== undefined && nestedDeeperThan(error.data, MAX_DATA_DEPTH)) {
        error = { ...error, data: { omitted: `nested deeper than ${MAX_DATA_DEPTH} levels` } };
        message = { ...message, error };
      }
      if (typeof error.message === "string" && error.message.includes("://")) {
        // A URL quoted by an error (a fetch failure) loses its credentials on the way out.
        error = { ...error, message: redactUrls(error.message) };
        message = { ...message, error };
      }
      if (error.code === -32602 && error.message === "Invalid params") {
        const issue = firstIssue(error.data, []);
        if (issue) {
          message = { ...message, error: { ...error, message: `Invalid params: ${issue}` } };
        }
      }
      const described = (message as { error: { code: number; message: string } }).error;
      logger.warn("request failed", {
        id: message.id,
        code: described.code,
        message: described.message,
      });
    }
    return fast
      ? fast.writeMessage(message, followed ? FOLLOWED : undefined)
      : writer.write(message);
  };
  const writable = new WriterPerMessage<AnyMessage>({
    write,
    close: () => writer.close(),
    abort: (reason) => writer.abort(reason),
  });
  return {
    writable,
    ...(fast ? { writeFrames: (frames: Uint8Array) => fast.writeFrames(frames) } : {}),
    async writeDirect(messages: readonly AnyMessage[]): Promise<void> {
      if (fast) return await fast.writeMany(messages);
      let last: Promise<void> = Promise.resolve();
      for (const message of messages) {
        last = writer.write(message);
        // Let the transport push back when it holds a lot.
        if (writer.desiredSize !== null && writer.desiredSize <= 0) await last;
      }
      await last;
    },
  };
}

/** How deep an error's `data` may nest before it is replaced by a note. */
export const MAX_DATA_DEPTH = 64;

/**
 * Whether a JSON value nests deeper than `limit` arrays and objects, found without recursion (so
 * a value thousands deep cannot exhaust the stack here).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nestedDeeperThan } from "./outbound.ts";
 * assert(!nestedDeeperThan({ a: [1, { b: 2 }] }, 3));
 * assert(nestedDeeperThan({ a: [1, { b: 2 }] }, 2));
 * ```
 *
 * @param value The value
 * @param limit The deepest nesting allowed
 * @returns `true` when some path goes deeper
 */
export function nestedDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== "object" || node === null) continue;
    if (depth + 1 > limit) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}

function firstIssue(tree: unknown, path: readonly string[]): string | undefined {
  if (typeof tree !== "object" || tree === null || path.length > MAX_DATA_DEPTH) return undefined;
  const node = tree as Record<string, unknown>;
  const errors = node._errors;
  if (Array.isArray(errors) && typeof errors[0] === "string") {
    return `${path.length > 0 ? path.join(".") : "params"}: ${errors[0]}`;
  }
  for (const [key, child] of Object.entries(node)) {
    if (key === "_errors") continue;
    const found = firstIssue(child, [...path, key]);
    if (found) return found;
  }
  return undefined;
}

/** The options of an answer that more messages follow. */
const FOLLOWED = { followed: true } as const;

/** Settled `undefined`, shared: a write that need not be waited for. */
const DONE: Promise<void> = Promise.resolve();

/**
 * A writable stream whose writers cost nothing to take and release. The SDK's connection sends
 * each message by taking a writer, writing the message and releasing the writer; on a plain
 * `WritableStream` that is a round of promises per message, on the path of every answer and
 * update. A writer of this stream hands the message to the sink's `write` at once and releases
 * nothing; the messages keep their order because the SDK writes one at a time.
 * Everything else is the stream's own (closing, aborting, piping).
 */
class WriterPerMessage<T> extends WritableStream<T> {
  readonly #write: (chunk: T) => Promise<void> | undefined;

  constructor(sink: {
    write(chunk: T): Promise<void> | undefined;
    close(): Promise<void>;
    abort(reason: unknown): Promise<void>;
  }) {
    super({ write: (chunk) => sink.write(chunk), close: sink.close, abort: sink.abort });
    this.#write = sink.write;
  }

  override getWriter(): WritableStreamDefaultWriter<T> {
    const write = this.#write;
    const writer: Pick<
      WritableStreamDefaultWriter<T>,
      "write" | "releaseLock" | "ready" | "desiredSize"
    > = {
      write: (chunk: T) => write(chunk as T) ?? DONE,
      releaseLock: () => {},
      ready: DONE,
      desiredSize: 1,
    };
    return writer as WritableStreamDefaultWriter<T>;
  }
}
