/**
 * The HTTP transport in front of a test agent server with no socket: a request goes straight to
 * its handler, `transport.fetch(new Request(…), info)`, as with hono's `app.request()`. Tests of
 * what only a listener does (WebSocket, slow or raw sockets) start one instead
 * (`tests/_helpers/http_server.ts`).
 *
 * @module
 */
import type { AgentServer } from "../../../src/server/agent_server.ts";
import type { WebSocketUpgrade } from "../../../src/transport/http/http_handler.ts";
import type { HttpTransport } from "../../../src/transport/http/http_transport.ts";
import { createTestHttpTransport, type HttpTestOptions } from "../../_helpers/http_server.ts";

/** The origin requests are addressed to; nothing listens there. */
const ORIGIN = "http://127.0.0.1:7337";
/** The peer every request comes from, as a loopback listener reports it. */
const PEER = { remoteAddress: "127.0.0.1" };

/** The HTTP transport of a test agent server, reached without a socket. */
export interface HandlerTestServer extends AsyncDisposable {
  /** The origin to address requests to (`http://127.0.0.1:7337`); nothing listens there. */
  readonly url: string;
  /**
   * `fetch` answered by the transport's handler: a `Host` header is added as a client would, and
   * aborting the request's signal drops its response body, as a closed socket does.
   */
  readonly fetch: typeof globalThis.fetch;
  /**
   * A WebSocket upgrade request (`Upgrade: websocket`) to `path`, decided by the handler.
   *
   * @param path The path, e.g. `/acp`
   * @param headers More request headers
   */
  upgrade(path: string, headers?: Record<string, string>): Promise<Response | WebSocketUpgrade>;
  readonly server: AgentServer;
  readonly transport: HttpTransport;
  /** Log lines so far. */
  readonly logs: string[];
  /** Resolves once a log line matches. */
  waitForLog(pattern: RegExp): Promise<void>;
  /** Drains the agent server and closes the transport. */
  close(): Promise<void>;
}

/**
 * Builds an agent server (in-memory store) behind the HTTP transport, with the limits of
 * `startHttpServer`, and answers requests with its handler.
 *
 * @param options As for `startHttpServer`
 * @returns The transport and how to reach it
 */
export function startHandler(options: HttpTestOptions = {}): HandlerTestServer {
  const { server, transport, logs, waitForLog } = createTestHttpTransport(options);
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      await server.close();
      await transport.close();
    })();
    return closing;
  };
  return {
    url: ORIGIN,
    fetch: (input, init) => answer(transport, input, init),
    upgrade: (path, headers = {}) =>
      transport.upgrade(
        new Request(`${ORIGIN}${path}`, {
          headers: { host: new URL(ORIGIN).host, upgrade: "websocket", ...headers },
        }),
        PEER,
      ),
    server,
    transport,
    logs,
    waitForLog,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** A request answered by the transport's handler, as `fetch` would send it over a socket. */
async function answer(
  transport: HttpTransport,
  input: string | URL | Request,
  init?: RequestInit,
): Promise<Response> {
  const url = input instanceof Request ? input.url : String(input);
  const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : {}));
  if (!headers.has("host")) headers.set("host", new URL(url).host);
  const request = new Request(input, { ...init, headers });
  const response = await transport.fetch(request, PEER);
  return response.body ? droppedOnAbort(response, response.body, request.signal) : response;
}

/** The response, its body cancelled (and erroring for the reader) once `signal` aborts. */
function droppedOnAbort(
  response: Response,
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
): Response {
  const reader = body.getReader();
  let drop: (() => void) | undefined;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      drop = () => {
        controller.error(signal.reason);
        void reader.cancel(signal.reason).catch(() => {});
      };
      if (signal.aborted) drop();
      else signal.addEventListener("abort", drop, { once: true });
    },
    async pull(controller) {
      const { value, done } = await reader.read();
      if (signal.aborted) return; // dropped meanwhile: the stream has errored
      if (!done) return controller.enqueue(value);
      signal.removeEventListener("abort", drop!);
      controller.close();
    },
    // A client dropping a body learns nothing of the server's side of it, as over a socket.
    async cancel(reason) {
      signal.removeEventListener("abort", drop!);
      await reader.cancel(reason).catch(() => {});
    },
  }, { highWaterMark: 0 });
  return new Response(stream, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
