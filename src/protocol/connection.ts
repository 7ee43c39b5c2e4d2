import { type AgentConnection, methods, RequestError } from "@agentclientprotocol/sdk";
import type { RetryPolicy } from "../agent/run_turn.ts";
import type { Config } from "../config/config.ts";
import type { Host } from "../host/host.ts";
import type { ModelCatalog } from "../llm/catalog.ts";
import type { Logger } from "../log/logger.ts";
import type { ReplayFrameSink } from "../session/replay_frames.ts";
import type { Session } from "../session/session.ts";
import { SessionManager } from "../session/session_manager.ts";
import type { ToolSetFactory } from "../session/tool_set_factory.ts";
import type { AttachmentStore, SessionStore } from "../store/session_store.ts";
import type { Workspace } from "../tools/workspace.ts";
import type { Stream } from "../transport/acp.ts";
import type { ClientCapabilities } from "./acp_types.ts";
import { createPermissionAsker } from "./ask_permission.ts";
import { ClientWorkspace } from "./client_workspace.ts";
import { withFields } from "./connection_logger.ts";
import { describeErrors } from "./describe_errors.ts";
import { Inflight } from "./inflight.ts";
import type { PromptCapabilities } from "./prompt_content.ts";
import { agentApp } from "./routes.ts";
import { orderSessionMessages, type SessionOrder } from "./session_order.ts";

/** What every connection of a server shares, built once by the server. */
export interface ServerParts {
  readonly config: Config;
  readonly catalog: ModelCatalog;
  readonly host: Host;
  /** The server's logger; each connection adds its id. */
  readonly logger: Logger;
  readonly version: string;
  readonly store: SessionStore;
  readonly attachments: AttachmentStore;
  readonly toolsFor: ToolSetFactory;
  /** File and command access on this machine, for clients that do not offer their own. */
  readonly localWorkspace: Workspace;
  readonly retry?: RetryPolicy | undefined;
  /** The ids of the sessions open on any connection of the server. */
  readonly openSessions: Set<string>;
  /** Canonical directories sessions may be opened in; `undefined` allows any. */
  readonly allowedRoots?: readonly string[] | undefined;
}

/** Options of one connection. */
export interface ConnectionOptions {
  /** Most sessions the connection may have open (and opening) at once; unbounded by default. */
  readonly maxSessions?: number | undefined;
}

/** JSON-RPC error code of a request refused because a connection limit is reached. */
export const LIMIT_REACHED: number = -32029;

/** One connection's state, as the ACP method handlers see it. */
export interface ConnectionContext {
  /** The connection id, on every line it logs. */
  readonly id: string;
  readonly server: ServerParts;
  /** The server's logger with the connection id added. */
  readonly logger: Logger;
  /** The sessions this connection opened. */
  readonly sessions: SessionManager;
  /** The prompt content accepted (images when the default model takes them). */
  readonly promptCapabilities: PromptCapabilities;
  /** The client's capabilities, from `initialize`. */
  clientCapabilities: ClientCapabilities;
  /** Says that a session request took effect: later messages of its session may go. */
  applied(requestId: unknown): void;
  /**
   * Runs `then` once the answer to a request is written (at once when `requestId` is undefined),
   * so that what it sends follows the answer.
   */
  afterAnswer(requestId: unknown, then: () => void): void;
  /** Tracks a request being handled, so the connection's drain waits for its answer. */
  track<Result>(result: Result): Result;
  /**
   * Runs a session open (`session/new`, `load`, `resume`) within the connection's session limit.
   *
   * @throws {RequestError} {@link LIMIT_REACHED} when the connection has its most sessions open
   */
  openingSession<T>(open: () => Promise<T>): Promise<T>;
  /**
   * The open session with this id.
   *
   * @throws {RequestError} -32002 when this connection has no such session open
   */
  requireSession(sessionId: string): Session;
}

/**
 * One client connection: its capabilities, the sessions it opened, the arrival order of each
 * session's messages and the requests in flight. Its end closes its sessions.
 */
export class Connection implements ConnectionContext {
  readonly id: string;
  readonly server: ServerParts;
  readonly logger: Logger;
  readonly sessions: SessionManager;
  readonly promptCapabilities: PromptCapabilities;
  clientCapabilities: ClientCapabilities = {};
  /** Settles once the transport is closed and every session has settled. */
  readonly closed: Promise<void>;
  /** Settles as soon as the transport is closed or a drain begins. */
  readonly disconnected: Promise<void>;
  readonly #order: SessionOrder;
  readonly #acp: AgentConnection;
  readonly #inflight = new Inflight();
  /** What runs once the answer to a request is written, by request id. */
  readonly #afterAnswer = new Map<unknown, () => void>();
  readonly #maxSessions: number | undefined;
  /** Session opens under way, counted against the session limit. */
  #opening = 0;
  #markDisconnected!: () => void;

