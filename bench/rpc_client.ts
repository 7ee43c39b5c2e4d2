/**
 * The bench's one JSON-RPC client: requests by id, answers matched to them with the time their
 * bytes arrived, a bound per request, and every pending request failed when the connection is
 * gone. Transports (a child's stdio in `bench/agent_process.ts`; SSE and WebSocket in
 * `bench/http_clients.ts`) only frame messages and hand each one's text to
 * {@link RpcClient.receive}.
 *
 * It is not `tests/_helpers/acp_client.ts` (`AcpTestClient`): that one keeps every frame it
 * receives and checks each against the ACP schema, work that would land inside the round trips
 * and update rates the bench measures. This one does nothing per message beyond the parse (and,
 * in lean mode, not even that for `agent_message_chunk` updates).
 *
 * @module
 */

/** How long a request may wait for its answer (ms). */
export const REQUEST_TIMEOUT_MS = 60_000;

/** The `initialize` params of every bench client. */
export const INITIALIZE_PARAMS = {
  protocolVersion: 1,
  clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  clientInfo: { name: "acp-harness-bench", version: "0.0.0" },
};

/** The part of a `session/update` the bench looks at. */
export interface SessionUpdateParams {
  readonly sessionId?: string;
  readonly update?: {
    readonly sessionUpdate?: string;
    readonly toolCallId?: string;
    readonly status?: string;
    readonly content?: { readonly text?: string };
  };
}

/** A JSON-RPC message as the bench reads it. */
export interface RpcMessage {
  readonly id?: number | string | null;
  readonly method?: string;
  readonly params?: SessionUpdateParams;
  readonly result?: unknown;
  readonly error?: unknown;
}

/** An answer and when its bytes arrived (`performance.now()`). */
export interface Reply {
  readonly result: unknown;
  readonly at: number;
}

/** Options of {@link RpcClient.request}. */
export interface RequestOptions {
  /** The bound on the answer (ms). @default {REQUEST_TIMEOUT_MS} */
  readonly timeoutMs?: number;
  /** The session the request belongs to, for transports that route by session. */
  readonly sessionId?: string;
}

interface Pending {
  readonly method: string;
  readonly resolve: (reply: Reply) => void;
  readonly reject: (error: Error) => void;
  readonly timer: ReturnType<typeof setTimeout>;
}

/** A message that carries an `agent_message_chunk` update, recognised without parsing it. */
const CHUNK_MARKER = '"sessionUpdate":"agent_message_chunk"';

/**
 * Request/answer correlation over any transport.
 *
 * @example
 * ```ts ignore
 * class Echo extends RpcClient {
 *   protected write(message: unknown): void {
 *     this.receive(JSON.stringify({ id: (message as { id: number }).id, result: {} }), 0);
 *   }
 * }
 * const { result } = await new Echo("echo").request("initialize", {});
 * ```
 */
export abstract class RpcClient {
  /** Names the peer in errors. */
  readonly label: string;
  /** `agent_message_chunk` notifications received. */
  messageChunks = 0;
  /** Told about each `agent_message_chunk` message of a lean client (its JSON text). */
  onChunk: ((text: string, at: number) => void) | undefined;
  readonly #lean: boolean;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  #failure: Error | undefined;

  /**
   * @param label Names the peer in errors
   * @param options `lean`: count `agent_message_chunk` updates by a substring, unparsed, and
   *   hand them to {@link onChunk} only
   */
  constructor(label: string, options: { readonly lean?: boolean } = {}) {
    this.label = label;
    this.#lean = options.lean ?? false;
  }

  /** Sends a request; resolves with its result and arrival time, rejects on an error answer. */
  request(method: string, params: unknown, options: RequestOptions = {}): Promise<Reply> {
    if (this.#failure) return Promise.reject(this.#failure);
    const id = this.#nextId++;
    const timeoutMs = options.timeoutMs ?? REQUEST_TIMEOUT_MS;
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error(`${this.label}: ${method} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      this.#pending.set(id, { method, resolve, reject, timer });
      const sent = this.write({ jsonrpc: "2.0", id, method, params }, options.sessionId);
      sent?.catch((error: unknown) =>
        this.fail(error instanceof Error ? error : new Error(String(error)))
      );
    });
  }

  /** Sends one message (for a session's messages, `sessionId` says which). */
  protected abstract write(message: unknown, sessionId?: string): void | Promise<void>;

  /** Handles a notification (lean clients never see their `agent_message_chunk`s here). */
  protected notified(_message: RpcMessage, _at: number): void {}

  /** Handles a request of the agent; by default the client fails, as none is expected. */
  protected requested(message: RpcMessage): void {
    this.fail(new Error(`${this.label}: unexpected agent request ${message.method}`));
  }

  /** Handles one received message, given as its JSON text and when its bytes arrived. */
  protected receive(text: string, at: number): void {
    if (this.#lean && text.includes(CHUNK_MARKER)) {
      this.messageChunks++;
      this.onChunk?.(text, at);
      return;
    }
    let message: RpcMessage;
    try {
      message = JSON.parse(text) as RpcMessage;
    } catch {
      return;
    }
    if (message.method !== undefined) {
      if (message.id !== undefined) this.requested(message);
      else this.notified(message, at);
      return;
    }
    if (typeof message.id === "number") this.#answer(message.id, message, at);
  }

  /**
   * Fails every pending request with `error`, and every later one with `later` (or `error`).
   */
  protected fail(error: Error, later: Error = error): void {
    this.#failure ??= later;
    for (const pending of this.#pending.values()) {
      clearTimeout(pending.timer);
      pending.reject(error);
    }
    this.#pending.clear();
  }

  #answer(id: number, message: RpcMessage, at: number): void {
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#pending.delete(id);
    clearTimeout(pending.timer);
    if (message.error !== undefined) {
      pending.reject(
        new Error(`${this.label}: ${pending.method} failed: ${JSON.stringify(message.error)}`),
      );
    } else {
      pending.resolve({ result: message.result, at });
    }
  }
}

/**
 * Splits NDJSON text as it arrives into lines (empty ones skipped), keeping a partial last line
 * for the next piece.
 */
export class LineSplitter {
  #buffer = "";

  /** Calls `onLine` with each whole line of `data` (after what was kept from before). */
  push(data: string, onLine: (line: string) => void): void {
    const text = this.#buffer + data;
    let start = 0;
    for (let end = text.indexOf("\n"); end !== -1; end = text.indexOf("\n", start)) {
      if (end > start) onLine(text.slice(start, end));
      start = end + 1;
    }
    this.#buffer = text.slice(start);
  }
}
