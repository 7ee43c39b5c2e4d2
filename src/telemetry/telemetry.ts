/**
 * The one instrumentation seam of the server: the places that observe (the prompt turn, its model
 * requests and tool calls, permission decisions, sessions, connections, MCP server starts, store
 * commits) call a {@link Telemetry}, which is a no-op ({@link NOOP_TELEMETRY}) unless metrics are
 * switched on (`src/telemetry/prometheus_telemetry.ts`, loaded only then).
 *
 * A trace span is a begin/end pair here: {@link Telemetry.promptTurn} gives a
 * {@link TurnTelemetry} whose {@link TurnTelemetry.modelRequest} and {@link TurnTelemetry.toolCall}
 * children each end once. The hooks that only a tracer uses are optional (a tool call's permission
 * decision, its MCP call, the W3C trace context a tool passes on): callers call them with `?.`.
 * Metrics read only bounded values (a stop reason, a tool's name, an outcome word); what a span
 * may carry besides (the session id, the tool call id, content when it is captured) is given to
 * the tracer alone, and metrics ignore it. Tracers are switched on by `--otel` or the standard
 * `OTEL_EXPORTER_OTLP_*ENDPOINT` variables (`src/telemetry/otel_telemetry.ts`, loaded only then);
 * {@link combineTelemetry} runs metrics and traces together.
 *
 * @module
 */

/** The provider and model of a model request (the catalog's ids, never a client's text). */
export interface ModelLabels {
  /** The provider id: `openai`, `anthropic`, `scripted`, a configured id. */
  readonly provider: string;
  /** The model name at that provider. */
  readonly model: string;
}

/**
 * W3C trace context as ACP carries it: the reserved root keys `traceparent`, `tracestate` and
 * `baggage` of a request's `_meta` (the meta-propagation RFD), and what the server passes on in
 * the `_meta` of its own requests (MCP `tools/call`, a delegated agent's `session/new` and
 * `session/prompt`). Empty when nothing is traced.
 */
export interface TraceCarrier {
  /** `version-traceid-spanid-flags`, e.g. `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`. */
  readonly traceparent?: string;
  /** Vendor trace state, `key=value` pairs. */
  readonly tracestate?: string;
  /** W3C baggage, `key=value` pairs. */
  readonly baggage?: string;
}

/** The longest trace context value read from a client (the W3C limits are far below). */
const MAX_CARRIER_VALUE = 8192;

/**
 * The trace context of a request's `_meta`: its `traceparent`, `tracestate` and `baggage` when
 * they are strings of at most 8 KiB, nothing else; `undefined` when it has no `traceparent`.
 * Whether the `traceparent` is well formed is the tracer's to judge (a malformed one starts a new
 * trace).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { traceCarrierOf } from "./telemetry.ts";
 * const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
 * assert.deepEqual(traceCarrierOf({ traceparent, other: 1 }), { traceparent });
 * assert.equal(traceCarrierOf({ traceparent: 42 }), undefined);
 * assert.equal(traceCarrierOf(undefined), undefined);
 * ```
 *
 * @param meta A request's `_meta` (anything: it is the client's)
 * @returns The trace context in it
 */
export function traceCarrierOf(meta: unknown): TraceCarrier | undefined {
  if (typeof meta !== "object" || meta === null || Array.isArray(meta)) return undefined;
  const fields = meta as Record<string, unknown>;
  const read = (key: keyof TraceCarrier): string | undefined => {
    const value = Object.hasOwn(fields, key) ? fields[key] : undefined;
    return typeof value === "string" && value.length <= MAX_CARRIER_VALUE ? value : undefined;
  };
  const traceparent = read("traceparent");
  if (traceparent === undefined) return undefined;
  const tracestate = read("tracestate");
  const baggage = read("baggage");
  return {
    traceparent,
    ...(tracestate === undefined ? {} : { tracestate }),
    ...(baggage === undefined ? {} : { baggage }),
  };
}

/** The tokens one model request reports (`LlmUsage`). */
export interface TokenCounts {
  /** Input tokens, cached ones included. */
  readonly input: number;
  /** Output tokens, reasoning included. */
  readonly output: number;
  /** Input tokens read from the cache. */
  readonly cacheRead?: number;
  /** Input tokens written to the cache. */
  readonly cacheWrite?: number;
  /** Reasoning tokens (counted in `output`). */
  readonly reasoning?: number;
}

