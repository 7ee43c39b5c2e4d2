import type {
  LoadSessionRequest,
  LoadSessionResponse,
  ResumeSessionRequest,
  ResumeSessionResponse,
  SessionConfigOption,
  SessionModeState,
} from "@agentclientprotocol/sdk";
import { RequestError } from "@agentclientprotocol/sdk";
import { mcpServersOf } from "../capabilities.ts";
import { answerMeta, META_KEY, sessionMeta, sessionObserve } from "../session_meta.ts";
import type { ConnectionContext } from "../connection_context.ts";
import { readInstructions } from "../instructions.ts";
import { invalid, mappingErrors } from "../request_errors.ts";
import { checkPath, workspaceRoots } from "../workspace_roots.ts";

/**
 * `session/load`: reopens a stored session and replays its conversation as updates first.
 *
 * The replay streams: the log is read a piece at a time and each piece's updates are written
 * (over stdio as NDJSON bytes, the envelope serialized once) while the next is read, so the
 * first updates reach the client long before the last record is read; every one of them still
 * precedes the answer. A log found corrupt part-way (a bad line before its last) fails the load
 * with the same error as before streaming, after the updates of the pieces before the bad line;
 * a torn final line is ignored (and cut, under the session's lease).
 *
 * @param connection The connection
 * @param params The request
 * @param requestId The request's id (the session's commands are announced after its answer)
 * @returns The session's config options and modes
 */
export function loadSession(
  connection: ConnectionContext,
  params: LoadSessionRequest,
  requestId?: unknown,
): Promise<LoadSessionResponse> {
  return reopen(connection, params, true, requestId);
}

/**
 * `session/resume`: reopens a stored session without replaying it.
 *
 * @param connection The connection
 * @param params The request
 * @param requestId The request's id (the session's commands are announced after its answer)
 * @returns The session's config options and modes
 */
export function resumeSession(
  connection: ConnectionContext,
  params: ResumeSessionRequest,
  requestId?: unknown,
): Promise<ResumeSessionResponse> {
  return reopen(connection, params, false, requestId);
}

async function reopen(
  connection: ConnectionContext,
  params: LoadSessionRequest | ResumeSessionRequest,
  replay: boolean,
  requestId: unknown,
): Promise<{ configOptions: SessionConfigOption[]; modes: SessionModeState }> {
  const mcpServers = mcpServersOf(params.mcpServers);
  const meta = sessionMeta(params._meta, connection.server.settings);
  const observe = sessionObserve(params._meta);
  if (observe && !replay) {
    throw invalid(`_meta.${META_KEY}.observe: only session/load observes (it replays first)`);
  }
  checkPath(params.cwd, "cwd");
  const { sessions, logger, server } = connection;
  if (!(await sessions.exists(params.sessionId))) {
    throw RequestError.sessionNotFound(params.sessionId);
  }
  if (observe) return await observeSession(connection, params.sessionId);
  const roots = await workspaceRoots(server.pathChecks, params, server.allowedRoots);
  const session = await connection.openingSession(() =>
    mappingErrors(async () => {
      const instructions = await readInstructions(server.pathChecks, roots.cwd, logger);
      return await sessions.open(params.sessionId, {
        cwd: roots.cwd,
        ...(params.additionalDirectories
          ? { additionalDirectories: roots.additionalDirectories }
          : {}),
        ...(instructions ? { instructions } : {}),
        ...(mcpServers.length > 0 ? { mcpServers } : {}),
        ...meta,
        replay,
      });
    })
  );
  connection.afterAnswer(requestId, () => session.announceCommands());
  logger.info(replay ? "session loaded" : "session resumed", { sessionId: session.id });
  return {
    configOptions: session.configOptions(),
    modes: session.modes(),
    ...answerMeta(session),
  };
}

/**
 * `session/load` with `_meta["acp-harness"].observe`: attaches the connection, read-only, to a
 * session another connection of this server owns (see `SessionManager.observe`). The request's
 * cwd is checked as a path only; its MCP servers and directories are not used (the session runs
 * as its owner opened it). The answer is the session's current options and modes, marked
 * `_meta["acp-harness"].observing`.
 */
async function observeSession(
  connection: ConnectionContext,
  sessionId: string,
): Promise<{ configOptions: SessionConfigOption[]; modes: SessionModeState; _meta: object }> {
  const session = await mappingErrors(() => connection.sessions.observe(sessionId));
  connection.logger.info("session observed", { sessionId });
  const facts = answerMeta(session)._meta?.[META_KEY] as Record<string, unknown> | undefined;
  return {
    configOptions: session.configOptions(),
    modes: session.modes(),
    _meta: { [META_KEY]: { ...facts, observing: true } },
  };
}
