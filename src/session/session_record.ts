/**
 * Between a live session and its stored log: what a prompt's content is stored as, how a log
 * becomes a conversation again, and what `session/load` replays.
 *
 * @module
 */
import type { TurnEvent } from "../agent/turn_event.ts";
import type { PermissionMode } from "../config/config.ts";
import type { LlmContentPart, LlmMessage } from "../llm/provider.ts";
import type { Logger } from "../log/logger.ts";
import type { PermissionAnswer } from "../permission/policy.ts";
import type { SessionUpdate } from "../protocol/acp_types.ts";
import type {
  AttachmentStore,
  LoadedSession,
  StoredContentPart,
  StoredEvent,
  StoredRecord,
} from "../store/session_store.ts";
import type { ToolContent, ToolDisplay, ToolKind } from "../tools/tool.ts";
import { locationsOf, toolCallContent } from "./updates.ts";

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
  const state: RestoreState = {
    history: [],
    grants: new Map(),
    pendingCalls: new Map(),
    selection: undefined,
    title: undefined,
    cost: 0,
    open: false,
  };
  for (const record of loaded.records) {
    if (record.type === "user") {
      state.history.push({
        role: "user",
        content: await contentForModel(record.content, attachments, logger, loaded.header.id),
      });
    } else restoreRecord(state, record);
  }
  const repair = repairOf(state);
  return {
    history: state.history,
    ...(state.selection ? { selection: state.selection } : {}),
    grants: state.grants,
    ...(state.title === undefined ? {} : { title: state.title }),
    cost: state.cost,
    repair,
  };
}

/** What {@link restoreSession} builds up, record by record. */
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
function restoreRecord(state: RestoreState, record: StoredRecord): void {
  switch (record.type) {
    case "turn_start":
    case "turn_end":
      state.open = record.type === "turn_start";
      break;
    case "assistant":
      state.history.push({
        role: "assistant",
        text: record.text,
        ...(record.reasoning ? { reasoning: record.reasoning } : {}),
        ...(record.toolCalls ? { toolCalls: record.toolCalls } : {}),
        ...(record.providerState === undefined ? {} : { providerState: record.providerState }),
        ...(record.provider === undefined ? {} : { provider: record.provider }),
      });
      for (const call of record.toolCalls ?? []) state.pendingCalls.set(call.id, call.name);
      break;
    case "tool_result": {
      state.pendingCalls.delete(record.toolCallId);
      const parts = storedToolParts(record);
      state.history.push({
        role: "tool",
        toolCallId: record.toolCallId,
        name: record.name,
        content: record.content,
        ...(parts ? { parts } : {}),
        isError: record.isError,
      });
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
 * and the latest usage.
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
      if (record.size !== undefined) {
        usage = {
          sessionUpdate: "usage_update",
          used: record.used,
          size: record.size,
          ...(record.cost === undefined ? {} : { cost: { amount: record.cost, currency: "USD" } }),
        };
      }
    } else updates.push(...replayRecord(record));
  }
  if (usage) updates.push(usage);
  return updates;
}

/** The updates that show one record again (none for records the client never saw). */
function replayRecord(record: StoredRecord | StoredEvent): SessionUpdate[] {
  switch (record.type) {
    case "assistant":
      return [
        ...(record.reasoning
          ? [{
            sessionUpdate: "agent_thought_chunk" as const,
            ...(record.thoughtId ? { messageId: record.thoughtId } : {}),
            content: { type: "text" as const, text: record.reasoning },
          }]
          : []),
        ...(record.text
          ? [{
            sessionUpdate: "agent_message_chunk" as const,
            ...(record.messageId ? { messageId: record.messageId } : {}),
            content: { type: "text" as const, text: record.text },
          }]
          : []),
      ];
    case "tool_call":
      return [{
        sessionUpdate: "tool_call",
        toolCallId: record.toolCallId,
        title: record.title,
        kind: record.kind as ToolKind,
        status: "pending",
        rawInput: record.rawInput,
        ...(record.locations.length > 0 ? { locations: locationsOf(record.locations) } : {}),
      }];
    case "tool_result": {
      // A terminal was released when its command ended; replay shows its output as text.
      const display = ((record.display as readonly ToolDisplay[] | undefined) ??
        storedToolParts(record) ??
        [{ type: "text", text: record.content }]).map((item): ToolDisplay =>
          item.type === "terminal" ? { type: "text", text: record.content } : item
        );
      return [{
        sessionUpdate: "tool_call_update",
        toolCallId: record.toolCallId,
        status: record.isError ? "failed" : "completed",
        content: display.map(toolCallContent),
        ...(record.locations ? { locations: locationsOf(record.locations) } : {}),
        ...("rawOutput" in record && record.rawOutput !== undefined
          ? { rawOutput: record.rawOutput }
          : {}),
      }];
    }
    case "title":
      return [{ sessionUpdate: "session_info_update", title: record.title }];
    default:
      return [];
  }
}

/** The record of a permission answer. */
export function permissionEvent(
  toolCallId: string,
  tool: string,
  answer: PermissionAnswer | "cancelled",
): StoredEvent {
  return { type: "permission", toolCallId, tool, answer };
}

async function contentForModel(
  parts: readonly StoredContentPart[],
  attachments: AttachmentStore,
  logger: Logger,
  sessionId: string,
): Promise<LlmContentPart[]> {
  const content: LlmContentPart[] = [];
  for (const part of parts) {
    if (part.type === "text") content.push(part);
    else {
      const bytes = await attachments.get(part.sha256);
      if (bytes) {
        content.push({ type: "image", mimeType: part.mimeType, data: bytesToBase64(bytes) });
      } else content.push({ type: "text", text: missingMarker(part, logger, sessionId) });
    }
  }
  return content;
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
