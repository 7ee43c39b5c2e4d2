import type {
  CloseSessionRequest,
  CloseSessionResponse,
  DeleteSessionRequest,
  DeleteSessionResponse,
} from "@agentclientprotocol/sdk";
import { SessionLockedError } from "../../store/session_store.ts";
import type { ConnectionContext } from "../connection.ts";
import { invalid, toRequestError } from "../request_errors.ts";

/**
 * `session/close`: cancels the session's turn, waits for it to settle, releases what the session
 * holds. A session that is not open here is fine.
 *
 * @param connection The connection
 * @param params The request
 * @returns An empty answer
 */
export async function closeSession(
  connection: ConnectionContext,
  params: CloseSessionRequest,
): Promise<CloseSessionResponse> {
  await connection.sessions.close(params.sessionId);
  return {};
}

/**
 * `session/delete`: closes the session if it is open here, then removes it from the store.
 *
 * @param connection The connection
 * @param params The request
 * @returns An empty answer
 */
export async function deleteSession(
  connection: ConnectionContext,
  params: DeleteSessionRequest,
): Promise<DeleteSessionResponse> {
  try {
    await connection.sessions.delete(params.sessionId);
  } catch (error) {
    if (error instanceof SessionLockedError) {
      throw invalid(`sessionId: cannot delete: ${error.message}; close it there first`);
    }
    throw toRequestError(error);
  }
  return {};
}
