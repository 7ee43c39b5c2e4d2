/**
 * What the client is shown of a turn: {@link toSessionUpdate} turns a turn event into its
 * `session/update`, with the pieces a replay builds the same updates from (plans, locations,
 * tool content).
 *
 * @module
 */
import type { TurnEvent } from "../agent/turn_event.ts";
import type { SessionUpdate, ToolCallContent } from "../transport/acp_types.ts";
import type { PlanEntry, ToolDisplay, ToolLocation } from "../tools/tool.ts";
import { META_KEY } from "../util/meta_key.ts";

/**
 * The ACP update for a turn event that the client sees (everything but history and usage).
 *
 * @param event The event
 * @returns The `session/update` payload
 */
export function toSessionUpdate(
  event: Exclude<TurnEvent, { type: "history" } | { type: "usage" }>,
): SessionUpdate {
  switch (event.type) {
    case "thought":
      return {
        sessionUpdate: "agent_thought_chunk",
        messageId: event.messageId,
        content: { type: "text", text: event.text },
      };
    case "message":
      return {
        sessionUpdate: "agent_message_chunk",
        messageId: event.messageId,
        content: { type: "text", text: event.text },
      };
    case "tool-call":
      return {
        sessionUpdate: "tool_call",
        toolCallId: event.toolCallId,
        title: event.title,
        kind: event.kind,
        status: "pending",
        rawInput: event.rawInput,
        ...(event.locations.length > 0 ? { locations: locationsOf(event.locations) } : {}),
      };
    case "tool-call-update": {
      const display: readonly ToolDisplay[] | undefined = event.display ?? event.parts ??
        (event.text === undefined ? undefined : [{ type: "text", text: event.text }]);
      const restore = event.restore;
      return {
        sessionUpdate: "tool_call_update",
        toolCallId: event.toolCallId,
        status: event.status,
        ...(restore
          ? {
            title: restore.title,
            kind: restore.kind,
            rawInput: restore.rawInput,
            locations: locationsOf(restore.locations),
          }
          : {}),
        ...(display ? { content: display.map(toolCallContent) } : {}),
        ...(event.locations ? { locations: locationsOf(event.locations) } : {}),
        ...(event.rawOutput === undefined ? {} : { rawOutput: event.rawOutput }),
        ...(event.denied ? { _meta: { [META_KEY]: { denied: event.denied } } } : {}),
      };
    }
    case "plan":
      return planUpdate(event.entries);
  }
}

/**
 * The ACP `plan` update of a whole plan (the client replaces its plan with it).
 *
 * @example A plan of one entry
 * ```ts
 * import assert from "node:assert/strict";
 * import { planUpdate } from "./to_session_update.ts";
 * assert.deepEqual(
 *   planUpdate([{ content: "Fix the parser", status: "in_progress", priority: "high" }]),
 *   {
 *     sessionUpdate: "plan",
 *     entries: [{ content: "Fix the parser", status: "in_progress", priority: "high" }],
 *   },
 * );
 * ```
 *
 * @param entries The plan, in order
 * @returns The `session/update` payload
 */
export function planUpdate(entries: readonly PlanEntry[]): SessionUpdate {
  return {
    sessionUpdate: "plan",
    entries: entries.map(({ content, priority, status }) => ({ content, priority, status })),
  };
}

/** ACP locations from tool locations. */
export function locationsOf(
  locations: readonly ToolLocation[],
): Array<{ path: string; line?: number }> {
  return locations.map(({ path, line }) => (line === undefined ? { path } : { path, line }));
}

/**
 * ACP tool call content from what a tool displays: text, images and resource links as `content`
 * blocks, diffs and terminals as themselves.
 *
 * @param display One item a tool displays
 * @returns The ACP tool call content
 */
export function toolCallContent(display: ToolDisplay): ToolCallContent {
  switch (display.type) {
    case "text":
      return { type: "content", content: { type: "text", text: display.text } };
    case "image":
      return {
        type: "content",
        content: { type: "image", mimeType: display.mimeType, data: display.data },
      };
    case "resource_link":
      return {
        type: "content",
        content: {
          type: "resource_link",
          uri: display.uri,
          name: display.name,
          ...(display.mimeType === undefined ? {} : { mimeType: display.mimeType }),
        },
      };
    case "resource": {
      const mime = display.mimeType === undefined ? {} : { mimeType: display.mimeType };
      return {
        type: "content",
        content: {
          type: "resource",
          resource: display.blob !== undefined
            ? { uri: display.uri, ...mime, blob: display.blob }
            : { uri: display.uri, ...mime, text: display.text ?? "" },
        },
      };
    }
    case "diff":
      return {
        type: "diff",
        path: display.path,
        oldText: display.oldText,
        newText: display.newText,
      };
    case "terminal":
      return { type: "terminal", terminalId: display.terminalId };
  }
}
