import type { SessionConfigOption, SessionModeState } from "@agentclientprotocol/sdk";
import { mcpServersOf } from "../capabilities.ts";
import type { ConnectionContext } from "../connection_context.ts";
import { readInstructions } from "../instructions.ts";
import { invalid, mappingErrors } from "../request_errors.ts";
import { answerMeta, sessionMeta } from "../session_meta.ts";
import { checkPath, workspaceRoots } from "../workspace_roots.ts";

/** A `session/fork` request (the unstable schema's `ForkSessionRequest`), its types checked. */
export interface ForkSessionRequest {
  /** The session to fork. */
  readonly sessionId: string;
  /** The fork's working directory. */
  readonly cwd: string;
  /** The fork's MCP servers (checked as `session/new` checks them). */
  readonly mcpServers?: unknown;
  /** The fork's directories beyond `cwd`. */
  readonly additionalDirectories?: string[] | null;
  readonly _meta?: Record<string, unknown> | null;
}

/** The answer to `session/fork` (the unstable schema's `ForkSessionResponse`). */
export interface ForkSessionResponse {
  /** The fork's id: a new session. */
  readonly sessionId: string;
  readonly configOptions: SessionConfigOption[];
  readonly modes: SessionModeState;
  readonly _meta?: Record<string, unknown>;
}

/**
 * `session/fork`: a new session, owned by this connection and open, that starts with a copy of
 * a stored session's conversation (see `SessionManager.fork`), in the workspace roots and with
 * the MCP servers of this request, checked as `session/new` checks them. The source is only read:
 * it may be open and running here or elsewhere.
 *
 * @param connection The connection
 * @param params The request, as sent
 * @param requestId The request's id (the fork's commands are announced after its answer)
 * @returns The fork's id, config options and modes
 * @throws {RequestError} -32602 naming a bad field; -32002 for an unknown source session
 */
export async function forkSession(
  connection: ConnectionContext,
  params: unknown,
  requestId?: unknown,
): Promise<ForkSessionResponse> {
  const request = forkRequest(params);
  const mcpServers = mcpServersOf(request.mcpServers);
  const meta = sessionMeta(request._meta, connection.server.settings);
  checkPath(request.cwd, "cwd");
  const { sessions, logger, server } = connection;
  const roots = await workspaceRoots(server.pathChecks, request, server.allowedRoots);
  const session = await connection.openingSession(() =>
    mappingErrors(async () => {
      const instructions = await readInstructions(server.pathChecks, roots.cwd, logger);
      return await sessions.fork(request.sessionId, {
        ...roots,
        ...(instructions ? { instructions } : {}),
        ...(mcpServers.length > 0 ? { mcpServers } : {}),
        ...meta,
      });
    })
  );
  connection.afterAnswer(requestId, () => session.announceCommands());
  logger.info("session forked", { sessionId: session.id, from: request.sessionId });
  return {
    sessionId: session.id,
    configOptions: session.configOptions(),
    modes: session.modes(),
    ...answerMeta(session),
  };
}

/**
 * Checks the types of a `session/fork` request's fields (what the SDK's schema checks for the
 * stable methods); the values are checked by the handler.
 *
 * @param params The request's params, as sent
 * @returns The request
 * @throws {RequestError} -32602 naming the first bad field
 */
export function forkRequest(params: unknown): ForkSessionRequest {
  if (typeof params !== "object" || params === null || Array.isArray(params)) {
    throw invalid("params: must be an object with sessionId and cwd");
  }
  const fields = params as Record<string, unknown>;
  if (typeof fields.sessionId !== "string") throw invalid("sessionId: must be a string");
  if (typeof fields.cwd !== "string") throw invalid("cwd: must be a string");
  const { additionalDirectories, mcpServers, _meta } = fields;
  if (additionalDirectories !== undefined && additionalDirectories !== null) {
    if (!Array.isArray(additionalDirectories)) {
      throw invalid("additionalDirectories: must be an array of strings");
    }
    const bad = additionalDirectories.findIndex((dir) => typeof dir !== "string");
    if (bad >= 0) throw invalid(`additionalDirectories[${bad}]: must be a string`);
  }
  if (
    _meta !== undefined && _meta !== null && (typeof _meta !== "object" || Array.isArray(_meta))
  ) {
    throw invalid("_meta: must be an object");
  }
  return {
    sessionId: fields.sessionId,
    cwd: fields.cwd,
    ...(mcpServers === undefined ? {} : { mcpServers }),
    ...(additionalDirectories === undefined
      ? {}
      : { additionalDirectories: additionalDirectories as string[] | null }),
    ...(_meta === undefined ? {} : { _meta: _meta as Record<string, unknown> | null }),
  };
}
