import type { CommandSandbox } from "../sandbox/command_sandbox.ts";
import type { RetryPolicy } from "../agent/run_turn.ts";
import type { Host } from "../host/host.ts";
import { ModelCatalog } from "../llm/catalog.ts";
import { type Logger, nullLogger } from "../log/logger.ts";
import type { ToolSetFactory } from "../session/tool_set_factory.ts";
import { MemoryAttachmentStore } from "../store/memory_attachment_store.ts";
import { MemorySessionStore } from "../store/memory_session_store.ts";
import type { AttachmentStore, SessionStore } from "../store/session_store.ts";
import { HostWorkspace } from "../tools/host_workspace.ts";
import type { Tool } from "../tools/tool.ts";
import type { Stream } from "../transport/acp.ts";
import { VERSION } from "../util/version.ts";
import { NOOP_TELEMETRY, type Telemetry } from "../telemetry/telemetry.ts";
import { blockingPathChecks } from "../protocol/path_checks.ts";
import { Connection, type ConnectionOptions, type ServerParts } from "./connection.ts";
import { serverSecretEnv } from "./server_secrets.ts";
import { tenantParts } from "./tenant_parts.ts";
import { DEFAULT_SERVER_SETTINGS, type ServerSettings } from "./server_settings.ts";

export { type ConnectionOptions, LIMIT_REACHED } from "./connection.ts";
export {
  DEFAULT_SERVER_SETTINGS,
  type ProtocolSettings,
  type ServerSettings,
  type SessionSettings,
  type TurnSettings,
} from "./server_settings.ts";

export { MAX_INSTRUCTIONS_BYTES } from "../protocol/instructions.ts";

/**
 * What an agent server is built from: everything its connections share. Only the host is
 * required; the rest has a default.
 */
export interface AgentServerOptions {
  /** The operating system. */
  readonly host: Host;
  /**
   * Server settings; those left out keep their default.
   *
   * @default {DEFAULT_SERVER_SETTINGS}
   */
  readonly settings?: Partial<ServerSettings>;
  /**
   * The models offered and their providers.
   *
   * @default {the offline models (`echo`) and the default model: `new ModelCatalog({ defaultModel })`}
   */
  readonly catalog?: ModelCatalog;
  /**
   * Where diagnostics go; each connection adds its `connectionId` to its lines.
   *
   * @default {nullLogger}
   */
  readonly logger?: Logger;
  /**
   * Reported as `agentInfo.version`.
   *
   * @default {the package's VERSION}
   */
  readonly version?: string;
  /**
   * Makes the tools of each session when it is created, loaded or resumed; it can register
   * clean-ups with the session's disposer.
   *
   * @default {every session gets the built-in tools (their modules loaded by the first session)}
   */
  readonly toolsFor?: ToolSetFactory;
  /** How failed model requests are retried. @default {DEFAULT_RETRY} */
  readonly retry?: RetryPolicy;
  /**
   * The sandbox of the sessions' commands (`setUpSandbox` in `src/sandbox/command_sandbox.ts`).
   *
   * @default {none: commands run unconfined}
   */
  readonly sandbox?: CommandSandbox;
  /**
   * Where sessions are recorded.
   *
   * @default {a MemorySessionStore: sessions last as long as the server}
   */
  readonly store?: SessionStore;
  /**
   * Where prompt images are kept.
   *
   * @default {in memory (the default store's own when no store is given)}
   */
  readonly attachments?: AttachmentStore;
  /**
   * Canonical absolute directories (real paths) sessions may be opened in: a `cwd` or additional
   * directory outside all of them gets -32602, `session/list` shows only the sessions inside them
   * and `session/delete` refuses the others.
   *
   * @default {any directory}
   */
  readonly allowedRoots?: readonly string[];
  /**
   * The server's data directory: sessions' git worktrees go under `worktrees/` and their
   * checkpoints under `checkpoints/` (the CLI passes `--data-dir`).
   *
   * @default {none: no session gets a worktree or checkpoints}
   */
  readonly dataDir?: string;
  /**
   * Where the sessions are recorded, in words (the CLI passes the store's description): kept in
   * the records of sessions' worktrees, so that a server on the same data directory with another
   * store never reaps them.
   *
   * @default {none: "unnamed"}
   */
  readonly storeName?: string;
  /**
   * Runs a task once the work of the current event-loop task is done (the runtime's
   * `setImmediate`). Given, each session hands its records and updates over together once per
   * task: one append for a turn that never waits (an offline model), one per network read of a
   * streaming one. Given too, a new session is written to the store once its `session/new`
   * answer is on its way (see `DeferredCreationStore`). Without it, every update is
   * handed over at once and `session/new` answers once the session is written.
   *
   * @default {none}
   */
  readonly defer?: (task: () => void) => void;
  /**
   * Checks the paths clients name (a session's `cwd` and additional directories, its
   * `AGENTS.md`) with the host's synchronous calls: cheaper, but a path on a file system that
   * hangs then holds up the whole server. For a server with one client, the one naming the paths
   * (the CLI on stdio); see `blockingPathChecks`.
   *
   * @default {false}
   */
  readonly blockingPathChecks?: boolean;
  /**
   * Work that waits until the server has its first idle moment with its sessions ready: it runs
   * once, after a connection's session side (the code the session methods need, loaded once
   * `initialize` is answered) has loaded and the requests in flight then (typically the first
   * `session/new`, which waited for it) are answered. Start-up work that can wait goes here, so
   * that it delays neither `initialize` nor the first session; the CLI reaps the processes a
   * killed predecessor left.
   *
   * @default {none}
   */
  readonly idleTask?: () => void;
  /**
   * Where the server's work is counted: connections, sessions, turns, model requests, tool calls,
   * permission decisions, MCP server starts, store commits (the CLI's `--metrics-port` passes a
   * `PrometheusTelemetry`).
   *
   * @default {NOOP_TELEMETRY: nothing is counted}
   */
  readonly telemetry?: Telemetry;
}

