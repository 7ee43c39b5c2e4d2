/**
 * One session through the real `acp-http-client` 0.4.2 (Node.js only: under Deno its import of
 * `@agentclientprotocol/sdk` resolves to the root manifest's SDK 2.x, not the 0.16.1 it ships
 * with). Usage: `node acp_http_client_session.mjs <baseUrl> <cwd>`. It initializes, opens a
 * session, sends one prompt, disconnects (DELETE) and prints one JSON line: the protocol version,
 * the agent's name, the stop reason, the session update kinds and the agent's message text.
 *
 * @module
 */
import process from "node:process";
import { AcpHttpClient } from "../clients/node_modules/acp-http-client/dist/index.js";

const [baseUrl, cwd] = process.argv.slice(2);
const updates = [];
let text = "";
const client = new AcpHttpClient({
  baseUrl,
  client: {
    sessionUpdate: (notification) => {
      const { update } = notification;
      updates.push(update.sessionUpdate);
      if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
        text += update.content.text;
      }
    },
  },
});
const init = await client.initialize();
const session = await client.newSession({ cwd, mcpServers: [] });
const result = await client.prompt({
  sessionId: session.sessionId,
  prompt: [{ type: "text", text: "hello over http" }],
});
await client.disconnect();
process.stdout.write(
  JSON.stringify({
    protocolVersion: init.protocolVersion,
    agent: init.agentInfo?.name,
    stopReason: result.stopReason,
    updates,
    text,
  }) + "\n",
);
