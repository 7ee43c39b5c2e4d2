/**
 * The client side of ACP, for driving another agent (the `delegate` tool): the SDK's client app
 * on a message stream, with the few requests a delegation makes.
 *
 * @module
 */
import {
  client,
  type ClientConnection,
  type InitializeResponse,
  methods,
  ndJsonStream,
  type NewSessionResponse,
  type PromptResponse,
  PROTOCOL_VERSION,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
} from "@agentclientprotocol/sdk";
import { VERSION } from "../util/version.ts";

export type {
  InitializeResponse,
  NewSessionResponse,
  PermissionOption,
  PromptResponse,
  RequestPermissionRequest,
  RequestPermissionResponse,
  SessionConfigOption,
  SessionNotification,
  SessionUpdate,
  StopReason as AgentStopReason,
  ToolCallContent,
} from "@agentclientprotocol/sdk";

/** What an {@link AgentClient} hands to its owner. */
export interface AgentClientHandlers {
  /** Every `session/update` notification, in arrival order. */
  onUpdate(notification: SessionNotification): void;
  /**
   * Answers a `session/request_permission`; `signal` aborts when the agent withdraws the
   * request or the connection ends.
   */
  onPermission(
    request: RequestPermissionRequest,
    signal: AbortSignal,
  ): Promise<RequestPermissionResponse>;
}

/** Options of one request to the agent. */
export interface AgentRequestOptions {
  /** Stops waiting (and asks the agent to stop, `$/cancel_request`) when aborted. */
  readonly signal?: AbortSignal;
  /** The request's `_meta` (the caller's W3C trace context: `traceparent`, …). */
  readonly meta?: Readonly<Record<string, unknown>>;
}

/**
 * An ACP client connected to an agent. Advertises no file-system and no terminal capability, so
 * the agent works on the files itself.
 */
export interface AgentClient {
  /** Sends `initialize` (protocol version 1, no client capabilities). */
  initialize(options?: AgentRequestOptions): Promise<InitializeResponse>;
  /** Sends `session/new` in `cwd`, with no MCP servers. */
  newSession(cwd: string, options?: AgentRequestOptions): Promise<NewSessionResponse>;
  /** Sends `session/set_config_option`. */
  setConfigOption(
    sessionId: string,
    configId: string,
    value: string,
    options?: AgentRequestOptions,
  ): Promise<void>;
  /** Sends the legacy `session/set_mode`. */
  setMode(sessionId: string, modeId: string, options?: AgentRequestOptions): Promise<void>;
  /**
   * Sends `session/prompt` with one text block; cancel it with {@link AgentClient.cancel} (a
   * `signal` in `options` is not read).
   */
  prompt(sessionId: string, text: string, options?: AgentRequestOptions): Promise<PromptResponse>;
  /** Sends the `session/cancel` notification. */
  cancel(sessionId: string): Promise<void>;
  /** Aborts when the connection has ended. */
  readonly signal: AbortSignal;
  /** Ends the connection: pending requests reject. */
  close(): void;
}

/** The `_meta` field of a request, when its options give one. */
function metaOf(
  options: AgentRequestOptions | undefined,
): { _meta?: Record<string, unknown> } {
  return options?.meta === undefined ? {} : { _meta: { ...options.meta } };
}

/**
 * Connects an ACP client to an agent over a pair of byte streams carrying newline-delimited JSON
 * (a child's stdin and stdout, say).
 *
 * @example Driving an agent
 * ```ts ignore
 * import { connectAgentClient } from "./agent_client.ts";
 * const agent = connectAgentClient(child.stdin, child.stdout, {
 *   onUpdate: (notification) => console.log(notification.update),
 *   onPermission: () => Promise.resolve({ outcome: { outcome: "cancelled" } }),
 * });
 * await agent.initialize();
 * const { sessionId } = await agent.newSession("/work");
 * const { stopReason } = await agent.prompt(sessionId, "Say hello");
 * agent.close();
 * ```
 *
 * @param output Where the messages to the agent are written
 * @param input Where the agent's messages are read from
 * @param handlers Where updates and permission requests go
 * @returns The client
 */
export function connectAgentClient(
  output: WritableStream<Uint8Array>,
  input: ReadableStream<Uint8Array>,
  handlers: AgentClientHandlers,
): AgentClient {
  const connection: ClientConnection = client({ name: "acp-harness delegate" })
    .onNotification(methods.client.session.update, ({ params }) => handlers.onUpdate(params))
    .onRequest(
      methods.client.session.requestPermission,
      ({ params, signal }) => handlers.onPermission(params, signal),
    )
    .connect(ndJsonStream(output, input));
  const agent = connection.agent;
  const sendOptions = (options: AgentRequestOptions | undefined) =>
    options?.signal ? { cancellationSignal: options.signal, stopWaitingOnCancel: true } : {};
  return {
    initialize: (options) =>
      agent.request(methods.agent.initialize, {
        protocolVersion: PROTOCOL_VERSION,
        clientCapabilities: {},
        clientInfo: { name: "acp-harness", version: VERSION },
      }, sendOptions(options)),
    newSession: (cwd, options) =>
      agent.request(
        methods.agent.session.new,
        { cwd, mcpServers: [], ...metaOf(options) },
        sendOptions(options),
      ),
    async setConfigOption(sessionId, configId, value, options): Promise<void> {
      await agent.request(
        methods.agent.session.setConfigOption,
        { sessionId, configId, value },
        sendOptions(options),
      );
    },
    async setMode(sessionId, modeId, options): Promise<void> {
      await agent.request(
        methods.agent.session.setMode,
        { sessionId, modeId },
        sendOptions(options),
      );
    },
    prompt: (sessionId, text, options) =>
      agent.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text }],
        ...metaOf(options),
      }),
    cancel: (sessionId) => agent.notify(methods.agent.session.cancel, { sessionId }),
    signal: connection.signal,
    close: () => connection.close(),
  };
}
