/**
 * What a session's content is stored as, and back: a prompt's images as attachments, a tool
 * call's final update as its `tool_result` record, and the checks that keep a hand-edited log
 * from producing malformed content.
 *
 * @module
 */
import type { TurnEvent } from "../agent/turn_event.ts";
import type { LlmContentPart } from "../llm/provider.ts";
import type { Logger } from "../log/logger.ts";
import type { AttachmentStore, StoredContentPart, StoredEvent } from "../store/session_store.ts";
import type { ToolContent } from "../tools/tool.ts";
import { base64ToBytes } from "../util/base64.ts";

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
 * import { toolResultEvent } from "./stored_content.ts";
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
    ...(event.denied ? { denied: event.denied } : {}),
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
 * The text that stands for a stored image whose bytes are gone (logged as a warning).
 *
 * @param part The stored image
 * @param logger Told about it
 * @param sessionId For the log line
 * @returns The marker text
 */
export function missingMarker(
  part: Extract<StoredContentPart, { type: "image" }>,
  logger: Logger,
  sessionId: string,
): string {
  logger.warn("image attachment missing or corrupt", { sessionId, sha256: part.sha256 });
  return `[image ${part.sha256} (${part.mimeType}) is missing from the attachment store]`;
}
