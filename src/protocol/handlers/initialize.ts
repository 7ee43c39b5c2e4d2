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
import { MAX_OBSERVERS_PER_SESSION } from "../../session/observer_limits.ts";

/**
 * `initialize`: remembers the client's capabilities and says what the server offers: the ACP
 * capabilities, prompt queueing (`agentCapabilities._meta.claudeCode.promptQueueing`, and the
 * queue's length in `_meta["acp-harness"].promptQueue`), steering (`_meta.steering.supported`),
 * the command sandbox (`_meta["acp-harness"].sandbox`) and read-only observers
 * (`agentCapabilities._meta["acp-harness"].observe`).
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
  const queue = connection.server.settings.promptQueue;
  const capabilities = agentCapabilities(connection.promptCapabilities);
  const meta = sandboxMeta(connection.server.sandbox);
  return {
    protocolVersion: PROTOCOL_VERSION,
    agentInfo: { name: "acp-harness", title: "acp-harness", version: connection.server.version },
    // Prompt queueing, in the shape claude-agent-acp advertises it (its clients read this).
    agentCapabilities: {
      ...capabilities,
      _meta: {
        ...(queue > 0 ? { claudeCode: { promptQueueing: true } } : {}),
        // Read-only observers: `session/load` with `_meta["acp-harness"].observe`.
        [META_KEY]: { observe: { maxObservers: MAX_OBSERVERS_PER_SESSION } },
      },
    },
    authMethods: authMethods(connection.server.catalog),
    // Steering (`_session/steering`), in the shape claude-agent-acp, codex-acp and goose share.
    _meta: {
      steering: { supported: true },
      [META_KEY]: { promptQueue: queue, ...meta },
    },
  };
}

/**
 * The answer's `_meta["acp-harness"].sandbox`: the server's command sandbox level, and the
 * warning when the default sandbox fell back to `off`.
 */
function sandboxMeta(sandbox: CommandSandbox | undefined): { sandbox?: Record<string, unknown> } {
  if (!sandbox) return {};
  return {
    sandbox: {
      level: sandbox.level,
      network: sandbox.network,
      ...(sandbox.warning === undefined ? {} : { warning: sandbox.warning }),
    },
  };
}