/**
 * How a model request ended: `ok`, `cancelled`, a provider error kind (`rate-limit`, `auth`,
 * `server`, …) or `error` for a failure of no known kind.
 */
export type ModelOutcome = string;

/** One model request, from being sent to its end. */
export interface ModelRequestTelemetry {
  /** The first text, reasoning or tool-call delta arrived (later calls are ignored). */
  firstToken(): void;
  /** The request reported its token usage. */
  usage(tokens: TokenCounts): void;
  /**
   * The request failed and is tried again (called before {@link end}): after `delayMs`, as
   * attempt `attempt + 1`.
   */
  retry?(outcome: ModelOutcome, delayMs: number): void;
  /**
   * What was sent and what came back, when content is captured ({@link TurnTelemetry.captureContent}):
   * the request's messages (the system prompt apart), and the assistant message once it is whole.
   */
  content?(
    content: { readonly system?: string; readonly input?: unknown; readonly output?: unknown },
  ): void;
  /** The request ended (once; later calls are ignored). */
  end(outcome: ModelOutcome): void;
}

/**
 * How a tool call ended: `completed`, `failed`, `denied` (permission refused), `cancelled`, or
 * `not_run` (a budget stop, an unknown tool, arguments that are not JSON).
 */
export type ToolCallStatus = "completed" | "failed" | "denied" | "cancelled" | "not_run";

/** What a tracer is told of a tool call besides its name. */
export interface ToolCallDetails {
  /** The call's id (the model's). */
  readonly id: string;
  /** Its ACP kind (`read`, `edit`, `execute`, …). */
  readonly kind: string;
}

/** A wait or a call inside a tool call (a permission question, an MCP `tools/call`). */
export interface ChildSpanTelemetry {
  /** It ended; `error`, a short reason, when it failed (once). */
  end(error?: string): void;
}

/** What the permission layer tells of a tool call's decision (see `PermissionGate`). */
export interface PermissionTelemetry {
  /** How the decision came out, and the rule as written when a rule made it. */
  permission?(outcome: PermissionOutcome, rule?: string): void;
  /** The client is asked; end the handle when it answered (or the question was withdrawn). */
  permissionWait?(): ChildSpanTelemetry;
}

/** One tool call, from being announced to its final status. */
export interface ToolCallTelemetry extends PermissionTelemetry {
  /**
   * An MCP `tools/call` the call makes.
   *
   * @param server The MCP server's name
   * @param tool The tool's name at that server
   */
  mcpCall?(server: string, tool: string): ChildSpanTelemetry;
  /**
   * The trace context of this call, for the `_meta` of the requests it sends (MCP, a delegated
   * agent); empty when nothing is traced.
   */
  carrier?(): TraceCarrier;
  /** Its arguments and result, when content is captured ({@link TurnTelemetry.captureContent}). */
  content?(input: unknown, result: string): void;
  /** The call ended (once). */
  end(status: ToolCallStatus): void;
}

/** How a prompt turn begins: what a tracer records of it (metrics read none of it). */
export interface TurnStart {
  /** The session's id (a span attribute, never a metric label). */
  readonly sessionId: string;
  /** The model the turn runs with. */
  readonly model?: ModelLabels | undefined;
  /** The trace context of the `session/prompt` request: the turn's span is its child. */
  readonly parent?: TraceCarrier | undefined;
}

/** What a turn spent (its budget report's `spent`). */
export interface TurnSpend {
  /** Model requests made. */
  readonly steps: number;
  /** Tool calls counted. */
  readonly toolCalls: number;
  /** Milliseconds from its admission to its end. */
  readonly durationMs: number;
}

/** How a prompt turn ended. */
export interface TurnEnd {
  /** The ACP stop reason, or `error` for a turn that failed. */
  readonly stopReason: string;
  /** The budget limit that ended it (`maxToolCalls`, `turnTimeout`, …), when one did. */
  readonly budgetLimit?: string;
  /** What it spent, when its agent loop ran. */
  readonly spent?: TurnSpend;
  /** The tokens its model requests reported. */
  readonly usage?: TokenCounts;
}

