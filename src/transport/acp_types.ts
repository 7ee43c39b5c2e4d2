/**
 * The one place ACP schema types are re-exported for the layers below the protocol, beside the transport types in `acp.ts`.
 *
 * @module
 */
export type {
  ClientCapabilities,
  ContentBlock,
  SessionConfigOption,
  SessionConfigSelectGroup,
  SessionModeState,
  SessionUpdate,
  ToolCallContent,
  ToolCallLocation,
  ToolKind,
} from "@agentclientprotocol/sdk";
