/**
 * The anchor of the scale section's 1,000 HTTP sessions (`bench/scale_http.ts`): the ACP SDK's
 * own `AcpServer` (`@agentclientprotocol/sdk/experimental/server`) served by `node:http` through
 * the SDK's Node adapter, with a bare agent behind it and nothing of acp-harness in it. Its
 * `session/prompt` streams one chat completion from the OpenAI-compatible endpoint named by
 * `BARE_LLM_URL` (the fake model of `tests/_helpers/fake_llm_server.ts`) and sends every content
 * delta as one `agent_message_chunk` as it arrives (the stamps the fake server writes pass
 * through untouched), then answers `end_turn`. No history, no store, no tools, no limits: the
 * least an ACP agent streaming a model over HTTP does.
 *
 * Runtime-neutral (`node:http`, `node:process`), so it runs as `deno run -A
 * bench/bare_http_agent.ts`, `bun bench/bare_http_agent.ts`, or bundled for Node.js. Prints
 * `listening on http://127.0.0.1:<port>` on stderr as ours does; exits on SIGTERM.
 *
 * @module
 */
import * as acp from "@agentclientprotocol/sdk";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import { createNodeHttpHandler } from "@agentclientprotocol/sdk/experimental/node";
import { createServer } from "node:http";
import process from "node:process";

const { methods } = acp;

/** Reads one chat completion stream; calls `onDelta` with each content delta. */
async function streamCompletion(
  url: string,
  signal: AbortSignal,
  onDelta: (text: string) => Promise<void>,
): Promise<void> {
  const response = await fetch(`${url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-bench" },
    body: JSON.stringify({ model: "coder", stream: true, messages: [] }),
    signal,
  });
  if (!response.ok || response.body === null) {
    throw new Error(`Cannot stream the model: it answered ${response.status}`);
  }
  let rest = "";
  for await (const text of response.body.pipeThrough(new TextDecoderStream())) {
    const lines = (rest + text).split("\n");
    rest = lines.pop() ?? "";
    for (const line of lines) {
      if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
      const chunk = JSON.parse(line.slice(6)) as {
        choices?: { delta?: { content?: string } }[];
      };
      const content = chunk.choices?.[0]?.delta?.content;
      if (content) await onDelta(content);
    }
  }
}

/** The bare agent: sessions by id, each prompt one streamed completion. */
function bareAgent(llmUrl: string): acp.AgentApp {
  const sessions = new Set<string>();
  return acp.agent({ name: "bare-http-agent" })
    .onRequest(methods.agent.initialize, function initialize(): acp.InitializeResponse {
      return {
        protocolVersion: acp.PROTOCOL_VERSION,
        agentInfo: { name: "bare-http-agent", version: "0.0.1" },
        agentCapabilities: { loadSession: false, promptCapabilities: {} },
        authMethods: [],
      };
    })
    .onRequest(methods.agent.session.new, function newSession(): acp.NewSessionResponse {
      const sessionId = crypto.randomUUID();
      sessions.add(sessionId);
      return { sessionId };
    })
    .onRequest(
      methods.agent.session.prompt,
      async function prompt({ params, client, signal }): Promise<acp.PromptResponse> {
        if (!sessions.has(params.sessionId)) {
          throw acp.RequestError.sessionNotFound(params.sessionId);
        }
        const messageId = crypto.randomUUID();
        await streamCompletion(
          llmUrl,
          signal,
          (text) =>
            client.notify(methods.client.session.update, {
              sessionId: params.sessionId,
              update: {
                sessionUpdate: "agent_message_chunk",
                messageId,
                content: { type: "text", text },
              },
            }),
        );
        return { stopReason: "end_turn" };
      },
    );
}

/** Serves the bare agent on 127.0.0.1 (port `BARE_PORT`, default any) until SIGTERM. */
function main(): void {
  const llmUrl = process.env.BARE_LLM_URL;
  if (!llmUrl) throw new Error("BARE_LLM_URL is not set");
  const app = bareAgent(llmUrl);
  const acpServer = new AcpServer({ agent: app });
  const handler = createNodeHttpHandler(acpServer);
  const server = createServer((req, res) => {
    if (req.url === "/health") {
      res.writeHead(200).end("ok");
      return;
    }
    handler(req, res);
  });
  server.listen(Number(process.env.BARE_PORT ?? 0), "127.0.0.1", () => {
    const address = server.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    process.stderr.write(`listening on http://127.0.0.1:${port}\n`);
  });
  process.on("SIGTERM", () => {
    void acpServer.close().finally(() => {
      server.close();
      process.exit(0);
    });
  });
}

main();
