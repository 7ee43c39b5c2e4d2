/**
 * The ACP SDK's client side, for a client that drives an agent server in the same process
 * (`acp-harness run`): the client builder, the method names and the schema types such a client
 * reads. Like `acp.ts`, one of the few places the SDK enters the code base.
 *
 * @module
 */
export { client, methods } from "@agentclientprotocol/sdk";
export type {
  ContentBlock,
  McpServer,
  RequestPermissionRequest,
  RequestPermissionResponse,
  SessionNotification,
} from "@agentclientprotocol/sdk";
