/**
 * The baseline for `bench/main.ts`: a bare echo agent on `@agentclientprotocol/sdk` 2.4 with
 * nothing of acp-harness in it. It answers `initialize`, creates sessions with random UUIDs, and
 * answers each `session/prompt` the way acp-harness's echo model does (a `session_info_update` title
 * on a session's first prompt, one `agent_thought_chunk`, one `agent_message_chunk` echoing the
 * prompt text, each chunk with a `messageId`), or with `BARE_CHUNKS=N` message chunks when that env
 * var is set, then `end_turn`. The same frames on both sides, so the comparison measures the
 * server, not the model's output. Every notification is awaited.
 * It exits when stdin closes.
 *
 * Runtime-neutral: stdio goes through `node:process` and `node:stream`, so the same file runs as
 * `deno run -A bench/bare_agent.ts`, `bun bench/bare_agent.ts`, or bundled for Node.js.
 *
 * @module
 */
import * as acp from "@agentclientprotocol/sdk";
import process from "node:process";
import { Readable, Writable } from "node:stream";

const { methods } = acp;

/** Reads `BARE_CHUNKS`: a positive integer, or undefined for the one-chunk echo. */
function chunkCountFromEnv(value: string | undefined): number | undefined {
  if (value === undefined || value === "") return undefined;
  const count = Number(value);
  if (!Number.isInteger(count) || count < 1) {
    throw new Error(`BARE_CHUNKS must be a positive integer, got "${value}"`);
  }
  return count;
}

/** Joins the text blocks of a prompt. */
function promptText(prompt: readonly acp.ContentBlock[]): string {
  let text = "";
  for (const block of prompt) {
    if (block.type === "text") text += block.text;
  }
  return text;
}

/** A text chunk update of `kind`, with a message id of its own. */
function textUpdate(kind: "agent_message_chunk" | "agent_thought_chunk", text: string) {
  return {
    sessionUpdate: kind,
    messageId: crypto.randomUUID(),
    content: { type: "text" as const, text },
  };
}

/** Sends one `agent_message_chunk` and waits until the connection has taken it. */
function sendChunk(client: acp.AgentContext, sessionId: string, text: string): Promise<void> {
  return client.notify(methods.client.session.update, {
    sessionId,
    update: textUpdate("agent_message_chunk", text),
  });
}

/** Sends one `agent_thought_chunk` and waits until the connection has taken it. */
function sendThought(client: acp.AgentContext, sessionId: string, text: string): Promise<void> {
  return client.notify(methods.client.session.update, {
    sessionId,
    update: textUpdate("agent_thought_chunk", text),
  });
}

/** Builds the agent and serves it on stdio until stdin closes. */
async function main(): Promise<void> {
  const chunkCount = chunkCountFromEnv(process.env.BARE_CHUNKS);
  const sessions = new Map<string, { titled: boolean }>();

  const connection = acp.agent({ name: "bare-echo-agent" })
    .onRequest(methods.agent.initialize, function initialize(): acp.InitializeResponse {
      return {
        protocolVersion: acp.PROTOCOL_VERSION,
        agentInfo: { name: "bare-echo-agent", version: "0.0.1" },
        agentCapabilities: { loadSession: false, promptCapabilities: {} },
        authMethods: [],
      };
    })
    .onRequest(methods.agent.session.new, function newSession(): acp.NewSessionResponse {
      const sessionId = crypto.randomUUID();
      sessions.set(sessionId, { titled: false });
      return { sessionId };
    })
    .onRequest(
      methods.agent.session.prompt,
      async function prompt({ params, client }): Promise<acp.PromptResponse> {
        const session = sessions.get(params.sessionId);
        if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
        const text = promptText(params.prompt);
        if (!session.titled) {
          session.titled = true;
          await client.notify(methods.client.session.update, {
            sessionId: params.sessionId,
            update: {
              sessionUpdate: "session_info_update",
              title: text.slice(0, 80),
              updatedAt: new Date().toISOString(),
            },
          });
        }
        if (chunkCount === undefined) {
          await sendThought(
            client,
            params.sessionId,
            `The user sent ${text.length} characters; echoing them back.`,
          );
          await sendChunk(client, params.sessionId, `Echo: ${text}`);
        } else {
          for (let i = 0; i < chunkCount; i++) await sendChunk(client, params.sessionId, `w${i} `);
        }
        return { stopReason: "end_turn" };
      },
    )
    .connect(acp.ndJsonStream(
      Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
      Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>,
    ));

  await connection.closed;
  process.exit(0);
}

await main();
