import type { NewSessionRequest, NewSessionResponse } from "@agentclientprotocol/sdk";
import { missingKey } from "../auth_methods.ts";
import { mcpServersOf } from "../capabilities.ts";
import type { ConnectionContext } from "../connection_context.ts";
import { readInstructions } from "../instructions.ts";
import { answerMeta, sessionMeta, sessionParent } from "../session_meta.ts";
import { mappingErrors } from "../request_errors.ts";
import { workspaceRoots } from "../workspace_roots.ts";
import { isAbsolutePath } from "../../util/path.ts";

/**
 * `session/new`: checks the MCP servers and the workspace roots, then creates and records a
 * session owned by this connection, with its MCP servers connected.
 *
 * @param connection The connection
 * @param params The request
 * @param requestId The request's id (the session's commands are announced after its answer)
 * @returns The session id, its config options and modes
 */
export async function newSession(
  connection: ConnectionContext,
  params: NewSessionRequest,
  requestId?: unknown,
): Promise<NewSessionResponse> {
  const mcpServers = mcpServersOf(params.mcpServers);
  const meta = sessionMeta(params._meta, connection.server.settings);
  const parent = sessionParent(params._meta);
  // A default model whose key is not set would fail every prompt: say so now (-32000), as the
  // peers do, so the client can show what to set.
  const model = connection.server.settings.model;
  const missing = connection.server.catalog.missingApiKey(model);
  if (missing) throw missingKey(missing, model);
  const host = connection.server.pathChecks;
  // Without allowed roots, the project instructions are looked for while the cwd is checked (one
  // wait instead of two; what is read is used only once the cwd passed): the client's path and
  // its canonical form name the same directory. With them, nothing outside is read, even early.
  const cwd: unknown = params.cwd;
  const early = connection.server.allowedRoots === undefined && typeof cwd === "string" &&
      isAbsolutePath(cwd)
    ? readInstructions(host, cwd, connection.logger)
    : undefined;
  early?.catch(() => {});
  const roots = await workspaceRoots(host, params, connection.server.allowedRoots);
  const session = await connection.openingSession(() =>
    mappingErrors(async () => {
      const instructions = await (early ?? readInstructions(host, roots.cwd, connection.logger));
      return await connection.sessions.create({
        ...roots,
        ...(instructions ? { instructions } : {}),
        ...(mcpServers.length > 0 ? { mcpServers } : {}),
        ...meta,
        ...(parent ? { parent } : {}),
      });
    })
  );
  // The client learns the session id from the answer: its commands follow it.
  connection.afterAnswer(requestId, () => session.announceCommands());
  connection.logger.info("session created", { sessionId: session.id, cwd: roots.cwd });
  return {
    sessionId: session.id,
    configOptions: session.configOptions(),
    modes: session.modes(),
    ...answerMeta(session),
  };
}
