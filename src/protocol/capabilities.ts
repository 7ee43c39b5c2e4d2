import { type McpServerSpec, parseMcpServers } from "../mcp/mcp_declarations.ts";
import { McpDeclarationError } from "../mcp/mcp_errors.ts";
import { MCP_CAPABILITIES } from "./agent_capabilities.ts";
import { invalid } from "./request_errors.ts";

export { agentCapabilities, MCP_CAPABILITIES } from "./agent_capabilities.ts";

/**
 * The MCP servers of a `session/new`, `session/load` or `session/resume`, validated.
 *
 * @param mcpServers The request's `mcpServers`
 * @returns The declarations, normalized
 * @throws {RequestError} -32602 naming the entry and field of the first invalid one
 */
export function mcpServersOf(mcpServers: unknown): readonly McpServerSpec[] {
  try {
    return parseMcpServers(mcpServers, MCP_CAPABILITIES);
  } catch (error) {
    if (error instanceof McpDeclarationError) throw invalid(error.message);
    throw error;
  }
}
