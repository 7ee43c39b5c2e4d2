/**
 * `--metrics-port`: the Prometheus telemetry of the server and its own listener on 127.0.0.1,
 * which answers `GET /metrics` and nothing else. Loaded only when metrics are on (this module
 * imports `prom-client`).
 *
 * @module
 */
import { ConfigError } from "../config/config.ts";
import type { Logger } from "../log/logger.ts";
import { PrometheusTelemetry } from "../telemetry/prometheus_telemetry.ts";
import type { MetricsText } from "../telemetry/telemetry.ts";
import type { HttpHandler, HttpListener, ServeHttp } from "../transport/http/http_handler.ts";

/** The address the metrics listener binds: loopback only (it has no token). */
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
  const { serveHttp, port, logger } = options;
  if (!serveHttp) throw new ConfigError("This runtime cannot serve HTTP: --metrics-port is off");
  const telemetry = new PrometheusTelemetry();
  let listener: HttpListener;
  try {
    listener = await serveHttp(metricsHandler(telemetry), {
      hostname: METRICS_HOST,
      port,
      maxMessageBytes: 1024,
      headerTimeoutMs: 10_000,
      maxSockets: 64,
      maxSocketsPerAddress: 64,
    });
  } catch (error) {
    throw new ConfigError(
      `Cannot listen on ${METRICS_HOST}:${port} for metrics: ${(error as Error).message}`,
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

/** Host names a request to the loopback listener may name (no DNS rebinding). */
const LOOPBACK_NAMES = new Set(["127.0.0.1", "localhost", "[::1]"]);

/**
 * The handler of the metrics listener: `GET /metrics` (and `HEAD`), with a loopback `Host`;
 * 404 for any other path, 405 for another method, 403 for another host, no WebSocket.
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
 * @returns The handler
 */
export function metricsHandler(source: MetricsText): HttpHandler {
  const refused = (status: number, text: string): Response =>
    new Response(`${text}\n`, {
      status,
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  return {
    async fetch(request: Request): Promise<Response> {
      const url = new URL(request.url);
      const host = request.headers.get("host") ?? url.host;
      const name = host.replace(/:\d+$/, "").toLowerCase();
      if (!LOOPBACK_NAMES.has(name)) return refused(403, "Forbidden: not a loopback host");
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
