import type { JsonRpcId, PromptRequest, PromptResponse } from "@agentclientprotocol/sdk";
import type { TurnUsage } from "../../session/session.ts";
import { META_KEY } from "../session_meta.ts";
import type { ConnectionContext } from "../connection_context.ts";
import { admitPrompt } from "../prompt_content.ts";
import { mappingErrors } from "../request_errors.ts";
import { traceCarrierOf } from "../../telemetry/telemetry.ts";

/**
 * `session/prompt`: admits the content, runs a turn and answers with its stop reason, its token
 * usage when its model requests reported any, and its budget (`_meta["acp-harness"].budget`:
 * the limits in force, the spend, the limit that ended the turn). A W3C trace context in the
 * request's `_meta` (`traceparent`, `tracestate`, `baggage`) makes the turn's span its child.
 *
 * @param connection The connection
 * @param params The request
 * @param request The request's id and abort signal
 * @returns The stop reason and the turn's usage
 */
export async function prompt(
  connection: ConnectionContext,
  params: PromptRequest,
  request: { readonly requestId: JsonRpcId; readonly signal: AbortSignal },
): Promise<PromptResponse & { usage?: TurnUsage }> {
  const session = connection.requireSession(params.sessionId);
  const release = connection.admitPrompt();
  const { stopReason, usage, budget } = await mappingErrors(() => {
    // The slot is checked before the content; nothing awaits between here and the turn taking
    // the slot.
    session.assertCanPrompt();
    const model = session.currentModel();
    const content = admitPrompt(params.prompt, connection.promptCapabilities, {
      id: model?.id ?? "",
      image: model?.image ?? false,
    });
    const turn = session.promptWithUsage(content, request.signal, traceCarrierOf(params._meta));
    // The turn holds the slot and its selection: later messages of the session may go.
    connection.applied(request.requestId);
    return turn;
  }).finally(release);
  // `usage` is ACP's unstable field; only when the turn's requests reported some.
  return {
    stopReason,
    ...(usage ? { usage } : {}),
    ...(budget ? { _meta: { [META_KEY]: { budget } } } : {}),
  };
}
