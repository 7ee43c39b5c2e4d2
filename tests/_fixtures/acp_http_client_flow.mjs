/**
 * The whole flow through the real `acp-http-client` 0.4.2 against `serve --http` (Node.js only, as
 * `acp_http_client_session.mjs` explains). Usage:
 * `node acp_http_client_flow.mjs <baseUrl> <token> <cwd>`. The server runs the scripted model with
 * `tests/runtime/http_e2e_test.ts`'s script: a write that asks permission, a text step, a command
 * that runs until cancelled.
 *
 * Client A on `/v1/acp/a`: initialize, new session, a prompt whose permission request it allows,
 * disconnect (DELETE). Client B on `/v1/acp/b`: initialize, load the session (its history is
 * replayed), a prompt, a prompt it cancels once the command runs, disconnect. Prints one JSON line.
 *
 * @module
 */
import process from "node:process";
import { AcpHttpClient } from "../clients/node_modules/acp-http-client/dist/index.js";

const [baseUrl, token, cwd] = process.argv.slice(2);

function connect(key, onUpdate) {
  return new AcpHttpClient({
    baseUrl,
    token,
    transport: { path: `/v1/acp/${key}` },
    client: {
      sessionUpdate: (notification) => onUpdate(notification.update),
      requestPermission: () => ({ outcome: { outcome: "selected", optionId: "allow_once" } }),
    },
  });
}

const seenA = [];
const a = connect("a", (update) => seenA.push(update.sessionUpdate));
await a.initialize();
const { sessionId } = await a.newSession({ cwd, mcpServers: [] });
const first = await a.prompt({ sessionId, prompt: [{ type: "text", text: "write" }] });
await a.disconnect();

const seenB = [];
let commandRunning;
const running = new Promise((resolve) => commandRunning = resolve);
const b = connect("b", (update) => {
  seenB.push(update.sessionUpdate);
  if (update.toolCallId === "r1" && update.status === "in_progress") commandRunning();
});
await b.initialize();
// A's DELETE was answered once its connection had closed and released the session.
await b.loadSession({ sessionId, cwd, mcpServers: [] });
const replayed = [...seenB];
const second = await b.prompt({ sessionId, prompt: [{ type: "text", text: "again" }] });
const third = b.prompt({ sessionId, prompt: [{ type: "text", text: "run" }] });
await running;
await b.cancel({ sessionId });
const cancelled = await third;
await b.disconnect();
process.stdout.write(
  JSON.stringify({
    first: first.stopReason,
    second: second.stopReason,
    cancelled: cancelled.stopReason,
    seenA,
    replayed,
  }) + "\n",
);