/** One prompt turn, from admission to its end. */
export interface TurnTelemetry {
  /**
   * A model request of the turn begins.
   *
   * @param labels Its provider and model
   * @param attempt Which attempt of the request it is (1 the first; retries count up)
   * @returns Its handle, to end
   */
  modelRequest(labels: ModelLabels, attempt?: number): ModelRequestTelemetry;
  /**
   * A tool call of the turn begins.
   *
   * @param name The tool's name as the model called it (metrics bound it with {@link toolLabel})
   * @param known Whether the session has a tool of that name
   * @param details Its id and kind, for a tracer
   * @returns Its handle, to end
   */
  toolCall(name: string, known: boolean, details?: ToolCallDetails): ToolCallTelemetry;
  /**
   * Whether prompt and tool content is recorded (traces with
   * `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`): only then are the `content` hooks
   * called.
   */
  readonly captureContent?: boolean;
  /** The trace context of the turn (its store commits are its children); empty when untraced. */
  carrier?(): TraceCarrier;
  /**
   * A model request of the turn cost this much (from the session's usage meter).
   *
   * @param labels Its provider and model
   * @param usd The cost in USD
   */
  cost(labels: ModelLabels, usd: number): void;
  /** The turn ended (once). */
  end(result: TurnEnd): void;
}

/**
 * How a permission decision came out: by a permission rule, by the mode's policy (remembered
 * "always" answers included) or by the user's answer; `cancelled` when the question was withdrawn.
 */
export type PermissionOutcome =
  | "allowed_by_rule"
  | "denied_by_rule"
  | "allowed_by_mode"
  | "denied_by_mode"
  | "allowed_by_user"
  | "denied_by_user"
  | "cancelled";

/** How an MCP server's start came out. */
export type McpStartResult = "started" | "failed" | "cancelled";

/** What a connection came by. */
export type ConnectionTransport = "stdio" | "http" | "websocket" | "memory";

/** Something open for a while: a session, a connection. */
export interface OpenHandle {
  /** It closed (once; later calls are ignored). */
  end(): void;
}

/** An MCP server being started. */
export interface McpStartTelemetry {
  /** The start ended (once). */
  end(result: McpStartResult): void;
}

/** One append handed to the session store, until the store acknowledges it. */
export interface StoreCommitTelemetry {
  /** The store acknowledged it (`ok`) or failed it (once). */
  end(ok: boolean): void;
}

/** The hooks the server calls; see the module doc. */
export interface Telemetry {
  /** Whether anything is recorded: false for {@link NOOP_TELEMETRY}, to skip work made for it. */
  readonly enabled: boolean;
  /** A prompt turn begins (it is admitted); `start` tells a tracer whose turn it is. */
  promptTurn(start?: TurnStart): TurnTelemetry;
  /** A permission decision was made. */
  permissionDecision(outcome: PermissionOutcome): void;
  /** A session opened (new, loaded or resumed); end it when it closes. */
  sessionOpened(): OpenHandle;
  /** A connection opened; end it when it closes. */
  connectionOpened(transport: ConnectionTransport): OpenHandle;
  /** An MCP server's start begins. */
  mcpServerStart(): McpStartTelemetry;
  /**
   * An append is handed to the session store.
   *
   * @param parent The trace context of the turn it belongs to, when a turn runs
   * @param events How many events it carries
   */
  storeCommit(parent?: TraceCarrier, events?: number): StoreCommitTelemetry;
  /**
   * Optional: this telemetry as a tenant's connections use it (`serve --http --tenants`): what
   * it records, and besides the per-tenant series (sessions, prompts, tokens) under a `tenant`
   * label whose values come from the tenants file only.
   *
   * @param tenant The tenant's name
   * @returns The tenant's telemetry
   */
  forTenant?(tenant: string): Telemetry;
  /**
   * Optional: a tenant's request refused at one of its limits (`sessions`, `prompts`,
   * `requestsPerMinute`).
   *
   * @param tenant The tenant's name
   * @param limit The limit
   */
  tenantRefusal?(tenant: string, limit: string): void;
}

/** Metrics rendered in a text exposition format (what `/metrics` answers). */
export interface MetricsText {
  /** The `Content-Type` of the text. */
  readonly contentType: string;
  /** Renders every metric. */
  metrics(): Promise<string>;
}

const NOOP_END = { end(): void {} };

