/**
 * ACP over HTTP and WebSocket: a Hono app, runtime-neutral, in front of one agent server.
 *
 * - `/acp`: the profile of the ACP RFD "Streamable HTTP & WebSocket Transport", served by the ACP
 *   SDK's `AcpServer` (POST + `Acp-Connection-Id`/`Acp-Session-Id`, SSE GET streams, DELETE, and
 *   WebSocket upgrade on the same path).
 * - `/v1/acp/:id` and `/v1/rpc`: the URL-keyed profile of `acp-http-client` (one URL, one
 *   connection; a POSTed request answered inline).
 * - `/health`: for load balancers; no token needed, no data.
 * - `/metrics`: the Prometheus metrics when they are on, behind the token.
 *
 * Every other request passes the security checks first (`Host` on loopback, `Origin`, bearer
 * token), then the body limit. Connections are capped in number, closed when idle, and drained on
 * shutdown.
 *
 * Composed of the routes (`http_routes.ts`), the open connections with their idle sweep
 * (`connection_registry.ts`) and the two profiles (`rfd_profile.ts`, `url_keyed_profile.ts`).
 *
 * @module
 */
import type { Logger } from "../../log/logger.ts";
import type { AgentServer } from "../../server/agent_server.ts";
import type { Stream } from "../acp.ts";
import { ConnectionRegistry } from "./connection_registry.ts";
import type { HttpHandler, RequestInfo } from "./http_handler.ts";
import { createHttpRoutes } from "./http_routes.ts";
import type { SecurityPolicy } from "./http_security.ts";
import { RfdProfile } from "./rfd_profile.ts";
import { UrlKeyedProfile } from "./url_keyed_profile.ts";
import type { MetricsText } from "../../telemetry/telemetry.ts";
import type { TenantIdentity } from "../../server/tenants.ts";

/** Limits of the HTTP transport; each is answered with a clear status when reached. */
export interface HttpLimits {
  /** Largest request body (and WebSocket message), in bytes: 413 beyond. */
  readonly maxBodyBytes: number;
  /** Most connections open at once: 503 for one more. */
  readonly maxConnections: number;
  /** Most connections open at once from one peer address: 429 for one more. @default {100} */
  readonly maxConnectionsPerAddress?: number;
  /** Most sessions one connection may have open: a JSON-RPC error for one more. */
  readonly maxSessionsPerConnection: number;
  /** Output a connection holds for a reader that is not reading, in bytes. */
  readonly maxBufferedBytes: number;
  /** How long a full buffer waits for its reader before the connection is closed, in ms. */
  readonly stallTimeoutMs: number;
  /** How long a connection may stay silent with no request being handled, in ms. */
  readonly idleTimeoutMs: number;
  /** How long a request body may take to arrive in full, in ms: 408 after. @default {60000} */
  readonly bodyTimeoutMs?: number;
}

/** What the HTTP transport is built from. */
export interface HttpTransportOptions {
  /** The agent server every connection is served by. */
  readonly server: AgentServer;
  /** Who may call. */
  readonly security: SecurityPolicy;
  /** The limits. */
  readonly limits: HttpLimits;
  /** Where connection lines go (never tokens or message content above debug). */
  readonly logger: Logger;
  /** The clock, in ms; the real one by default. */
  readonly now?: () => number;
  /** What `GET /metrics` answers (behind the token); absent: no `/metrics`. */
  readonly metrics?: MetricsText | undefined;
}

/** The HTTP transport: a handler for a runtime's listener, and its shutdown. */
export interface HttpTransport extends HttpHandler {
  /** How many HTTP and WebSocket connections are open. */
  readonly connections: number;
  /**
   * Closes the connections opened with a bearer token that no longer holds (after the tenants
   * file is reloaded); see `ConnectionRegistry.closeRevoked`.
   *
   * @param holds Whether an identity still holds
   * @returns How many connections are being closed
   */
  closeRevoked(holds: (identity: TenantIdentity) => boolean): number;
  /**
   * Stops taking new connections (503, and `/health` answers 503) and ends every stream and
   * socket. Call it after the agent server has drained its connections.
   */
  close(): Promise<void>;
}

/** Events kept for `Last-Event-ID` replay in the URL-keyed profile. */
const REPLAY_MESSAGES = 1024;
/** SSE keep-alive comment period. */
const KEEP_ALIVE_MS = 15_000;
/** The default of {@link HttpLimits.bodyTimeoutMs}. */
const DEFAULT_BODY_TIMEOUT_MS = 60_000;

/**
 * Builds the HTTP transport in front of an agent server.
 *
 * @example Serving it with a runtime's listener
 * ```ts ignore
 * const transport = createHttpTransport({ server, security, limits, logger });
 * const listener = await serveHttp(transport, { hostname: "127.0.0.1", port: 0, maxMessageBytes });
 * // … at shutdown: stop accepting, drain the agent server, then end the streams
 * const closed = listener.close(3000);
 * await server.close();
 * await transport.close();
 * await closed;
 * ```
 *
 * @param options The server, the security policy, the limits and the logger
 * @returns The transport
 */
export function createHttpTransport(options: HttpTransportOptions): HttpTransport {
  const { server, security, limits, logger } = options;
  const tenants = security.tenants;
  const registry = new ConnectionRegistry({
    server,
    maxConnections: limits.maxConnections,
    maxConnectionsPerAddress: limits.maxConnectionsPerAddress,
    maxSessionsPerConnection: limits.maxSessionsPerConnection,
    idleTimeoutMs: limits.idleTimeoutMs,
    logger,
    now: options.now ?? (() => Date.now()),
    ...(tenants ? { holds: (identity: TenantIdentity) => tenants.holds(identity) } : {}),
  });
  const connect = (stream: Stream, transport: string, info: RequestInfo, refuse?: () => void) =>
    registry.connect(stream, transport, info, refuse);
  const rfd = new RfdProfile({
    connect,
    refusal: (info) => registry.refusal(info),
    unauthorized: (info) => registry.unauthorized(info),
    maxBufferedBytes: limits.maxBufferedBytes,
    maxOutputStallMs: limits.stallTimeoutMs,
  });
  const urlKeyed = new UrlKeyedProfile({
    connect: (stream: Stream, info: RequestInfo = {}) => connect(stream, "http (url-keyed)", info),
    logger,
    maxBufferedBytes: limits.maxBufferedBytes,
    maxOutputStallMs: limits.stallTimeoutMs,
    replayMessages: REPLAY_MESSAGES,
    keepAliveMs: KEEP_ALIVE_MS,
  });
  const routes = createHttpRoutes({
    rfd,
    urlKeyed,
    connections: registry,
    security,
    maxBodyBytes: limits.maxBodyBytes,
    bodyTimeoutMs: limits.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS,
    logger,
    metrics: options.metrics,
    now: options.now,
  });
  return {
    get connections(): number {
      return registry.size;
    },
    closeRevoked: (holds) => registry.closeRevoked(holds),
    fetch: (request, info) => routes.fetch(request, info),
    upgrade: (request, info) => routes.upgrade(request, info),
    async close(): Promise<void> {
      registry.close();
      await Promise.all([rfd.close(), urlKeyed.close()]);
    },
  };
}
