/**
 * The one instrumentation seam of the server: the places that observe (the prompt turn, its model
 * requests and tool calls, permission decisions, sessions, connections, MCP server starts, store
 * commits) call a {@link Telemetry}, which is a no-op ({@link NOOP_TELEMETRY}) unless metrics are
 * switched on (`src/telemetry/prometheus_telemetry.ts`, loaded only then).
 *
 * What a trace span would cover is a begin/end pair here: {@link Telemetry.promptTurn} gives a
 * {@link TurnTelemetry} whose {@link TurnTelemetry.modelRequest} and {@link TurnTelemetry.toolCall}
 * children each end once. Every value passed is a bounded label (a stop reason, a tool's name, an
 * outcome word), never a session id or content.
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
  /** The request ended (once; later calls are ignored). */
  end(outcome: ModelOutcome): void;
}

/**
 * How a tool call ended: `completed`, `failed`, `denied` (permission refused), `cancelled`, or
 * `not_run` (a budget stop, an unknown tool, arguments that are not JSON).
 */
export type ToolCallStatus = "completed" | "failed" | "denied" | "cancelled" | "not_run";

/** One tool call, from being announced to its final status. */
export interface ToolCallTelemetry {
  /** The call ended (once). */
  end(status: ToolCallStatus): void;
}

/** How a prompt turn ended. */
export interface TurnEnd {
  /** The ACP stop reason, or `error` for a turn that failed. */
  readonly stopReason: string;
  /** The budget limit that ended it (`maxToolCalls`, `turnTimeout`, …), when one did. */
  readonly budgetLimit?: string;
}

/** One prompt turn, from admission to its end. */
export interface TurnTelemetry {
  /**
   * A model request of the turn begins.
   *
   * @param labels Its provider and model
   * @returns Its handle, to end
   */
  modelRequest(labels: ModelLabels): ModelRequestTelemetry;
  /**
   * A tool call of the turn begins.
   *
   * @param name The tool's name as the model called it (metrics bound it with {@link toolLabel})
   * @param known Whether the session has a tool of that name
   * @returns Its handle, to end
   */
  toolCall(name: string, known: boolean): ToolCallTelemetry;
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
  /** A prompt turn begins (it is admitted). */
  promptTurn(): TurnTelemetry;
  /** A permission decision was made. */
  permissionDecision(outcome: PermissionOutcome): void;
  /** A session opened (new, loaded or resumed); end it when it closes. */
  sessionOpened(): OpenHandle;
  /** A connection opened; end it when it closes. */
  connectionOpened(transport: ConnectionTransport): OpenHandle;
  /** An MCP server's start begins. */
  mcpServerStart(): McpStartTelemetry;
  /** An append is handed to the session store. */
  storeCommit(): StoreCommitTelemetry;
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
