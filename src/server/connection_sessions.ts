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
import { ObserverRegistry } from "../session/observers.ts";
import type { Session } from "../session/session.ts";
import type { SessionServices } from "../session/session_services.ts";
import type { ReplaySink } from "../session/replay.ts";
import type { AnyMessage } from "../transport/acp.ts";
import type { SessionUpdate } from "../transport/acp_types.ts";
import { DeferredCreationStore } from "../store/deferred_creation_store.ts";
import type { SessionStore } from "../store/session_store.ts";
import { createPermissionAsker } from "../protocol/ask_permission.ts";
import {
  completeElicitation,
  createElicitationAsker,
  elicitationModes,
} from "../protocol/ask_elicitation.ts";
import type { ClientQuestions } from "../session/elicitation_relay.ts";
import { ClientWorkspace } from "../protocol/client_workspace.ts";
import type { Connection, ServerParts } from "./connection.ts";

export {
  cancel,
  closeSession,
  deleteSession,
  forkSession,
  listSessions,
  loadSession,
  newSession,
  prompt,
  resumeSession,
  setConfigOption,
  setMode,
  steerSession,
} from "../protocol/session_handlers.ts";

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
  connection: Connection,
  link: SessionManagerLink,
): SessionManager {
  const { server, logger } = connection;
  const client = link.client;
  const ask = createPermissionAsker(client, logger, {
    timeoutMs: server.settings.permissionTimeoutMs,
  });
  return new SessionManager({
    services: sessionServices(server),
    logger,
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
    questions: () => clientQuestions(connection, client),
    tenant: connection.tenant,
    notify: (method, params) => {
      client.notify(method, params).catch((error: unknown) =>
        logger.debug("notification not delivered", { method, error: String(error) })
      );
    },
  });
}

/**
 * How the connection's client takes questions (its `elicitation` modes from `initialize`), with
 * the permission requests' timeout. Built once per connection, when its first session opens.
 */
function clientQuestions(connection: Connection, client: AgentContext): ClientQuestions {
  let built = questionsOf.get(connection);
  if (built === undefined) {
    const { logger, server } = connection;
    const modes = elicitationModes(connection.clientCapabilities);
    built = modes.form || modes.url
      ? {
        ...modes,
        ask: createElicitationAsker(client, modes, logger, {
          timeoutMs: server.settings.permissionTimeoutMs,
        }),
        ...(modes.url ? { complete: (id: string) => completeElicitation(client, id, logger) } : {}),
      }
      : modes;
    questionsOf.set(connection, built);
  }
  return built;
}

/** Each connection's {@link clientQuestions}. */
const questionsOf = new WeakMap<Connection, ClientQuestions>();

/** The services of each server's sessions, by server: built once, shared by its connections. */
const services = new WeakMap<ServerParts, SessionServices>();

/**
 * What every session of a server runs on, built with the server's first session manager (this
 * module is not loaded before) and shared by reference by all its connections' managers.
 */
function sessionServices(server: ServerParts): SessionServices {
  let built = services.get(server);
  if (built === undefined) {
    const { host } = server;
    built = {
      settings: server.settings,
      catalog: server.catalog,
      host,
      // Tools get the host's file-system queries only (never processes or the environment).
      files: host,
      now: () => host.now(),
      store: sessionStore(server),
      attachments: server.attachments,
      toolsFor: server.toolsFor,
      sandbox: server.sandbox,
      retry: server.retry,
      openSessions: server.openSessions,
      // One per server: its connections observe each other's sessions.
      observers: new ObserverRegistry<Session>(),
      defer: server.defer,
      telemetry: server.telemetry,
      dataDir: server.dataDir,
      storeName: server.storeName,
    };
    services.set(server, built);
  }
  return built;
}

/**
 * The store of a server's sessions: with a `defer`, its store wrapped so that a new session is
 * written after its `session/new` answer ({@link DeferredCreationStore}); built once per server
 * with its {@link sessionServices}, so one wrapper serves all the server's connections (each
 * lists the sessions the others are writing).
 */
function sessionStore(server: ServerParts): SessionStore {
  if (server.defer === undefined) return server.store;
  return new DeferredCreationStore(server.store, server.defer);
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
