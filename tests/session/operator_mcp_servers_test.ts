/**
 * How a session's MCP servers are the operator's (config `mcpServers`) and the client's.
 *
 * @module
 */
import assert from "node:assert/strict";
import { parseMcpServers } from "../../src/mcp/mcp_declarations.ts";
import { MCP_CAPABILITIES } from "../../src/protocol/agent_capabilities.ts";
import { withOperatorServers } from "../../src/session/session_manager.ts";

const servers = (...names: string[]) =>
  parseMcpServers(names.map((name) => ({ name, command: `/bin/${name}`, args: [], env: [] })), {
    ...MCP_CAPABILITIES,
  });

Deno.test("withOperatorServers(): the operator's first, the client's entry replaces a clash", () => {
  const merged = withOperatorServers(servers("ops", "shared"), servers("shared", "cli"));
  assert.deepEqual(
    merged.map((server) => [server.name, "command" in server ? server.command : ""]),
    [
      ["ops", "/bin/ops"],
      ["shared", "/bin/shared"],
      ["cli", "/bin/cli"],
    ],
  );
  assert.equal(merged.filter((server) => server.name === "shared").length, 1);
  const client = servers("cli");
  assert.equal(withOperatorServers([], client), client);
  assert.deepEqual(withOperatorServers(servers("ops"), []).map((server) => server.name), ["ops"]);
});
