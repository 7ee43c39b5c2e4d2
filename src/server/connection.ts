import { type AgentConnection, RequestError } from "@agentclientprotocol/sdk";
import type { Logger } from "../log/logger.ts";
import type { ConnectionContext, ServerContext } from "../protocol/connection_context.ts";
import type { Session } from "../session/session.ts";
import type { SessionManager } from "../session/session_manager.ts";
import type { SessionServices } from "../session/session_services.ts";
import type { Workspace } from "../tools/workspace.ts";
import { type AnyMessage, fastPathsOf, type Stream } from "../transport/acp.ts";
import type { ClientCapabilities } from "../transport/acp_types.ts";
import { withFields } from "./connection_logger.ts";
import { outbound } from "./outbound.ts";
import { Inflight } from "./inflight.ts";
import type { PromptCapabilities } from "../protocol/prompt_content.ts";
import { agentApp } from "../protocol/routes.ts";
import { RequestBound } from "../protocol/request_bound.ts";
import type { ServerSettings } from "./server_settings.ts";
import { orderSessionMessages, type SessionOrder, streamSource } from "./session_order.ts";
import type * as SessionSideModule from "./connection_sessions.ts";
import { lazyImport } from "../util/lazy_import.ts";
import type { ConnectionTransport, Telemetry } from "../telemetry/telemetry.ts";
import type { TenantScope } from "./tenants.ts";

/**
 * The session side of a connection (`./connection_sessions.ts`): the handlers of the session
 * methods and what they run on. Loaded on first use, so that start-up and `initialize` do without
 * it.
 */
export type SessionSide = typeof SessionSideModule;

/**
 * What every connection of a server shares, built once by the server: what the handlers see
 * ({@link ServerContext}), what its sessions share (the parts of `SessionServices` the session
 * side builds them from, once per server) and the connection's own.
 */
export interface ServerParts
  extends ServerContext, Omit<SessionServices, "settings" | "store" | "files" | "now"> {
  readonly settings: ServerSettings;
  /** The server's logger; each connection adds its id. */
  readonly logger: Logger;
  /** File and command access on this machine, for clients that do not offer their own. */
  readonly localWorkspace: Workspace;
  /** The ids of the sessions open on any connection of the server. */
  readonly openSessions: Set<string>;
  /** The server's `idleTask`, run once however often it is called (see `AgentServerOptions`). */
  readonly idleTask?: (() => void) | undefined;
  /** Where the server's work is counted (`NOOP_TELEMETRY` when nothing is). */
  readonly telemetry: Telemetry;
}

/** Options of one connection. */
export interface ConnectionOptions {
  /** Most sessions the connection may have open (and opening) at once; unbounded by default. */
  readonly maxSessions?: number | undefined;
  /**
   * Most requests being handled at once; past it the connection reads nothing more until one is
   * answered (see `RequestBound`).
   *
   * @default {the server's `maxRequestsInFlight` setting}
   */
  readonly maxRequestsInFlight?: number | undefined;
  /** What the connection came by, for the connection count. @default {"memory"} */
  readonly transport?: ConnectionTransport | undefined;
  /** The tenant the connection is opened for; `undefined` on a server without tenants. */
  readonly tenant?: string | undefined;
  /**
   * The tenant's scope (`serve --http --tenants`): its limits are counted across its connections,
   * its roots, budgets and store view are the connection's (see `tenantParts`). Its name is
   * {@link tenant}'s.
   */
  readonly tenancy?: TenantScope | undefined;
}

/** JSON-RPC error code of a request refused because a connection limit is reached. */
export const LIMIT_REACHED: number = -32029;

/**
 * One client connection: its capabilities, the sessions it opened, the arrival order of each
 * session's messages and the requests in flight. Its end closes its sessions.
 */
