import type { Config } from "../config/config.ts";
import type { ModelCatalog } from "../llm/catalog.ts";
import type { Logger } from "../log/logger.ts";
import type { Tool } from "../tools/tool.ts";
import { Session, SessionStateError } from "./session.ts";
import type { UpdateSink } from "./update_queue.ts";

/** What a {@link SessionManager} needs. */
export interface SessionManagerOptions {
  readonly config: Config;
  readonly catalog: ModelCatalog;
  readonly tools: readonly Tool[];
  readonly logger: Logger;
  readonly now: () => number;
  /** Makes the update sink of one session. */
  readonly sinkFor: (sessionId: string) => UpdateSink;
}

/** Parameters of a new session, already validated and canonical. */
export interface CreateSessionOptions {
  readonly cwd: string;
  readonly additionalDirectories: readonly string[];
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
    const { config, catalog, tools, logger, now, sinkFor } = this.#options;
    const id = crypto.randomUUID();
    const session = new Session({
      id,
      cwd: params.cwd,
      additionalDirectories: params.additionalDirectories,
      selection: { model: config.model, mode: config.mode },
      catalog,
      tools,
      maxSteps: config.maxSteps,
      stream: config.stream,
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
