import type { ListSessionsRequest, ListSessionsResponse } from "@agentclientprotocol/sdk";
import { RequestError } from "@agentclientprotocol/sdk";
import { lineageId } from "../session_meta.ts";
import { META_KEY } from "../../util/meta_key.ts";
import type { ConnectionContext } from "../connection_context.ts";
import { mappingErrors } from "../request_errors.ts";
import { canonicalFilter, insideRoots } from "../workspace_roots.ts";

/**
 * `session/list`: a page of the stored sessions, newest first, optionally of one `cwd`. A server
 * with allowed workspace roots lists only the sessions inside them (a page may then hold fewer).
 * The sessions another session started (a `delegate` call's) are left out unless
 * `_meta["acp-harness"]` asks for them: `{children: true}` lists every session, `{parent: id}`
 * only that session's children; an entry with a parent names it in its `_meta`.
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
  const lineage = lineageFilter(params._meta);
  const cwd = params.cwd === undefined || params.cwd === null
    ? undefined
    : await canonicalFilter(server.host, params.cwd);
  const page = await mappingErrors(() =>
    sessions.list({
      ...(cwd === undefined ? {} : { cwd }),
      ...(params.cursor === undefined || params.cursor === null ? {} : { cursor: params.cursor }),
      ...lineage,
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
        ...(summary.parent === undefined
          ? {}
          : { _meta: { [META_KEY]: { parent: { ...summary.parent } } } }),
      })),
    ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }),
  };
}

/**
 * The store's lineage filter from the request's `_meta["acp-harness"]`: the sessions without a
 * parent by default, every session with `children: true`, one session's children with `parent`.
 *
 * @throws {RequestError} -32602 naming a field of the wrong type, or both given
 */
function lineageFilter(meta: unknown): { readonly parent?: string | null } {
  const own = meta !== null && typeof meta === "object"
    ? (meta as Record<string, unknown>)[META_KEY]
    : undefined;
  if (own === undefined || own === null) return { parent: null };
  const field = `_meta["${META_KEY}"]`;
  if (typeof own !== "object" || Array.isArray(own)) {
    throw RequestError.invalidParams(undefined, `${field}: must be an object`);
  }
  const { children, parent } = own as Record<string, unknown>;
  if (children !== undefined && typeof children !== "boolean") {
    throw RequestError.invalidParams(
      undefined,
      `${field}.children: must be true or false, got ${JSON.stringify(children)}`,
    );
  }
  if (parent === undefined) return children === true ? {} : { parent: null };
  lineageId(parent, `${field}.parent`, "session id");
  if (children !== undefined) {
    throw RequestError.invalidParams(
      undefined,
      `${field}: give children or parent, not both`,
    );
  }
  return { parent: parent as string };
}
