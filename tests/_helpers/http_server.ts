/**
 * Starts the HTTP transport in-process on 127.0.0.1 (Deno's listener, a real socket) for tests.
 *
 * @module
 */
import { createLogger } from "../../mod.ts";
import type { Config } from "../../src/config/config.ts";
import type { AgentServer } from "../../src/server/agent_server.ts";
import { serveHttp } from "../../src/runtime/deno_http.ts";
import type { HttpListener } from "../../src/transport/http/http_handler.ts";
import { loopbackHosts } from "../../src/transport/http/http_security.ts";
import { createTestAgentServer } from "./server.ts";
import type { TenantDirectory } from "../../src/server/tenants.ts";
import {
  createHttpTransport,
  type HttpLimits,
  type HttpTransport,
} from "../../src/transport/http/http_transport.ts";

/** A running in-process HTTP server. */
export interface HttpTestServer extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly server: AgentServer;
  readonly transport: HttpTransport;
  /** Log lines so far. */
  readonly logs: string[];
  /** Resolves once a log line matches. */
  waitForLog(pattern: RegExp): Promise<void>;
  /** Drains the agent server, closes the transport and the listener. */
  close(): Promise<void>;
}

/** Options for {@link startHttpServer}. */
export interface HttpTestOptions {
  readonly config?: Partial<Config>;
  /** Steps of the scripted model. */
  readonly script?: unknown;
  readonly token?: string;
  readonly allowedOrigins?: readonly string[];
  readonly allowedRoots?: readonly string[];
  readonly limits?: Partial<HttpLimits>;
  /** The tenants (`--tenants`): every request needs one's token. */
  readonly tenants?: TenantDirectory;
  /** The transport's clock (tenants' request rates), in ms. */
  readonly transportNow?: () => number;
}

/** A test agent server behind the HTTP transport, before anything listens. */
export interface TestHttpTransport {
  readonly server: AgentServer;
  readonly transport: HttpTransport;
  /** Log lines so far. */
  readonly logs: string[];
  /** Resolves once a log line matches. */
  waitForLog(pattern: RegExp): Promise<void>;
}

/**
 * Builds an agent server (in-memory store) behind the HTTP transport with the test limits, for
 * {@link startHttpServer} to put a listener in front of, or for a test to call its handler.
 *
 * @param options The server's config, script, security and limits
 * @returns The server, its transport and its log
 */
export function createTestHttpTransport(options: HttpTestOptions = {}): TestHttpTransport {
  const waiters = new Set<() => void>();
  const wake = (): void => {
    for (const waiter of [...waiters]) waiter();
  };
  const built = createTestAgentServer(options);
  const { server, logs } = built;
  built.onLog = wake;
  const logger = createLogger("debug", (line) => {
    logs.push(line);
    wake();
  });
  const transport = createHttpTransport({
    server,
    logger,
    security: {
      token: options.token,
      allowedOrigins: options.allowedOrigins ?? [],
      allowedHosts: loopbackHosts("127.0.0.1"),
      ...(options.tenants ? { tenants: options.tenants } : {}),
    },
    ...(options.transportNow ? { now: options.transportNow } : {}),
    limits: {
      maxBodyBytes: 1024 * 1024,
      maxConnections: 1000,
      maxSessionsPerConnection: 256,
      maxBufferedBytes: 16 * 1024 * 1024,
      stallTimeoutMs: 60_000,
      idleTimeoutMs: 600_000,
      ...options.limits,
    },
  });
  return {
    server,
    transport,
    logs,
    waitForLog(pattern: RegExp): Promise<void> {
      return new Promise((resolve) => {
        const check = (): void => {
          if (!logs.some((line) => pattern.test(line))) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      });
    },
  };
}

/** Starts an agent server (in-memory store) behind the HTTP transport on a free port. */
export async function startHttpServer(options: HttpTestOptions = {}): Promise<HttpTestServer> {
  const { server, transport, logs, waitForLog } = createTestHttpTransport(options);
  const listener: HttpListener = await serveHttp(transport, {
    hostname: "127.0.0.1",
    port: 0,
    maxMessageBytes: 1024 * 1024,
  });
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      const listenerClosed = listener.close(2000);
      await server.close();
      await transport.close();
      await listenerClosed;
    })();
    return closing;
  };
  return {
    url: listener.url,
    server,
    transport,
    logs,
    waitForLog,
    close,
    [Symbol.asyncDispose]: close,
  };
}
