import type { AgentCapabilities } from "@agentclientprotocol/sdk";
import type { PromptCapabilities } from "./prompt_content.ts";
import {
  type McpServerSpec,
  type McpTransports,
  parseMcpServers,
} from "../mcp/mcp_declarations.ts";

/**
 * The MCP transports a session can connect to besides stdio (which every agent supports):
 * Streamable HTTP and the older SSE transport.
 */
export const MCP_CAPABILITIES: McpTransports = { http: true, sse: true };

/**
 * The MCP servers of a `session/new`, `session/load` or `session/resume`, validated.
 *
 * @param mcpServers The request's `mcpServers`
 * @returns The declarations, normalized
 * @throws {RequestError} -32602 naming the entry and field of the first invalid one
 */
export function mcpServersOf(mcpServers: unknown): readonly McpServerSpec[] {
  return parseMcpServers(mcpServers, MCP_CAPABILITIES);
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
