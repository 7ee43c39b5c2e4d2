/**
 * ACP over HTTP and WebSocket: a Hono app, runtime-neutral, in front of one agent server.
 *
 * - `/acp`: the profile of the ACP RFD "Streamable HTTP & WebSocket Transport", served by the ACP
 *   SDK's `AcpServer` (POST + `Acp-Connection-Id`/`Acp-Session-Id`, SSE GET streams, DELETE, and
 *   WebSocket upgrade on the same path).
 * - `/v1/acp/:id` and `/v1/rpc`: the URL-keyed profile of `acp-http-client` (one URL, one
 *   connection; a POSTed request answered inline).
 * - `/health`: for load balancers; no token needed, no data.
 *
 * Every other request passes the security checks first (`Host` on loopback, `Origin`, bearer
 * token), then the body limit. Connections are capped in number, closed when idle, and drained on
 * shutdown.
 *
 * @module
 */
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import { Hono } from "hono";
import { cors } from "hono/cors";
import type { Logger } from "../../log/logger.ts";
import type { AgentServer, AgentServerConnection } from "../../server/agent_server.ts";
import type { AnyMessage, Stream } from "../acp.ts";
import { exactIdText, exactIdUpgrade, restoreExactIdsIn } from "./exact_ids.ts";
import type { HttpHandler, RequestInfo, WebSocketUpgrade } from "./http_handler.ts";
import { checkRequest, type SecurityPolicy } from "./http_security.ts";
import { ConnectionLimitError, UrlKeyedProfile } from "./url_keyed_profile.ts";

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
}

/** The HTTP transport: a handler for a runtime's listener, and its shutdown. */
export interface HttpTransport extends HttpHandler {
  /** How many HTTP and WebSocket connections are open. */
  readonly connections: number;
  /**
   * Stops taking new connections (503, and `/health` answers 503) and ends every stream and
   * socket. Call it after the agent server has drained its connections.
   */
  close(): Promise<void>;
}

/** Period of the idle-connection sweep, at most. */
const MAX_SWEEP_MS = 30_000;
/** Events kept for `Last-Event-ID` replay in the URL-keyed profile. */
const REPLAY_MESSAGES = 1024;
/** SSE keep-alive comment period. */
const KEEP_ALIVE_MS = 15_000;
/** URL keys of the URL-keyed profile: letters, digits, `.`, `_`, `~`, `-`, at most 128. */
const URL_KEY = /^[A-Za-z0-9._~-]{1,128}$/;
/** The default of {@link HttpLimits.maxConnectionsPerAddress}. */
const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 100;
/** The default of {@link HttpLimits.bodyTimeoutMs}. */
const DEFAULT_BODY_TIMEOUT_MS = 60_000;
/** A body may come in this many pieces whatever their size; beyond, they must average more. */
const BODY_PIECES = 4096;
/** The smallest average piece, in bytes, of a body in more than {@link BODY_PIECES} pieces. */
const BODY_PIECE_BYTES = 64;

