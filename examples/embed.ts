// deno-lint-ignore-file no-console
/**
 * Embeds acp-harness in-process: one server, one connection over in-memory streams, driven by
 * the ACP SDK's client through initialize → session/new → session/prompt on the offline echo
 * model. Nothing is spawned and no port is opened.
 *
 *   deno run -A examples/embed.ts "your prompt"
 *
 * Sessions are kept in memory (the default store): nothing touches the disk.
 *
 * @module
 */
import { client, methods } from "@agentclientprotocol/sdk";
import {
  builtinTools,
  createAgentServer,
  createMemoryPair,
  NodeHost,
  type ToolSetFactory,
} from "../mod.ts";

const prompt = Deno.args.join(" ") || "Hello from an embedded acp-harness!";

/** Every session gets the built-in tools (the default); this factory also says when it lets go. */
const tools = builtinTools();
const toolsFor: ToolSetFactory = ({ sessionId, disposer }) => {
  disposer.defer(() => console.log(`session ${sessionId} released its tools`));
  return tools;
};

// Only the host is required: the settings, the offline echo model, an in-memory session store,
// a silent logger and the version reported are defaults (`createAgentServer({ host })` serves
// as it is); the tool-set factory is optional too.
const server = createAgentServer({ host: new NodeHost(), toolsFor });

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