const NOOP_REQUEST: ModelRequestTelemetry = {
  firstToken(): void {},
  usage(): void {},
  end(): void {},
};

const NOOP_TURN: TurnTelemetry = {
  modelRequest: () => NOOP_REQUEST,
  toolCall: () => NOOP_END,
  cost(): void {},
  end(): void {},
};

/**
 * The default: records nothing, and every hook returns a shared handle (no allocation).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NOOP_TELEMETRY } from "./telemetry.ts";
 * const turn = NOOP_TELEMETRY.promptTurn();
 * const request = turn.modelRequest({ provider: "echo", model: "echo" });
 * request.firstToken();
 * request.end("ok");
 * turn.end({ stopReason: "end_turn" });
 * assert.equal(NOOP_TELEMETRY.enabled, false);
 * ```
 */
export const NOOP_TELEMETRY: Telemetry = {
  enabled: false,
  promptTurn: () => NOOP_TURN,
  permissionDecision(): void {},
  sessionOpened: () => NOOP_END,
  connectionOpened: () => NOOP_END,
  mcpServerStart: () => NOOP_END,
  storeCommit: () => NOOP_END,
};

/**
 * The `tool` label of a tool call: a built-in tool's (or `delegate`'s) own name, `mcp` for every
 * MCP tool (`mcp__<server>__<tool>`: the server names are the client's), `unknown` for a name the
 * session has no tool for.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toolLabel } from "./telemetry.ts";
 * assert.equal(toolLabel("read_file", true), "read_file");
 * assert.equal(toolLabel("mcp__files__read", true), "mcp");
 * assert.equal(toolLabel("made_up", false), "unknown");
 * ```
 *
 * @param name The tool's name as called
 * @param known Whether the session has a tool of that name
 * @returns The label
 */
export function toolLabel(name: string, known: boolean): string {
  if (!known) return "unknown";
  return name.startsWith("mcp__") ? "mcp" : name;
}

/** The first non-empty trace context of `carriers`, else an empty one. */
function firstCarrier(carriers: ReadonlyArray<TraceCarrier | undefined>): TraceCarrier {
  return carriers.find((carrier) => carrier?.traceparent !== undefined) ?? {};
}

/** Ends each of `handles` (a fan-out handle). */
function endAll<T extends unknown[]>(
  handles: ReadonlyArray<{ end(...args: T): void }>,
): (...args: T) => void {
  return (...args) => {
    for (const handle of handles) handle.end(...args);
  };
}

/** Child spans of each handle that has the hook, ended together. */
function childrenOf<H>(
  handles: readonly H[],
  open: (handle: H) => ChildSpanTelemetry | undefined,
): ChildSpanTelemetry {
  const children = handles.map(open).filter((child) => child !== undefined);
  return { end: endAll(children) };
}

function combinedRequest(requests: readonly ModelRequestTelemetry[]): ModelRequestTelemetry {
  return {
    firstToken: () => requests.forEach((request) => request.firstToken()),
    usage: (tokens) => requests.forEach((request) => request.usage(tokens)),
    retry: (outcome, delayMs) => requests.forEach((request) => request.retry?.(outcome, delayMs)),
    content: (content) => requests.forEach((request) => request.content?.(content)),
    end: endAll(requests),
  };
}

function combinedToolCall(calls: readonly ToolCallTelemetry[]): ToolCallTelemetry {
  return {
    permission: (outcome, rule) => calls.forEach((call) => call.permission?.(outcome, rule)),
    permissionWait: () => childrenOf(calls, (call) => call.permissionWait?.()),
    mcpCall: (server, tool) => childrenOf(calls, (call) => call.mcpCall?.(server, tool)),
    carrier: () => firstCarrier(calls.map((call) => call.carrier?.())),
    content: (input, result) => calls.forEach((call) => call.content?.(input, result)),
    end: endAll(calls),
  };
}

function combinedTurn(turns: readonly TurnTelemetry[]): TurnTelemetry {
  return {
    modelRequest: (labels, attempt) =>
      combinedRequest(turns.map((turn) => turn.modelRequest(labels, attempt))),
    toolCall: (name, known, details) =>
      combinedToolCall(turns.map((turn) => turn.toolCall(name, known, details))),
    captureContent: turns.some((turn) => turn.captureContent === true),
    carrier: () => firstCarrier(turns.map((turn) => turn.carrier?.())),
    cost: (labels, usd) => turns.forEach((turn) => turn.cost(labels, usd)),
    end: endAll(turns),
  };
}