interface Tracked {
  readonly handle: AgentServerConnection;
  /** When the client last sent a message, in ms. */
  /** When it last received something; `busy` while a request of it was being handled. */
  readonly activity: { last: number; busy?: boolean };
}

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
  const now = options.now ?? (() => Date.now());
  const open = new Set<Tracked>();
  /** Open connections by peer address. */
  const perAddress = new Map<string, number>();
  const maxPerAddress = limits.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS;
  const bodyTimeoutMs = limits.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS;
  let draining = false;
  const crowded = (info: RequestInfo): boolean =>
    info.remoteAddress !== undefined && (perAddress.get(info.remoteAddress) ?? 0) >= maxPerAddress;
  /** The refusal of one more connection from this peer, if one is due. */
  const refuseConnection = (info: RequestInfo): Response | undefined => {
    if (draining || open.size >= limits.maxConnections) return busy(draining);
    if (crowded(info)) return tooManyFromAddress(maxPerAddress);
    return undefined;
  };

  /** Serves one new connection on our agent server, counted, logged and watched for idleness. */
  function connect(stream: Stream, transport: string, info: RequestInfo): AgentServerConnection {
    if (draining) throw new ConnectionLimitError("Cannot connect: the server is shutting down");
    if (open.size >= limits.maxConnections) {
      logger.warn("connection refused: limit reached", { max: limits.maxConnections });
      throw new ConnectionLimitError(
        `Cannot connect: the server has its most connections open (${limits.maxConnections})`,
      );
    }
    const address = info.remoteAddress;
    if (address !== undefined && crowded(info)) {
      logger.warn("connection refused: per-address limit reached", {
        max: maxPerAddress,
        remoteAddress: address,
      });
      throw new ConnectionLimitError(
        `Cannot connect: ${address} has its most connections open (${maxPerAddress})`,
        429,
      );
    }
    const activity = { last: now() };
    const touched = new TransformStream<AnyMessage, AnyMessage>({
      transform(message, controller) {
        activity.last = now();
        controller.enqueue(message);
      },
    });
    void stream.readable.pipeTo(touched.writable).catch(() => {});
    const handle = server.connect(
      { readable: touched.readable, writable: stream.writable },
      { maxSessions: limits.maxSessionsPerConnection },
    );
    const entry: Tracked = { handle, activity };
    open.add(entry);
    if (address !== undefined) perAddress.set(address, (perAddress.get(address) ?? 0) + 1);
    logger.info("connection opened", {
      connectionId: handle.id,
      transport,
      ...(info.remoteAddress ? { remoteAddress: info.remoteAddress } : {}),
    });
    void handle.closed.then(() => {
      open.delete(entry);
      if (address !== undefined) {
        const left = (perAddress.get(address) ?? 1) - 1;
        if (left > 0) perAddress.set(address, left);
        else perAddress.delete(address);
      }
      logger.info("connection closed", { connectionId: handle.id });
    });
    return handle;
  }

  const acp = new AcpServer({
    agent: { connect: () => Promise.reject(new Error("unreachable: every call names its agent")) },
    maxBufferedBytes: limits.maxBufferedBytes,
    maxOutputStallMs: limits.stallTimeoutMs,
  });
  const agentFor = (transport: string, info: RequestInfo) => ({
    connect: (stream: Stream) => connect(stream, transport, info),
  });
  const urlKeyed = new UrlKeyedProfile({
    connect: (stream: Stream, info: RequestInfo = {}) => connect(stream, "http (url-keyed)", info),
    logger,
    maxBufferedBytes: limits.maxBufferedBytes,
    maxOutputStallMs: limits.stallTimeoutMs,
    replayMessages: REPLAY_MESSAGES,
    keepAliveMs: KEEP_ALIVE_MS,
  });

  // Idle connections: nothing received and no request being handled for the idle time.
  const sweep = setInterval(() => {
    const cutoff = now() - limits.idleTimeoutMs;
    for (const entry of open) {
      // A request being handled (a long turn) is activity: idleness counts from its end, which
      // is taken as the first sweep that finds none (never earlier than the end itself).
      if (entry.handle.pending > 0) {
        entry.activity.busy = true;
        continue;
      }
      if (entry.activity.busy) {
        entry.activity.busy = false;
        entry.activity.last = now();
        continue;
      }
      if (entry.activity.last <= cutoff) {
        logger.info("closing idle connection", { connectionId: entry.handle.id });
        entry.activity.last = Infinity; // closed once
        void entry.handle.close();
      }
    }
  }, Math.max(100, Math.min(MAX_SWEEP_MS, limits.idleTimeoutMs / 4)));

  const app = new Hono<{ Bindings: { info: RequestInfo } }>();
  app.get("/health", (c) => c.text(draining ? "draining" : "ok", draining ? 503 : 200));
  app.use(
    "*",
    cors({
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
    }),
  );
  app.use("*", async (c, next) => {
    const refusal = await checkRequest(c.req.raw.headers, security, c.req.raw.url);
    if (refusal) {
      logger.info("request refused", { status: refusal.status, reason: refusal.title });
      return problem(refusal.status, refusal.title, refusal.detail);
    }
    await next();
    return undefined;
  });
  app.on("POST", "*", async (c, next) => {
    const read = await readBody(c.req.raw, limits.maxBodyBytes, bodyTimeoutMs);
    if (read instanceof Response) return read;
    // Ids a number cannot hold exactly travel as placeholders, and go out as the client wrote them.
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
  });
  app.all("/acp", async (c) => {
    const request = c.req.raw;
    // As the SDK reads it: an empty `Acp-Connection-Id` opens a connection too (and counts).
    const opening = request.method === "POST" && !request.headers.get("acp-connection-id");
    const info = c.env?.info ?? {};
    const refused = opening ? refuseConnection(info) : undefined;
    if (refused) return refused;
    // The SDK waits for the answer to an `initialize` whose id is neither a string nor a number
    // (an array, an object) and, unable to match it, answers 500: refused here instead.
    if (opening && await hasBadRequestId(request)) {
      return Response.json({
        jsonrpc: "2.0",
        id: null,
        error: {
          code: -32600,
          message: "Invalid request: a request id must be a string or a number",
        },
      }, { status: 400 });
    }
    const response = await acp.handleRequest(request, { agent: agentFor("http", info) });
    // The SDK answers a connector that refused (our connection limit, raced) with 500.
    const raced = opening && response.status === 500 ? refuseConnection(info) : undefined;
    if (raced) {
      await response.body?.cancel();
      return raced;
    }
    return restoreExactIdsIn(response);
  });
  const urlKeyedRoute = async (
    request: Request,
    key: string,
    info: RequestInfo = {},
  ): Promise<Response> => {
    if (!URL_KEY.test(key)) {
      return problem(400, "Bad connection key", "Use letters, digits, '.', '_', '~' or '-'");
    }
    const refused = urlKeyed.has(key) ? undefined : refuseConnection(info);
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
    get connections(): number {
      return open.size;
    },
    async fetch(request: Request, info: RequestInfo): Promise<Response> {
      return await app.fetch(request, { info });
    },
    async upgrade(request: Request, info: RequestInfo): Promise<Response | WebSocketUpgrade> {
      const refusal = await checkRequest(request.headers, security, request.url);
      if (refusal) {
        logger.info("upgrade refused", { status: refusal.status, reason: refusal.title });
        return problem(refusal.status, refusal.title, refusal.detail);
      }
      if (new URL(request.url).pathname !== "/acp") {
        return problem(404, "Not Found", "WebSocket connections are served on /acp");
      }
      const refused = refuseConnection(info);
      if (refused) return refused;
      return exactIdUpgrade(acp.prepareWebSocketUpgrade({ agent: agentFor("websocket", info) }));
    },
    async close(): Promise<void> {
      draining = true;
      clearInterval(sweep);
      await Promise.all([acp.close(), urlKeyed.close()]);
    },
  };
}

