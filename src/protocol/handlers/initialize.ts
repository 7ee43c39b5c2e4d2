import {
  type InitializeRequest,
  type InitializeResponse,
  PROTOCOL_VERSION,
} from "@agentclientprotocol/sdk";
import { agentCapabilities } from "../agent_capabilities.ts";
import { authMethods } from "../auth_methods.ts";
import type { ConnectionContext } from "../connection_context.ts";
import type { CommandSandbox } from "../../sandbox/command_sandbox.ts";
import { META_KEY } from "../session_meta.ts";

/**
 * `initialize`: remembers the client's capabilities and says what the server offers.
 *
 * @param connection The connection
 * @param params The request
 * @returns The answer
 */
export function initialize(
  connection: ConnectionContext,
  params: InitializeRequest,
): InitializeResponse {
  connection.clientCapabilities = params.clientCapabilities ?? {};
  connection.logger.debug("initialize", {
    client: params.clientInfo?.name,
    protocolVersion: params.protocolVersion,
    clientCapabilities: connection.clientCapabilities,
  });
  return {
    protocolVersion: PROTOCOL_VERSION,
    agentInfo: { name: "acp-harness", title: "acp-harness", version: connection.server.version },
    agentCapabilities: agentCapabilities(connection.promptCapabilities),
    authMethods: authMethods(connection.server.catalog),
    ...sandboxMeta(connection.server.sandbox),
  };
}

/**
 * The answer's `_meta["acp-harness"].sandbox`: the server's command sandbox level, and the
 * warning when the default sandbox fell back to `off`.
 */
function sandboxMeta(sandbox: CommandSandbox | undefined): { _meta?: Record<string, unknown> } {
  if (!sandbox) return {};
  return {
    _meta: {
      [META_KEY]: {
        sandbox: {
          level: sandbox.level,
          network: sandbox.network,
          ...(sandbox.warning === undefined ? {} : { warning: sandbox.warning }),
        },
      },
    },
  };
}
