/**
 * The one place the ACP SDK's transport types enter the code base.
 *
 * @module
 */
export type {
  AnyMessage,
  AnyNotification,
  AnyRequest,
  AnyResponse,
  ErrorResponse,
  Result,
  Stream,
} from "@agentclientprotocol/sdk";
