import type { NewSessionRequest, NewSessionResponse } from "@agentclientprotocol/sdk";
import { refuseMcpServers } from "../capabilities.ts";
import type { ConnectionContext } from "../connection.ts";
import { readInstructions } from "../instructions.ts";
import { mappingErrors } from "../request_errors.ts";
import { workspaceRoots } from "../workspace_roots.ts";

/**
 * `session/new`: checks the workspace roots, then creates and records a session owned by this
 * connection.
 *
 * @param connection The connection
 * @param params The request
 * @returns The session id, its config options and modes
 */
export async function newSession(
  connection: ConnectionContext,
  params: NewSessionRequest,
): Promise<NewSessionResponse> {
  refuseMcpServers(params.mcpServers);
  const { host } = connection.server;
  const roots = await workspaceRoots(host, params);
  const session = await mappingErrors(async () => {
    const instructions = await readInstructions(host, roots.cwd, connection.logger);
    return await connection.sessions.create({
      ...roots,
      ...(instructions ? { instructions } : {}),
    });
  });
  connection.logger.info("session created", { sessionId: session.id, cwd: roots.cwd });
  return {
    sessionId: session.id,
    configOptions: session.configOptions(),
    modes: session.modes(),
  };
}
