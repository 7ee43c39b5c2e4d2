import type { CancelNotification } from "@agentclientprotocol/sdk";
import type { ConnectionContext } from "../connection_context.ts";

/**
 * `session/cancel`: cancels the session's turn, if any. (The connection's message order carries
 * out a cancel at its place among the session's messages first; this catches any that reach the
 * handler.)
 *
 * @param connection The connection
 * @param params The notification
 */
export function cancel(connection: ConnectionContext, params: CancelNotification): void {
  const session = connection.sessions.get(params.sessionId);
  if (session) session.cancel();
  else if (connection.sessions.observing(params.sessionId)) {
    // A notification has no answer: the refusal is the log's.
    connection.logger.info("cancel ignored: this connection only observes the session", {
      sessionId: params.sessionId,
    });
  }
}
