import type {
  CloseSessionRequest,
  CloseSessionResponse,
  DeleteSessionRequest,
  DeleteSessionResponse,
} from "@agentclientprotocol/sdk";
import { SessionLockedError } from "../../store/session_store.ts";
import type { ConnectionContext } from "../connection_context.ts";
import { invalid, toRequestError } from "../request_errors.ts";
import { insideRoots } from "../workspace_roots.ts";

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
 * `session/delete`: closes the session if it is open here, then removes it from the store. A server
 * with allowed workspace roots refuses a session outside them.
 *
 * @param connection The connection
 * @param params The request
 * @returns An empty answer
 */
export async function deleteSession(
  connection: ConnectionContext,
  params: DeleteSessionRequest,
): Promise<DeleteSessionResponse> {
  // A tenant's connection: another tenant's session is an id that is not stored (no-op).
  if (connection.tenant !== undefined && !(await connection.sessions.exists(params.sessionId))) {
    return {};
  }
  const { allowedRoots, store } = connection.server;
  if (allowedRoots !== undefined) {
    const cwd = (await store.load(params.sessionId))?.header.cwd;
    if (cwd !== undefined && !insideRoots(cwd, allowedRoots)) {
      throw invalid(
        `sessionId: cannot delete: the session's cwd is outside the workspace roots this server allows`,
      );
    }
  }
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
