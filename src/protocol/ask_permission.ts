import {
  type AgentContext,
  methods,
  type RequestPermissionRequest,
} from "@agentclientprotocol/sdk";
import type { Logger } from "../log/logger.ts";
import type { PermissionAnswer } from "../permission/policy.ts";
import type { PermissionAsker, PermissionQuestion } from "../session/session.ts";

const OPTIONS: ReadonlyArray<{ optionId: string; name: string; kind: PermissionAnswer }> = [
  { optionId: "allow_once", name: "Allow", kind: "allow_once" },
  { optionId: "allow_always", name: "Always allow", kind: "allow_always" },
  { optionId: "reject_once", name: "Reject", kind: "reject_once" },
  { optionId: "reject_always", name: "Always reject", kind: "reject_always" },
];

/**
 * Asks through `session/request_permission` with the options allow once, allow always, reject
 * once and reject always. Fails closed: an unknown option or a client error is a refusal; a
 * cancelled answer, or a turn cancelled while waiting, is `cancelled`.
 *
 * @param client The connection's client context
 * @param logger Told about odd answers and failures
 * @returns The asker sessions use
 */
export function createPermissionAsker(client: AgentContext, logger: Logger): PermissionAsker {
  return async (question: PermissionQuestion): Promise<PermissionAnswer | "cancelled"> => {
    if (question.signal.aborted) return "cancelled";
    try {
      const params: RequestPermissionRequest = {
        sessionId: question.sessionId,
        toolCall: {
          toolCallId: question.toolCallId,
          title: question.title,
          kind: question.kind,
          status: "pending",
          rawInput: question.rawInput,
          ...(question.locations.length > 0
            ? {
              locations: question.locations.map(({ path, line }) =>
                line === undefined ? { path } : { path, line }
              ),
            }
            : {}),
        },
        options: OPTIONS.map((option) => ({ ...option })),
      };
      const { outcome } = await client.request(
        methods.client.session.requestPermission,
        params,
        { cancellationSignal: question.signal, stopWaitingOnCancel: true },
      );
      if (outcome.outcome === "cancelled") return "cancelled";
      const chosen = OPTIONS.find((option) => option.optionId === outcome.optionId);
      if (!chosen) {
        logger.warn("unknown permission option; refusing", {
          sessionId: question.sessionId,
          optionId: outcome.optionId,
        });
        return "reject_once";
      }
      return chosen.kind;
    } catch (error) {
      if (question.signal.aborted) return "cancelled";
      logger.warn("permission request failed; refusing", {
        sessionId: question.sessionId,
        error: error instanceof Error ? error.message : String(error),
      });
      return "reject_once";
    }
  };
}