  /**
   * Starts serving ACP on a stream.
   *
   * @param stream The connection's message streams
   * @param server What the server shares
   * @param id The connection id
   * @param options Limits of this connection
   */
  constructor(stream: Stream, server: ServerParts, id: string, options: ConnectionOptions = {}) {
    this.id = id;
    this.#maxSessions = options.maxSessions;
    this.server = server;
    this.logger = withFields(server.logger, { connectionId: id });
    this.promptCapabilities = {
      image: server.catalog.info(server.config.model)?.image ?? false,
      audio: false,
      embeddedContext: true,
    };
    // Messages of one session take effect in arrival order; `session/cancel` is carried out there.
    this.#order = orderSessionMessages(stream.readable, {
      cancel: (sessionId) => this.sessions.get(sessionId)?.cancel(),
    });
    const described = describeErrors(stream, this.logger, (id) => {
      this.#order.applied(id);
      const then = this.#afterAnswer.get(id);
      if (then) {
        this.#afterAnswer.delete(id);
        then();
      }
    });
    // Reading starts after this constructor returns, so no handler runs before `sessions` exists.
    this.#acp = agentApp(this).connect({
      readable: this.#order.readable,
      writable: described.writable,
    });
    this.sessions = this.#sessionManager(described);
    this.disconnected = new Promise<void>((resolve) => this.#markDisconnected = resolve);
    void this.#acp.closed.then(this.#markDisconnected);
    this.closed = this.#acp.closed.then(() => this.sessions.closeAll());
  }

  applied(requestId: unknown): void {
    this.#order.applied(requestId);
  }

  afterAnswer(requestId: unknown, then: () => void): void {
    if (requestId === undefined) then();
    else this.#afterAnswer.set(requestId, then);
  }

  track<Result>(result: Result): Result {
    return this.#inflight.track(result);
  }

  async openingSession<T>(open: () => Promise<T>): Promise<T> {
    const max = this.#maxSessions;
    if (max !== undefined && this.sessions.size + this.#opening >= max) {
      throw new RequestError(
        LIMIT_REACHED,
        `Too many sessions: this connection may have at most ${max} open; close one first`,
        { limit: "maxSessionsPerConnection", max },
      );
    }
    this.#opening++;
    try {
      return await open();
    } finally {
      this.#opening--;
    }
  }

  /** How many requests are being handled (a running prompt is one). */
  get pending(): number {
    return this.#inflight.size;
  }

  requireSession(sessionId: string): Session {
    const session = this.sessions.get(sessionId);
    if (!session) throw RequestError.sessionNotFound(sessionId);
    return session;
  }

  /**
   * Cancels every turn, closes every session and waits until every request in flight has been
   * answered, while the transport can still carry the answers.
   */
  async drain(): Promise<void> {
    this.#markDisconnected();
    await nextMacrotask();
    await this.sessions.closeAll();
    await this.#inflight.settled();
    await nextMacrotask();
  }

  /** Drains, then closes the transport. */
  async close(): Promise<void> {
    await this.drain();
    this.#acp.close();
    await this.closed;
  }

  #sessionManager(described: ReturnType<typeof describeErrors>): SessionManager {
    const { writeDirect, writeFrames } = described;
    const { server, logger } = this;
    const client = this.#acp.client;
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
      replaySinkFor: (sessionId) => (updates) =>
        writeDirect(updates.map((update) => ({
          jsonrpc: "2.0",
          method: methods.client.session.update,
          params: { sessionId, update },
        }))),
      ...(writeFrames
        ? { replayFramesFor: (sessionId: string) => replayFrames(sessionId, writeFrames) }
        : {}),
      workspaceFor: (sessionId) =>
        new ClientWorkspace(client, this.clientCapabilities, sessionId, server.localWorkspace),
      ask,
      ...(server.retry ? { retry: server.retry } : {}),
      store: server.store,
      attachments: server.attachments,
      openSessions: server.openSessions,
    });
  }
}

/** How a replay writes serialized `session/update` notifications of a session. */
function replayFrames(
  sessionId: string,
  write: (frames: Uint8Array) => Promise<void>,
): ReplayFrameSink {
  const encoder = new TextEncoder();
  const method = JSON.stringify(methods.client.session.update);
  return {
    head: encoder.encode(
      `{"jsonrpc":"2.0","method":${method},"params":{"sessionId":${
        JSON.stringify(sessionId)
      },"update":`,
    ),
    tail: encoder.encode("}}\n"),
    write,
  };
}

function nextMacrotask(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}
