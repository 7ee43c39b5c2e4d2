import type { AgentCapabilities } from "@agentclientprotocol/sdk";
import type { PromptCapabilities } from "./prompt_content.ts";
import { invalid } from "./request_errors.ts";

/** The MCP transports the server can connect a session to: none yet. */
export const MCP_CAPABILITIES: NonNullable<AgentCapabilities["mcpCapabilities"]> = {
  http: false,
  sse: false,
};

/**
 * Refuses MCP servers in `session/new`, `session/load` or `session/resume`, since
 * {@link MCP_CAPABILITIES} advertises none. This is where MCP support plugs in.
 *
 * @param mcpServers The request's `mcpServers`
 * @throws {RequestError} -32602 when the list is not empty
 */
export function refuseMcpServers(mcpServers: readonly unknown[] | null | undefined): void {
  if ((mcpServers ?? []).length > 0) {
    throw invalid(
      "mcpServers: MCP servers are not supported yet (mcpCapabilities advertises none); pass []",
    );
  }
}

/**
 * What the server offers, as `initialize` reports it.
 *
 * @param prompt The prompt content accepted
 * @returns The agent capabilities
 */
export function agentCapabilities(prompt: PromptCapabilities): AgentCapabilities {
  return {
    loadSession: true,
    promptCapabilities: { ...prompt },
    mcpCapabilities: { ...MCP_CAPABILITIES },
    sessionCapabilities: {
      additionalDirectories: {},
      list: {},
      resume: {},
      close: {},
      delete: {},
    },
  };
}
