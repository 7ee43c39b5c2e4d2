/**
 * The URL-keyed HTTP profile, the shape `acp-http-client` speaks: one URL is one ACP connection,
 * with no connection or session headers.
 *
 * @module
 */
import type { Logger } from "../../log/logger.ts";
import type { AnyMessage, Stream } from "../acp.ts";
import { restoreExactIds } from "./exact_ids.ts";
import type { RequestInfo } from "./http_handler.ts";
import { SseOutbox } from "./sse_outbox.ts";

/** The server is serving as many connections as it may: the request gets this status. */
export class ConnectionLimitError extends Error {
  /** The HTTP status to answer with. */
  readonly status: number;

  /**
   * @param message What is at capacity
   * @param status The HTTP status: 503 (the server is full), 429 (the peer has enough)
   */
  constructor(message = "Cannot connect: the server is at its connection limit", status = 503) {
    super(message);
    this.status = status;
    this.name = "ConnectionLimitError";
  }
}

/** One connection served on a URL key: what {@link UrlKeyedOptions.connect} returns. */
export interface UrlKeyedAgent {
  /** The connection id, logged with the key when known. */
  readonly id?: string;
  /** Settles once the connection is closed. */
  readonly closed: Promise<void>;
  /** Cancels the connection's turns, lets their answers out, then closes it. */
  close(): Promise<void>;
}

/** Options for {@link UrlKeyedProfile}. */
export interface UrlKeyedOptions {
  /**
   * Serves ACP on a new message stream. Throws {@link ConnectionLimitError} (or any error with a
   * numeric `status`) when the server is at capacity; the request is answered with that status.
   */
  connect(stream: Stream, info?: RequestInfo): UrlKeyedAgent;
  /** Where diagnostics go: opening, closing and stalls per key; message methods at debug. */
  readonly logger: Logger;
  /** Bytes of event output per connection that may wait for a reader before the agent waits. */
  readonly maxBufferedBytes: number;
  /**
   * How long a connection may sit at `maxBufferedBytes` with nothing read before it is closed
   * (its turns cancelled; its sessions stay loadable). Also how long a request's answer waits for
   * the attached reader to take it before it goes in the POST body instead.
   */
  readonly maxOutputStallMs: number;
  /** How many delivered events are kept for `Last-Event-ID` replay. @default {1024} */
  readonly replayMessages?: number;
  /** The SSE keep-alive comment period. @default {15000} */
  readonly keepAliveMs?: number;
}

/** The default of {@link UrlKeyedOptions.replayMessages}. */
export const DEFAULT_REPLAY_MESSAGES = 1024;
/** The default of {@link UrlKeyedOptions.keepAliveMs}. */
export const DEFAULT_KEEP_ALIVE_MS = 15_000;

/**
 * Serves ACP the way `acp-http-client` 0.4.2 expects, one connection per URL key:
 *
 * - `POST` one JSON-RPC message (`Content-Type: application/json`). A request waits for the
 *   agent's answer, which always goes out on the event stream. While a reader is attached the POST
 *   then gets `202` once the reader has taken the answer, so the answer cannot overtake the
 *   updates before it; with no reader (or one that does not take it within `maxOutputStallMs`)
 *   the POST gets `200` with the answer as its body. A notification or a response to an agent
 *   request gets `202`. An answer that cannot come (the connection closed) is still a `200`,
 *   carrying a JSON-RPC error: the client dies on any non-2xx.
 * - `GET` with `Accept: text/event-stream`: everything the agent sends, as `event: message`
 *   events with a growing `id`. One reader at a time (a new one takes over); `Last-Event-ID`
 *   replays the delivered events kept; what no reader took yet waits for the next one.
 * - `DELETE`: closes the connection (`204`; `404` when there is none).
 *
 * The connection is made by the first request for its key, whichever it is (the client's first
 * `GET` races its `initialize`). Errors are `application/problem+json`.
 *
 * @example Answering `initialize` inline
 * ```ts ignore
 * import { UrlKeyedProfile } from "./url_keyed_profile.ts";
 * const profile = new UrlKeyedProfile({
 *   connect: (stream) => server.connect(stream), logger,
 *   maxBufferedBytes: 64 << 20, maxOutputStallMs: 60_000,
 * });
 * const response = await profile.handle(new Request("http://localhost/v1/rpc", {
 *   method: "POST", headers: { "content-type": "application/json" },
 *   body: JSON.stringify({
 *     jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1 },
 *   }),
 * }), "default");
 * await profile.close();
 * ```
 *
 * @experimental
 */
