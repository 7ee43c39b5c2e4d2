/**
 * The session side of a connection: what its session methods run on (the session manager, the
 * permission round trip, the client's workspace) and their handlers. A connection imports this
 * module with its first session message, or just after its `initialize` answer is written, so
 * that start-up and `initialize` never wait for the session machinery to load.
 *
 * @module
 */
import { type AgentContext, methods } from "@agentclientprotocol/sdk";
import { SessionManager } from "../session/session_manager.ts";
import type { ReplaySink } from "../session/replay.ts";
import type { AnyMessage } from "../transport/acp.ts";
import type { SessionUpdate } from "../transport/acp_types.ts";
import { DeferredCreationStore } from "../store/deferred_creation_store.ts";
import type { SessionStore } from "../store/session_store.ts";
import { createPermissionAsker } from "./ask_permission.ts";
import { ClientWorkspace } from "./client_workspace.ts";
import type { ConnectionContext, ServerParts } from "./connection.ts";

export { cancel } from "./handlers/session_cancel.ts";
export { closeSession, deleteSession } from "./handlers/session_close.ts";
export { setConfigOption, setMode } from "./handlers/session_config.ts";
export { listSessions } from "./handlers/session_list.ts";
export { loadSession, resumeSession } from "./handlers/session_load.ts";
export { newSession } from "./handlers/session_new.ts";
export { prompt } from "./handlers/session_prompt.ts";

/** How a connection reaches its client, for the sessions it opens. */
export interface SessionManagerLink {
  /** Calls the client's methods (`session/update`, permission requests, `fs/*`, `terminal/*`). */
  readonly client: AgentContext;
  /** Writes messages straight to the transport, in order (a replay's updates, in bulk). */
  writeDirect(messages: readonly AnyMessage[]): Promise<void>;
  /** Writes serialized NDJSON frames straight to the transport, in order, when it can (stdio). */
  readonly writeFrames?: (frames: Uint8Array) => Promise<void>;
}

/**
 * The session manager of a connection: its sessions send their updates through the connection,
 * ask permission of its client and use its client's workspace where the client offers one.
 *
 * @param connection The connection
 * @param link How to reach the connection's client
 * @returns The session manager
 */
export function createSessionManager(
  connection: ConnectionContext,
  link: SessionManagerLink,
): SessionManager {
  const { server, logger } = connection;
  const client = link.client;
  const ask = createPermissionAsker(client, logger, {
    timeoutMs: server.config.permissionTimeout * 1000,
  });
  return new SessionManager({
    config: server.config,
    catalog: server.catalog,
    toolsFor: server.toolsFor,
    host: server.host,
    logger,
    now: () => server.host.now(),
    sinkFor: (sessionId) => (update) =>
      client.notify(methods.client.session.update, { sessionId, update }),
    replaySinkFor: (sessionId) => replaySink(sessionId, link),
    workspaceFor: (sessionId) =>
      new ClientWorkspace(client, connection.clientCapabilities, sessionId, server.localWorkspace),
    ask,
    notices: () => {
      const session = connection.clientCapabilities.session;
      return { compaction: Boolean(session?.compaction), notices: Boolean(session?.notices) };
    },
    ...(server.retry ? { retry: server.retry } : {}),
    store: sessionStore(server),
    attachments: server.attachments,
    openSessions: server.openSessions,
    ...(server.defer ? { defer: server.defer } : {}),
  });
}

/** The store each server's sessions use, by server: shared by its connections. */
const stores = new WeakMap<ServerParts, SessionStore>();

/**
 * The store of a server's sessions: with a `defer`, its store wrapped so that a new session is
 * written after its `session/new` answer ({@link DeferredCreationStore}), one wrapper for all
 * the server's connections (so that each lists the sessions the others are writing).
 */
function sessionStore(server: ServerParts): SessionStore {
  if (server.defer === undefined) return server.store;
  let store = stores.get(server);
  if (store === undefined) {
    store = new DeferredCreationStore(server.store, server.defer);
    stores.set(server, store);
  }
  return store;
}

/**
 * Where a session's replay goes: its `session/update` notifications written straight to the
 * transport, already serialized as NDJSON when the transport takes frames.
 */
function replaySink(sessionId: string, link: SessionManagerLink): ReplaySink {
  const updates = (updates: readonly SessionUpdate[]): Promise<void> =>
    link.writeDirect(updates.map((update) => ({
      jsonrpc: "2.0",
      method: methods.client.session.update,
      params: { sessionId, update },
    })));
  if (!link.writeFrames) return { updates };
  const method = JSON.stringify(methods.client.session.update);
  return {
    updates,
    frames: {
      head: `{"jsonrpc":"2.0","method":${method},"params":{"sessionId":${
        JSON.stringify(sessionId)
      },"update":`,
      tail: "}}\n",
      write: link.writeFrames,
    },
  };
}