/** A request whose body has been read, and the body. */
interface ReadBody {
  readonly request: Request;
  readonly body: Uint8Array<ArrayBuffer>;
}

/**
 * Reads a request's body into one buffer, or answers the request: `413` when the body is longer
 * than `max` bytes (by its `Content-Length`, or as it arrives), `408` when it takes longer than
 * `timeoutMs` or comes in too many small pieces (a drip). Each piece is copied out as it arrives:
 * a runtime's read buffer is far bigger than a piece of one byte, and kept alive by it.
 */
async function readBody(
  request: Request,
  max: number,
  timeoutMs: number,
): Promise<ReadBody | Response> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > max) {
    await request.body?.cancel().catch(() => {});
    return tooLarge(max);
  }
  if (!request.body) return { request, body: new Uint8Array(0) };
  // Grown as the bytes arrive, never beyond what came: a declared length is only a claim.
  let buffer = new Uint8Array(Math.min(declared > 0 ? declared : 1024, 64 * 1024));
  let size = 0;
  let pieces = 0;
  const reader = request.body.getReader();
  let late = false;
  const timer = setTimeout(() => {
    late = true;
    void reader.cancel().catch(() => {});
  }, timeoutMs);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (late) return slowBody(`it did not arrive within ${timeoutMs / 1000} s`);
      if (done) break;
      pieces++;
      if (size + value.byteLength > max) {
        await reader.cancel().catch(() => {});
        return tooLarge(max);
      }
      if (size + value.byteLength > buffer.byteLength) {
        const grown = new Uint8Array(
          Math.min(max, Math.max(size + value.byteLength, buffer.byteLength * 2)),
        );
        grown.set(buffer.subarray(0, size));
        buffer = grown;
      }
      buffer.set(value, size);
      size += value.byteLength;
      if (pieces > BODY_PIECES && size < pieces * BODY_PIECE_BYTES) {
        await reader.cancel().catch(() => {});
        return slowBody(`it came in ${pieces} pieces of ${Math.floor(size / pieces)} bytes or so`);
      }
    }
  } catch {
    if (late) return slowBody(`it did not arrive within ${timeoutMs / 1000} s`);
    return problem(400, "Bad Request", "The request body could not be read");
  } finally {
    clearTimeout(timer);
  }
  return { request, body: size === buffer.byteLength ? buffer : buffer.slice(0, size) };
}

function tooLarge(max: number): Response {
  return problem(
    413,
    "Payload Too Large",
    `A message may be at most ${max} bytes (see --max-message-bytes)`,
  );
}

/** `408` for a body that came too slowly; the connection is closed after it. */
function slowBody(why: string): Response {
  const response = problem(
    408,
    "Request Timeout",
    `The request body came too slowly: ${why} (see --body-timeout)`,
  );
  response.headers.set("Connection", "close");
  return response;
}

/**
 * Whether a request's body is a JSON-RPC request whose id is neither a string, a number nor
 * `null` (which the SDK refuses itself). Reads a copy of the body; anything that does not parse is
 * left to the SDK.
 */
async function hasBadRequestId(request: Request): Promise<boolean> {
  let message: unknown;
  try {
    message = JSON.parse(await request.clone().text());
  } catch {
    return false;
  }
  if (typeof message !== "object" || message === null || Array.isArray(message)) return false;
  if (!("method" in message) || !("id" in message)) return false;
  const { id } = message as { id: unknown };
  return id !== null && typeof id !== "string" && typeof id !== "number";
}

/** A refusal as `application/problem+json` (RFC 9457), which `acp-http-client` reads. */
function problem(status: number, title: string, detail: string): Response {
  return new Response(JSON.stringify({ type: "about:blank", title, status, detail }), {
    status,
    headers: { "Content-Type": "application/problem+json" },
  });
}

/** `429` for one more connection from a peer address at its limit. */
function tooManyFromAddress(max: number): Response {
  const response = problem(
    429,
    "Too many connections from this address",
    `This address has its most connections open (${max}; see --max-connections-per-address)`,
  );
  response.headers.set("Retry-After", "1");
  return response;
}

function busy(draining: boolean): Response {
  const response = draining
    ? problem(503, "Shutting down", "The server is draining; connect to another instance")
    : problem(503, "Too many connections", "The server has its most connections open");
  response.headers.set("Retry-After", "1");
  return response;
}
