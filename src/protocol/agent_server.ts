import {
  agent,
  type AgentConnection,
  methods,
  PROTOCOL_VERSION,
  RequestError,
} from "@agentclientprotocol/sdk";
import { type RetryPolicy, TurnError } from "../agent/run_turn.ts";
import type { Config } from "../config/config.ts";
import type { Host } from "../host/host.ts";
import type { ModelCatalog } from "../llm/catalog.ts";
import type { Logger } from "../log/logger.ts";
import { ConfigValueError, type Session, SessionStateError } from "../session/session.ts";
import { SessionManager, SessionNotFoundError } from "../session/session_manager.ts";
import {
  type AttachmentStore,
  InvalidCursorError,
  SessionLockedError,
  type SessionStore,
} from "../store/session_store.ts";
import { normalizePath } from "../tools/posix_path.ts";
import { builtinTools } from "../tools/builtin_tools.ts";
import { HostWorkspace } from "../tools/host_workspace.ts";
import type { Tool } from "../tools/tool.ts";
import type { Stream } from "../transport/acp.ts";
import { isAbsolutePath } from "../util/path.ts";
import type { ClientCapabilities, SessionConfigOption, SessionModeState } from "./acp_types.ts";
import { createPermissionAsker } from "./ask_permission.ts";
import { ClientWorkspace } from "./client_workspace.ts";
import { describeErrors } from "./describe_errors.ts";
import { admitPrompt, type PromptCapabilities, PromptContentError } from "./prompt_content.ts";
import { orderSessionMessages } from "./session_order.ts";

/** What an agent server is built from. */
export interface AgentServerOptions {
  /** Server settings. */
  readonly config: Config;
  /** The models offered and their providers. */
  readonly catalog: ModelCatalog;
  /** The operating system. */
  readonly host: Host;
  /** Where diagnostics go. */
  readonly logger: Logger;
  /** Reported as `agentInfo.version`. */
  readonly version: string;
  /** Tools offered to the model. @default {builtinTools()} */
  readonly tools?: readonly Tool[];
  /** How failed model requests are retried. @default {DEFAULT_RETRY} */
  readonly retry?: RetryPolicy;
  /** Where sessions are recorded. */
  readonly store: SessionStore;
  /** Where prompt images are kept. */
  readonly attachments: AttachmentStore;
}

/** Largest AGENTS.md read into the system prompt, in bytes. */
export const MAX_INSTRUCTIONS_BYTES = 64 * 1024;

/** A live ACP connection served by acp-harness. */
export interface AgentServerConnection {
  /** Resolves once the connection is closed and every session has settled. */
  readonly closed: Promise<void>;
  /** Resolves as soon as the transport is closed or `close()` is called. */
  readonly disconnected: Promise<void>;
  /**
   * Cancels every turn and waits until every request in flight has been answered (while the
   * transport can still carry the answers). Call it when the input ends.
   */
  drain(): Promise<void>;
  /** Cancels every turn, waits for them to settle, then closes the connection. */
  close(): Promise<void>;
}

/**
 * Serves ACP on a message stream: one connection, many sessions.
 *
 * @example Serving in-process
 * ```ts ignore
 * import { connectAgentServer } from "./agent_server.ts";
 * const connection = connectAgentServer(stream, { config, catalog, host, logger, version });
 * await connection.closed;
 * ```
 *
 * @param stream The connection's message streams
 * @param options Configuration and dependencies
 * @returns The connection handle
 */
