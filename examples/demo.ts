// deno-lint-ignore-file no-console
/**
 * Starts acp-harness as a child process and drives it like an ACP client would:
 * initialize → session/new → session/prompt on the offline echo model, printing every frame.
 *
 *   deno task demo            # or: deno run -A examples/demo.ts "your prompt"
 *
 * @module
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, type Stream } from "@agentclientprotocol/sdk";

const prompt = Deno.args.join(" ") || "Hello, acp-harness!";
// The demo's session goes to a throwaway data directory, not ~/.acp-harness.
const dataDir = await mkdtemp(join(tmpdir(), "acp-harness-demo-"));
console.log(`(the demo's session is recorded in ${dataDir}, removed at the end)`);
const server = spawn(
  Deno.execPath(),
  ["run", "-A", new URL("../mod.ts", import.meta.url).pathname, "--data-dir", dataDir],
  { stdio: ["pipe", "pipe", "inherit"] },
);

// The SDK's client over the child's stdio, with every frame printed as it passes.
const wire = ndJsonStream(
  Writable.toWeb(server.stdin!) as WritableStream<Uint8Array>,
  Readable.toWeb(server.stdout!) as unknown as ReadableStream<Uint8Array>,
);
const show = (arrow: string) => <T>(message: T): T => {
  console.log(`${arrow} ${JSON.stringify(message)}`);
  return message;
};
const stream: Stream = {
  readable: wire.readable.pipeThrough(
    new TransformStream({ transform: (m, c) => c.enqueue(show("←")(m)) }),
  ),
  writable: new WritableStream({
    async write(message) {
      const writer = wire.writable.getWriter();
      try {
        await writer.write(show("→")(message));
      } finally {
        writer.releaseLock();
      }
    },
  }),
};

const stopReason = await client({ name: "acp-harness-demo" })
  .onNotification(methods.client.session.update, () => {})
  .connectWith(stream, async (agent) => {
    await agent.request(methods.agent.initialize, {
      protocolVersion: 1,
      clientInfo: { name: "acp-harness-demo", version: "1.0.0" },
    });
    const { sessionId } = await agent.request(methods.agent.session.new, {
      cwd: Deno.cwd(),
      mcpServers: [],
    });
    const result = await agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: prompt }],
    });
    return result.stopReason;
  });

server.stdin!.end();
await new Promise((resolve) => server.on("exit", resolve));
await rm(dataDir, { recursive: true, force: true });
console.log(
  `\nThe turn ended with "${stopReason}"; the server exited with code ${server.exitCode}.`,
);
