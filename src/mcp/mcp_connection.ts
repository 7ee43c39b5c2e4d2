/**
 * One MCP server of one session: connecting it over stdio, Streamable HTTP or SSE with the
 * official MCP client, its tools and prompts, calls with cancellation and a timeout, one
 * reconnect after it went away, and closing it.
 *
 * @module
 */
import type {
  CallToolResult,
  ElicitRequest,
  ElicitResult,
  GetPromptResult,
  JsonSchemaValidator,
  jsonSchemaValidator,
  Prompt,
  Tool as McpTool,
  Transport,
} from "@modelcontextprotocol/client";
import {
  Client,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SSEClientTransport,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import type { HostProcesses } from "../host/host.ts";
import type { Logger } from "../log/logger.ts";
import { redactUrls } from "../util/redact_urls.ts";
import { VERSION } from "../util/version.ts";
import { describeMcpServer, type McpServerSpec } from "./mcp_declarations.ts";
import { McpStartError } from "./mcp_errors.ts";
import { HostStdioTransport } from "./stdio_transport.ts";
import { type LeftOutTool, screenToolLists } from "./tool_list_screen.ts";
import { describeNetworkError } from "../util/network_error.ts";
import type {
  ElicitationAnswer,
  ElicitationRequest,
  ElicitationSchema,
} from "../tools/elicitation.ts";

/** The most pages of `tools/list` or `prompts/list` read from one server. */
const MAX_LIST_PAGES = 100;

/**
 * The most tools (and prompts) taken from one server; the rest are left out with a warning
 * (every tool goes to the model with every request).
 */
export const MAX_TOOLS_PER_SERVER = 1000;

/** The longest a call's result waits for a tool list change announced before it. */
const REFRESH_WAIT_MS = 5000;

/**
 * The client checks `structuredContent` against the tool's `outputSchema` with this: it accepts
 * anything. That check is the server's contract, not ours, and the library's default (Ajv with
 * JavaScript regular expressions) lets a server's `pattern` block the event loop for good.
 */
const ACCEPT_ANY: jsonSchemaValidator = {
  getValidator<T>(): JsonSchemaValidator<T> {
    return (input) => ({ valid: true, data: input as T, errorMessage: undefined });
  },
};

/** What an {@link McpConnection} needs. */
export interface McpConnectionOptions {
  readonly spec: McpServerSpec;
  readonly processes: Pick<HostProcesses, "spawn">;
  /** The session's working directory: a stdio server's cwd. */
  readonly cwd: string;
  readonly logger: Logger;
  /** Added to every log line, for example `{ sessionId }`. */
  readonly logFields: Readonly<Record<string, unknown>>;
  /** Milliseconds a server has to start and list its tools. */
  readonly startTimeoutMs: number;
  /** Milliseconds one tool call may take. */
  readonly callTimeoutMs: number;
  /** Told when the server's tool list changed (after the new list was read). */
  readonly onToolsChanged?: () => void;
  /**
   * How the session's client takes the server's questions (MCP elicitation).
   * @default {form questions offered (and declined unless a call can ask), URL questions not}
   */
  readonly elicitation?: McpElicitationOptions;
}

/**
 * How a session's client takes its MCP servers' questions. Servers are always told that the
 * client takes form questions (`elicitation.form`): a question a tool call can relay reaches the
 * user, any other is declined. URL questions are offered only when the client takes them.
 */
export interface McpElicitationOptions {
  /** Whether the client takes URL questions (ACP `elicitation.url`). */
  readonly url: boolean;
  /**
   * Tells the client that a URL question's flow is done (the server's
   * `notifications/elicitation/complete`, for a question it relayed and the user accepted).
   */
  readonly complete?: (elicitationId: string) => void;
}

/** Asks the user a running call's question (a call's `ToolContext.elicit`). */
export type McpElicit = (
  request: ElicitationRequest,
  signal?: AbortSignal,
) => Promise<ElicitationAnswer>;

/** What {@link McpConnection.callTool} takes besides the call itself. */
export interface McpCallOptions {
  /** The request's `_meta` (the caller's W3C trace context: `traceparent`, …). */
  readonly meta?: Readonly<Record<string, string>>;
  /**
   * Asks the user what the server asks while the call runs; without it the server's questions
   * are declined. The time the user takes is not counted against the call's timeout.
   */
  readonly elicit?: McpElicit;
}

/**
 * A call that did not get an answer from the server: the text says why, for the model (URLs in
 * it redacted: it is recorded in the session's log).
 */
export class McpCallError extends Error {
  /** Whether the call was cancelled (the turn was). */
  readonly cancelled: boolean;

  /**
   * @param message Why (URLs in it are redacted)
   * @param cancelled Whether the call was cancelled
   */
  constructor(message: string, cancelled = false) {
    super(redactUrls(message));
    this.name = "McpCallError";
    this.cancelled = cancelled;
  }
}

/** How long a failed start waits for a stdio server's exit, to name it as the cause. */
const EXIT_WAIT_MS = 500;

/**
 * The MCP client's own timeout of a call: the longest a timer runs. Calls are timed by their
 * {@link CallDeadline}, which stops while the user answers the server's question.
 */
const NO_CLIENT_TIMEOUT_MS = 2_147_483_647;

/** The most accepted URL questions of one server waiting for their `complete`. */
const MAX_OPEN_URL_QUESTIONS = 100;

/** A `tools/call` under way: who answers its questions, and its deadline. */
interface RunningCall {
  readonly elicit: McpElicit | undefined;
  readonly deadline: CallDeadline;
}

interface Live {
  readonly client: Client;
  readonly transport: Transport;
  /** Set once the connection is gone (the process exited, the stream closed). */
  gone: string | undefined;
}

/**
 * A connected MCP server. {@link McpConnection.open} connects it (or fails naming the server and
 * the cause); calls go through {@link McpConnection.callTool}; {@link McpConnection.close} ends
 * it (a stdio server's whole process group, an HTTP server's session with `DELETE`).
 */
export class McpConnection {
  readonly #options: McpConnectionOptions;
  #live: Live | undefined;
  #tools: readonly McpTool[] = [];
  #prompts: readonly Prompt[] = [];
  #refreshing: Promise<void> | undefined;
  /** Whether a refresh waits to start: it covers every change announced until it starts. */
  #refreshQueued = false;
  #reconnecting: Promise<Live> | undefined;
  #closed = false;
  /** The calls under way, oldest first: a question the server asks goes to the newest. */
  readonly #calls = new Set<RunningCall>();
  /** The ids of URL questions relayed and accepted, until the server says they are done. */
  readonly #openUrlQuestions = new Set<string>();
  /** The tools left out of the lists read so far, each once (by name and reason). */
  readonly #leftOut: LeftOutTool[] = [];
  readonly #reported = new Set<string>();

  private constructor(options: McpConnectionOptions) {
    this.#options = options;
  }

  /**
   * Connects a server and reads its tools and prompts, within the start timeout.
   *
   * @param options The server and its limits
   * @param signal Aborts the start (the server is stopped)
   * @returns The connection
   * @throws {McpStartError} Naming the server and the cause
   */
  static async open(options: McpConnectionOptions, signal: AbortSignal): Promise<McpConnection> {
    const connection = new McpConnection(options);
    connection.#live = await connection.#connect(signal);
    return connection;
  }

  /** The server's name. */
  get name(): string {
    return this.#options.spec.name;
  }

  /** The server's tools, as it listed them last. */
  get tools(): readonly McpTool[] {
    return this.#tools;
  }

  /**
   * The tools left out of the lists the server gave (their definitions were malformed), each
   * named with the reason, once.
   */
  get leftOut(): readonly LeftOutTool[] {
    return this.#leftOut;
  }

  /** The server's prompts, as it listed them at start. */
  get prompts(): readonly Prompt[] {
    return this.#prompts;
  }

  /**
   * Settles once the tool list refresh under way (after `notifications/tools/list_changed`) has
   * been read: at once when none is, when `signal` aborts, or after 5 s.
   *
   * @param signal The call's signal
   */
  async refreshed(signal: AbortSignal): Promise<void> {
    // Only what is under way now: a server that announces a change after every list must not
    // hold a call forever. Bounded, and given up when the call is cancelled.
    const refreshing = this.#refreshing;
    if (!refreshing || signal.aborted) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let onAbort: (() => void) | undefined;
    try {
      await Promise.race([
        refreshing,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, REFRESH_WAIT_MS);
          onAbort = resolve;
          signal.addEventListener("abort", onAbort, { once: true });
        }),
      ]);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal.removeEventListener("abort", onAbort);
    }
  }

  /**
   * Calls a tool. A server that went away is reconnected once first. A question the server asks
   * while the call runs (MCP elicitation) goes to `options.elicit`; the time the user takes to
   * answer it is not counted against the call's timeout.
   *
   * @param name The tool's name as the server knows it
   * @param args Its arguments
   * @param signal Aborting cancels the call (the server is told)
   * @param options The request's `_meta`, and who answers the server's questions
   * @returns The server's result
   * @throws {McpCallError} When the server did not answer: cancelled, timed out, gone
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    options: McpCallOptions = {},
  ): Promise<CallToolResult> {
    const live = await this.#ready(signal);
    const { meta, elicit } = options;
    const call: RunningCall = { elicit, deadline: new CallDeadline(this.#options.callTimeoutMs) };
    this.#calls.add(call);
    try {
      return await live.client.callTool({
        name,
        arguments: args,
        ...(meta === undefined ? {} : { _meta: { ...meta } }),
      }, {
        signal: AbortSignal.any([signal, call.deadline.signal]),
        timeout: NO_CLIENT_TIMEOUT_MS,
      }) as CallToolResult;
    } catch (error) {
      if (!signal.aborted && call.deadline.signal.aborted) {
        throw new McpCallError(this.#timedOut(`tools/call ${name}`));
      }
      throw await this.#callError(error, live, signal, `tools/call ${name}`);
    } finally {
      call.deadline.clear();
      this.#calls.delete(call);
    }
  }

  /**
   * Gets a prompt's messages.
   *
   * @param name The prompt's name as the server knows it
   * @param args Its arguments
   * @param signal Aborting cancels the request
   * @returns The prompt
   * @throws {McpCallError} When the server did not answer
   */
  async getPrompt(
    name: string,
    args: Record<string, string>,
    signal: AbortSignal,
  ): Promise<GetPromptResult> {
    const live = await this.#ready(signal);
    try {
      return await live.client.getPrompt({ name, arguments: args }, {
        signal,
        timeout: this.#options.callTimeoutMs,
      });
    } catch (error) {
      throw await this.#callError(error, live, signal, `prompts/get ${name}`);
    }
  }

  /** Ends the server (idempotent; never rejects). */
  async close(): Promise<void> {
    this.#closed = true;
    const live = this.#live;
    this.#live = undefined;
    if (live) await this.#end(live);
  }

  async #ready(signal: AbortSignal): Promise<Live> {
    if (this.#closed) throw new McpCallError(`the MCP server ${this.name} was closed`);
    const live = this.#live;
    if (live && live.gone === undefined) return live;
    // One reconnect, shared by the calls waiting for it.
    this.#reconnecting ??= (async () => {
      const why = live?.gone ?? "it is not connected";
      this.#options.logger.warn("MCP server reconnecting", { ...this.#fields(), why });
      if (live) await this.#end(live);
      try {
        const fresh = await this.#connect(signal);
        if (this.#closed) {
          await this.#end(fresh);
          throw new McpCallError(`the MCP server ${this.name} was closed`);
        }
        this.#live = fresh;
        return fresh;
      } catch (error) {
        if (error instanceof McpCallError) throw error;
        throw new McpCallError(
          `the MCP server ${this.name} went away (${why}) and reconnecting failed: ${
            error instanceof McpStartError ? error.message : describe(error)
          }`,
        );
      }
    })().finally(() => this.#reconnecting = undefined);
    return await this.#reconnecting;
  }

  async #callError(
    error: unknown,
    live: Live,
    signal: AbortSignal,
    what: string,
  ): Promise<McpCallError> {
    if (signal.aborted) return new McpCallError(`${what} was cancelled`, true);
    // A server that died mid-call can fail a write (EPIPE) before its exit is seen: its exit says
    // more (killed by a signal, an exit code), so give it a moment to arrive, as at start.
    if (
      live.gone === undefined && live.transport instanceof HostStdioTransport &&
      /EPIPE|not running/.test(describe(error))
    ) {
      await live.transport.exitWithin(EXIT_WAIT_MS);
    }
    if (error instanceof ProtocolError) {
      return new McpCallError(`the MCP server ${this.name} refused ${what}: ${error.message}`);
    }
    if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) {
      return new McpCallError(this.#timedOut(what));
    }
    // Anything else is the connection failing: the next call reconnects.
    live.gone ??= this.#goneReason(live) ?? describe(error);
    return new McpCallError(
      `the MCP server ${this.name} went away during ${what}: ${live.gone}; the next call reconnects`,
    );
  }

  /** Why a request timed out, in words. */
  #timedOut(what: string): string {
    return `the MCP server ${this.name} did not answer ${what} within ${
      this.#options.callTimeoutMs / 1000
    } s`;
  }

  /**
   * Answers the server's `elicitation/create`: relayed to the user by the newest call under way
   * that can ask (every running call's deadline stopped meanwhile), else declined. `signal` is
   * the server withdrawing its question (`notifications/cancelled`).
   */
  async #answerQuestion(request: ElicitRequest, signal: AbortSignal): Promise<ElicitResult> {
    const params = request.params;
    const question: ElicitationRequest = params.mode === "url"
      ? {
        mode: "url",
        message: params.message,
        url: params.url,
        elicitationId: params.elicitationId,
      }
      : {
        mode: "form",
        message: params.message,
        requestedSchema: params.requestedSchema as unknown as ElicitationSchema,
      };
    const calls = [...this.#calls];
    const asker = calls.at(-1)?.elicit;
    const fields = { ...this.#fields(), mode: question.mode };
    if (asker === undefined) {
      this.#options.logger.info(
        calls.length === 0
          ? "MCP server question declined: no tool call of it is running"
          : "MCP server question declined: nobody can answer it in this session",
        fields,
      );
      return { action: "decline" };
    }
    for (const call of calls) call.deadline.pause();
    try {
      const answer = await asker(question, signal);
      if (answer.action !== "accept") return { action: answer.action };
      if (question.mode === "url") {
        if (this.#openUrlQuestions.size >= MAX_OPEN_URL_QUESTIONS) {
          this.#openUrlQuestions.delete(this.#openUrlQuestions.values().next().value as string);
        }
        this.#openUrlQuestions.add(question.elicitationId);
        return { action: "accept" };
      }
      return { action: "accept", content: { ...answer.content } as ElicitResult["content"] };
    } catch (error) {
      // Askers never reject; one that did is a refusal.
      this.#options.logger.warn("MCP server question failed; declining", { ...fields, error });
      return { action: "decline" };
    } finally {
      for (const call of calls) call.deadline.resume();
    }
  }

  async #connect(outer: AbortSignal): Promise<Live> {
    const { spec, startTimeoutMs, logger } = this.#options;
    const started = Date.now();
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new Error(`no answer within ${startTimeoutMs / 1000} s`)),
      startTimeoutMs,
    );
    const onOuterAbort = (): void => controller.abort(outer.reason);
    outer.addEventListener("abort", onOuterAbort, { once: true });
    if (outer.aborted) onOuterAbort();
    const signal = controller.signal;
    const transport = this.#transport();
    screenToolLists(transport, (left) => this.#reportLeftOut(left));
    const client = new Client({ name: "acp-harness", version: VERSION }, {
      // Form questions are always taken (declined when nobody can answer: see
      // McpElicitationOptions); URL questions only when the session's client takes them.
      capabilities: {
        elicitation: { form: {}, ...(this.#options.elicitation?.url ? { url: {} } : {}) },
      },
      jsonSchemaValidator: ACCEPT_ANY,
    });
    const live: Live = { client, transport, gone: undefined };
    client.onerror = (error) => logger.debug("MCP client error", { ...this.#fields(), error });
    client.onclose = () => {
      live.gone ??= this.#goneReason(live) ?? "the connection closed";
    };
    client.setNotificationHandler("notifications/tools/list_changed", () => {
      if (this.#live === live) this.#refresh(live);
    });
    client.setRequestHandler(
      "elicitation/create",
      (request, ctx) => this.#answerQuestion(request, ctx.mcpReq.signal),
    );
    client.setNotificationHandler("notifications/elicitation/complete", (notification) => {
      const id = notification.params.elicitationId;
      // Only a question of this server that the user accepted: no server completes another's.
      if (this.#openUrlQuestions.delete(id)) this.#options.elicitation?.complete?.(id);
    });
    try {
      await abortable(client.connect(transport, { signal }), signal);
      // Both lists at once: one round trip, not two.
      const [tools, prompts] = await Promise.all([
        abortable(listAll(client, "tools", signal), signal) as Promise<McpTool[]>,
        client.getServerCapabilities()?.prompts
          ? abortable(listAll(client, "prompts", signal), signal) as Promise<Prompt[]>
          : [],
      ]);
      this.#tools = this.#bounded(tools, "tools");
      this.#prompts = this.#bounded(prompts, "prompts");
      logger.info("MCP server connected", {
        ...this.#fields(),
        tools: tools.length,
        ...(this.#leftOut.length > 0 ? { toolsLeftOut: this.#leftOut.length } : {}),
        prompts: prompts.length,
        ms: Date.now() - started,
      });
      return live;
    } catch (error) {
      // A server exiting at start can fail a write (EPIPE) before its exit is seen: its exit
      // code and stderr say more, so give the exit a moment to arrive.
      if (
        !signal.aborted && live.transport instanceof HostStdioTransport &&
        /EPIPE|not running/.test(describe(error))
      ) {
        await live.transport.exitWithin(EXIT_WAIT_MS);
      }
      // The cause is what went wrong now; ending the server below (it exits 0 once its stdin
      // closes) would otherwise pass for it.
      const cause = signal.aborted && !outer.aborted
        ? describe(signal.reason)
        : this.#goneReason(live) ?? describe(error);
      await this.#end(live);
      logger.warn("MCP server did not start", { ...this.#fields(), cause });
      throw new McpStartError(spec.name, cause);
    } finally {
      clearTimeout(timer);
      outer.removeEventListener("abort", onOuterAbort);
    }
  }

  /**
   * Keeps the tools left out of a list just read, and warns of each once per connection: one
   * malformed tool costs that tool, not the server.
   */
  #reportLeftOut(left: readonly LeftOutTool[]): void {
    for (const tool of left) {
      const { name, reason } = tool;
      const key = `${name}\n${reason}`;
      if (this.#reported.has(key) || this.#reported.size >= MAX_TOOLS_PER_SERVER) continue;
      this.#reported.add(key);
      this.#leftOut.push(tool);
      this.#options.logger.warn("MCP server tool left out: its definition is malformed", {
        ...this.#fields(),
        tool: name,
        reason,
      });
    }
  }

  /** Reads the tool list again after `notifications/tools/list_changed`. */
  #refresh(live: Live): void {
    // A flood of notifications costs one read at a time, not one each.
    if (this.#refreshQueued) return;
    this.#refreshQueued = true;
    const previous = this.#refreshing ?? Promise.resolve();
    const refreshing = previous.then(async () => {
      this.#refreshQueued = false;
      // Gone, replaced, or a server that never said it has tools: nothing to read.
      if (this.#live !== live || live.gone !== undefined) return;
      if (!live.client.getServerCapabilities()?.tools) return;
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), this.#options.startTimeoutMs);
      try {
        const tools = this.#bounded(
          await listAll(live.client, "tools", controller.signal) as McpTool[],
          "tools",
        );
        if (this.#live !== live) return;
        this.#tools = tools;
        this.#options.logger.info("MCP server tools changed", {
          ...this.#fields(),
          tools: tools.length,
        });
        this.#options.onToolsChanged?.();
      } catch (error) {
        this.#options.logger.warn("MCP server tool list refresh failed", {
          ...this.#fields(),
          error,
        });
      } finally {
        clearTimeout(timer);
      }
    });
    this.#refreshing = refreshing;
    void refreshing.finally(() => {
      if (this.#refreshing === refreshing) this.#refreshing = undefined;
    });
  }

  #transport(): Transport {
    const { spec, processes, cwd } = this.#options;
    if (spec.transport === "stdio") {
      return new HostStdioTransport({
        processes,
        command: spec.command,
        args: spec.args,
        env: spec.env,
        cwd,
      });
    }
    const requestInit: RequestInit = { headers: { ...spec.headers } };
    const url = new URL(spec.url);
    return spec.transport === "http"
      ? new StreamableHTTPClientTransport(url, { requestInit })
      : new SSEClientTransport(url, { requestInit });
  }

  /** The first {@link MAX_TOOLS_PER_SERVER} items of a list, with a warning when it is longer. */
  #bounded<T>(items: readonly T[], what: string): readonly T[] {
    if (items.length <= MAX_TOOLS_PER_SERVER) return items;
    this.#options.logger.warn(`MCP server lists too many ${what}; the rest are left out`, {
      ...this.#fields(),
      listed: items.length,
      kept: MAX_TOOLS_PER_SERVER,
    });
    return items.slice(0, MAX_TOOLS_PER_SERVER);
  }

  /** How a stdio server ended, in words, once it has. */
  #goneReason(live: Live): string | undefined {
    if (!(live.transport instanceof HostStdioTransport)) return undefined;
    const exit = live.transport.exit;
    if (!exit) return undefined;
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
    const stderr = exit.stderr.trim();
    return stderr ? `${how}; its stderr ends with: ${stderr.slice(-500)}` : how;
  }

  async #end(live: Live): Promise<void> {
    live.gone ??= "closed";
    try {
      if (live.transport instanceof StreamableHTTPClientTransport && live.transport.sessionId) {
        // MCP `DELETE`: the server may drop the session now, not when it times out.
        await live.transport.terminateSession();
      }
    } catch (error) {
      this.#options.logger.debug("MCP session end failed", { ...this.#fields(), error });
    }
    try {
      await live.client.close();
    } catch (error) {
      this.#options.logger.debug("MCP client close failed", { ...this.#fields(), error });
    }
    // The client closes the transport; a stdio server's process is awaited here.
    await live.transport.close().catch(() => {});
  }

  #fields(): Record<string, unknown> {
    return { ...this.#options.logFields, mcpServer: describeMcpServer(this.#options.spec) };
  }
}