/** A live ACP connection served by acp-harness. */
export interface AgentServerConnection {
  /** The connection id, added to every line the connection and its sessions log. */
  readonly id: string;
  /** Resolves once the connection is closed and every session has settled. */
  readonly closed: Promise<void>;
  /** Resolves as soon as the transport is closed or `close()` is called. */
  readonly disconnected: Promise<void>;
  /** How many of the client's requests are being handled now (a running prompt is one). */
  readonly pending: number;
  /**
   * Cancels every turn and waits until every request in flight has been answered (while the
   * transport can still carry the answers). Call it when the input ends.
   */
  drain(): Promise<void>;
  /** Cancels every turn, waits for them to settle, then closes the connection. */
  close(): Promise<void>;
}

/** An ACP agent server: serves any number of connections; its sessions belong to them. */
export interface AgentServer {
  /**
   * Serves ACP on a message stream (a stdio pipe, an HTTP or WebSocket connection, an in-memory
   * pair). The sessions the client opens belong to this connection and end with it.
   *
   * @param stream The connection's message streams
   * @param options Limits of this connection
   * @returns The connection handle
   * @throws {Error} Once the server is closing
   */
  connect(stream: Stream, options?: ConnectionOptions): AgentServerConnection;
  /** How many connections are being served. */
  readonly connections: number;
  /** Stops accepting connections, then drains and closes every connection and its sessions. */
  close(): Promise<void>;
}

/**
 * Builds an agent server from what its connections share: a host, and whatever else is not to
 * be defaulted (settings, models, store, logger, tools).
 *
 * @example Serving a connection in-process
 * ```ts
 * import { createAgentServer } from "./agent_server.ts";
 * import { NodeHost } from "../host/node_host.ts";
 * import { createMemoryPair } from "../transport/memory.ts";
 * const server = createAgentServer({ host: new NodeHost() });
 * const [serverSide, clientSide] = createMemoryPair();
 * const connection = server.connect(serverSide);
 * await clientSide.writable.close();
 * await connection.closed;
 * await server.close();
 * ```
 *
 * @param options The host, and the settings and shared dependencies not left to their defaults
 * @returns The server
 */
