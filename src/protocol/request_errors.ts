import { RequestError } from "@agentclientprotocol/sdk";
import { TurnError } from "../agent/run_turn.ts";
import { McpStartError } from "../mcp/mcp_errors.ts";
import { GitError } from "../git/git_command.ts";
import { ConfigValueError, SessionStateError } from "../session/session.ts";
import { SessionNotFoundError } from "../util/session_not_found_error.ts";
import { InvalidCursorError, SessionLockedError } from "../store/session_store.ts";
import { InvalidSessionIdError } from "../store/store_errors.ts";
import { PromptContentError } from "./prompt_content.ts";
import { invalid } from "./invalid_params.ts";

export { invalid };

/**
 * Maps an error of the layers below to the JSON-RPC error the client sees: a bad request is
 * -32602, an unknown session -32002, a failed turn -32603 with the provider's error kind in
 * `data`, an MCP server that did not start -32603 with its name in `data.mcpServer`. Anything else is returned as it is (the SDK answers it with -32603).
 *
 * @param error What a handler caught
 * @returns The error to throw
 */
export function toRequestError(error: unknown): unknown {
  if (error instanceof RequestError) return error;
  if (error instanceof SessionNotFoundError) return RequestError.sessionNotFound(error.sessionId);
  if (error instanceof InvalidCursorError) return invalid(`cursor: ${error.message}`);
  // An id no store can keep, wherever it got through: the client's mistake, never an internal one.
  if (error instanceof InvalidSessionIdError) return invalid(`sessionId: ${error.message}`);
  if (error instanceof SessionLockedError) return invalid(error.message);
  if (
    error instanceof SessionStateError || error instanceof PromptContentError ||
    error instanceof ConfigValueError
  ) {
    return invalid(error.message);
  }
  // Git could not make or open a session's worktree: the server's failure, said in git's words.
  if (error instanceof GitError) return RequestError.internalError(undefined, error.message);
  if (error instanceof McpStartError) {
    return RequestError.internalError({ mcpServer: error.server }, error.message);
  }
  if (error instanceof TurnError) {
    const cause = error.providerError;
    return RequestError.internalError(
      cause
        ? {
          kind: cause.kind,
          retryable: cause.retryable,
          ...(cause.status === undefined ? {} : { status: cause.status }),
        }
        : undefined,
      error.message,
    );
  }
  return error;
}

/**
 * Runs `action`, mapping what it throws with {@link toRequestError}.
 *
 * @param action The work of a handler
 * @returns What `action` returns
 */
export async function mappingErrors<T>(action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    throw toRequestError(error);
  }
}
