/**
 * A scripted fake LLM server (OpenAI-compatible and Anthropic alike) on real loopback HTTP.
 *
 * Built on `node:http`, so it runs unchanged on Deno, Node.js and Bun. It binds 127.0.0.1 on a
 * free port, records every request (method, path, headers, parsed JSON body) and answers them in
 * order with the responses queued by {@link FakeLlmServer.enqueue}: an SSE body written item by
 * item (optionally with delays, so a test can cancel mid-stream) or a status with a JSON body.
 * `close()` destroys every socket and clears every timer, so Deno's sanitizers pass.
 *
 * @module
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { abortableDelay } from "../../src/util/abortable_delay.ts";
import { concatBytes } from "../../src/util/concat_bytes.ts";

/** One request the server received. */
export interface CapturedRequest {
  readonly method: string;
  /** Path and query, e.g. `/v1/chat/completions`. */
  readonly path: string;
  /** Lower-cased header names; repeated headers joined with `, `. */
  readonly headers: Readonly<Record<string, string>>;
  /** The body parsed as JSON, or the raw text when it is not JSON. */
  readonly body: unknown;
}

/**
 * One item of an SSE body, written as one chunk. `data` that is not a string is written as JSON;
 * a string is written as is (split into one `data:` line per line). `raw` is written verbatim
 * (comments, CRLF, partial lines).
 */
export type SseItem =
  | {
    readonly event?: string;
    readonly data: unknown;
    readonly id?: string;
    /** Wait before writing this item (overrides `chunkDelayMs`). */
    readonly delayMs?: number;
  }
  | { readonly raw: string; readonly delayMs?: number };

/** A scripted streaming answer. */
export interface SseResponse {
  readonly type: "sse";
  readonly items: readonly SseItem[];
  /** @default 200 */
  readonly status?: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** Wait before each item. */
  readonly chunkDelayMs?: number;
  /**
   * After the items: `end` the response, `hold` it open (until the client goes away or the
   * server closes), or `destroy` the socket (a transport failure mid-body).
   *
   * @default "end"
   */
  readonly end?: "end" | "hold" | "destroy";
}

/** A scripted plain answer (errors: 401, 429 with Retry-After, 500, …). */
export interface JsonResponse {
  readonly type: "json";
  readonly status: number;
  /** Sent as JSON; a string is sent as is. */
  readonly body: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

/** A scripted answer. */
export type FakeResponse = SseResponse | JsonResponse;

/** A running fake server. */
export interface FakeLlmServer extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Every request received, in order. */
  readonly requests: CapturedRequest[];
  /** How many client connections have closed so far. */
  readonly connectionsClosed: number;
  /** How many responses the client cut off (closed before the server ended them). */
  readonly responsesCutOff: number;
  /** Queues answers for the next requests, in order. */
  enqueue(...responses: FakeResponse[]): void;
  /**
   * Resolves once `count` responses have been cut off by the client; rejects after `timeoutMs`.
   *
   * @param count Cut-off responses to wait for (default 1)
   * @param timeoutMs Give up after (default 5000)
   */
  waitForCutOff(count?: number, timeoutMs?: number): Promise<void>;
  /** Resolves once `count` requests have arrived. */
  waitForRequests(count?: number, timeoutMs?: number): Promise<void>;
  /**
   * Resolves once `count` client connections have closed; rejects after `timeoutMs`.
   *
   * @param count Closed connections to wait for (default 1)
   * @param timeoutMs Give up after (default 5000)
   */
  waitForConnectionsClosed(count?: number, timeoutMs?: number): Promise<void>;
  /** Stops the server, destroying every connection and clearing every timer. */
  close(): Promise<void>;
}

/** An SSE response from items. */
export function sse(
  items: readonly SseItem[],
  options: Omit<SseResponse, "type" | "items"> = {},
): SseResponse {
  return { type: "sse", items, ...options };
}

/** A JSON response with a status. */
export function jsonResponse(
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): JsonResponse {
  return { type: "json", status, body, headers };
}

/**
 * Starts a fake server on 127.0.0.1 with a free port.
 *
 * @example A scripted stream
 * ```ts ignore
 * await using server = await startFakeLlmServer();
 * server.enqueue(sse([{ data: { choices: [] } }, { data: "[DONE]" }]));
 * const response = await fetch(`${server.url}/v1/chat/completions`, { method: "POST", body: "{}" });
 * ```
 */
