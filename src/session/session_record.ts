/**
 * Between a live session and its stored log: what a prompt's content is stored as, how a log
 * becomes a conversation again, and what `session/load` replays.
 *
 * @module
 */
import type { TurnEvent } from "../agent/turn_event.ts";
import type { PermissionMode } from "../permission/mode.ts";
import type { LlmContentPart, LlmMessage } from "../llm/provider.ts";
import type { Logger } from "../log/logger.ts";
import type { SessionUpdate, ToolCallContent } from "../transport/acp_types.ts";
import type {
  AttachmentStore,
  LoadedSession,
  StoredContentPart,
  StoredEvent,
  StoredRecord,
} from "../store/session_store.ts";
import type { PlanEntry, ToolContent, ToolDisplay, ToolKind } from "../tools/tool.ts";
import { type CompactionNotices, compactionUpdates } from "../compaction/compactor.ts";
import { applyCompaction } from "../compaction/history_compaction.ts";
import { locationsOf, planUpdate, toolCallContent } from "./updates.ts";

const NO_NOTICES: CompactionNotices = { compaction: false, notices: false };

/** `T` with its fields writable: an object built field by field before it is handed on. */
type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** A session's state rebuilt from its log. */
export interface RestoredSession {
  /** The conversation, as the model sees it. */
  readonly history: LlmMessage[];
  /** The last recorded model, mode and effort. */
  readonly selection?: {
    readonly model: string;
    readonly mode: PermissionMode;
    readonly effort?: string;
  };
  /** Remembered "always" answers. */
  readonly grants: Map<string, "allow_always" | "reject_always">;
  readonly title?: string;
  /** Cumulative cost in USD. */
  readonly cost: number;
  /** Events that close a turn the process never finished (already applied to `history`). */
  readonly repair: StoredEvent[];
}

/** The note a tool call gets when the server stopped before it finished. */
export const INTERRUPTED_TOOL_RESULT =
  "Interrupted: the server stopped before this tool call finished; it may or may not have run.";

/**
 * A `tool_result` event as this module writes it: with the result's parts when it had any
 * (images inline, as base64: unlike prompt images they are not attachments). A log written
 * before parts existed has none, and its string `content` is the whole result.
 */
export type StoredToolResult = Extract<StoredEvent, { type: "tool_result" }> & {
  /** The result as parts (text, images, resource links). */
  readonly parts?: readonly ToolContent[];
  /** Machine-readable output the client was given (`rawOutput`). */
  readonly rawOutput?: unknown;
};

/**
 * The record of a tool call's final update.
 *
 * @example A result with an image
 * ```ts
 * import assert from "node:assert/strict";
 * import { toolResultEvent } from "./session_record.ts";
 * const parts = [{ type: "image" as const, mimeType: "image/png", data: "iVBORw0KGgo=" }];
 * assert.deepEqual(
 *   toolResultEvent({
 *     type: "tool-call-update", toolCallId: "c1", status: "completed",
 *     text: "[image: image/png]", parts,
 *   }, "screenshot"),
 *   {
 *     type: "tool_result", toolCallId: "c1", name: "screenshot",
 *     content: "[image: image/png]", isError: false, parts,
 *   },
 * );
 * ```
 *
 * @param event The update, with status `completed` or `failed`
 * @param name The tool's name
 * @returns The event to append
 */
export function toolResultEvent(
  event: Extract<TurnEvent, { type: "tool-call-update" }>,
  name: string,
): StoredToolResult {
  return {
    type: "tool_result",
    toolCallId: event.toolCallId,
    name,
    content: event.text ?? "",
    isError: event.status === "failed",
    ...(event.parts ? { parts: event.parts } : {}),
    ...(event.display ? { display: event.display } : {}),
    ...(event.locations ? { locations: event.locations } : {}),
    ...(event.rawOutput === undefined ? {} : { rawOutput: event.rawOutput }),
  };
}

