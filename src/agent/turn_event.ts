import type { LlmMessage, LlmUsage } from "../llm/provider.ts";
import type { PlanEntry, ToolContent, ToolDisplay, ToolKind, ToolLocation } from "../tools/tool.ts";

/**
 * The one event vocabulary the agent loop emits. The session turns these into ACP
 * `session/update`s and into history; nothing else produces either.
 */
export type TurnEvent =
  /** Reasoning text: a whole committed thought, or a delta in stream mode. */
  | { readonly type: "thought"; readonly messageId: string; readonly text: string }
  /** Answer text: a whole committed message, or a delta in stream mode. */
  | { readonly type: "message"; readonly messageId: string; readonly text: string }
  /** A tool call announced, before it runs (or asks). */
  | {
    readonly type: "tool-call";
    readonly toolCallId: string;
    readonly name: string;
    readonly title: string;
    readonly kind: ToolKind;
    readonly rawInput: unknown;
    readonly locations: readonly ToolLocation[];
  }
  /** A tool call's progress or result. */
  | {
    readonly type: "tool-call-update";
    readonly toolCallId: string;
    readonly status: "in_progress" | "completed" | "failed";
    /**
     * The call's own title, kind, input and locations again, after a relayed permission question
     * showed another's on it.
     */
    readonly restore?: {
      readonly title: string;
      readonly kind: ToolKind;
      readonly rawInput: unknown;
      readonly locations: readonly ToolLocation[];
    };
    /** The result text the model sees (the text form of `parts` when they are set). */
    readonly text?: string;
    /** The result as parts, when it carries images or resource links. */
    readonly parts?: readonly ToolContent[];
    /** What the client shows instead of the parts or the text. */
    readonly display?: readonly ToolDisplay[];
    readonly locations?: readonly ToolLocation[];
    /** Machine-readable output for the client (`rawOutput`). */
    readonly rawOutput?: unknown;
    /**
     * Set when the call was refused permission (by a rule, the mode, a remembered or given
     * answer): why, and the rule that refused it. The client reads it in the update's
     * `_meta["acp-harness"].denied`.
     */
    readonly denied?: { readonly reason: string; readonly rule?: string };
  }
  /** The model's whole new plan (from `update_plan`), right after its call's final update. */
  | { readonly type: "plan"; readonly entries: readonly PlanEntry[] }
  /** Usage of the latest model request. */
  | { readonly type: "usage"; readonly usage: LlmUsage }
  /**
   * A message committed to the conversation history; for an assistant message, the ids its
   * text and reasoning were shown under.
   */
  | {
    readonly type: "history";
    readonly message: LlmMessage;
    readonly messageId?: string;
    readonly thoughtId?: string;
  };
