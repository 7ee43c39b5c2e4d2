/**
 * The routes of the HTTP transport: which request goes to which profile, behind which checks
 * (see {@link createHttpRoutes}).
 *
 * @module
 */
import { Hono, type MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import type { Logger } from "../../log/logger.ts";
import { problem, tooManyRequests } from "./_problem.ts";
import { readBody } from "./_read_body.ts";
import { exactIdText } from "./exact_ids.ts";
import type { HttpHandler, RequestInfo, WebSocketUpgrade } from "./http_handler.ts";
import { admitRequest, type SecurityPolicy } from "./http_security.ts";
import type { RfdProfile } from "./rfd_profile.ts";
import type { UrlKeyedProfile } from "./url_keyed_profile.ts";
import type { MetricsText } from "../../telemetry/telemetry.ts";
import type { TenantIdentity } from "../../server/tenants.ts";

/** URL keys of the URL-keyed profile: letters, digits, `.`, `_`, `~`, `-`, at most 128. */
const URL_KEY = /^[A-Za-z0-9._~-]{1,128}$/;

/** What the routes lead to, and the checks in front of them. */
export interface HttpRoutesOptions {
  /** The `/acp` profile. */
  readonly rfd: RfdProfile;
  /** The `/v1/acp/:id` and `/v1/rpc` profile. */
  readonly urlKeyed: UrlKeyedProfile;
  /**
   * The open connections: whether one more is refused, whether a request's token stopped holding
   * since it was authenticated, and whether the server is draining.
   */
  readonly connections: {
    readonly draining: boolean;
    refusal(info: RequestInfo): Response | undefined;
    unauthorized(info: RequestInfo): Response | undefined;
  };
  /** Who may call. */
  readonly security: SecurityPolicy;
  /** Largest request body, in bytes. */
  readonly maxBodyBytes: number;
  /** How long a request body may take to arrive in full, in ms. */
  readonly bodyTimeoutMs: number;
  /** Where refusals and failures are logged. */
  readonly logger: Logger;
  /** What `GET /metrics` answers, behind the same checks as ACP; absent: no such route. */
  readonly metrics?: MetricsText | undefined;
  /** The clock of the tenants' request rates, in ms. @default {Date.now} */
  readonly now?: (() => number) | undefined;
}

type App = Hono<{ Bindings: { info: RequestInfo } }>;

/**
 * The HTTP transport's handler, runtime-neutral (a Hono app):
 *
 * - `/acp`: the RFD profile (and its WebSocket upgrade);
 * - `/v1/acp/:id` and `/v1/rpc`: the URL-keyed profile (one URL, one connection);
 * - `/health`: for load balancers; no token needed, no data (`503` while draining);
 * - `/metrics`: the Prometheus metrics, when they are on (behind the token like ACP).
 *
 * Every other request passes the security checks first (`Host` on loopback, `Origin`, bearer
 * token, with CORS for the allowed origins), then a POST's body limit; ids a number cannot hold
 * exactly become placeholders on the way in.
 *
 * @example Answering a request without a socket
 * ```ts ignore
 * const routes = createHttpRoutes({ rfd, urlKeyed, connections, security, logger, … });
 * const response = await routes.fetch(new Request("http://127.0.0.1/health"), {});
 * ```
 *
 * @param options The profiles, the connections and the checks
 * @returns The handler a runtime's listener serves
 */
export function createHttpRoutes(options: HttpRoutesOptions): HttpHandler {
  const { rfd, urlKeyed, connections, logger } = options;
  const app: App = new Hono<{ Bindings: { info: RequestInfo } }>();
  const draining = (): boolean => connections.draining;
  app.get("/health", (c) => c.text(draining() ? "draining" : "ok", draining() ? 503 : 200));
  app.use("*", corsFor(options.security));
  const now = options.now ?? Date.now;
  app.use("*", securityChecks(options.security, logger, now));
  const metrics = options.metrics;
  if (metrics) {
    app.get("/metrics", async () =>
      new Response(await metrics.metrics(), {
        headers: { "content-type": metrics.contentType, "cache-control": "no-store" },
      }));
  }
  app.on("POST", "*", bodyLimit(options.maxBodyBytes, options.bodyTimeoutMs));
  app.all("/acp", (c) => rfd.handle(c.req.raw, c.env?.info ?? {}));
  const urlKeyedRoute = async (
    request: Request,
    key: string,
    info: RequestInfo = {},
  ): Promise<Response> => {
    if (!URL_KEY.test(key)) {
      return problem(400, "Bad connection key", "Use letters, digits, '.', '_', '~' or '-'");
    }
    // Each tenant has its own keys: the same URL of another tenant is another connection.
    const tenant = info.identity?.scope.name;
    if (tenant !== undefined) key = `${tenant}:${key}`;
    // After the body was read: a token removed meanwhile is refused, as the edge refuses it.
    const refused = urlKeyed.has(key) ? connections.unauthorized(info) : connections.refusal(info);
    if (refused) return refused;
    return await urlKeyed.handle(request, key, info);
  };
  app.all("/v1/rpc", (c) => urlKeyedRoute(c.req.raw, "rpc", c.env?.info));
  app.all(
    "/v1/acp/:id",
    (c) => urlKeyedRoute(c.req.raw, `acp.${c.req.param("id")}`, c.env?.info),
  );
  app.notFound(() => problem(404, "Not Found", "ACP is served on /acp and /v1/acp/:id"));
  app.onError((error) => {
    logger.error("HTTP handler failed", { error: String(error) });
    return problem(500, "Internal Server Error", "The request could not be handled");
  });
  return {
    async fetch(request: Request, info: RequestInfo): Promise<Response> {
      return await app.fetch(request, { info });
    },
    async upgrade(request: Request, info: RequestInfo): Promise<Response | WebSocketUpgrade> {
      const checked = await admitRequest(request.headers, options.security, request.url);
      if ("status" in checked) {
        logger.info("upgrade refused", { status: checked.status, reason: checked.title });
        return problem(checked.status, checked.title, checked.detail);
      }
      const limited = checked.identity && rateRefusal(checked.identity, logger, now);
      if (limited) return limited;
      if (new URL(request.url).pathname !== "/acp") {
        return problem(404, "Not Found", "WebSocket connections are served on /acp");
      }
      const admitted = checked.identity ? { ...info, identity: checked.identity } : info;
      return connections.refusal(admitted) ?? rfd.upgrade(admitted);
    },
  };
}

/** CORS for the allowed origins, with the headers both profiles use. */
function corsFor(security: SecurityPolicy): MiddlewareHandler {
  return cors({
    origin: (origin) =>
      security.allowedOrigins.includes("*") ||
        security.allowedOrigins.includes(origin)
        ? origin
        : null,
    allowHeaders: [
      "Authorization",
      "Content-Type",
      "Acp-Connection-Id",
      "Acp-Session-Id",
      "Last-Event-ID",
    ],
    allowMethods: ["GET", "POST", "DELETE", "OPTIONS"],
    exposeHeaders: ["Acp-Connection-Id"],
  });
}

/**
 * `Host`, `Origin` and the bearer token, refused as a problem; on a server with tenants, the
 * request's tenant (put in the request's info) and its request rate (`429` past it).
 */
function securityChecks(
  security: SecurityPolicy,
  logger: Logger,
  now: () => number,
): MiddlewareHandler<{ Bindings: { info: RequestInfo } }> {
  return async (c, next) => {
    const checked = await admitRequest(c.req.raw.headers, security, c.req.raw.url);
    if ("status" in checked) {
      logger.info("request refused", { status: checked.status, reason: checked.title });
      return problem(checked.status, checked.title, checked.detail);
    }
    const { identity } = checked;
    if (identity) {
      const limited = rateRefusal(identity, logger, now);
      if (limited) return limited;
      // Every request reaches the app through `fetch` below, with its info to add to.
      if (!c.env) throw new Error("Cannot serve a tenant's request without the request's info");
      c.env.info = { ...c.env.info, identity };
    }
    await next();
    return undefined;
  };
}

/** `429` for a request of a tenant past its requests a minute, else `undefined`. */
function rateRefusal(
  identity: TenantIdentity,
  logger: Logger,
  now: () => number,
): Response | undefined {
  const { usage } = identity.scope;
  const retryAfter = usage.takeRequest(now());
  if (retryAfter === undefined) return undefined;
  logger.info("request refused: the tenant's request rate", {
    tenant: usage.name,
    retryAfter,
  });
  return tooManyRequests(usage.name, usage.limits.requestsPerMinute ?? 0, retryAfter);
}

/**
 * A POST's body read in full under the limits, its ids a number cannot hold exactly made
 * placeholders (they go out as the client wrote them).
 */
function bodyLimit(maxBodyBytes: number, bodyTimeoutMs: number): MiddlewareHandler {
  return async (c, next) => {
    const read = await readBody(c.req.raw, maxBodyBytes, bodyTimeoutMs);
    if (read instanceof Response) return read;
    const text = new TextDecoder().decode(read.body);
    const exact = exactIdText(text);
    if (typeof exact !== "string") return Response.json(exact.refusal, { status: 400 });
    c.req.raw = new Request(read.request.url, {
      method: read.request.method,
      headers: read.request.headers,
      body: exact === text ? read.body : exact,
      signal: read.request.signal,
    });
    await next();
    return undefined;
  };
}
