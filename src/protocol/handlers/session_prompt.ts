import type { JsonRpcId, PromptRequest, PromptResponse } from "@agentclientprotocol/sdk";
import type { ConnectionContext } from "../connection_context.ts";
import { admitPrompt } from "../prompt_content.ts";
import { mappingErrors } from "../request_errors.ts";

/**
 * `session/prompt`: admits the content, runs a turn and answers with its stop reason.
 *
 * @param connection The connection
 * @param params The request
 * @param request The request's id and abort signal
 * @returns The stop reason
 */
export async function prompt(
  connection: ConnectionContext,
  params: PromptRequest,
  request: { readonly requestId: JsonRpcId; readonly signal: AbortSignal },
): Promise<PromptResponse> {
  const session = connection.requireSession(params.sessionId);
  const stopReason = await mappingErrors(() => {
    // The slot is checked before the content; nothing awaits between here and the turn taking
    // the slot.
    session.assertCanPrompt();
    const model = session.currentModel();
    const content = admitPrompt(params.prompt, connection.promptCapabilities, {
      id: model?.id ?? "",
      image: model?.image ?? false,
    });
    const turn = session.prompt(content, request.signal);
    // The turn holds the slot and its selection: later messages of the session may go.
    connection.applied(request.requestId);
    return turn;
  });
  return { stopReason };
}
