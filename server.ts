/**
 * The in-process server of acp-harness, without the command-line program: for embedders that
 * serve ACP from their own process. {@link createAgentServer} builds a server from a host, with
 * everything else defaulted unless given (settings, a model catalog, a session store, a logger, a
 * tool-set factory); `connect(stream)` serves one JSON-RPC message stream ({@link ndJsonStream}
 * frames bytes, {@link createMemoryPair} links two in-memory ends).
 *
 * The package root (`mod.ts`) exports all of this and more (the model providers, the store and
 * host interfaces, the scripted model); this entry is the smaller set a server needs.
 *
 * @example Serving ACP over in-memory streams
 * ```ts
 * import { createAgentServer, createMemoryPair, NodeHost } from "./server.ts";
 * const server = createAgentServer({ host: new NodeHost() });
 * const [serverSide, clientSide] = createMemoryPair();
 * const connection = server.connect(serverSide);
 * await clientSide.writable.close();
 * await connection.closed;
 * await server.close();
 * ```
 *
 * @module
 */
export {
  type AgentServer,
  type AgentServerConnection,
  type AgentServerOptions,
  type ConnectionOptions,
  createAgentServer,
  DEFAULT_SERVER_SETTINGS,
  LIMIT_REACHED,
  type ProtocolSettings,
  type ServerSettings,
  type SessionSettings,
  type TurnSettings,
} from "./src/server/agent_server.ts";
export {
  hashToken,
  parseTenants,
  type TenantChange,
  type TenantDefinition,
  TenantDirectory,
  type TenantIdentity,
  type TenantLimits,
  type TenantScope,
  TenantsFileError,
  TenantUsage,
} from "./src/server/tenants.ts";
export {
  type ChildSpanTelemetry,
  combineTelemetry,
  type ConnectionTransport,
  type EnvReader,
  type McpStartResult,
  type McpStartTelemetry,
  type MetricsText,
  type ModelLabels,
  type ModelOutcome,
  type ModelRequestTelemetry,
  NOOP_TELEMETRY,
  type OpenHandle,
  type PermissionOutcome,
  type PermissionTelemetry,
  type StoreCommitTelemetry,
  type Telemetry,
  type TokenCounts,
  type ToolCallDetails,
  type ToolCallStatus,
  type ToolCallTelemetry,
  toolLabel,
  type TraceCarrier,
  traceCarrierOf,
  traceMeta,
  tracesWanted,
  type TurnEnd,
  type TurnSpend,
  type TurnStart,
  type TurnTelemetry,
} from "./src/telemetry/telemetry.ts";
export type { SessionToolsInfo, ToolSetFactory } from "./src/session/tool_set_factory.ts";
export type { Cleanup, SessionCleanups } from "./src/session/session_disposer.ts";
export {
  type Config,
  ConfigError,
  DEFAULT_CONFIG,
  mergeConfig,
  PERMISSION_MODES,
  type PermissionMode,
  type ProviderConfig,
} from "./src/config/config.ts";
export {
  parseRule,
  type PermissionRule,
  type RuleKind,
  RuleSyntaxError,
  splitRuleList,
} from "./src/permission/rule_syntax.ts";
export { NO_RULES, type PermissionRules } from "./src/permission/rules.ts";
export { WORKTREE_FROM, type WorktreeFrom } from "./src/git/worktree_from.ts";
export { type ApiKeyVariable, ModelCatalog, type ModelCatalogOptions } from "./src/llm/catalog.ts";
export type { Host, SuperviseOptions } from "./src/host/host.ts";
export {
  CommandSandbox,
  type CommandSandboxOptions,
  DEFAULT_SANDBOX_PIDS,
  HIDDEN_HOME_PATHS,
  type SandboxedCommandRequest,
  type SandboxSetup,
  SandboxUnavailableError,
  setUpSandbox,
} from "./src/sandbox/command_sandbox.ts";
export {
  type HiddenPath,
  SANDBOX_LEVELS,
  type SandboxBackend,
  type SandboxDetection,
  type SandboxLevel,
  type SandboxRequest,
  type WrappedCommand,
} from "./src/sandbox/sandbox.ts";
export { BwrapBackend, detectBwrap } from "./src/sandbox/bwrap.ts";
export { PidsCgroups } from "./src/sandbox/pids_cgroup.ts";
export { NodeHost } from "./src/host/node_host.ts";
export type { BudgetLimits } from "./src/agent/turn_budget.ts";
export type { McpRemoteServer, McpServerSpec, McpStdioServer } from "./src/mcp/mcp_declarations.ts";
export { builtinTools } from "./src/tools/builtin_tools.ts";
export type { Tool } from "./src/tools/tool.ts";
export {
  createLogger,
  type LogFormat,
  type Logger,
  type LoggerOptions,
  type LogLevel,
  nullLogger,
} from "./src/log/logger.ts";
export type {
  AttachmentStore,
  SessionStore,
  UnreadableSession,
} from "./src/store/session_store.ts";
export { FileAttachmentStore } from "./src/store/attachment_store.ts";
export {
  MemorySessionStore,
  type MemorySessionStoreOptions,
} from "./src/store/memory_session_store.ts";
export {
  JsonlSessionStore,
  type JsonlSessionStoreOptions,
} from "./src/store/jsonl_session_store.ts";
export { createMemoryPair } from "./src/transport/memory.ts";
export {
  type NdJsonStream,
  ndJsonStream,
  type NdJsonStreamOptions,
} from "./src/transport/nd_json_stream.ts";
export type {
  FastStream,
  MessageSource,
  Stream,
  WriteMessageOptions,
} from "./src/transport/acp.ts";
export { VERSION } from "./src/util/version.ts";
