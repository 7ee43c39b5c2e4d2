/**
 * Serving ACP on a pair of byte streams, by default the process's stdin and stdout, on whichever
 * runtime runs it: what an embedder's own program does when an ACP client spawns it.
 *
 * @module
 */
import process from "node:process";
import { NodeHost } from "../host/node_host.ts";
import { type AgentServer, createAgentServer } from "../server/agent_server.ts";
import { ndJsonStream } from "../transport/nd_json_stream.ts";

/** Options for {@link serveStdio}. */
export interface ServeStdioOptions {
  /**
   * The server to serve. Given, it stays open after serving ends (close it yourself); not given,
   * `serveStdio` makes one (offline models, sessions in memory, no log) and closes it at the end.
   *
   * @default {a server of its own}
   */
  readonly server?: AgentServer;
  /** Where the client's messages come from (NDJSON bytes). @default {the process's stdin} */
  readonly input?: ReadableStream<Uint8Array>;
  /** Where the answers go (NDJSON bytes). @default {the process's stdout} */
  readonly output?: WritableStream<Uint8Array>;
  /**
   * Ends serving when aborted: the running turns are cancelled and settle, then the connection
   * closes.
   *
   * @default {serving ends when the input ends}
   */
  readonly signal?: AbortSignal;
}

/**
 * Serves ACP on one connection over NDJSON byte streams, the process's stdin and stdout unless
 * others are given, until the input ends (the client hung up) or `signal` aborts. Nothing but
 * protocol frames is written to the output.
 *
 * @example Answering `initialize` from given streams
 * ```ts
 * import assert from "node:assert/strict";
 * import { serveStdio } from "./serve_stdio.ts";
 *
 * const request = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } };
 * const input = ReadableStream.from([new TextEncoder().encode(`${JSON.stringify(request)}\n`)]);
 * let text = "";
 * const output = new WritableStream<Uint8Array>({
 *   write(chunk) {
 *     text += new TextDecoder().decode(chunk);
 *   },
 * });
 * await serveStdio({ input, output });
 * assert.equal(JSON.parse(text).result.agentInfo.name, "acp-harness");
 * ```
 *
 * @param options The server, the streams and the signal that ends serving
 * @returns Resolves once the connection has closed and its output is written
 */
export async function serveStdio(options: ServeStdioOptions = {}): Promise<void> {
  options.signal?.throwIfAborted();
  const server = options.server ?? defaultServer();
  try {
    const { input, output } = await stdioOf(options);
    let drainOnInputEnd = (): Promise<void> => Promise.resolve();
    const stream = ndJsonStream(output, input, { onInputEnd: () => drainOnInputEnd() });
    const connection = server.connect(stream);
    drainOnInputEnd = () => connection.drain();
    const close = (): void => void connection.close();
    options.signal?.addEventListener("abort", close, { once: true });
    try {
      await connection.closed;
      await stream.drained();
    } finally {
      options.signal?.removeEventListener("abort", close);
    }
  } finally {
    if (options.server === undefined) await server.close();
  }
}

/** The server {@link serveStdio} makes when it is given none. */
function defaultServer(): AgentServer {
  return createAgentServer({ host: new NodeHost() });
}

/** The streams given, else the process's stdin and stdout. */
async function stdioOf(
  options: ServeStdioOptions,
): Promise<{ input: ReadableStream<Uint8Array>; output: WritableStream<Uint8Array> }> {
  if (options.input && options.output) return { input: options.input, output: options.output };
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  if (deno !== undefined) {
    return {
      input: options.input ?? deno.stdin.readable,
      output: options.output ?? deno.stdout.writable,
    };
  }
  // Node.js and Bun; `node:stream` only when it is needed.
  const { Readable, Writable } = await import("node:stream");
  return {
    input: options.input ?? Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>,
    output: options.output ?? Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
  };
}
