/**
 * The `/acp` profile of the HTTP transport: the ACP RFD "Streamable HTTP & WebSocket Transport",
 * served by the ACP SDK's `AcpServer` (see {@link RfdProfile}).
 *
 * @module
 */
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import type { AgentServerConnection } from "../../server/agent_server.ts";
import type { Stream } from "../acp.ts";
import { exactIdUpgrade, restoreExactIdsIn } from "./exact_ids.ts";
import type { RequestInfo, ServerWebSocket, WebSocketUpgrade } from "./http_handler.ts";
import { UNAUTHORIZED, UNAUTHORIZED_CLOSE_CODE } from "./http_security.ts";

/** What an {@link RfdProfile} is built from. */
export interface RfdProfileOptions {
  /**
   * Serves one new connection; throws a `ConnectionLimitError` to refuse it. `refuse` ends its
   * socket as unauthorized, should its token stop holding (a WebSocket's; absent for HTTP).
   */
  readonly connect: (
    stream: Stream,
    transport: string,
    info: RequestInfo,
    refuse?: () => void,
  ) => AgentServerConnection;
  /** The refusal of one more connection from this peer, if one is due. */
  readonly refusal: (info: RequestInfo) => Response | undefined;
  /** The `401` of a request whose token no longer holds, if it is one. */
  readonly unauthorized: (info: RequestInfo) => Response | undefined;
  /** Output a connection holds for a reader that is not reading, in bytes. */
  readonly maxBufferedBytes: number;
  /** How long a full buffer waits for its reader before the connection is closed, in ms. */
  readonly maxOutputStallMs: number;
}

/**
 * The bridge between the HTTP transport and the SDK's `AcpServer`: POST with
 * `Acp-Connection-Id`/`Acp-Session-Id`, SSE GET streams, DELETE, and the WebSocket upgrade on the
 * same path. Every connection the SDK opens is served through `connect` (counted and limited
 * there); what the SDK would answer badly is answered here first (a connection refused, an
 * `initialize` whose id it cannot match), and ids a number cannot hold exactly go back out as
 * the client wrote them.
 *
 * @example Serving `/acp`
 * ```ts ignore
 * const rfd = new RfdProfile({ connect, refusal, maxBufferedBytes, maxOutputStallMs });
 * const response = await rfd.handle(request, info);
 * ```
 */
export class RfdProfile {
  readonly #options: RfdProfileOptions;
  readonly #acp: AcpServer;
  /** The tenant each connection (by `Acp-Connection-Id`) was opened for, on a server with tenants. */
  readonly #tenants = new Map<string, string>();

  /** @param options How to connect and refuse, and the output limits */
  constructor(options: RfdProfileOptions) {
    this.#options = options;
    this.#acp = new AcpServer({
      agent: {
        connect: () => Promise.reject(new Error("unreachable: every call names its agent")),
      },
      maxBufferedBytes: options.maxBufferedBytes,
      maxOutputStallMs: options.maxOutputStallMs,
    });
  }

  /**
   * Answers one request on `/acp` (its body already read, its ids already made placeholders).
   *
   * @param request The request
   * @param info Its peer
   * @returns The answer
   */
  async handle(request: Request, info: RequestInfo): Promise<Response> {
    // As the SDK reads it: an empty `Acp-Connection-Id` opens a connection too (and counts).
    const opening = request.method === "POST" && !request.headers.get("acp-connection-id");
    if (!opening) request = await this.#ofTenant(request, info);
    // Checked after the reads above: a token removed meanwhile is refused, not served.
    const refused = opening ? this.#options.refusal(info) : this.#options.unauthorized(info);
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
    let opened: AgentServerConnection | undefined;
    const agent = {
      connect: (stream: Stream) => opened = this.#options.connect(stream, "http", info),
    };
    const response = await this.#acp.handleRequest(request, { agent });
    const connectionId = response.headers.get("acp-connection-id");
    if (opened && connectionId) this.#remember(connectionId, opened, info);
    // The SDK answers a connector that refused (our connection limit, raced) with 500.
    const raced = opening && response.status === 500 ? this.#options.refusal(info) : undefined;
    if (raced) {
      await response.body?.cancel();
      return raced;
    }
    return restoreExactIdsIn(response);
  }

  /**
   * The WebSocket upgrade of one new connection (its request already allowed).
   *
   * @param info The peer
   * @returns The upgrade to carry out
   */
  upgrade(info: RequestInfo): WebSocketUpgrade {
    let socket: ServerWebSocket | undefined;
    // A socket whose token stops holding is closed with the code of a 401 (before the SDK's own
    // close of it, which then changes nothing).
    const refuse = (): void => socket?.close(UNAUTHORIZED_CLOSE_CODE, UNAUTHORIZED.title);
    const agent = {
      connect: (stream: Stream) => this.#options.connect(stream, "websocket", info, refuse),
    };
    const upgrade = exactIdUpgrade(this.#acp.prepareWebSocketUpgrade({ agent }));
    return {
      connectionId: upgrade.connectionId,
      accept: (accepted) => {
        socket = accepted;
        upgrade.accept(accepted);
      },
      reject: () => upgrade.reject(),
    };
  }

  /**
   * The request as the SDK is to see it: on a server with tenants, a request naming a connection
   * of another tenant names no connection (its `Acp-Connection-Id` replaced by one that is never
   * issued), so it is answered exactly as an unknown connection is.
   */
  async #ofTenant(request: Request, info: RequestInfo): Promise<Request> {
    const id = request.headers.get("acp-connection-id");
    if (id === null || this.#tenants.get(id) === info.identity?.scope.name) return request;
    const headers = new Headers(request.headers);
    headers.set("acp-connection-id", `unknown-${crypto.randomUUID()}`);
    const body = request.method === "POST" ? await request.arrayBuffer() : undefined;
    return new Request(request.url, {
      method: request.method,
      headers,
      ...(body === undefined ? {} : { body }),
      signal: request.signal,
    });
  }

  /** Notes whose a connection is, until it closes. */
  #remember(connectionId: string, opened: AgentServerConnection, info: RequestInfo): void {
    const tenant = info.identity?.scope.name;
    if (tenant === undefined) return;
    this.#tenants.set(connectionId, tenant);
    void opened.closed.then(() => this.#tenants.delete(connectionId));
  }

  /** Ends every stream and socket of the profile. */
  close(): Promise<void> {
    return this.#acp.close();
  }
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