export async function startFakeLlmServer(): Promise<FakeLlmServer> {
  const queue: FakeResponse[] = [];
  const requests: CapturedRequest[] = [];
  const sockets = new Set<Socket>();
  const live = new Set<AbortController>();
  const waiters = new Set<() => void>();
  let connectionsClosed = 0;
  let responsesCutOff = 0;

  const notify = (): void => {
    for (const waiter of [...waiters]) waiter();
  };

  const server = createServer((req, res) => {
    // A client that went away mid-request only ends that exchange.
    handle(req, res).catch(() => res.destroy());
  });
  // A client's kept-alive socket is never closed under it between two requests (Node's default
  // of 5 s races a slow client's next request on a loaded machine); close() ends them all.
  server.keepAliveTimeout = 600_000;
  server.headersTimeout = 610_000;
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => {
      sockets.delete(socket);
      connectionsClosed++;
      notify();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const gone = new AbortController();
    live.add(gone);
    res.on("close", () => {
      live.delete(gone);
      if (!res.writableFinished) {
        responsesCutOff++;
        notify();
      }
      gone.abort();
    });
    const chunks: Uint8Array[] = [];
    for await (const chunk of req) chunks.push(chunk as Uint8Array);
    const text = new TextDecoder().decode(concatBytes(chunks));
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON: keep the text.
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
    }
    requests.push({ method: req.method ?? "", path: req.url ?? "", headers, body });
    notify();
    const response = queue.shift() ??
      jsonResponse(500, { error: { message: "fake server: no response queued" } });
    if (response.type === "json") {
      const payload = typeof response.body === "string"
        ? response.body
        : JSON.stringify(response.body);
      res.writeHead(response.status, { "content-type": "application/json", ...response.headers });
      res.end(payload);
      return;
    }
    res.writeHead(response.status ?? 200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      ...response.headers,
    });
    res.flushHeaders();
    for (const item of response.items) {
      const delay = item.delayMs ?? response.chunkDelayMs ?? 0;
      if (delay > 0 && !(await abortableDelay(delay, gone.signal))) return;
      if (gone.signal.aborted) return;
      if (!(await write(res, serializeSseItem(item), gone.signal))) return;
    }
    if (gone.signal.aborted) return;
    switch (response.end ?? "end") {
      case "end":
        res.end();
        break;
      case "destroy":
        res.socket?.destroy();
        break;
      case "hold":
        break;
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  const url = `http://127.0.0.1:${address.port}`;

  const waitUntil = (
    done: () => boolean,
    timeoutMs: number,
    describe: () => string,
  ): Promise<void> => {
    if (done()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (!done()) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(describe()));
      }, timeoutMs);
      waiters.add(check);
    });
  };

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const controller of live) controller.abort();
      for (const socket of sockets) socket.destroy();
    });
    return closing;
  };

  return {
    url,
    requests,
    get connectionsClosed(): number {
      return connectionsClosed;
    },
    get responsesCutOff(): number {
      return responsesCutOff;
    },
    enqueue(...responses: FakeResponse[]): void {
      queue.push(...responses);
    },
    waitForCutOff(count = 1, timeoutMs = 5000): Promise<void> {
      return waitUntil(
        () => responsesCutOff >= count,
        timeoutMs,
        () => `fake server: ${responsesCutOff} of ${count} responses cut off`,
      );
    },
    waitForRequests(count = 1, timeoutMs = 5000): Promise<void> {
      return waitUntil(
        () => requests.length >= count,
        timeoutMs,
        () => `fake server: ${requests.length} of ${count} requests arrived`,
      );
    },
    waitForConnectionsClosed(count = 1, timeoutMs = 5000): Promise<void> {
      return waitUntil(
        () => connectionsClosed >= count,
        timeoutMs,
        () => `fake server: ${connectionsClosed} of ${count} connections closed`,
      );
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * Writes an SSE item as this server puts it on the wire.
 *
 * @param item The item
 * @returns Its text on the wire
 */
export function serializeSseItem(item: SseItem): string {
  if ("raw" in item) return item.raw;
  const data = typeof item.data === "string" ? item.data : JSON.stringify(item.data);
  let text = item.event === undefined ? "" : `event: ${item.event}\n`;
  if (item.id !== undefined) text += `id: ${item.id}\n`;
  for (const line of data.split("\n")) text += `data: ${line}\n`;
  return `${text}\n`;
}

/** Writes and waits until the chunk is flushed; `false` when the client went away first. */
function write(res: ServerResponse, text: string, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => resolve(false);
    signal.addEventListener("abort", onAbort, { once: true });
    res.write(text, () => {
      signal.removeEventListener("abort", onAbort);
      resolve(!signal.aborted);
    });
  });
}

/** What {@link trackBodyReads} returns. */
export interface BodyReads {
  /** A fetch (over the global one) whose response bodies are watched. */
  readonly fetch: typeof fetch;
  /**
   * Resolves once the consumer of a body has read the bytes that contain the marker and asked
   * for more: everything up to and including the marker has been consumed.
   */
  readonly past: Promise<void>;
}

/**
 * Watches how far a provider has read a response body, so a test can act at a precise point of
 * a stream (for example, abort while a tool call is half streamed) instead of sleeping.
 *
 * The body is re-served one read at a time (high-water mark 0), so the next read is only asked
 * for once the previous chunk was taken; cancelling it cancels the real body.
 *
 * @param marker Text that appears in the body
 * @returns The watching fetch and the moment the marker was read past
 */
export function trackBodyReads(marker: string): BodyReads {
  let resolvePast!: () => void;
  const past = new Promise<void>((resolve) => resolvePast = resolve);
  const watched = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init);
    if (response.body === null) return response;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let seen = "";
    let found = false;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller): Promise<void> {
        if (found) resolvePast();
        const next = await reader.read();
        if (next.done) return controller.close();
        if (!found) {
          seen += decoder.decode(next.value, { stream: true });
          found = seen.includes(marker);
        }
        controller.enqueue(next.value);
      },
      cancel(reason): Promise<void> {
        return reader.cancel(reason);
      },
    }, { highWaterMark: 0 });
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
  return { fetch: watched, past };
}
