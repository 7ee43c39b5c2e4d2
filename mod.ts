/**
 * acp-harness: an automation-first Agent Client Protocol (ACP) agent server.
 *
 * Run it as a program (`deno run -A mod.ts`, `bun mod.ts`, `node dist/cli.js`) to serve ACP on
 * stdio, or embed it: {@link createAgentServer} builds a server, and `connect(stream)` serves any
 * number of JSON-RPC message streams ({@link ndJsonStream} frames bytes, {@link createMemoryPair}
 * links two in-memory ends). The package root is this embedding surface (the same as `./server`);
 * the parts a server is built from have entries of their own:
 *
 * - `./llm`: the model catalog, the provider presets, the offline and scripted models, the
 *   provider contract;
 * - `./tools`: the built-in tools, the tool contract, the `delegate` tool;
 * - `./store`: the session stores (JSONL, memory), their contract, records and errors;
 * - `./host`: the host interface and `NodeHost`;
 * - `./stdio`: `serveStdio`, ACP on the process's stdin and stdout;
 * - `./cli`: the command-line program's `main`.
 *
 * @example Serving ACP over in-memory streams
 * ```ts
 * import { createAgentServer, createMemoryPair, NodeHost } from "./mod.ts";
 * const server = createAgentServer({ host: new NodeHost() });
 * const [serverSide, clientSide] = createMemoryPair();
 * const connection = server.connect(serverSide);
 * await clientSide.writable.close();
 * await connection.closed;
 * await server.close();
 * ```
 *
 * @module
 */
// The embedding API (`./server`), and the messages its streams carry.
export * from "./server.ts";
export type {
  AnyMessage,
  AnyNotification,
  AnyRequest,
  AnyResponse,
  ErrorResponse,
  Result,
} from "./src/transport/acp.ts";
export type { StopReason } from "./src/util/stop_reason.ts";
export { DEFAULT_MAX_MESSAGE_BYTES } from "./src/transport/nd_json_stream.ts";

if (import.meta.main) {
  const { main } = await import("./src/runtime/main.ts");
  await main();
}
