/**
 * `--metrics-port`: the Prometheus telemetry of the server and its own listener (127.0.0.1, or
 * `--metrics-host` with the bearer token), which answers `GET /metrics` and nothing else. Loaded only when metrics are on (this module
 * imports `prom-client`).
 *
 * @module
 */
import { ConfigError } from "../config/config.ts";
import type { Logger } from "../log/logger.ts";
import { PrometheusTelemetry } from "../telemetry/prometheus_telemetry.ts";
import type { MetricsText } from "../telemetry/telemetry.ts";
import type { HttpHandler, HttpListener, ServeHttp } from "../transport/http/http_handler.ts";
import { checkRequest, isLoopback, loopbackHosts } from "../transport/http/http_security.ts";

/** The address the metrics listener binds unless told (`--metrics-host`). */
export const METRICS_HOST = "127.0.0.1";

/** How long open scrapes get to finish at shutdown, in ms. */
const CLOSE_GRACE_MS = 500;

/** The metrics of a running server and the listener that serves them. */
export interface MetricsEndpoint {
  /** What the server counts into (pass it to `createAgentServer`). */
  readonly telemetry: PrometheusTelemetry;
  /** The bound URL of `/metrics`: `http://127.0.0.1:40123/metrics`. */
  readonly url: string;
  /** Stops the listener (scrapes under way get a short grace). */
  close(): Promise<void>;
}

/** Options of {@link startMetricsEndpoint}. */
export interface MetricsEndpointOptions {
  /** The runtime's HTTP listener. */
  readonly serveHttp: ServeHttp | undefined;
  /** The port; 0 picks a free one. */
  readonly port: number;
  /** Where the bound URL is told (one `info` line, `serving metrics {"url":…}`). */
  readonly logger: Logger;
  /** The address to bind. @default {"127.0.0.1"} */
  readonly hostname?: string;
  /** The bearer token scrapes must send; required beyond loopback. */
  readonly token?: string | undefined;
}

/**
 * Makes the Prometheus telemetry and binds its listener on 127.0.0.1.
 *
 * @example
 * ```ts ignore
 * const metrics = await startMetricsEndpoint({ serveHttp, port: 0, logger });
 * const server = createAgentServer({ host, telemetry: metrics.telemetry });
 * // … at shutdown
 * await metrics.close();
 * ```
 *
 * @param options The listener, the port and the logger
 * @returns The endpoint
 * @throws {ConfigError} When the runtime cannot serve HTTP or the port cannot be bound
 */
export async function startMetricsEndpoint(
  options: MetricsEndpointOptions,
): Promise<MetricsEndpoint> {
  const { serveHttp, port, logger, hostname = METRICS_HOST, token } = options;
  if (!serveHttp) throw new ConfigError("This runtime cannot serve HTTP: --metrics-port is off");
  if (!isLoopback(hostname) && token === undefined) {
    throw new ConfigError(
      `Refusing to serve metrics on ${hostname} without a bearer token: pass --token-file <file> ` +
        `(or --token, ACP_HARNESS_TOKEN), or leave --metrics-host at 127.0.0.1`,
    );
  }
  const telemetry = new PrometheusTelemetry();
  // On loopback, the Host header must name loopback (no DNS rebinding) and a token, when one is
  // set, is required too; beyond it the token is.
  const policy: MetricsPolicy = {
    token,
    allowedOrigins: [],
    allowedHosts: loopbackHosts(hostname),
  };
  let listener: HttpListener;
  try {
    listener = await serveHttp(metricsHandler(telemetry, policy), {
      hostname,
      port,
      maxMessageBytes: 1024,
      headerTimeoutMs: 10_000,
      maxSockets: 64,
      maxSocketsPerAddress: 64,
    });
  } catch (error) {
    throw new ConfigError(
      `Cannot listen on ${hostname}:${port} for metrics: ${(error as Error).message}`,
    );
  }
  const url = `${listener.url}/metrics`;
  logger.info("serving metrics", { url });
  let closing: Promise<void> | undefined;
  return {
    telemetry,
    url,
    close: () => closing ??= listener.close(CLOSE_GRACE_MS),
  };
}

/** Who may scrape: the token (when set) and the Host names (on loopback). */
export interface MetricsPolicy {
  readonly token: string | undefined;
  readonly allowedOrigins: readonly string[];
  /** The Host names allowed; `undefined` (beyond loopback) for any. */
  readonly allowedHosts: readonly string[] | undefined;
}

/** The policy of a listener on loopback without a token. */
const LOOPBACK_POLICY: MetricsPolicy = {
  token: undefined,
  allowedOrigins: [],
  allowedHosts: loopbackHosts(METRICS_HOST),
};

/**
 * The handler of the metrics listener: `GET /metrics` (and `HEAD`), from a request the policy
 * lets in (a loopback `Host` on loopback, the bearer token when one is set: else 403 or 401);
 * 404 for any other path, 405 for another method, no WebSocket.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { metricsHandler } from "./metrics_endpoint.ts";
 * const handler = metricsHandler({
 *   contentType: "text/plain; version=0.0.4; charset=utf-8",
 *   metrics: () => Promise.resolve("up 1\n"),
 * });
 * const response = await handler.fetch(new Request("http://127.0.0.1:9464/metrics"), {});
 * assert.equal(await response.text(), "up 1\n");
 * assert.equal((await handler.fetch(new Request("http://127.0.0.1:9464/"), {})).status, 404);
 * ```
 *
 * @param source What `/metrics` renders
 * @param policy Who may scrape (default: loopback Host names, no token)
 * @returns The handler
 */
export function metricsHandler(
  source: MetricsText,
  policy: MetricsPolicy = LOOPBACK_POLICY,
): HttpHandler {
  const refused = (status: number, text: string): Response =>
    new Response(`${text}\n`, {
      status,
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  return {
    async fetch(request: Request): Promise<Response> {
      const url = new URL(request.url);
      const headers = new Headers(request.headers);
      if (!headers.has("host")) headers.set("host", url.host);
      const refusal = await checkRequest(headers, policy, request.url);
      if (refusal) return refused(refusal.status, `${refusal.title}: ${refusal.detail}`);
      if (url.pathname !== "/metrics") return refused(404, "Not Found: metrics are at /metrics");
      if (request.method !== "GET" && request.method !== "HEAD") {
        return refused(405, "Method Not Allowed");
      }
      const body = await source.metrics();
      return new Response(request.method === "HEAD" ? null : body, {
        headers: { "content-type": source.contentType, "cache-control": "no-store" },
      });
    },
    upgrade(): Promise<Response> {
      return Promise.resolve(refused(404, "Not Found: no WebSocket here"));
    },
  };
}