export class Connection implements ConnectionContext {
  readonly id: string;
  readonly tenant: string | undefined;
  readonly server: ServerParts;
  readonly logger: Logger;
  readonly promptCapabilities: PromptCapabilities;
  clientCapabilities: ClientCapabilities = {};
  /** Settles once the transport is closed and every session has settled. */
  readonly closed: Promise<void>;
  /** Settles as soon as the transport is closed or a drain begins. */
  readonly disconnected: Promise<void>;
  readonly #order: SessionOrder;
  readonly #acp: AgentConnection;
  readonly #inflight = new Inflight();
  /** Bounds the requests being handled: reading waits at the bound. */
  readonly #bound: RequestBound;
  /** What runs once the answer to a request is written, by request id. */
  readonly #afterAnswer = new Map<unknown, () => void>();
  readonly #maxSessions: number | undefined;
  readonly #tenancy: TenantScope | undefined;
  readonly #writeDirect: (messages: readonly AnyMessage[]) => Promise<void>;
  /** Writes serialized frames past the SDK (stdio), when the transport can. */
  readonly #writeFrames: ((frames: Uint8Array) => Promise<void>) | undefined;
  #side: SessionSide | undefined;
  #sessions: SessionManager | undefined;
  #loadingSide: Promise<SessionSide> | undefined;
  /** Whether the sessions were told to close (a session manager made later closes at once). */
  #sessionsClosing = false;
  /** Session opens under way, counted against the session limit. */
  #opening = 0;
  #markDisconnected!: () => void;
  #isDisconnected = false;

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
    this.tenant = options.tenant ?? options.tenancy?.name;
    this.#tenancy = options.tenancy;
    this.#maxSessions = options.maxSessions;
    this.server = server;
    this.logger = withFields(
      server.logger,
      this.tenant === undefined ? { connectionId: id } : { connectionId: id, tenant: this.tenant },
    );
    this.promptCapabilities = {
      image: server.catalog.info(server.settings.model)?.image ?? false,
      audio: false,
      embeddedContext: true,
    };
    const max = options.maxRequestsInFlight ?? server.settings.maxRequestsInFlight;
    let toldFull = false;
    this.#bound = new RequestBound({
      max,
      onFull: () => {
        // Once per connection: a pipelining client reaches it again and again.
        if (toldFull) return;
        toldFull = true;
        this.logger.info("requests in flight at the bound: reading waits for answers", { max });
      },
    });
    const input = fastPathsOf(stream)?.messages ?? streamSource(stream.readable);
    // Messages of one session take effect in arrival order; `session/cancel` is carried out there.
    this.#order = orderSessionMessages(this.#bound.guard(input), {
      cancel: (sessionId) => this.#sessions?.get(sessionId)?.cancel(),
    });
    const described = outbound(stream, this.logger, (id) => {
      this.#bound.answered(id);
      this.#order.applied(id);
      const then = this.#afterAnswer.get(id);
      if (!then) return false;
      this.#afterAnswer.delete(id);
      then();
      // What it sends (a session's commands) goes out in the answer's write.
      return true;
    });
    // Reading starts after this constructor returns, so no handler runs before `#writeDirect` is set.
    this.#acp = agentApp(this).connect({
      readable: this.#order.readable,
      writable: described.writable,
    });
    this.#writeDirect = described.writeDirect;
    this.#writeFrames = described.writeFrames;
    this.disconnected = new Promise<void>((resolve) =>
      this.#markDisconnected = () => {
        this.#isDisconnected = true;
        resolve();
      }
    );
    void this.#acp.closed.then(this.#markDisconnected);
    this.closed = this.#acp.closed.then(() => this.#closeSessions());
    const counted = this.#tenancy?.usage.addConnection(() =>
      (this.#sessions?.size ?? 0) + this.#opening
    );
    if (counted) void this.closed.then(counted, counted);
  }

  get sessions(): SessionManager {
    if (!this.#sessions) throw new Error("Cannot use the sessions: the session side is not loaded");
    return this.#sessions;
  }

  get loadedSessionSide(): SessionSide | undefined {
    return this.#side;
  }

  sessionSide(): Promise<SessionSide> {
    if (this.#loadingSide) return this.#loadingSide;
    const loading = lazyImport<SessionSide>(import("./connection_sessions" + ".ts"));
    this.#loadingSide = loading.then((side) => {
      const sessions = side.createSessionManager(this, {
        client: this.#acp.client,
        writeDirect: this.#writeDirect,
        ...(this.#writeFrames ? { writeFrames: this.#writeFrames } : {}),
      });
      if (this.#sessionsClosing) void sessions.closeAll();
      this.#sessions = sessions;
      this.#side = side;
      const idleTask = this.server.idleTask;
      // Once the requests that waited for the side are answered, a macrotask after their writes.
      if (idleTask) {
        void this.#inflight.current().then(() =>
          setTimeout(() => {
            try {
              idleTask();
            } catch (error) {
              this.logger.warn("the idle task failed", { error: String(error) });
            }
          }, 0)
        );
      }
      return side;
    });
    return this.#loadingSide;
  }

  preloadSessionSide(): void {
    // A macrotask later: after the answer that prompted it is on its way.
    setTimeout(() => {
      if (!this.#isDisconnected && !this.#sessionsClosing) void this.sessionSide();
    }, 0);
  }

  applied(requestId: unknown): void {
    this.#bound.started(requestId);
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
    if (max !== undefined && (this.#sessions?.size ?? 0) + this.#opening >= max) {
      throw new RequestError(
        LIMIT_REACHED,
        `Too many sessions: this connection may have at most ${max} open; close one first`,
        { limit: "maxSessionsPerConnection", max },
      );
    }
    this.#tenancy?.usage.checkSessions();
    this.#opening++;
    try {
      return await open();
    } finally {
      this.#opening--;
    }
  }

  admitPrompt(): () => void {
    return this.#tenancy?.usage.admitPrompt() ?? noop;
  }

  /** How many requests are being handled (a running prompt is one). */
  get pending(): number {
    return this.#inflight.size;
  }

  requireSession(sessionId: string): Session {
    const session = this.#sessions?.get(sessionId);
    if (session) return session;
    if (this.#sessions?.observing(sessionId)) throw readOnlyObserver(sessionId);
    throw RequestError.sessionNotFound(sessionId);
  }

  /**
   * Cancels every turn, closes every session and waits until every request in flight has been
   * answered, while the transport can still carry the answers.
   */
  async drain(): Promise<void> {
    this.#markDisconnected();
    await nextMacrotask();
    await this.#closeSessions();
    await this.#inflight.settled();
    await nextMacrotask();
  }

  /** Drains, then closes the transport. */
  async close(): Promise<void> {
    await this.drain();
    this.#acp.close();
    await this.closed;
  }

  /** Closes every session, once the session side has loaded if it is loading. */
  #closeSessions(): Promise<void> {
    this.#sessionsClosing = true;
    if (this.#sessions) return this.#sessions.closeAll();
    // Loading: the manager closes as soon as it is made (no session can open on it).
    return this.#loadingSide?.then(() => this.#sessions?.closeAll(), () => {}) ?? Promise.resolve();
  }
}

function noop(): void {}

/**
 * The refusal of a request that acts on a session this connection only observes: -32002, the
 * code of a session this connection does not have, with the rule in words.
 */
function readOnlyObserver(sessionId: string): RequestError {
  return new RequestError(
    -32002,
    `Cannot act on session ${sessionId}: this connection is a read-only observer of it; only the ` +
      "connection that owns it may prompt, steer, cancel, configure it or answer its requests",
    { sessionId, observer: true },
  );
}

function nextMacrotask(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}