export class UrlKeyedProfile {
  readonly #options: UrlKeyedOptions;
  readonly #connections = new Map<string, KeyedConnection>();
  #closing: Promise<void> | undefined;

  /** @param options How to serve a connection, and the output limits */
  constructor(options: UrlKeyedOptions) {
    this.#options = options;
  }

  /** How many connections are open (closing ones included). */
  get size(): number {
    return this.#connections.size;
  }

  /**
   * Whether a connection is open on a key.
   *
   * @param key The URL key
   * @returns `true` while a connection is open (or closing) on it
   */
  has(key: string): boolean {
    return this.#connections.has(key);
  }

  /**
   * Answers one request for a URL key.
   *
   * @param request The request: `POST`, `GET` or `DELETE` (others get `405`)
   * @param key The URL key: which connection
   * @param info Facts from the listener (the peer's address), for a new connection
   * @returns The response
   */
  async handle(request: Request, key: string, info: RequestInfo = {}): Promise<Response> {
    switch (request.method) {
      case "POST":
        return await this.#post(request, key, info);
      case "GET":
        return this.#get(request, key, info);
      case "DELETE":
        return await this.#delete(key);
      default:
        return problem(405, `Cannot ${request.method}: use POST, GET or DELETE`, {
          allow: "POST, GET, DELETE",
        });
    }
  }

  /**
   * Closes every connection: running prompts are answered `cancelled` and those answers go out
   * first; then every event stream ends (a reader gets `maxOutputStallMs` to take what is left).
   * New connections are refused with `503` from the start.
   *
   * @returns Settles once every connection is closed and every stream has ended
   */
  close(): Promise<void> {
    this.#closing ??= Promise.all(
      [...this.#connections.values()].map((connection) => connection.close(false)),
    ).then(() => {});
    return this.#closing;
  }

  async #post(request: Request, key: string, info: RequestInfo): Promise<Response> {
    if (mediaType(request.headers.get("content-type")) !== "application/json") {
      return problem(415, "Cannot read the message: Content-Type must be application/json");
    }
    let text: string;
    try {
      text = await request.text();
    } catch {
      return problem(400, "Cannot read the message: the body could not be read");
    }
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return problem(400, "Cannot read the message: the body is not JSON");
    }
    if (Array.isArray(message)) {
      return problem(400, "Cannot read the message: batches are not supported");
    }
    const kind = messageKind(message);
    if (typeof kind !== "string") return problem(400, `Cannot read the message: ${kind.invalid}`);
    const connection = this.#connection(key, info);
    if (connection instanceof Response) return connection;
    const rpc = message as AnyMessage;
    this.#options.logger.debug("HTTP message in", {
      key,
      ...("method" in rpc ? { method: rpc.method } : {}),
      ...("id" in rpc ? { id: rpc.id } : {}),
    });
    if (kind !== "request") {
      connection.send(rpc);
      return new Response(null, { status: 202 });
    }
    const answer = await connection.request(rpc as AnyMessage & { id: string | number }, request);
    if (answer === undefined) return new Response(null, { status: 202 });
    return new Response(restoreExactIds(JSON.stringify(answer)), {
      status: 200,
      headers: { "content-type": "application/json" },
    });
  }

  #get(request: Request, key: string, info: RequestInfo): Response {
    if (!acceptsEventStream(request.headers.get("accept"))) {
      return problem(406, "Cannot stream events: Accept must include text/event-stream");
    }
    const connection = this.#connection(key, info);
    if (connection instanceof Response) return connection;
    const lastEventId = eventId(request.headers.get("last-event-id"));
    const takeover = connection.outbox.attached;
    const body = connection.outbox.attach(lastEventId);
    this.#options.logger.debug("HTTP event stream attached", {
      key,
      ...(lastEventId === undefined ? {} : { lastEventId }),
      ...(takeover ? { takeover } : {}),
    });
    return new Response(body, {
      status: 200,
      headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
    });
  }

  async #delete(key: string): Promise<Response> {
    const connection = this.#connections.get(key);
    if (!connection) return problem(404, "Cannot close the connection: there is none");
    await connection.close(true);
    return new Response(null, { status: 204 });
  }

  /** The connection on a key, made when there is none; a problem response when it cannot be. */
  #connection(key: string, info: RequestInfo): KeyedConnection | Response {
    const open = this.#connections.get(key);
    if (open) return open;
    if (this.#closing) return problem(503, "Cannot connect: the server is closing");
    try {
      const connection = new KeyedConnection(key, this.#options, info, () => {
        if (this.#connections.get(key) === connection) this.#connections.delete(key);
      });
      this.#connections.set(key, connection);
      return connection;
    } catch (error) {
      const status = (error as { status?: unknown } | undefined)?.status;
      if (typeof status === "number" && status >= 400 && status <= 599) {
        this.#options.logger.warn("HTTP connection refused", { key, status, error });
        return problem(status, error instanceof Error ? error.message : "Cannot connect");
      }
      this.#options.logger.error("Cannot open an HTTP connection", { key, error });
      return problem(500, "Cannot connect: the server failed to open the connection");
    }
  }
}

