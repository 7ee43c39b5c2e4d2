/**
 * Starts the server in memory for end-to-end tests.
 *
 * @module
 */
import {
  type AgentServerConnection,
  type Config,
  connectAgentServer,
  createLogger,
  createMemoryPair,
  mergeConfig,
  ModelCatalog,
  NodeHost,
  parseScript,
  VERSION,
} from "../../mod.ts";
import { type AcpTestClient, memoryClient } from "./acp_client.ts";

/** An in-memory server and a client connected to it. */
export interface MemoryServer {
  readonly client: AcpTestClient;
  readonly connection: AgentServerConnection;
  /** Log lines written by the server. */
  readonly logs: string[];
  /** Closes the client side (like stdin EOF) and waits for the server to settle. */
  disconnect(): Promise<void>;
}

/** Options for {@link startServer}. */
export interface StartOptions {
  readonly config?: Partial<Config>;
  /** Steps for the scripted model (makes `scripted` available). */
  readonly script?: unknown;
}

/** Starts a server over an in-memory pair. */
export function startServer(options: StartOptions = {}): MemoryServer {
  const [serverSide, clientSide] = createMemoryPair();
  const logs: string[] = [];
  const script = options.script === undefined ? undefined : parseScript(options.script);
  const connection = connectAgentServer(serverSide, {
    config: mergeConfig(options.config ?? {}),
    catalog: new ModelCatalog(script ? { script } : {}),
    host: new NodeHost(),
    logger: createLogger("debug", (line) => logs.push(line)),
    version: VERSION,
  });
  const client = memoryClient(clientSide);
  return {
    client,
    connection,
    logs,
    async disconnect() {
      await (client as unknown as { close: () => Promise<void> }).close();
      await connection.closed;
    },
  };
}
