/**
 * Starts the server in memory for end-to-end tests.
 *
 * @module
 */
import {
  type AgentServer,
  type AgentServerConnection,
  type Config,
  createAgentServer,
  createLogger,
  createMemoryPair,
  DEFAULT_SERVER_SETTINGS,
  type Logger,
  mergeConfig,
  NodeHost,
} from "../../mod.ts";
import { parseScript } from "../../llm.ts";
import type { RetryPolicy } from "../../src/agent/run_turn.ts";
import { createCatalog } from "../../src/cli/cli.ts";
import { settingsOf } from "../../src/cli/cli_settings.ts";
import type { SessionServices } from "../../src/session/session_services.ts";
import { JsonlSessionStore } from "../../src/store/jsonl_session_store.ts";
import { MemoryAttachmentStore } from "../../src/store/memory_attachment_store.ts";
import { MemorySessionStore } from "../../src/store/memory_session_store.ts";
import type { AttachmentStore, SessionStore } from "../../src/store/session_store.ts";
import type { Tool } from "../../src/tools/tool.ts";
import type { Telemetry } from "../../src/telemetry/telemetry.ts";
import { type AcpTestClient, memoryClient } from "./acp_client.ts";

/** An in-memory server and a client connected to it. */
export interface MemoryServer {
  readonly client: AcpTestClient;
  readonly connection: AgentServerConnection;
  /** Log lines written by the server. */
  readonly logs: string[];
  /** The data directory the server records sessions in; `undefined` for the in-memory store. */
  readonly dataDir: string | undefined;
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
  /**
   * The data directory of a JSONL store, which the test makes and removes (share it to restart
   * a server). Without it, sessions live in an in-memory store and nothing touches the disk.
   */
  readonly dataDir?: string;
  /**
   * The stores to record sessions in instead (a PostgreSQL one); `dataDir` then holds only the
   * worktrees and checkpoints.
   */
  readonly stores?: { readonly store: SessionStore; readonly attachments: AttachmentStore };
  /** The server's clock (the host's `now`), in ms since the epoch; the real one by default. */
  readonly now?: () => number;
  /** Checks the paths clients name synchronously, as the CLI on stdio does. */
  readonly blockingPathChecks?: boolean;
  /** Where the server counts its work. */
  readonly telemetry?: Telemetry;
  /**
   * Give the sessions `dataDir` as the server's data directory (worktrees, checkpoints), as the
   * CLI does.
   */
  readonly serverDataDir?: boolean;
}

/** An agent server built the way the tests build one, with the lines it logs. */
export interface TestAgentServer {
  readonly server: AgentServer;
  /** Log lines written by the server (debug level). */
  readonly logs: string[];
  /** Called with each line as it is logged. */
  onLog?: (line: string) => void;
}

/**
 * Builds an agent server from test options: the merged config, a catalog with the script, an
 * in-memory store (or a JSONL one in `dataDir`), debug logging into `logs`, fast retries.
 */
export function createTestAgentServer(
  options: StartOptions & { readonly allowedRoots?: readonly string[] } = {},
): TestAgentServer {
  const logs: string[] = [];
  const script = options.script === undefined ? undefined : parseScript(options.script);
  const config = mergeConfig(options.config ?? {});
  const host = options.now
    ? new ClockedHost(options.env ?? {}, options.now)
    : new NodeHost(options.env ?? {});
  const { dataDir } = options;
  const built: { -readonly [K in keyof TestAgentServer]: TestAgentServer[K] } = {
    logs,
    server: undefined as unknown as AgentServer,
  };
  const logger = createLogger("debug", (line) => {
    logs.push(line);
    built.onLog?.(line);
  });
  const { store, attachments } = options.stores ?? ownStores(host, dataDir, logger);
  built.server = createAgentServer({
    // The CLI's mapping, so that a test's `config` means what the flag does.
    settings: settingsOf(config).server,
    catalog: createCatalog(config, host, { script, logger }),
    host,
    logger,
    store,
    attachments,
    retry: options.retry ?? { attempts: 3, baseDelayMs: 5, maxDelayMs: 50 },
    ...(options.tools ? { toolsFor: () => options.tools! } : {}),
    ...(options.allowedRoots ? { allowedRoots: options.allowedRoots } : {}),
    ...(options.blockingPathChecks ? { blockingPathChecks: true } : {}),
    ...(options.telemetry ? { telemetry: options.telemetry } : {}),
    ...(options.serverDataDir && dataDir !== undefined ? { dataDir } : {}),
  });
  return built;
}

/** The stores of a test server: in memory, or JSONL in `dataDir`. */
function ownStores(
  host: NodeHost,
  dataDir: string | undefined,
  logger: Logger,
): { store: SessionStore; attachments: AttachmentStore } {
  const store = dataDir === undefined
    ? new MemorySessionStore({ now: () => host.now() })
    : new JsonlSessionStore({ host, dataDir, logger });
  return { store, attachments: store.attachments };
}

/** Starts a server over an in-memory pair. */
export function startServer(
  options: StartOptions & { readonly allowedRoots?: readonly string[] } = {},
): MemoryServer {
  const [serverSide, clientSide] = createMemoryPair();
  const { server, logs } = createTestAgentServer(options);
  const connection = server.connect(serverSide);
  const client = memoryClient(clientSide);
  return {
    client,
    connection,
    logs,
    dataDir: options.dataDir,
    async disconnect() {
      await (client as unknown as { close: () => Promise<void> }).close();
      await connection.closed;
    },
  };
}

/** A {@link NodeHost} whose clock is the test's. */
class ClockedHost extends NodeHost {
  readonly #now: () => number;

  constructor(env: Record<string, string>, now: () => number) {
    super(env);
    this.#now = now;
  }

  override now(): number {
    return this.#now();
  }
}

/**
 * The services of a session or session manager built by hand in a unit test: the default
 * settings (with `settings` over them), a NodeHost without environment and its clock, in-memory
 * attachments and no tools, each replaceable.
 */
export function sessionServices(
  parts: Pick<SessionServices, "catalog" | "store"> & Partial<Omit<SessionServices, "settings">> & {
    readonly settings?: Partial<SessionServices["settings"]>;
  },
): SessionServices {
  const host = parts.host ?? new NodeHost({});
  return {
    host,
    files: host,
    now: () => host.now(),
    attachments: new MemoryAttachmentStore(),
    toolsFor: () => [],
    ...parts,
    settings: { ...DEFAULT_SERVER_SETTINGS, ...parts.settings },
  };
}