/**
 * A waiter for the agent's answer to one request (`undefined`: the connection closed first), told
 * the id of the answer's event when it went out on the event stream.
 */
type Waiter = (answer: AnyMessage | undefined, eventId?: number) => void;

/** One connection on a URL key: its input, its output and the requests waiting for answers. */
class KeyedConnection {
  readonly key: string;
  readonly outbox: SseOutbox;
  readonly #agent: UrlKeyedAgent;
  readonly #logger: Logger;
  #input!: ReadableStreamDefaultController<AnyMessage>;
  #inputOpen = true;
  /** Waiting requests by `typeof id + ":" + id`, oldest first. */
  readonly #waiters = new Map<string, Waiter[]>();
  #state: "open" | "closing" | "closed" = "open";
  /** Settles once the agent has closed and everything waiting was answered. */
  readonly #closed: Promise<void>;

  constructor(
    key: string,
    options: UrlKeyedOptions,
    info: RequestInfo,
    onClosed: () => void,
  ) {
    this.key = key;
    this.#logger = options.logger;
    this.outbox = new SseOutbox({
      maxBufferedBytes: options.maxBufferedBytes,
      maxStallMs: options.maxOutputStallMs,
      replayMessages: options.replayMessages ?? DEFAULT_REPLAY_MESSAGES,
      keepAliveMs: options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS,
      onStall: () => {
        this.#logger.warn("HTTP output stalled: closing the connection", {
          key,
          maxBufferedBytes: options.maxBufferedBytes,
          maxOutputStallMs: options.maxOutputStallMs,
        });
        void this.close(true);
      },
    });
    const stream: Stream = {
      readable: new ReadableStream<AnyMessage>({
        start: (controller) => {
          this.#input = controller;
        },
        cancel: () => {
          this.#inputOpen = false;
        },
      }),
      writable: new WritableStream<AnyMessage>({
        write: (message) => {
          const eventId = this.outbox.add(message);
          this.#answer(message, eventId);
          return this.outbox.room();
        },
      }),
    };
    this.#agent = options.connect(stream, info);
    this.#logger.info("HTTP connection opened", {
      key,
      ...(this.#agent.id === undefined ? {} : { connectionId: this.#agent.id }),
    });
    const ended = (): void => {
      this.#state = "closed";
      for (const [, waiters] of this.#waiters) {
        for (const waiter of waiters) waiter(undefined);
      }
      this.#waiters.clear();
      this.#closeInput();
      this.outbox.end();
      onClosed();
      this.#logger.info("HTTP connection closed", { key });
    };
    this.#closed = this.#agent.closed.then(ended, (error) => {
      this.#logger.warn("HTTP connection failed", { key, error });
      ended();
    });
  }

  /** Hands a notification or a response to the agent; dropped once the connection is closing. */
  send(message: AnyMessage): void {
    if (this.#state !== "open" || !this.#inputOpen) {
      this.#logger.debug("HTTP message dropped: the connection is closing", { key: this.key });
      return;
    }
    this.#input.enqueue(message);
  }

  /**
   * Hands a request to the agent and waits for its answer. When a reader is attached the answer
   * goes out on the event stream only, after the events before it: answered in the POST body it
   * could overtake them on the way to the client (who would see a turn end before its last
   * updates). Without a reader, or when the reader does not take the answer in time, the answer
   * is returned for the POST body (it stays queued for the stream too; the client drops the copy).
   *
   * @param message The request
   * @param request The HTTP request carrying it: its signal stops the wait
   * @returns The answer for the body (a JSON-RPC error when the connection closed first), or
   *   `undefined` when it went out on the event stream or the HTTP request was aborted
   */
  request(
    message: AnyMessage & { id: string | number },
    request: Request,
  ): Promise<AnyMessage | undefined> {
    const { id } = message;
    const closedAnswer: AnyMessage = {
      jsonrpc: "2.0",
      id,
      error: { code: -32603, message: "Connection closed" },
    };
    if (this.#state !== "open" || !this.#inputOpen) return Promise.resolve(closedAnswer);
    const signal = request.signal;
    if (signal.aborted) {
      this.#input.enqueue(message);
      return Promise.resolve(undefined);
    }
    const waitKey = `${typeof id}:${id}`;
    return new Promise<AnyMessage | undefined>((resolve) => {
      const waiter: Waiter = (answer, eventId) => {
        signal.removeEventListener("abort", onAbort);
        if (answer === undefined || eventId === undefined) return resolve(answer ?? closedAnswer);
        void this.outbox.delivered(eventId, signal).then((streamed) =>
          resolve(streamed ? undefined : answer)
        );
      };
      const onAbort = (): void => {
        const waiters = this.#waiters.get(waitKey);
        const index = waiters?.indexOf(waiter) ?? -1;
        if (waiters && index >= 0) {
          waiters.splice(index, 1);
          if (waiters.length === 0) this.#waiters.delete(waitKey);
        }
        resolve(undefined);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      const waiters = this.#waiters.get(waitKey);
      if (waiters) waiters.push(waiter);
      else this.#waiters.set(waitKey, [waiter]);
      this.#input.enqueue(message);
    });
  }

  /**
   * Closes the connection and waits until it is closed.
   *
   * @param discard Drop the output no reader took (the client said goodbye, or stopped reading)
   */
  async close(discard: boolean): Promise<void> {
    if (discard) this.outbox.discard();
    if (this.#state === "open") {
      this.#state = "closing";
      try {
        await this.#agent.close();
      } catch (error) {
        this.#logger.warn("HTTP connection did not close cleanly", { key: this.key, error });
      }
    }
    await this.#closed;
    await this.outbox.finished;
  }

  /** Gives an answer from the agent to the request waiting for it. */
  #answer(message: AnyMessage, eventId: number | undefined): void {
    if ("method" in message || !("id" in message)) return;
    const waitKey = `${typeof message.id}:${message.id}`;
    const waiters = this.#waiters.get(waitKey);
    const waiter = waiters?.shift();
    if (waiters?.length === 0) this.#waiters.delete(waitKey);
    waiter?.(message, eventId);
  }

  #closeInput(): void {
    if (!this.#inputOpen) return;
    this.#inputOpen = false;
    try {
      this.#input.close();
    } catch {
      // Cancelled by the agent meanwhile.
    }
  }
}