/**
 * The parts of a stored `tool_result` (checked: a part that is not text, an image or a resource
 * link of the right shape is left out).
 *
 * @param record The stored event
 * @returns The parts, or undefined when the record has none
 */
export function storedToolParts(record: StoredEvent): readonly ToolContent[] | undefined {
  const stored = (record as { readonly parts?: unknown }).parts;
  if (!Array.isArray(stored)) return undefined;
  const parts = stored.filter(isToolContent);
  return parts.length > 0 ? parts : undefined;
}

function isToolContent(value: unknown): value is ToolContent {
  if (typeof value !== "object" || value === null) return false;
  const part = value as Record<string, unknown>;
  switch (part.type) {
    case "text":
      return typeof part.text === "string";
    case "image":
      return typeof part.mimeType === "string" && typeof part.data === "string";
    case "resource_link":
      return typeof part.uri === "string" && typeof part.name === "string" &&
        (part.mimeType === undefined || typeof part.mimeType === "string");
    default:
      return false;
  }
}

/**
 * Stores a prompt's images as attachments and returns the content as logged.
 *
 * @param parts The admitted prompt
 * @param attachments Where image bytes go
 * @returns The parts with images as sha256 references
 */
export async function toStoredContent(
  parts: readonly LlmContentPart[],
  attachments: AttachmentStore,
): Promise<StoredContentPart[]> {
  const stored: StoredContentPart[] = [];
  for (const part of parts) {
    if (part.type === "text") stored.push(part);
    else {
      const sha256 = await attachments.put(base64ToBytes(part.data), part.mimeType);
      stored.push({ type: "image", mimeType: part.mimeType, sha256 });
    }
  }
  return stored;
}

/**
 * Rebuilds a session from its log: the conversation, selection, grants, title and cost. A turn
 * without an end is closed as interrupted: its unfinished tool calls get failed results (the
 * model must see a result for every call) and a `turn_end` with `interrupted`; those events are
 * returned in `repair` for the caller to append.
 *
 * @param loaded The log
 * @param attachments Image bytes (a missing or corrupt one becomes a text marker)
 * @param logger Told about missing attachments
 * @returns The restored state
 */
export async function restoreSession(
  loaded: LoadedSession,
  attachments: AttachmentStore,
  logger: Logger,
): Promise<RestoredSession> {
  const restorer = new SessionRestorer({
    attachments,
    logger,
    sessionId: loaded.header.id,
    replay: false,
  });
  await restorer.add(loaded.records);
  return restorer.finish().restored;
}

/** Options of a {@link SessionRestorer}. */
export interface SessionRestorerOptions {
  /** Image bytes (a missing or corrupt one becomes a text marker). */
  readonly attachments: AttachmentStore;
  /** Told about missing attachments. */
  readonly logger: Logger;
  /** The session, for log lines. */
  readonly sessionId: string;
  /** Build the updates that replay the log too (`session/load`). */
  readonly replay: boolean;
  /** What the client takes to be shown compactions. @default {neither} */
  readonly notices?: CompactionNotices;
}

/**
 * Rebuilds a session from its records as they are read ({@link restoreSession} a batch at a
 * time) and, for `session/load`, makes the updates that replay them ({@link replayUpdates}) on
 * the way: each batch's updates can go to the client before the next batch is read.
 *
 * @example Restoring a log with an interrupted turn while replaying it
 * ```ts
 * import assert from "node:assert/strict";
 * import { nullLogger } from "../log/logger.ts";
 * import { MemoryAttachmentStore } from "../store/memory_attachment_store.ts";
 * import { SessionRestorer } from "./session_record.ts";
 * const restorer = new SessionRestorer({
 *   attachments: new MemoryAttachmentStore(), logger: nullLogger, sessionId: "s1", replay: true,
 * });
 * const time = "2026-01-01T00:00:00.000Z";
 * const updates = await restorer.add([
 *   { type: "turn_start", seq: 1, time },
 *   { type: "user", messageId: "m1", content: [{ type: "text", text: "hi" }], seq: 2, time },
 * ]);
 * assert.equal(updates[0]?.sessionUpdate, "user_message_chunk");
 * const { restored } = restorer.finish();
 * assert.equal(restored.history.length, 1);
 * assert.deepEqual(restored.repair, [{ type: "turn_end", stopReason: "interrupted" }]);
 * ```
 */
