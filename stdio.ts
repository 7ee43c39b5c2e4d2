/**
 * The stdio entry of acp-harness: {@link serveStdio} serves ACP on the process's stdin and stdout
 * (or on the byte streams given), on whichever runtime runs it (Deno, Node.js or Bun). It is what
 * a program of your own calls when an ACP client spawns it; the command-line program, with its
 * flags, config file and stores, is the `./cli` entry.
 *
 * @example Serving a server of your own on stdio until the client hangs up
 * ```ts ignore
 * import { createAgentServer } from "@acp-harness/server";
 * import { NodeHost } from "@acp-harness/server/host";
 * import { serveStdio } from "@acp-harness/server/stdio";
 *
 * const server = createAgentServer({ host: new NodeHost() });
 * await serveStdio({ server });
 * await server.close();
 * ```
 *
 * @example Answering `initialize` on given streams
 * ```ts
 * import assert from "node:assert/strict";
 * import { serveStdio } from "./stdio.ts";
 *
 * const request = {
 *   jsonrpc: "2.0",
 *   id: 1,
 *   method: "initialize",
 *   params: { protocolVersion: 1, clientCapabilities: {} },
 * };
 * const input = ReadableStream.from([new TextEncoder().encode(`${JSON.stringify(request)}\n`)]);
 * const lines: string[] = [];
 * const output = new WritableStream<Uint8Array>({
 *   write(chunk) {
 *     lines.push(new TextDecoder().decode(chunk));
 *   },
 * });
 * await serveStdio({ input, output });
 * assert.equal(JSON.parse(lines.join("")).id, 1);
 * ```
 *
 * @module
 */
export { serveStdio, type ServeStdioOptions } from "./src/runtime/serve_stdio.ts";
