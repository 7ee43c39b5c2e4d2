/**
 * The one place the ACP SDK's transport types enter the code base.
 *
 * @module
 */
export type { AnyMessage, Stream } from "@agentclientprotocol/sdk";