export class SessionRestorer {
  readonly #options: SessionRestorerOptions;
  readonly #state: RestoreState = {
    history: [],
    grants: new Map(),
    pendingCalls: new Map(),
    selection: undefined,
    title: undefined,
    cost: 0,
    open: false,
  };
  /** The latest usage record that says the context size: replayed once, at the end. */
  #usage: Extract<StoredEvent, { type: "usage" }> | undefined;

  /** @param options Attachments, logger, session id, and whether to replay */
  constructor(options: SessionRestorerOptions) {
    this.#options = options;
  }

  /**
   * Applies the next records, in log order.
   *
   * @param records The records
   * @returns The updates that replay them (none without `replay`; usage waits for the end)
   */
  async add(records: readonly StoredRecord[]): Promise<SessionUpdate[]> {
    const updates: SessionUpdate[] = [];
    const replay = this.#options.replay;
    for (const record of records) {
      if (record.type === "user") await this.#user(record, replay ? updates : undefined);
      else {
        restoreRecord(this.#state, record);
        if (replay) this.#replay(record, updates);
      }
    }
    return updates;
  }

  /** Adds the updates of a record other than a user message (the latest usage is kept). */
  #replay(record: StoredRecord, updates: SessionUpdate[]): void {
    if (record.type === "usage") {
      if (record.size !== undefined) this.#usage = record;
    } else replayRecord(record, updates, this.#options.notices);
  }

  /**
   * Closes an interrupted turn (see {@link restoreSession}) once every record was added.
   *
   * @returns The restored state, and the last updates of the replay: the interrupted tool calls'
   *   failures and the latest usage (none without `replay`)
   */
  finish(): { readonly restored: RestoredSession; readonly updates: SessionUpdate[] } {
    const state = this.#state;
    const repair = repairOf(state);
    const updates: SessionUpdate[] = [];
    if (this.#options.replay) {
      for (const event of repair) replayRecord(event, updates);
      const usage = this.#usage && usageUpdate(this.#usage);
      if (usage) updates.push(usage);
    }
    const restored: RestoredSession = {
      history: state.history,
      ...(state.selection ? { selection: state.selection } : {}),
      grants: state.grants,
      ...(state.title === undefined ? {} : { title: state.title }),
      cost: state.cost,
      repair,
    };
    return { restored, updates };
  }

  /** A user message: into the history, and its parts as updates (images fetched once for both). */
  async #user(
    record: Extract<StoredEvent, { type: "user" }>,
    updates: SessionUpdate[] | undefined,
  ): Promise<void> {
    const content: LlmContentPart[] = [];
    for (const part of record.content) {
      let text: string;
      if (part.type === "text") {
        content.push(part);
        text = part.text;
      } else {
        const { attachments, logger, sessionId } = this.#options;
        const bytes = await attachments.get(part.sha256);
        if (bytes) {
          const data = bytesToBase64(bytes);
          content.push({ type: "image", mimeType: part.mimeType, data });
          updates?.push({
            sessionUpdate: "user_message_chunk",
            messageId: record.messageId,
            content: { type: "image", mimeType: part.mimeType, data },
          });
          continue;
        }
        text = missingMarker(part, logger, sessionId);
        content.push({ type: "text", text });
      }
      updates?.push({
        sessionUpdate: "user_message_chunk",
        messageId: record.messageId,
        content: { type: "text", text },
      });
    }
    this.#state.history.push({ role: "user", content });
  }
}

/** What {@link SessionRestorer} builds up, record by record. */
interface RestoreState {
  readonly history: LlmMessage[];
  readonly grants: Map<string, "allow_always" | "reject_always">;
  /** Tool calls announced by the model without a result yet, by id. */
  readonly pendingCalls: Map<string, string>;
  selection: RestoredSession["selection"];
  title: string | undefined;
  cost: number;
  /** Whether a turn started and has not ended. */
  open: boolean;
}

