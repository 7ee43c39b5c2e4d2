import type { ListSessionsRequest, ListSessionsResponse } from "@agentclientprotocol/sdk";
import type { ConnectionContext } from "../connection_context.ts";
import { mappingErrors } from "../request_errors.ts";
import { canonicalFilter, insideRoots } from "../workspace_roots.ts";

/**
 * `session/list`: a page of the stored sessions, newest first, optionally of one `cwd`. A server
 * with allowed workspace roots lists only the sessions inside them (a page may then hold fewer).
 *
 * @param connection The connection
 * @param params The request
 * @returns The page
 */
export async function listSessions(
  connection: ConnectionContext,
  params: ListSessionsRequest,
): Promise<ListSessionsResponse> {
  const { server, sessions } = connection;
  const cwd = params.cwd === undefined || params.cwd === null
    ? undefined
    : await canonicalFilter(server.host, params.cwd);
  const page = await mappingErrors(() =>
    sessions.list({
      ...(cwd === undefined ? {} : { cwd }),
      ...(params.cursor === undefined || params.cursor === null ? {} : { cursor: params.cursor }),
      limit: server.settings.sessionListPageSize,
    })
  );
  return {
    sessions: page.sessions.filter((summary) => insideRoots(summary.cwd, server.allowedRoots))
      .map((summary) => ({
        sessionId: summary.id,
        cwd: summary.cwd,
        ...(summary.additionalDirectories.length > 0
          ? { additionalDirectories: [...summary.additionalDirectories] }
          : {}),
        ...(summary.title === undefined ? {} : { title: summary.title }),
        updatedAt: summary.updatedAt,
      })),
    ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }),
  };
}