export function createAgentServer(options: AgentServerOptions): AgentServer {
  const parts = serverParts(options);
  const open = new Set<Connection>();
  let count = 0;
  let closing: Promise<void> | undefined;
  return {
    connect(stream: Stream, connectionOptions?: ConnectionOptions): AgentServerConnection {
      if (closing) throw new Error("Cannot connect: the server is closing");
      const tenancy = connectionOptions?.tenancy;
      const served = tenancy ? tenantParts(parts, tenancy) : parts;
      const connection = new Connection(stream, served, `c${++count}`, connectionOptions);
      open.add(connection);
      const counted = parts.telemetry.connectionOpened(connectionOptions?.transport ?? "memory");
      void connection.closed.then(() => {
        open.delete(connection);
        counted.end();
      });
      return handle(connection);
    },
    get connections(): number {
      return open.size;
    },
    close(): Promise<void> {
      closing ??= Promise.all([...open].map((connection) => connection.close())).then(() => {});
      return closing;
    },
  };
}

function serverParts(options: AgentServerOptions): ServerParts {
  const { host } = options;
  const settings: ServerSettings = { ...DEFAULT_SERVER_SETTINGS, ...options.settings };
  const { store, attachments } = storesOf(options);
  const catalog = options.catalog ?? new ModelCatalog({ defaultModel: settings.model });
  return {
    settings,
    catalog,
    host,
    logger: options.logger ?? nullLogger,
    version: options.version ?? VERSION,
    store,
    attachments,
    toolsFor: options.toolsFor ?? builtinToolsFor,
    sandbox: options.sandbox,
    // Commands keep the user's environment, but not the server's secrets (its token, API keys).
    localWorkspace: new HostWorkspace(options.host, { hiddenEnv: serverSecretEnv(catalog) }),
    retry: options.retry,
    openSessions: new Set(),
    allowedRoots: options.allowedRoots,
    dataDir: options.dataDir,
    storeName: options.storeName,
    defer: options.defer,
    idleTask: once(options.idleTask),
    pathChecks: options.blockingPathChecks ? blockingPathChecks(options.host) : options.host,
    telemetry: options.telemetry ?? NOOP_TELEMETRY,
  };
}

/** The stores given, or in memory (attachments given alone are the memory store's). */
function storesOf(
  options: AgentServerOptions,
): { store: SessionStore; attachments: AttachmentStore } {
  if (options.store) {
    return {
      store: options.store,
      attachments: options.attachments ?? new MemoryAttachmentStore(),
    };
  }
  const store = new MemorySessionStore({
    now: () => options.host.now(),
    ...(options.attachments ? { attachments: options.attachments } : {}),
  });
  return { store, attachments: store.attachments };
}

/** `task`, run at most once however often the result is called. */
function once(task: (() => void) | undefined): (() => void) | undefined {
  if (!task) return undefined;
  let run = false;
  return () => {
    if (run) return;
    run = true;
    task();
  };
}

function handle(connection: Connection): AgentServerConnection {
  return {
    id: connection.id,
    closed: connection.closed,
    disconnected: connection.disconnected,
    get pending(): number {
      return connection.pending;
    },
    drain: () => connection.drain(),
    close: () => connection.close(),
  };
}

/** The built-in tools, once imported. */
let builtins: Promise<readonly Tool[]> | undefined;

/**
 * The default tool set: the built-in tools, imported with the first session that needs them (and
 * that import shared by every later session, which would otherwise each wait for an `import()`).
 */
function builtinToolsFor(): Promise<readonly Tool[]> {
  builtins ??= import("../tools/builtin_tools.ts").then((module) => module.builtinTools());
  // A failed import is tried again by the next session.
  builtins.catch(() => builtins = undefined);
  return builtins;
}
