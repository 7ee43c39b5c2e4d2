/**
 * Decides whether a tool call of a session may run: the mode's policy (`./policy.ts`) first,
 * then the user's answer, remembering "always" answers for the session. Every decision is
 * logged and every answer recorded in the session's log.
 *
 * @module
 */
import type { Logger } from "../log/logger.ts";
import type { ToolCallLocation, ToolKind } from "../transport/acp_types.ts";
import type { Authorization, AuthorizeRequest, RelayedPermission } from "./authorization.ts";
import type { PermissionMode } from "./mode.ts";
import { decidePermission, type PermissionAnswer } from "./policy.ts";

/** A tool call the user is asked about. */
export interface PermissionQuestion {
  readonly sessionId: string;
  readonly toolCallId: string;
  readonly title: string;
  readonly kind: ToolKind;
  readonly rawInput: unknown;
  readonly locations: readonly ToolCallLocation[];
  readonly signal: AbortSignal;
}

/**
 * Asks the client for permission (`session/request_permission`). Resolves `cancelled` when the
 * turn was cancelled or the client answered so; never rejects (failures count as a refusal).
 */
export type PermissionAsker = (
  question: PermissionQuestion,
) => Promise<PermissionAnswer | "cancelled">;

/** The log record of a permission answer (one of the store's events). */
export interface PermissionRecord {
  readonly type: "permission";
  readonly toolCallId: string;
  /** The tool asked about, `<tool>:relayed` for a question a running call relayed. */
  readonly tool: string;
  readonly answer: PermissionAnswer | "cancelled";
}

/** Records permission answers in the session's log (`commit`: durable before the answer). */
export interface PermissionRecorder {
  record(events: readonly PermissionRecord[], commit: boolean): void;
}

/** What a {@link PermissionGate} is built from. */
export interface PermissionGateOptions {
  readonly sessionId: string;
  readonly ask: PermissionAsker;
  /** Remembered "always" answers by tool name; the gate adds to it. */
  readonly grants: Map<string, "allow_always" | "reject_always">;
  /** Where answers are recorded (the session's log, committed with the turn). */
  readonly output: PermissionRecorder;
  readonly logger: Logger;
}

/**
 * Decides tool calls: the policy of the pinned mode first, then the user (whose "always" answers
 * are remembered for the session). Every decision is logged and every answer recorded.
 */
export class PermissionGate {
  readonly #options: PermissionGateOptions;

  /** @param options The asker, the grants and where answers go */
  constructor(options: PermissionGateOptions) {
    this.#options = options;
  }

  /**
   * Decides whether a tool call may run.
   *
   * @param request The tool call
   * @param mode The permission mode the prompt pinned
   * @returns Whether it may run, and why not (for the model)
   */
  async authorize(request: AuthorizeRequest, mode: PermissionMode): Promise<Authorization> {
    const { tool } = request;
    const { sessionId, grants, logger } = this.#options;
    const decision = decidePermission(mode, tool.name, tool.effect, grants);
    const facts = { sessionId, toolCallId: request.toolCallId, tool: tool.name, mode };
    if (decision.action === "allow") {
      logger.debug("permission: allowed by policy", facts);
      return { allowed: true };
    }
    if (decision.action === "deny") {
      logger.info("permission: denied by policy", facts);
      return { allowed: false, reason: decision.reason };
    }
    const asked = Date.now();
    const answer = await this.#options.ask({
      sessionId,
      toolCallId: request.toolCallId,
      title: request.title,
      kind: tool.kind,
      rawInput: request.rawInput,
      locations: request.locations,
      signal: request.signal,
    });
    logger.info("permission: answered", { ...facts, answer, ms: Date.now() - asked });
    this.#options.output.record([permissionEvent(request.toolCallId, tool.name, answer)], true);
    if (answer === "allow_always" || answer === "reject_always") grants.set(tool.name, answer);
    return authorization(answer, tool.name);
  }

  /**
   * Asks the user what a running tool call asks (another agent's tool call, for the `delegate`
   * tool): no policy and no remembered grant decide it, the call itself was allowed. The answer
   * is logged and recorded under the name `<tool>:relayed`, which no tool has, so that an
   * "always" answer (which the asking agent remembers, if it does) grants nothing here.
   *
   * @param request The question and the call asking it
   * @returns The answer, `cancelled` when the call was cancelled
   */
  async relay(request: RelayedPermission): Promise<PermissionAnswer | "cancelled"> {
    const { sessionId, logger } = this.#options;
    const asked = Date.now();
    const answer = await this.#options.ask({
      sessionId,
      toolCallId: request.toolCallId,
      title: request.title,
      kind: request.kind,
      rawInput: request.rawInput,
      locations: request.locations ?? [],
      signal: request.signal,
    });
    const tool = `${request.tool.name}:relayed`;
    logger.info("permission: answered", {
      sessionId,
      toolCallId: request.toolCallId,
      tool,
      answer,
      ms: Date.now() - asked,
    });
    this.#options.output.record([permissionEvent(request.toolCallId, tool, answer)], true);
    return answer;
  }
}

/** What the user's answer means for the tool call. */
function authorization(answer: PermissionAnswer | "cancelled", tool: string): Authorization {
  if (answer === "allow_once" || answer === "allow_always") return { allowed: true };
  return {
    allowed: false,
    reason: answer === "cancelled"
      ? `Permission to run ${tool} was not given: the request was cancelled.`
      : `The user refused permission to run ${tool}${
        answer === "reject_always" ? " for the rest of this session" : ""
      }.`,
  };
}

/** The record of a permission answer. */
function permissionEvent(
  toolCallId: string,
  tool: string,
  answer: PermissionAnswer | "cancelled",
): PermissionRecord {
  return { type: "permission", toolCallId, tool, answer };
}
