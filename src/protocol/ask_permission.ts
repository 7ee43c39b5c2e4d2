import { isRecord } from "../util/json.ts";
import {
  type AgentContext,
  methods,
  type RequestPermissionRequest,
} from "@agentclientprotocol/sdk";
import type { Logger } from "../log/logger.ts";
import type { PermissionAnswer } from "../permission/policy.ts";
import type { PermissionAsker, PermissionQuestion } from "../permission/gate.ts";

const OPTIONS: ReadonlyArray<{ optionId: string; name: string; kind: PermissionAnswer }> = [
  { optionId: "allow_once", name: "Allow", kind: "allow_once" },
  { optionId: "allow_always", name: "Always allow", kind: "allow_always" },
  { optionId: "reject_once", name: "Reject", kind: "reject_once" },
  { optionId: "reject_always", name: "Always reject", kind: "reject_always" },
];

/** How long a permission request waits for the client's answer by default, in milliseconds. */
export const DEFAULT_PERMISSION_TIMEOUT_MS = 300_000;

/** Options of {@link createPermissionAsker}. */
export interface PermissionAskerOptions {
  /**
   * How long to wait for an answer before refusing, in milliseconds.
   * @default {DEFAULT_PERMISSION_TIMEOUT_MS}
   */
  readonly timeoutMs?: number;
}

/**
 * Asks through `session/request_permission` with the options allow once, allow always, reject
 * once and reject always. Fails closed: only a well-formed `{outcome: {outcome: "selected",
 * optionId}}` naming an offered option can allow anything; any other answer, a client error or no
 * answer within the timeout is a refusal. A `cancelled` answer, or a turn cancelled while
 * waiting, is `cancelled`.
 *
 * @param client The connection's client context
 * @param logger Told about odd answers and failures
 * @param options The answer timeout
 * @returns The asker sessions use
 */
export function createPermissionAsker(
  client: AgentContext,
  logger: Logger,
  options: PermissionAskerOptions = {},
): PermissionAsker {
  const timeoutMs = options.timeoutMs ?? DEFAULT_PERMISSION_TIMEOUT_MS;
  return async (question: PermissionQuestion): Promise<PermissionAnswer | "cancelled"> => {
    if (question.signal.aborted) return "cancelled";
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), timeoutMs);
    const log = { sessionId: question.sessionId, toolCallId: question.toolCallId };
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
      logger.debug("asking permission", log);
      const response: unknown = await client.request(
        methods.client.session.requestPermission,
        params,
        {
          cancellationSignal: AbortSignal.any([question.signal, timeout.signal]),
          stopWaitingOnCancel: true,
        },
      );
      const answer = readAnswer(response);
      if (typeof answer === "object") {
        logger.warn("malformed permission answer; refusing", { ...log, problem: answer.problem });
        return "reject_once";
      }
      // The session's gate logs the answer with the tool (one line per answer).
      return answer;
    } catch (error) {
      if (question.signal.aborted) return "cancelled";
      if (timeout.signal.aborted) {
        logger.warn("permission request timed out; refusing", { ...log, timeoutMs });
        return "reject_once";
      }
      logger.warn("permission request failed; refusing", {
        ...log,
        error: error instanceof Error ? error.message : String(error),
      });
      return "reject_once";
    } finally {
      clearTimeout(timer);
    }
  };
}

/**
 * Reads a `session/request_permission` answer strictly.
 *
 * @param response The result the client sent, unchecked
 * @returns The answer, or what is wrong with it
 */
export function readAnswer(
  response: unknown,
): PermissionAnswer | "cancelled" | { problem: string } {
  const outcome = isRecord(response) ? response.outcome : undefined;
  if (!isRecord(outcome)) return { problem: "outcome: expected an object" };
  if (outcome.outcome === "cancelled") return "cancelled";
  if (outcome.outcome !== "selected") {
    return { problem: `outcome.outcome: expected "selected" or "cancelled"` };
  }
  const optionId = outcome.optionId;
  const chosen = OPTIONS.find((option) => option.optionId === optionId);
  if (typeof optionId !== "string" || !chosen) {
    return {
      problem: `outcome.optionId: expected one of ${
        OPTIONS.map((option) => option.optionId).join(", ")
      }`,
    };
  }
  return chosen.kind;
}
