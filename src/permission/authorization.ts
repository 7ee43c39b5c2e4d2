/**
 * What the agent loop asks the permission layer about a tool call, and what it is told: the
 * questions ({@link AuthorizeRequest} before a call runs, {@link RelayedPermission} while it
 * runs) and the verdict ({@link Authorization}). The tool appears only as the facts a decision
 * reads ({@link PermissionTool}), so this layer stays below the tools it rules on.
 *
 * @module
 */
import type { ToolCallLocation, ToolKind } from "../transport/acp_types.ts";
import type { ToolEffect } from "./policy.ts";
import type { PermissionTelemetry } from "../telemetry/telemetry.ts";

/** The facts of a tool that permission decisions read (every `Tool` has them). */
export interface PermissionTool {
  /** The tool's name: what remembered "always" answers are kept under. */
  readonly name: string;
  /** The ACP tool kind, shown to the user who is asked. */
  readonly kind: ToolKind;
  /** What the tool does to the world: what the mode's policy decides on. */
  readonly effect: ToolEffect;
}

/** A tool call waiting for permission to run. */
export interface AuthorizeRequest {
  readonly tool: PermissionTool;
  readonly toolCallId: string;
  readonly title: string;
  readonly rawInput: unknown;
  readonly locations: readonly ToolCallLocation[];
  readonly signal: AbortSignal;
  /** Told how the decision came out, and times the question to the client. */
  readonly telemetry?: PermissionTelemetry;
}

/** A question a running tool call asks the client (see `ToolContext.askPermission`). */
export interface RelayedPermission {
  /** The running tool. */
  readonly tool: PermissionTool;
  /** The running call's id: the question is asked under it. */
  readonly toolCallId: string;
  /** What the client is shown. */
  readonly title: string;
  /** The kind of what is asked about (clients pick an icon by it). */
  readonly kind: ToolKind;
  /** Its input, for the client to show. */
  readonly rawInput?: unknown;
  /** The files it touches. */
  readonly locations?: readonly ToolCallLocation[];
  /** Aborted when the call is cancelled or the question withdrawn. */
  readonly signal: AbortSignal;
  /** Times the question to the client. */
  readonly telemetry?: PermissionTelemetry;
}

/**
 * Whether a tool call may run; `reason` (for the model) when it may not, and `rule`, the
 * permission rule as written, when one refused it.
 */
export type Authorization = { readonly allowed: true } | {
  readonly allowed: false;
  readonly reason: string;
  readonly rule?: string;
};