/**
 * A call's timeout that stops while the user answers the server's question: {@link signal} aborts
 * once the call has run `ms` milliseconds, the pauses left out.
 */
class CallDeadline {
  readonly #controller = new AbortController();
  #left: number;
  #since = Date.now();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #paused = 0;

  /** @param ms How long the call may run */
  constructor(ms: number) {
    this.#left = ms;
    this.#arm();
  }

  /** Aborted once the time is up. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Stops the clock (pauses nest). */
  pause(): void {
    if (this.#paused++ > 0 || this.#controller.signal.aborted) return;
    clearTimeout(this.#timer);
    this.#left -= Date.now() - this.#since;
  }

  /** Starts the clock again once every pause has ended. */
  resume(): void {
    if (this.#paused === 0 || --this.#paused > 0) return;
    this.#arm();
  }

  /** Stops the clock for good. */
  clear(): void {
    clearTimeout(this.#timer);
    this.#paused = Infinity;
  }

  #arm(): void {
    if (this.#controller.signal.aborted) return;
    this.#since = Date.now();
    this.#timer = setTimeout(() => this.#controller.abort(), Math.max(0, this.#left));
  }
}

/** Every page of a list. */
async function listAll(
  client: Client,
  what: "tools" | "prompts",
  signal: AbortSignal,
): Promise<unknown[]> {
  const items: unknown[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const params = cursor === undefined ? {} : { cursor };
    const result = what === "tools"
      ? await client.listTools(params, { signal })
      : await client.listPrompts(params, { signal });
    items.push(
      ...(what === "tools" ? (result as { tools: unknown[] }).tools : (
        result as { prompts: unknown[] }
      ).prompts),
    );
    cursor = result.nextCursor;
    if (cursor === undefined) break;
  }
  return items;
}

/** `promise`, or a rejection with the signal's reason as soon as it aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    // Its later rejection is nobody's concern now, and must not go unhandled.
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** An error in words, URLs redacted (the runtimes' fetch errors and the client's quote them). */
function describe(error: unknown): string {
  if (error instanceof Error) {
    // The runtime's `fetch failed` (an HTTP or SSE server not reached): its cause says why.
    if (error.cause !== undefined && /fetch failed/i.test(error.message)) {
      return redactUrls(describeNetworkError(error));
    }
    const code = (error as { code?: unknown }).code;
    return redactUrls(
      typeof code === "string" && !error.message.includes(code)
        ? `${error.message} (${code})`
        : error.message,
    );
  }
  return redactUrls(String(error));
}
