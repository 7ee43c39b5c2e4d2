import type { JsonRpcId } from "@agentclientprotocol/sdk";
import type { ConnectionContext } from "../connection_context.ts";
import { admitPrompt } from "../prompt_content.ts";
import { mappingErrors } from "../request_errors.ts";
import type { SteeringRequest } from "../steering_request.ts";

/** The answer: what came of the message. */
export interface SteeringResponse {
  /**
   * `injected`: the running turn takes it at its next step; `startedNewTurn`: no turn ran, so it
   * runs as a prompt (answered once that turn started); `promptRequired`: no turn ran and the
   * client asked to send it as a prompt itself; `failed`: its prompt was cancelled before it
   * started.
   */
  readonly outcome: "injected" | "startedNewTurn" | "promptRequired" | "failed";
  /** Why: `noRunningTurn` with `promptRequired`, `cancelled` with `failed`. */
  readonly reason?: "noRunningTurn" | "cancelled";
}

/**
 * `_session/steering`: sends a message into the session's running turn (its model takes it at
 * its next step; it is recorded and replayed as a user message), or, with no turn to take it,
 * runs it as a prompt queued like one (unless `_meta.steering.idleBehavior` is
 * `promptRequired`).
 *
 * @param connection The connection
 * @param params The request, parsed
 * @param request The request's id and abort signal
 * @returns What came of the message
 */
export async function steerSession(
  connection: ConnectionContext,
  params: SteeringRequest,
  request: { readonly requestId: JsonRpcId; readonly signal: AbortSignal },
): Promise<SteeringResponse> {
  const session = connection.requireSession(params.sessionId);
  const outcome = await mappingErrors(() => {
    const model = session.currentModel();
    const content = admitPrompt(params.prompt, connection.promptCapabilities, {
      id: model?.id ?? "",
      image: model?.image ?? false,
    });
    return session.steer(
      content,
      request.signal,
      params.idleBehavior === "promptRequired" ? "promptRequired" : "prompt",
      // Injected or queued: the session's later messages may go.
      () => connection.applied(request.requestId),
    );
  });
  switch (outcome) {
    case "injected":
    case "startedNewTurn":
      return { outcome };
    case "promptRequired":
      return { outcome, reason: "noRunningTurn" };
    default:
      return { outcome: "failed", reason: "cancelled" };
  }
}
