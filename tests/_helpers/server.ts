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
  NodeHost,
  parseScript,
  VERSION,
} from "../../mod.ts";
import type { RetryPolicy } from "../../src/agent/run_turn.ts";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCatalog } from "../../src/cli.ts";
import { JsonlSessionStore } from "../../src/store/jsonl_session_store.ts";
import type { Tool } from "../../src/tools/tool.ts";
import { type AcpTestClient, memoryClient } from "./acp_client.ts";

/** An in-memory server and a client connected to it. */
export interface MemoryServer {
  readonly client: AcpTestClient;
  readonly connection: AgentServerConnection;
  /** Log lines written by the server. */
  readonly logs: string[];
  /** The data directory the server records sessions in. */
  readonly dataDir: string;
  /** Closes the client side (like stdin EOF) and waits for the server to settle. */
  disconnect(): Promise<void>;
}

/** Options for {@link startServer}. */
export interface StartOptions {
  readonly config?: Partial<Config>;
  /** Steps for the scripted model (makes `scripted` available). */
  readonly script?: unknown;
  /** The environment providers see (API keys, base URLs); nothing else is read. */
  readonly env?: Record<string, string>;
  /** Tools instead of the built-in ones. */
  readonly tools?: readonly Tool[];
  /** Retry policy; tests default to fast retries. */
  readonly retry?: RetryPolicy;
  /** Data directory (a new temporary one by default); share it to restart a server. */
  readonly dataDir?: string;
}

/** Starts a server over an in-memory pair. */
export function startServer(options: StartOptions = {}): MemoryServer {
  const [serverSide, clientSide] = createMemoryPair();
  const logs: string[] = [];
  const script = options.script === undefined ? undefined : parseScript(options.script);
  const config = mergeConfig(options.config ?? {});
  const host = new NodeHost(options.env ?? {});
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "acp-harness-data-"));
  const logger = createLogger("debug", (line) => logs.push(line));
  const store = new JsonlSessionStore({ host, dataDir, logger });
  const connection = connectAgentServer(serverSide, {
    config,
    catalog: createCatalog(config, host, { script, logger }),
    host,
    logger,
    version: VERSION,
    store,
    attachments: store.attachments,
    retry: options.retry ?? { attempts: 3, baseDelayMs: 5, maxDelayMs: 50 },
    ...(options.tools ? { toolsFor: () => options.tools! } : {}),
  });
  const client = memoryClient(clientSide);
  return {
    client,
    connection,
    logs,
    dataDir,
    async disconnect() {
      await (client as unknown as { close: () => Promise<void> }).close();
      await connection.closed;
    },
  };
}