export function connectAgentServer(
  stream: Stream,
  options: AgentServerOptions,
): AgentServerConnection {
  const { host, logger, catalog } = options;
  // deno-lint-ignore prefer-const -- assigned once the app exists; the closures need it first
  let connection: AgentConnection | undefined;
  let clientCapabilities: ClientCapabilities = {};
  const promptCapabilities: PromptCapabilities = {
    image: catalog.info(options.config.model)?.image ?? false,
    audio: false,
    embeddedContext: true,
  };
  const hostWorkspace = new HostWorkspace(host);
  // Messages of one session take effect in arrival order; `session/cancel` is carried out there.
  const order = orderSessionMessages(stream.readable, {
    cancel: (sessionId) => sessions.get(sessionId)?.cancel(),
  });
  const described = describeErrors(stream, logger, order.applied);
  const sessions = new SessionManager({
    config: options.config,
    catalog,
    tools: options.tools ?? builtinTools(),
    host,
    logger,
    now: () => host.now(),
    sinkFor: (sessionId) => (update) => {
      if (!connection) return Promise.reject(new Error("Cannot send update: not connected"));
      return connection.client.notify(methods.client.session.update, { sessionId, update });
    },
    replaySinkFor: (sessionId) => (updates) =>
      described.writeDirect(updates.map((update) => ({
        jsonrpc: "2.0",
        method: methods.client.session.update,
        params: { sessionId, update },
      }))),
    workspaceFor: (sessionId) =>
      connection
        ? new ClientWorkspace(connection.client, clientCapabilities, sessionId, hostWorkspace)
        : hostWorkspace,
    ask: (question) =>
      connection
        ? createPermissionAsker(connection.client, logger, {
          timeoutMs: options.config.permissionTimeout * 1000,
        })(question)
        : Promise.resolve("cancelled"),
    ...(options.retry ? { retry: options.retry } : {}),
    store: options.store,
    attachments: options.attachments,
  });
  // Requests being handled, so shutdown can wait for their answers to be written.
  const inflight = new Set<Promise<unknown>>();
  const track = <Context, Result>(
    handler: (context: Context) => Result,
  ): (context: Context) => Result => {
    return (context) => {
      const result = handler(context);
      if (result instanceof Promise) {
        const settled = result.catch(() => {});
        inflight.add(settled);
        void settled.then(() => inflight.delete(settled));
      }
      return result;
    };
  };
  const requireSession = (sessionId: string): Session => {
    const session = sessions.get(sessionId);
    if (!session) throw RequestError.sessionNotFound(sessionId);
    return session;
  };

  const reopen = async (
    params: {
      sessionId: string;
      cwd: string;
      additionalDirectories?: string[] | null;
      mcpServers?: unknown[] | null;
    },
    replay: boolean,
  ): Promise<{ configOptions: SessionConfigOption[]; modes: SessionModeState }> => {
    if ((params.mcpServers ?? []).length > 0) {
      throw invalid(
        "mcpServers: MCP servers are not supported yet (mcpCapabilities advertises none); pass []",
      );
    }
    checkPath(params.cwd, "cwd");
    if (!(await sessions.exists(params.sessionId))) {
      throw RequestError.sessionNotFound(params.sessionId);
    }
    const roots = await workspaceRoots(host, params);
    try {
      const instructions = await readInstructions(host, roots.cwd, logger);
      const session = await sessions.open(params.sessionId, {
        cwd: roots.cwd,
        ...(params.additionalDirectories
          ? { additionalDirectories: roots.additionalDirectories }
          : {}),
        ...(instructions ? { instructions } : {}),
        replay,
      });
      logger.info(replay ? "session loaded" : "session resumed", { sessionId: session.id });
      return { configOptions: session.configOptions(), modes: session.modes() };
    } catch (error) {
      throw toRequestError(error);
    }
  };

  const app = agent({ name: "acp-harness" })
    .onRequest(methods.agent.initialize, ({ params }) => {
      clientCapabilities = params.clientCapabilities ?? {};
      logger.debug("initialize", {
        client: params.clientInfo?.name,
        protocolVersion: params.protocolVersion,
        clientCapabilities,
      });
      return {
        protocolVersion: PROTOCOL_VERSION,
        agentInfo: { name: "acp-harness", title: "acp-harness", version: options.version },
        agentCapabilities: {
          loadSession: true,
          promptCapabilities: { ...promptCapabilities },
          mcpCapabilities: { http: false, sse: false },
          sessionCapabilities: {
            additionalDirectories: {},
            list: {},
            resume: {},
            close: {},
            delete: {},
          },
        },
        authMethods: [],
      };
    })
    .onRequest(methods.agent.authenticate, () => ({}))
    .onRequest(
      methods.agent.session.new,
      track(async ({ params }) => {
        if (params.mcpServers.length > 0) {
          throw invalid(
            "mcpServers: MCP servers are not supported yet (mcpCapabilities advertises none); pass []",
          );
        }
        const roots = await workspaceRoots(host, params);
        let session: Session;
        try {
          const instructions = await readInstructions(host, roots.cwd, logger);
          session = await sessions.create({
            ...roots,
            ...(instructions ? { instructions } : {}),
          });
        } catch (error) {
          throw toRequestError(error);
        }
        const cwd = roots.cwd;
        logger.info("session created", { sessionId: session.id, cwd });
        return {
          sessionId: session.id,
          configOptions: session.configOptions(),
          modes: session.modes(),
        };
      }),
    )
    .onRequest(
      methods.agent.session.prompt,
      track(async ({ params, signal, requestId }) => {
        const session = requireSession(params.sessionId);
        let stopReason;
        try {
          // The slot is checked before the content; nothing awaits between here and the turn
          // taking the slot.
          session.assertCanPrompt();
          const model = session.currentModel();
          const content = admitPrompt(params.prompt, promptCapabilities, {
            id: model?.id ?? "",
            image: model?.image ?? false,
          });
          const turn = session.prompt(content, signal);
          // The turn holds the slot and its selection: later messages of the session may go.
          order.applied(requestId);
          stopReason = await turn;
        } catch (error) {
          throw toRequestError(error);
        }
        return { stopReason };
      }),
    )
    .onRequest(
      methods.agent.session.load,
      track(({ params }) => reopen(params, true)),
    )
    .onRequest(
      methods.agent.session.resume,
      track(({ params }) => reopen(params, false)),
    )
    .onRequest(
      methods.agent.session.list,
      track(async ({ params }) => {
        let cwd: string | undefined;
        if (params.cwd !== undefined && params.cwd !== null) {
          checkPath(params.cwd, "cwd");
          // Match the canonical path; a directory that no longer exists matches lexically.
          cwd = await host.realpath(params.cwd).catch(() => normalizePath(params.cwd as string));
        }
        try {
          const page = await sessions.list({
            ...(cwd === undefined ? {} : { cwd }),
            ...(params.cursor === undefined || params.cursor === null
              ? {}
              : { cursor: params.cursor }),
            limit: options.config.sessionListPageSize,
          });
          return {
            sessions: page.sessions.map((summary) => ({
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
        } catch (error) {
          throw toRequestError(error);
        }
      }),
    )
    .onRequest(
      methods.agent.session.close,
      track(async ({ params }) => {
        await sessions.close(params.sessionId);
        return {};
      }),
    )
    .onRequest(
      methods.agent.session.delete,
      track(async ({ params }) => {
        try {
          await sessions.delete(params.sessionId);
        } catch (error) {
          if (error instanceof SessionLockedError) {
            throw invalid(`sessionId: cannot delete: ${error.message}; close it there first`);
          }
          throw toRequestError(error);
        }
        return {};
      }),
    )
    .onNotification(methods.agent.session.cancel, ({ params }) => {
      sessions.get(params.sessionId)?.cancel();
    })
    .onRequest(methods.agent.session.setConfigOption, ({ params }) => {
      const session = requireSession(params.sessionId);
      if ("type" in params && params.type === "boolean") {
        throw invalid(`type: config option "${params.configId}" is a select; send a string value`);
      }
      try {
        return { configOptions: session.setConfigOption(params.configId, params.value) };
      } catch (error) {
        throw toRequestError(error);
      }
    })
    .onRequest(methods.agent.session.setMode, ({ params }) => {
      const session = requireSession(params.sessionId);
      try {
        session.setMode(params.modeId);
      } catch (error) {
        throw toRequestError(error);
      }
      return {};
    });

  connection = app.connect({ readable: order.readable, writable: described.writable });
  const active = connection;
  let markDisconnected = (): void => {};
  const disconnected = new Promise<void>((resolve) => markDisconnected = resolve);
  void active.closed.then(markDisconnected);
  const closed = active.closed.then(() => sessions.closeAll());
  const drain = async (): Promise<void> => {
    markDisconnected();
    await nextMacrotask();
    await sessions.closeAll();
    while (inflight.size > 0) await Promise.all([...inflight]);
    await nextMacrotask();
  };
  return {
    closed,
    disconnected,
    drain,
    async close(): Promise<void> {
      await drain();
      active.close();
      await closed;
    },
  };
}

async function readInstructions(
  host: Host,
  cwd: string,
  logger: Logger,
): Promise<string | undefined> {
  const file = `${cwd.replace(/\/+$/, "")}/AGENTS.md`;
  try {
    const info = await host.stat(file);
    if (!info?.isFile) return undefined;
    if (info.size > MAX_INSTRUCTIONS_BYTES) {
      logger.warn("AGENTS.md is too large; ignoring it", { file, size: info.size });
      return undefined;
    }
    return await host.readTextFile(file);
  } catch (error) {
    logger.warn("cannot read AGENTS.md", { file, error });
    return undefined;
  }
}

function nextMacrotask(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

function invalid(message: string): RequestError {
  return RequestError.invalidParams(undefined, message);
}

function toRequestError(error: unknown): unknown {
  if (error instanceof RequestError) return error;
  if (error instanceof SessionNotFoundError) return RequestError.sessionNotFound(error.sessionId);
  if (error instanceof InvalidCursorError) return invalid(`cursor: ${error.message}`);
  if (error instanceof SessionLockedError) return invalid(error.message);
  if (
    error instanceof SessionStateError || error instanceof PromptContentError ||
    error instanceof ConfigValueError
  ) {
    return invalid(error.message);
  }
  if (error instanceof TurnError) {
    return RequestError.internalError(
      error.providerError
        ? {
          kind: error.providerError.kind,
          retryable: error.providerError.retryable,
          ...(error.providerError.status === undefined
            ? {}
            : { status: error.providerError.status }),
        }
        : undefined,
      error.message,
    );
  }
  return error;
}

async function workspaceRoots(
  host: Host,
  params: { cwd: string; additionalDirectories?: string[] | null },
): Promise<{ cwd: string; additionalDirectories: string[] }> {
  const cwd = await workspaceDirectory(host, params.cwd, "cwd");
  const additionalDirectories: string[] = [];
  for (const [index, dir] of (params.additionalDirectories ?? []).entries()) {
    additionalDirectories.push(
      await workspaceDirectory(host, dir, `additionalDirectories[${index}]`),
    );
  }
  return { cwd, additionalDirectories };
}

/** Longest path accepted as a workspace root (Linux's PATH_MAX). */
const MAX_PATH_LENGTH = 4096;

/**
 * Checks a client-supplied path before it reaches the file system.
 *
 * @throws {RequestError} -32602 naming the field
 */
function checkPath(path: string, field: string): void {
  if (path.includes("\0")) throw invalid(`${field}: must not contain a NUL character`);
  if (path.length > MAX_PATH_LENGTH) {
    throw invalid(
      `${field}: must be at most ${MAX_PATH_LENGTH} characters long, got ${path.length}`,
    );
  }
  if (!isAbsolutePath(path)) {
    throw invalid(`${field}: must be an absolute path, got ${JSON.stringify(path)}`);
  }
}

async function workspaceDirectory(host: Host, path: string, field: string): Promise<string> {
  checkPath(path, field);
  let info: Awaited<ReturnType<Host["stat"]>>;
  try {
    info = await host.stat(path);
  } catch (error) {
    throw invalid(`${field}: cannot be used as a directory: ${describeFsError(error)}`);
  }
  if (!info?.isDirectory) {
    throw invalid(
      `${field}: must be an existing directory, but ${JSON.stringify(path)} ${
        info ? "is not a directory" : "does not exist"
      }`,
    );
  }
  try {
    return await host.realpath(path);
  } catch (error) {
    throw invalid(`${field}: cannot be used as a directory: ${describeFsError(error)}`);
  }
}

function describeFsError(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === "ENAMETOOLONG") return "a component of the path is too long";
  if (code === "EACCES" || code === "EPERM") return "permission denied";
  if (code === "ELOOP") return "too many symbolic links";
  return typeof code === "string" ? code : "it cannot be read";
}