/** Applies one record (other than a user message) to the restored state. */
function restoreRecord(state: RestoreState, record: StoredRecord | StoredEvent): void {
  switch (record.type) {
    case "turn_start":
    case "turn_end":
      state.open = record.type === "turn_start";
      break;
    case "assistant": {
      // Optional fields set one by one: cheaper than spreads, on every message of a long log.
      const message: Mutable<Extract<LlmMessage, { role: "assistant" }>> = {
        role: "assistant",
        text: record.text,
      };
      if (record.reasoning) message.reasoning = record.reasoning;
      if (record.toolCalls) message.toolCalls = record.toolCalls;
      if (record.providerState !== undefined) message.providerState = record.providerState;
      if (record.provider !== undefined) message.provider = record.provider;
      state.history.push(message);
      for (const call of record.toolCalls ?? []) state.pendingCalls.set(call.id, call.name);
      break;
    }
    case "tool_result": {
      state.pendingCalls.delete(record.toolCallId);
      const parts = storedToolParts(record);
      const message: Mutable<Extract<LlmMessage, { role: "tool" }>> = {
        role: "tool",
        toolCallId: record.toolCallId,
        name: record.name,
        content: record.content,
        isError: record.isError,
      };
      if (parts) message.parts = parts;
      state.history.push(message);
      break;
    }
    case "permission":
      if (record.answer === "allow_always" || record.answer === "reject_always") {
        state.grants.set(record.tool, record.answer);
      }
      break;
    case "config":
      state.selection = {
        model: record.model,
        mode: record.mode as PermissionMode,
        ...(record.effort === undefined ? {} : { effort: record.effort }),
      };
      break;
    case "title":
      state.title = record.title;
      break;
    case "compaction":
      applyCompaction(state.history, record);
      break;
    case "clear":
      state.history.length = 0;
      break;
    case "usage":
      if (record.cost !== undefined) state.cost = record.cost;
      break;
    default:
      break;
  }
}

/**
 * Closes an interrupted turn: a failed result for every call without one (added to the history
 * too) and a `turn_end` with `interrupted`.
 */
function repairOf(state: RestoreState): StoredEvent[] {
  const repair: StoredEvent[] = [];
  for (const [toolCallId, name] of state.pendingCalls) {
    repair.push({
      type: "tool_result",
      toolCallId,
      name,
      content: INTERRUPTED_TOOL_RESULT,
      isError: true,
    });
    state.history.push({
      role: "tool",
      toolCallId,
      name,
      content: INTERRUPTED_TOOL_RESULT,
      isError: true,
    });
  }
  if (state.open || repair.length > 0) repair.push({ type: "turn_end", stopReason: "interrupted" });
  return repair;
}

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

/** The update of a usage record, when it says the context size. */
function usageUpdate(record: Extract<StoredEvent, { type: "usage" }>): SessionUpdate | undefined {
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

/** Adds the updates that show one record again (none for records the client never saw). */
function replayRecord(
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

function missingMarker(
  part: Extract<StoredContentPart, { type: "image" }>,
  logger: Logger,
  sessionId: string,
): string {
  logger.warn("image attachment missing or corrupt", { sessionId, sha256: part.sha256 });
  return `[image ${part.sha256} (${part.mimeType}) is missing from the attachment store]`;
}

/** Decodes base64 (already validated). */
export function base64ToBytes(data: string): Uint8Array {
  const binary = atob(data);
  const bytes = new Uint8Array(binary.length);
  for (let index = 0; index < binary.length; index++) bytes[index] = binary.charCodeAt(index);
  return bytes;
}

/** Encodes bytes as base64. */
export function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  const step = 0x8000;
  for (let index = 0; index < bytes.length; index += step) {
    binary += String.fromCharCode(...bytes.subarray(index, index + step));
  }
  return btoa(binary);
}
