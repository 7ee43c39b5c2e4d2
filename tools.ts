/**
 * The tools of acp-harness: the built-in workspace tools ({@link builtinTools}: read, write and
 * edit files, list, find, search, run commands, the plan), the {@link Tool} contract a tool of
 * your own implements, the workspace a tool works in, and the `delegate` tool that hands a task to
 * another ACP agent. A server gives each session the tools its `toolsFor` factory makes
 * (`createAgentServer({ toolsFor })`); by default, the built-in ones.
 *
 * @example A session's tools: the built-in ones and one of your own
 * ```ts
 * import assert from "node:assert/strict";
 * import { builtinTools, type Tool, type ToolSetFactory } from "./tools.ts";
 *
 * const clock: Tool = {
 *   name: "clock",
 *   description: "Tells the time",
 *   inputSchema: { type: "object", properties: {} },
 *   kind: "other",
 *   effect: "read",
 *   title: () => "Read the clock",
 *   execute: () => Promise.resolve({ content: new Date(0).toISOString(), isError: false }),
 * };
 * const toolsFor: ToolSetFactory = () => [...builtinTools(), clock];
 * const names = (await toolsFor({} as Parameters<ToolSetFactory>[0])).map((tool) => tool.name);
 * assert.equal(names.at(-1), "clock");
 * ```
 *
 * @module
 */
export { builtinTools } from "./src/tools/builtin_tools.ts";
export type {
  PlanEntry,
  Tool,
  ToolContent,
  ToolContext,
  ToolDisplay,
  ToolKind,
  ToolLocation,
  ToolPermissionQuestion,
  ToolResult,
} from "./src/tools/tool.ts";
export type { PermissionAnswer, ToolEffect } from "./src/permission/policy.ts";
export type {
  ElicitationAnswer,
  ElicitationContent,
  ElicitationRequest,
  ElicitationSchema,
  ElicitationValue,
} from "./src/tools/elicitation.ts";
export type { SessionToolsInfo, ToolSetFactory } from "./src/session/tool_set_factory.ts";
export type { Cleanup, SessionCleanups } from "./src/session/session_disposer.ts";
export { HostWorkspace, type HostWorkspaceOptions } from "./src/tools/host_workspace.ts";
export type {
  CommandResult,
  RunCommandOptions,
  Workspace,
  WorkspaceFiles,
  WorkspaceOptions,
} from "./src/tools/workspace.ts";
export {
  DEFAULT_AGENT_START_TIMEOUT_MS,
  DELEGATE_TOOL_NAME,
  delegateTool,
  type DelegateToolOptions,
} from "./src/delegation/delegate_tool.ts";
export { DEFAULT_STOP_GRACE, type StopGrace } from "./src/delegation/agent_process.ts";
export type { AgentConfig } from "./src/config/config.ts";
