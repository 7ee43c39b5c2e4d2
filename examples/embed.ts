// deno-lint-ignore-file no-console
/**
 * Embeds acp-harness in-process: one server, one connection over in-memory streams, driven by
 * the ACP SDK's client through initialize → session/new → session/prompt on the offline echo
 * model. Nothing is spawned and no port is opened.
 *
 *   deno run -A examples/embed.ts "your prompt"
 *
 * Sessions are kept in memory (`MemorySessionStore`): nothing touches the disk.
 *
 * @module
 */
import { client, methods } from "@agentclientprotocol/sdk";
import {
  builtinTools,
  createAgentServer,
  createMemoryPair,
  DEFAULT_CONFIG,
  MemorySessionStore,
  ModelCatalog,
  NodeHost,
  nullLogger,
  VERSION,
} from "../mod.ts";

const prompt = Deno.args.join(" ") || "Hello from an embedded acp-harness!";
const host = new NodeHost();
const store = new MemorySessionStore();
const tools = builtinTools();
const server = createAgentServer({
  config: { ...DEFAULT_CONFIG, model: "echo" },
  catalog: new ModelCatalog({ defaultModel: "echo" }),
  host,
  logger: nullLogger,
  version: VERSION,
  store,
  attachments: store.attachments,
  // Every session gets the built-in tools; a tool source can register its clean-up here.
  toolsFor: ({ sessionId, disposer }) => {
    disposer.defer(() => console.log(`session ${sessionId} released its tools`));
    return tools;
  },
});

try {
  const [serverSide, clientSide] = createMemoryPair();
  server.connect(serverSide);
  let reply = "";
  const stopReason = await client({ name: "acp-harness-embed" })
    .onNotification(methods.client.session.update, ({ params }) => {
      const update = params.update;
      if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
        reply += update.content.text;
      }
    })
    .connectWith(clientSide, async (agent) => {
      await agent.request(methods.agent.initialize, { protocolVersion: 1 });
      const { sessionId } = await agent.request(methods.agent.session.new, {
        cwd: Deno.cwd(),
        mcpServers: [],
      });
      const { stopReason } = await agent.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text: prompt }],
      });
      return stopReason;
    });
  console.log(`reply: ${reply}`);
  console.log(`stop reason: ${stopReason}`);
} finally {
  // Drains every connection and closes every session, which runs their disposers.
  await server.close();
}
