import type { RetryPolicy } from "../agent/run_turn.ts";
import type { Config } from "../config/config.ts";
import type { Host } from "../host/host.ts";
import type { ModelCatalog } from "../llm/catalog.ts";
import type { Logger } from "../log/logger.ts";
import type { Tool } from "../tools/tool.ts";
import type { Workspace } from "../tools/workspace.ts";
import { initialEffort } from "./config_options.ts";
import { type PermissionAsker, Session, SessionStateError } from "./session.ts";
import type { UpdateSink } from "./update_queue.ts";

/** What a {@link SessionManager} needs. */
export interface SessionManagerOptions {
  readonly config: Config;
  readonly catalog: ModelCatalog;
  readonly tools: readonly Tool[];
  readonly host: Host;
  readonly logger: Logger;
  readonly now: () => number;
  /** Makes the update sink of one session. */
  readonly sinkFor: (sessionId: string) => UpdateSink;
  /** Makes the file and command access of one session. */
  readonly workspaceFor: (sessionId: string) => Workspace;
  /** Asks the client for permission. */
  readonly ask: PermissionAsker;
  readonly retry?: RetryPolicy;
}

/** Parameters of a new session, already validated and canonical. */
export interface CreateSessionOptions {
  readonly cwd: string;
  readonly additionalDirectories: readonly string[];
  /** Project instructions (the cwd's AGENTS.md). */
  readonly instructions?: string;
}

/**
 * The sessions of one connection. Each has its own prompt slot, controller and update queue, so
 * work in one never touches another.
 */
export class SessionManager {
  readonly #options: SessionManagerOptions;
  readonly #sessions = new Map<string, Session>();
  #closing: Promise<void> | undefined;

  /** @param options Shared dependencies */
  constructor(options: SessionManagerOptions) {
    this.#options = options;
  }

  /** How many sessions are open. */
  get size(): number {
    return this.#sessions.size;
  }

  /**
   * Opens a new session with the configured defaults.
   *
   * @param params Validated workspace roots
   * @returns The session
   * @throws {SessionStateError} Once the manager is closing
   */
  create(params: CreateSessionOptions): Session {
    if (this.#closing) throw new SessionStateError("the server is shutting down");
    const { config, catalog, tools, host, logger, now, sinkFor, workspaceFor, ask, retry } =
      this.#options;
    const id = crypto.randomUUID();
    const effort = initialEffort(catalog.info(config.model));
    const session = new Session({
      id,
      cwd: params.cwd,
      additionalDirectories: params.additionalDirectories,
      selection: {
        model: config.model,
        mode: config.mode,
        ...(effort === undefined ? {} : { effort }),
      },
      catalog,
      tools,
      host,
      workspace: workspaceFor(id),
      ask,
      ...(params.instructions ? { instructions: params.instructions } : {}),
      maxSteps: config.maxSteps,
      stream: config.stream,
      ...(retry ? { retry } : {}),
      sink: sinkFor(id),
      logger,
      now,
    });
    this.#sessions.set(id, session);
    return session;
  }

  /** The open session with this id. */
  get(id: string): Session | undefined {
    return this.#sessions.get(id);
  }

  /**
   * Cancels every turn, waits for each to settle and forgets every session. Idempotent.
   */
  closeAll(): Promise<void> {
    this.#closing ??= Promise.all(
      [...this.#sessions.values()].map((session) => session.close()),
    ).then(() => this.#sessions.clear());
    return this.#closing;
  }
}
