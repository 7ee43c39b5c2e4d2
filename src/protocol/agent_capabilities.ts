import type { AgentCapabilities } from "@agentclientprotocol/sdk";
import type { McpTransports } from "../mcp/mcp_declarations.ts";
import type { PromptCapabilities } from "./prompt_content.ts";

/**
 * The MCP transports a session can connect to besides stdio (which every agent supports):
 * Streamable HTTP and the older SSE transport.
 */
export const MCP_CAPABILITIES: McpTransports = { http: true, sse: true };

/**
 * The session capabilities of ACP's unstable schema that the server offers (the SDK's stable
 * types, which it is built on, do not name them): `session/fork`.
 */
const UNSTABLE_SESSION_CAPABILITIES: Readonly<Record<string, Record<string, never>>> = {
  fork: {},
};

/**
 * What the server offers, as `initialize` reports it. (Kept apart from `./capabilities.ts`, which
 * checks `mcpServers`, so that answering `initialize` loads nothing of the session side.)
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { agentCapabilities } from "./agent_capabilities.ts";
 * const offered = agentCapabilities({ image: true, audio: false, embeddedContext: true });
 * assert.equal(offered.loadSession, true);
 * assert.deepEqual(offered.mcpCapabilities, { http: true, sse: true });
 * ```
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
      ...UNSTABLE_SESSION_CAPABILITIES,
    },
  };
}