/** What a JSON-RPC message is, or why it is none. */
function messageKind(
  message: unknown,
): "request" | "notification" | "response" | { invalid: string } {
  if (typeof message !== "object" || message === null) {
    return { invalid: "the body is not a JSON object" };
  }
  const record = message as Record<string, unknown>;
  if (record.jsonrpc !== "2.0") return { invalid: 'jsonrpc must be "2.0"' };
  if ("method" in record) {
    if (typeof record.method !== "string") return { invalid: "method must be a string" };
    if (!("id" in record)) return "notification";
    const { id } = record;
    return typeof id === "string" || (typeof id === "number" && Number.isFinite(id))
      ? "request"
      : { invalid: "a request id must be a string or a finite number" };
  }
  if ("id" in record && ("result" in record || "error" in record)) return "response";
  return { invalid: "the body is not a JSON-RPC request, notification or response" };
}

/** The media type of a `Content-Type`, lower case, without parameters. */
function mediaType(header: string | null): string | undefined {
  return header?.split(";")[0]?.trim().toLowerCase();
}

/** Whether an `Accept` header names `text/event-stream`. */
function acceptsEventStream(header: string | null): boolean {
  return (header ?? "").split(",").some((range) => mediaType(range) === "text/event-stream");
}

/** A `Last-Event-ID` as a number, when it is one of ours. */
function eventId(header: string | null): number | undefined {
  const text = header?.trim();
  return text && /^\d{1,15}$/.test(text) ? Number(text) : undefined;
}

const TITLES: Readonly<Record<number, string>> = {
  400: "Bad Request",
  404: "Not Found",
  405: "Method Not Allowed",
  406: "Not Acceptable",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/** An `application/problem+json` response. */
function problem(status: number, detail: string, headers: Record<string, string> = {}): Response {
  const title = TITLES[status] ?? "Error";
  return new Response(JSON.stringify({ type: "about:blank", title, status, detail }), {
    status,
    headers: { ...headers, "content-type": "application/problem+json" },
  });
}
