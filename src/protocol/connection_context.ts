/**
 * What the ACP method handlers see of a connection and of the server behind it. The server layer
 * (`src/server/connection.ts`) implements it; the handlers depend on this interface only.
 *
 * @module
 */
import type { BudgetLimits } from "../agent/turn_budget.ts";
import type { CommandSandbox } from "../sandbox/command_sandbox.ts";
import type { Host } from "../host/host.ts";
import type { ModelCatalog } from "../llm/catalog.ts";
import type { Logger } from "../log/logger.ts";
import type { Session } from "../session/session.ts";
import type { SessionManager } from "../session/session_manager.ts";
import type { SessionStore } from "../store/session_store.ts";
import type { ClientCapabilities } from "../transport/acp_types.ts";
import type { PathChecks } from "./path_checks.ts";
import type { PromptCapabilities } from "./prompt_content.ts";
import type * as SessionHandlersModule from "./session_handlers.ts";

/**
 * The handlers of the session methods (`./session_handlers.ts`), loaded with the connection's
 * session side, so that start-up and `initialize` do without them.
 */
export type SessionHandlers = typeof SessionHandlersModule;

/** The settings the handlers read. */
export interface ProtocolSettings extends BudgetLimits {
  /** Default model id for new sessions. @default {"echo"} */
  readonly model: string;
  /** Sessions per `session/list` page. @default {100} */
  readonly sessionListPageSize: number;
  /**
   * Most prompts of one session queued while its turn runs (advertised by `initialize`).
   * @default {8}
   */
  readonly promptQueue: number;
}

/** What the handlers use of the server a connection belongs to. */
export interface ServerContext {
  readonly settings: ProtocolSettings;
  /** The sessions' command sandbox (its fall-back warning goes in the `initialize` answer). */
  readonly sandbox?: CommandSandbox | undefined;
  readonly catalog: ModelCatalog;
  readonly host: Host;
  /** Reported as `agentInfo.version`. */
  readonly version: string;
  readonly store: SessionStore;
  /** Canonical directories sessions may be opened in; `undefined` allows any. */
  readonly allowedRoots?: readonly string[] | undefined;
  /** How the paths clients name are checked (see `AgentServerOptions.blockingPathChecks`). */
  readonly pathChecks: PathChecks;
}

/** One connection's state, as the ACP method handlers see it. */
export interface ConnectionContext {
  /** The connection id, on every line it logs. */
  readonly id: string;
  /**
   * The tenant the connection was opened for (`serve --http --tenants`), or `undefined` on a
   * server without tenants: the connection sees and touches only that tenant's sessions.
   */
  readonly tenant: string | undefined;
  readonly server: ServerContext;
  /** The server's logger with the connection id added. */
  readonly logger: Logger;
  /**
   * The sessions this connection opened. Only the session side uses it, once loaded.
   *
   * @throws {Error} Before the session side is loaded
   */
  readonly sessions: SessionManager;
  /** The session side, once loaded; `undefined` before. */
  readonly loadedSessionSide: SessionHandlers | undefined;
  /**
   * Loads the session side (once, with its session manager): the handlers of the session methods.
   *
   * @returns The session side
   */
  sessionSide(): Promise<SessionHandlers>;
  /** Starts loading the session side soon, unless the connection is going away. */
  preloadSessionSide(): void;
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
   * @throws {RequestError} -32029 when the connection has its most sessions open
   */
  openingSession<T>(open: () => Promise<T>): Promise<T>;
  /**
   * Counts a prompt against the concurrent prompts of the connection's tenant (nothing to count
   * on a server without tenants).
   *
   * @returns Stops counting it (call it once the prompt is answered)
   * @throws {RequestError} -32029 when the tenant has its most prompts running
   */
  admitPrompt(): () => void;
  /**
   * The open session with this id.
   *
   * @throws {RequestError} -32002 when this connection has no such session open
   */
  requireSession(sessionId: string): Session;
}
