/**
 * What `session/load` replays and how it reaches the client. A log's records become
 * `session/update`s ({@link replayUpdates}, {@link replayRecord}); a {@link ReplaySink} is where
 * they go, the one way out for a replay: its client's notifications, or the same notifications
 * already encoded as NDJSON when the transport takes bytes ({@link ReplayFrames}: the envelope is
 * serialized once per session rather than once per update). {@link ReplayWriter} keeps a few
 * batches in flight while the next are read, and everything written before it settles.
 *
 * @module
 */
import type { Logger } from "../log/logger.ts";
import type { SessionUpdate, ToolCallContent } from "../transport/acp_types.ts";
import type {
  AttachmentStore,
  StoredContentPart,
  StoredEvent,
  StoredRecord,
} from "../store/session_store.ts";
import type { PlanEntry, ToolDisplay, ToolKind } from "../tools/tool.ts";
import { type CompactionNotices, compactionUpdates } from "../compaction/compactor.ts";
import { bytesToBase64 } from "../util/base64.ts";
import { concatBytes } from "../util/concat_bytes.ts";
import { META_KEY } from "../util/meta_key.ts";
import { missingMarker, storedToolParts } from "./stored_content.ts";
import { locationsOf, planUpdate, toolCallContent } from "./to_session_update.ts";
import type { UpdateSink } from "./update_queue.ts";

/**
 * Where a session's replay goes: the client's `session/update` notifications, written in order
 * with everything else the connection writes.
 */
export interface ReplaySink {
  /**
   * Writes replayed updates as notifications.
   *
   * @param updates A batch of the replay, in order
   * @returns Once they are written
   */
  updates(updates: readonly SessionUpdate[]): Promise<void>;
  /**
   * The same notifications written as NDJSON bytes, when the transport takes them (stdio):
   * preferred to {@link updates}, as each notification's envelope is serialized once.
   */
  readonly frames?: ReplayFrameSink;
}

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

/**
 * Batches of a `session/load` replay handed to the transport as NDJSON and not yet written, at
 * most (each is one ordered write); updates go one batch at a time.
 */
const FRAME_BATCHES_IN_FLIGHT = 4;

/**
 * Writes a replay to its sink batch by batch, a few batches in flight while the caller reads and
 * restores the next: as frames when the sink takes them, else as updates. A failed write fails
 * the next {@link write} or {@link finish}.
 *
 * @example A replay written as updates
 * ```ts
 * import assert from "node:assert/strict";
 * import { ReplayWriter } from "./replay.ts";
 * const written: unknown[] = [];
 * const writer = new ReplayWriter({
 *   updates: (updates) => {
 *     written.push(...updates);
 *     return Promise.resolve();
 *   },
 * });
 * await writer.write([{ sessionUpdate: "session_info_update", title: "Fix it" }]);
 * await writer.finish();
 * assert.deepEqual(written, [{ sessionUpdate: "session_info_update", title: "Fix it" }]);
 * ```
 */
export class ReplayWriter {
  readonly #sink: ReplaySink;
  readonly #frames: ReplayFrames | undefined;
  readonly #inFlight: number;
  /** Writes under way, oldest first. */
  readonly #sending: Promise<void>[] = [];

  /** @param sink Where the replay goes */
  constructor(sink: ReplaySink) {
    this.#sink = sink;
    this.#frames = sink.frames ? new ReplayFrames(sink.frames) : undefined;
    this.#inFlight = sink.frames ? FRAME_BATCHES_IN_FLIGHT : 1;
  }

  /**
   * Hands a batch to the sink, once fewer batches than the bound are in flight.
   *
   * @param updates The batch (an empty one writes nothing)
   * @throws The failure of an earlier write
   */
  async write(updates: readonly SessionUpdate[]): Promise<void> {
    const frames = this.#frames;
    const frameSink = this.#sink.frames;
    if (frames && frameSink) {
      for (const update of updates) frames.update(update);
      if (frames.empty) return;
      const bytes = frames.take();
      await this.#send(() => frameSink.write(bytes));
    } else if (updates.length > 0) await this.#send(() => this.#sink.updates(updates));
  }

