/**
 * Serves a trivial `HttpHandler` with the listener of the runtime running it (`deno_http.ts`,
 * `bun_http.ts`, `node_http.ts`, loaded on demand as the runtime entries do) on 127.0.0.1, port 0,
 * with `maxMessageBytes` 1024. Prints `LISTENING <url>` on stdout, and on stdin EOF or SIGTERM
 * calls `close(graceMs)` (`graceMs` is the first argument, default 5000) and prints `CLOSED`. It
 * never exits by itself: the process ends once stdin is closed and nothing else is left open (a
 * timer or socket the listener left behind keeps it running). After SIGTERM, stdin stays open
 * until the test closes it (Deno cannot drop a pending stdin read).
 *
 * The handler:
 * - `GET /stream`: `chunk\n` every 50 ms until the client cancels;
 * - `GET /hang`: prints `HANG` on stdout and never answers;
 * - any other request: 200 JSON `{ method, path, remoteAddress }`;
 * - WebSocket upgrade: 403 `refused` when the request has `x-refuse`; otherwise the upgrade, with
 *   connection ids `conn-1`, `conn-2`, …, echoing text messages and ignoring binary ones (read with
 *   the ACP SDK's own WebSocket helpers, as its server does).
 *
 * @module
 */
import process from "node:process";
import type {
  HttpHandler,
  ServeHttp,
  ServerWebSocket,
  WebSocketUpgrade,
} from "../../src/transport/http/http_handler.ts";
// @ts-types="../../node_modules/@agentclientprotocol/sdk/dist/transports/ws-utils.d.ts"
import {
  onWebSocket,
  webSocketMessageToString,
} from "../../node_modules/@agentclientprotocol/sdk/dist/transports/ws-utils.js";

const graceMs = Number(process.argv[2] ?? 5000);
const encoder = new TextEncoder();

async function runtimeServeHttp(): Promise<ServeHttp> {
  if ("Deno" in globalThis) return (await import("../../src/runtime/deno_http.ts")).serveHttp;
  if ("Bun" in globalThis) return (await import("../../src/runtime/bun_http.ts")).serveHttp;
  return (await import("../../src/runtime/node_http.ts")).serveHttp;
}

function stream(): ReadableStream<Uint8Array> {
  let timer: ReturnType<typeof setInterval> | undefined;
  return new ReadableStream({
    start(controller) {
      controller.enqueue(encoder.encode("chunk\n"));
      timer = setInterval(() => controller.enqueue(encoder.encode("chunk\n")), 50);
    },
    cancel() {
      clearInterval(timer);
    },
  });
}

let connections = 0;

function echo(socket: ServerWebSocket): void {
  onWebSocket(socket, "message", (...args) => {
    const text = webSocketMessageToString(args);
    if (text !== undefined) socket.send(text);
  });
}

const handler: HttpHandler = {
  fetch(request, info) {
    const path = new URL(request.url).pathname;
    if (path === "/stream") {
      return Promise.resolve(
        new Response(stream(), { headers: { "content-type": "text/plain" } }),
      );
    }
    if (path === "/hang") {
      process.stdout.write("HANG\n");
      return new Promise<never>(() => {});
    }
    const body = { method: request.method, path, remoteAddress: info.remoteAddress };
    return Promise.resolve(Response.json(body));
  },
  upgrade(request) {
    if (request.headers.has("x-refuse")) {
      return Promise.resolve(
        new Response("refused", { status: 403, headers: { "x-reason": "test" } }),
      );
    }
    const upgrade: WebSocketUpgrade = {
      connectionId: `conn-${++connections}`,
      accept: echo,
      reject() {},
    };
    return Promise.resolve(upgrade);
  },
};

const serveHttp = await runtimeServeHttp();
const listener = await serveHttp(handler, {
  hostname: "127.0.0.1",
  port: 0,
  maxMessageBytes: 1024,
});
process.stdout.write(`LISTENING ${listener.url}\n`);

let closing = false;
async function shutDown(): Promise<void> {
  if (closing) return;
  closing = true;
  process.off("SIGTERM", shutDown);
  await listener.close(graceMs);
  process.stdout.write("CLOSED\n");
}
process.on("SIGTERM", shutDown);
process.stdin.on("end", shutDown);
process.stdin.resume();
