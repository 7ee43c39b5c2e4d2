/**
 * acp-harness: an automation-first Agent Client Protocol (ACP) agent server.
 *
 * Run it as a program (`deno run -A mod.ts`, `bun mod.ts`, `node dist/cli.js`) to serve ACP on
 * stdio, or embed it: {@link createAgentServer} builds a server from a store, a model catalog, a
 * host and a tool-set factory, and serves any number of JSON-RPC message streams through
 * `connect(stream)` ({@link ndJsonStream} frames bytes, {@link createMemoryPair} links two
 * in-memory ends).
 *
 * @example Serving ACP over in-memory streams
 * ```ts
 * import {
 *   createAgentServer, createMemoryPair, DEFAULT_CONFIG, MemorySessionStore, ModelCatalog, NodeHost,
 *   nullLogger, VERSION,
 * } from "./mod.ts";
 * const host = new NodeHost();
 * const store = new MemorySessionStore();
 * const server = createAgentServer({
 *   config: DEFAULT_CONFIG, catalog: new ModelCatalog(), host, logger: nullLogger, version: VERSION,
 *   store, attachments: store.attachments,
 * });
 * const [serverSide, clientSide] = createMemoryPair();
 * const connection = server.connect(serverSide);
 * await clientSide.writable.close();
 * await connection.closed;
 * await server.close();
 * ```
 *
 * @module
 */
// The embedding API (`./server`), then what else the package root offers.
export * from "./server.ts";
export {
  builtinProviders,
  type ModelFacts,
  type Pricing,
  type ProviderApi,
  type ProviderSpec,
} from "./src/llm/presets.ts";
export { DEFAULT_RETRY, type RetryPolicy, type StopReason } from "./src/agent/run_turn.ts";
export type { RecordedStopReason } from "./src/util/stop_reason.ts";
export { HostWorkspace } from "./src/tools/host_workspace.ts";
export type {
  PlanEntry,
  ToolContent,
  ToolContext,
  ToolDisplay,
  ToolKind,
  ToolLocation,
  ToolPermissionQuestion,
  ToolResult,
} from "./src/tools/tool.ts";
export type {
  CommandResult,
  RunCommandOptions,
  Workspace,
  WorkspaceFiles,
  WorkspaceOptions,
} from "./src/tools/workspace.ts";
export type {
  AppendFileOptions,
  AppendFileSyncOptions,
  DirEntry,
  FileIdentity,
  FileInfo,
  HostClock,
  HostDurableFiles,
  HostEnvironment,
  HostFiles,
  HostOptions,
  HostProcess,
  HostProcesses,
  PipedHostProcess,
  SpawnOptions,
  SyncOptions,
} from "./src/host/host.ts";
export {
  type DiscoverOptions,
  type DiscoveryResult,
  type ModelInfo,
  type ModelListing,
  type ResolvedModel,
} from "./src/llm/catalog.ts";
export { EchoProvider } from "./src/llm/echo.ts";
export {
  type FinishReason,
  type LlmContentPart,
  type LlmEvent,
  type LlmMessage,
  type LlmProvider,
  type LlmRequest,
  type LlmResourceLink,
  type LlmStreamOptions,
  type LlmToolCall,
  type LlmToolResultPart,
  type LlmToolSpec,
  type LlmUsage,
  ProviderError,
  type ProviderErrorKind,
  type ProviderErrorOptions,
} from "./src/llm/provider.ts";
export { parseScript, type Script, ScriptedProvider, type ScriptStep } from "./src/llm/scripted.ts";
export {
  DEFAULT_AGENT_START_TIMEOUT_MS,
  DELEGATE_TOOL_NAME,
  delegateTool,
  type DelegateToolOptions,
} from "./src/delegation/delegate_tool.ts";
export { DEFAULT_STOP_GRACE, type StopGrace } from "./src/delegation/agent_process.ts";
export {
  DELEGATION_DEPTH_ENV,
  mayDelegate,
  readDelegationDepth,
} from "./src/delegation/delegation_depth.ts";
export type { AgentConfig } from "./src/config/config.ts";
export type { PermissionAnswer, ToolEffect } from "./src/permission/policy.ts";
export { MemoryAttachmentStore } from "./src/store/memory_attachment_store.ts";
export {
  InvalidSessionIdError,
  SessionExistsError,
  SessionNotFoundError,
} from "./src/store/store_errors.ts";
export {
  type AppendOptions,
  type CreateOptions,
  InvalidCursorError,
  type ListOptions,
  type LoadedSession,
  type SessionHeader,
  type SessionLease,
  SessionLockedError,
  type SessionPage,
  type SessionRecordStream,
  type SessionSummary,
  type StoreCallOptions,
  type StoredContentPart,
  type StoredEvent,
  type StoredRecord,
} from "./src/store/session_store.ts";
export { DEFAULT_MAX_MESSAGE_BYTES } from "./src/transport/nd_json_stream.ts";
export type {
  AnyMessage,
  AnyNotification,
  AnyRequest,
  AnyResponse,
  ErrorResponse,
  Result,
} from "./src/transport/acp.ts";

if (import.meta.main) {
  const { main } = await import("./src/runtime/main.ts");
  await main();
}