/**
 * Several telemetries as one: every hook goes to each of them (metrics and traces together).
 * Those not {@link Telemetry.enabled} are left out; with none left it is {@link NOOP_TELEMETRY},
 * with one it is that one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { combineTelemetry, NOOP_TELEMETRY } from "./telemetry.ts";
 * assert.equal(combineTelemetry([NOOP_TELEMETRY, NOOP_TELEMETRY]), NOOP_TELEMETRY);
 * ```
 *
 * @param parts The telemetries
 * @returns One that tells each of them
 */
export function combineTelemetry(parts: readonly Telemetry[]): Telemetry {
  const live = parts.filter((part) => part.enabled);
  const [only] = live;
  if (only === undefined) return NOOP_TELEMETRY;
  if (live.length === 1) return only;
  const combined: Telemetry = {
    enabled: true,
    promptTurn: (start) => combinedTurn(live.map((part) => part.promptTurn(start))),
    permissionDecision: (outcome) => live.forEach((part) => part.permissionDecision(outcome)),
    sessionOpened: () => ({ end: endAll(live.map((part) => part.sessionOpened())) }),
    connectionOpened: (transport) => ({
      end: endAll(live.map((part) => part.connectionOpened(transport))),
    }),
    mcpServerStart: () => ({ end: endAll(live.map((part) => part.mcpServerStart())) }),
    storeCommit: (parent, events) => ({
      end: endAll(live.map((part) => part.storeCommit(parent, events))),
    }),
    forTenant: (tenant) => combineTelemetry(live.map((part) => part.forTenant?.(tenant) ?? part)),
    tenantRefusal: (tenant, limit) => live.forEach((part) => part.tenantRefusal?.(tenant, limit)),
  };
  return combined;
}

/** Reads an environment variable (`undefined` when it is not set). */
export type EnvReader = (name: string) => string | undefined;

/**
 * Whether traces are exported: `OTEL_SDK_DISABLED=true` or `none` in `OTEL_TRACES_EXPORTER` turn
 * them off whatever else is set; else `--otel` (`flag`) decides when given; else they are on when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tracesWanted } from "./telemetry.ts";
 * const env = (vars: Record<string, string>) => (name: string) => vars[name];
 * assert.equal(tracesWanted(undefined, env({})), false);
 * assert.equal(
 *   tracesWanted(undefined, env({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })),
 *   true,
 * );
 * assert.equal(tracesWanted(true, env({ OTEL_SDK_DISABLED: "true" })), false);
 * ```
 *
 * @param flag `--otel` (`ACP_HARNESS_OTEL`, config `otel`), `undefined` when not given
 * @param env The environment
 * @returns Whether to start the trace pipeline
 */
export function tracesWanted(
  flag: boolean | undefined,
  env: EnvReader,
): boolean {
  if (env("OTEL_SDK_DISABLED")?.trim().toLowerCase() === "true") return false;
  const exporters = (env("OTEL_TRACES_EXPORTER") ?? "").split(",").map((name) => name.trim());
  if (exporters.includes("none")) return false;
  if (flag !== undefined) return flag;
  return Boolean(
    env("OTEL_EXPORTER_OTLP_ENDPOINT")?.trim() || env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")?.trim(),
  );
}

/**
 * The `_meta` that hands a tool call's trace context on (to an MCP server, a delegated agent):
 * its `traceparent`, `tracestate` and `baggage`; `undefined` when nothing is traced.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NOOP_TELEMETRY, traceMeta } from "./telemetry.ts";
 * const call = NOOP_TELEMETRY.promptTurn().toolCall("read_file", true);
 * assert.equal(traceMeta(call), undefined);
 * ```
 *
 * @param telemetry The tool call's telemetry (`ToolContext.telemetry`)
 * @returns The fields for `_meta`
 */
export function traceMeta(
  telemetry: ToolCallTelemetry | undefined,
): Readonly<Record<string, string>> | undefined {
  const carrier = telemetry?.carrier?.();
  return carrier?.traceparent === undefined ? undefined : { ...carrier };
}