  /**
   * Waits until every batch is written.
   *
   * @throws The first failed write's error
   */
  async finish(): Promise<void> {
    for (const written of this.#sending) await written;
  }

  /** Settles once no write is under way, whatever came of them (for clean-up after a failure). */
  async settled(): Promise<void> {
    await Promise.allSettled(this.#sending);
  }

  async #send(write: () => Promise<void>): Promise<void> {
    if (this.#sending.length >= this.#inFlight) await this.#sending.shift();
    const written = write();
    written.catch(() => {});
    this.#sending.push(written);
  }
}

/**
 * A replay sink that writes each update through a session's update sink, for a session manager
 * given no sink of the transport's (one update at a time; a failed update is logged and skipped,
 * as a session's own updates are).
 *
 * @param sink The session's update sink
 * @param logger Told about updates not delivered
 * @returns The replay sink
 */
export function replayThrough(sink: UpdateSink, logger: Logger): ReplaySink {
  return {
    updates: async (updates) => {
      const written = updates.map((update) =>
        sink(update).catch((error: unknown) =>
          logger.debug("session update not delivered", { error: String(error) })
        )
      );
      await Promise.all(written);
    },
  };
}

const NO_NOTICES: CompactionNotices = { compaction: false, notices: false };

/** `T` with its fields writable: an object built field by field before it is handed on. */
type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * The `session/update`s that replay a log for `session/load`: user messages, thoughts and
 * messages with their original ids, tool calls with their final status and content, the title,
 * each plan (after the `update_plan` call that made it), and the latest usage.
 *
 * @param records The log's records (with any repair events after them)
 * @param attachments Image bytes
 * @param logger Told about missing attachments
 * @param sessionId For messages
 * @returns The updates, in order
 */
export async function replayUpdates(
  records: ReadonlyArray<StoredRecord | StoredEvent>,
  attachments: AttachmentStore,
  logger: Logger,
  sessionId: string,
): Promise<SessionUpdate[]> {
  const updates: SessionUpdate[] = [];
  let usage: SessionUpdate | undefined;
  for (const record of records) {
    if (record.type === "user") {
      for (const part of record.content) {
        const content = part.type === "text"
          ? { type: "text" as const, text: part.text }
          : await imageForClient(part, attachments, logger, sessionId);
        updates.push({ sessionUpdate: "user_message_chunk", messageId: record.messageId, content });
      }
    } else if (record.type === "usage") {
      // Only the latest usage is replayed, at the end.
      usage = usageUpdate(record) ?? usage;
    } else replayRecord(record, updates);
  }
  if (usage) updates.push(usage);
  return updates;
}

/**
 * The update of a usage record, when it says the context size.
 *
 * @param record The usage record
 * @returns Its `usage_update`, or undefined without a context size
 */
export function usageUpdate(
  record: Extract<StoredEvent, { type: "usage" }>,
): SessionUpdate | undefined {
  if (record.size === undefined) return undefined;
  return {
    sessionUpdate: "usage_update",
    used: record.used,
    size: record.size,
    ...(record.cost === undefined ? {} : { cost: { amount: record.cost, currency: "USD" } }),
  };
}

/** A thought or message chunk of replayed text, with its original message id when it had one. */
function textChunk(
  kind: "agent_thought_chunk" | "agent_message_chunk",
  text: string,
  messageId: string | undefined,
): SessionUpdate {
  return messageId
    ? { sessionUpdate: kind, messageId, content: { type: "text", text } }
    : { sessionUpdate: kind, content: { type: "text", text } };
}

/**
 * Adds the updates that show one record again (none for records the client never saw; the
 * usage records and user messages are the caller's: see {@link replayUpdates}).
 *
 * @param record The record
 * @param updates Where its updates go
 * @param notices What the client takes to be shown compactions
 */
export function replayRecord(
  record: StoredRecord | StoredEvent,
  updates: SessionUpdate[],
  notices: CompactionNotices = NO_NOTICES,
): void {
  switch (record.type) {
    case "command":
      updates.push({
        sessionUpdate: "user_message_chunk",
        messageId: record.messageId,
        content: { type: "text", text: record.text },
      });
      return;
    case "note":
      updates.push(textChunk("agent_message_chunk", record.text, record.messageId));
      return;
    case "compaction":
      updates.push(...compactionUpdates(record, notices, false));
      return;
    case "assistant":
      if (record.reasoning) {
        updates.push(textChunk("agent_thought_chunk", record.reasoning, record.thoughtId));
      }
      if (record.text) {
        updates.push(textChunk("agent_message_chunk", record.text, record.messageId));
      }
      return;
    case "tool_call": {
      const update: Mutable<Extract<SessionUpdate, { sessionUpdate: "tool_call" }>> = {
        sessionUpdate: "tool_call",
        toolCallId: record.toolCallId,
        title: record.title,
        kind: record.kind as ToolKind,
        status: "pending",
        rawInput: record.rawInput,
      };
      if (record.locations.length > 0) update.locations = locationsOf(record.locations);
      updates.push(update);
      return;
    }
    case "tool_result": {
      // A terminal was released when its command ended; replay shows its output as text.
      const display = (record.display as readonly ToolDisplay[] | undefined) ??
        storedToolParts(record) ?? [{ type: "text", text: record.content }];
      const content: ToolCallContent[] = [];
      for (const item of display) {
        content.push(
          item.type === "terminal"
            ? { type: "content", content: { type: "text", text: record.content } }
            : toolCallContent(item),
        );
      }
      const update: Mutable<Extract<SessionUpdate, { sessionUpdate: "tool_call_update" }>> = {
        sessionUpdate: "tool_call_update",
        toolCallId: record.toolCallId,
        status: record.isError ? "failed" : "completed",
        content,
      };
      if (record.locations) update.locations = locationsOf(record.locations);
      if ("rawOutput" in record && record.rawOutput !== undefined) {
        update.rawOutput = record.rawOutput;
      }
      const denied = deniedOf(record.denied);
      if (denied) update._meta = { [META_KEY]: { denied } };
      updates.push(update);
      return;
    }
    case "title":
      updates.push({ sessionUpdate: "session_info_update", title: record.title });
      return;
    case "plan":
      updates.push(planUpdate(storedPlanEntries(record)));
      return;
    default:
      return;
  }
}

/**
 * The entries of a stored `plan` (checked: an entry without text content or a known status is
 * left out; an unknown priority is `medium`), so that a hand-edited log still replays valid
 * updates.
 */
function storedPlanEntries(record: Extract<StoredEvent, { type: "plan" }>): PlanEntry[] {
  const entries: unknown = record.entries;
  if (!Array.isArray(entries)) return [];
  const plan: PlanEntry[] = [];
  for (const entry of entries as unknown[]) {
    if (typeof entry !== "object" || entry === null) continue;
    const { content, status, priority } = entry as Record<string, unknown>;
    if (typeof content !== "string") continue;
    if (status !== "pending" && status !== "in_progress" && status !== "completed") continue;
    const known = priority === "high" || priority === "low" ? priority : "medium";
    plan.push({ content, status, priority: known });
  }
  return plan;
}

async function imageForClient(
  part: Extract<StoredContentPart, { type: "image" }>,
  attachments: AttachmentStore,
  logger: Logger,
  sessionId: string,
): Promise<{ type: "image"; mimeType: string; data: string } | { type: "text"; text: string }> {
  const bytes = await attachments.get(part.sha256);
  return bytes
    ? { type: "image", mimeType: part.mimeType, data: bytesToBase64(bytes) }
    : { type: "text", text: missingMarker(part, logger, sessionId) };
}

const encoder = new TextEncoder();

/**
 * Built text is encoded in pieces of about this many UTF-16 code units (at most 64 KiB of string
 * even when two bytes a unit): on Node.js a string of 128 KiB or more goes to the large-object
 * space, which makes it far dearer to build, and a replay batch built as one string is larger
 * than that (`bench/RESULTS.md`, load/replay). Deno and Bun take as long either way.
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
 * import { ReplayFrames } from "./replay.ts";
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

/** A stored refusal, checked (a log from elsewhere may hold anything). */
function deniedOf(value: unknown): { reason: string; rule?: string } | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const { reason, rule } = value as Record<string, unknown>;
  if (typeof reason !== "string") return undefined;
  return typeof rule === "string" ? { reason, rule } : { reason };
}
