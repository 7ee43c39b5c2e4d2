/**
 * The metrics behind `--metrics-port`: a {@link Telemetry} that counts into a `prom-client`
 * registry, which {@link PrometheusTelemetry.metrics} renders in the Prometheus text format. This
 * module (and `prom-client`) is loaded only when metrics are switched on.
 *
 * @module
 */
import {
  collectDefaultMetrics,
  Counter,
  Gauge,
  Histogram,
  type LabelValues,
  Registry,
} from "prom-client";
import {
  type ConnectionTransport,
  type McpStartResult,
  type McpStartTelemetry,
  type MetricsText,
  type ModelLabels,
  type ModelOutcome,
  type ModelRequestTelemetry,
  type OpenHandle,
  type PermissionOutcome,
  type StoreCommitTelemetry,
  type Telemetry,
  type TokenCounts,
  type ToolCallStatus,
  type ToolCallTelemetry,
  toolLabel,
  type TurnEnd,
  type TurnTelemetry,
} from "./telemetry.ts";

/** Options of {@link PrometheusTelemetry}. */
export interface PrometheusTelemetryOptions {
  /**
   * Whether `prom-client`'s default process metrics (memory, CPU, event-loop lag, file
   * descriptors, GC) are collected too. @default {true}
   */
  readonly defaultMetrics?: boolean;
  /** The clock, in ms (only differences are used). @default {performance.now} */
  readonly now?: () => number;
  /**
   * Most distinct values one label takes; any further value is counted as `other`, so that no
   * input can grow the number of series without bound. @default {64}
   */
  readonly maxLabelValues?: number;
}

/** Prompt turns run for seconds to minutes. */
const TURN_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** A first token comes in milliseconds (offline) to tens of seconds (a thinking model). */
const FIRST_TOKEN_BUCKETS = [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60];
/** A store append: sub-millisecond in memory, milliseconds to fsync, more for PostgreSQL. */
const COMMIT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];

/** The `direction` of each token count. */
const DIRECTIONS: ReadonlyArray<readonly [keyof TokenCounts, string]> = [
  ["input", "input"],
  ["output", "output"],
  ["cacheRead", "cache_read"],
  ["cacheWrite", "cache_write"],
  ["reasoning", "reasoning"],
];

/** What the label `other` replaces: values past the cap of one label. */
const OTHER = "other";

/** Keeps the values of each label within a cap (see `maxLabelValues`). */
class LabelCap {
  readonly #max: number;
  readonly #seen = new Map<string, Set<string>>();

  constructor(max: number) {
    this.#max = max;
  }

  /** `value`, or `other` once `label` has taken `max` other values. */
  bound(label: string, value: string): string {
    let seen = this.#seen.get(label);
    if (!seen) this.#seen.set(label, seen = new Set());
    if (seen.has(value)) return value;
    if (seen.size >= this.#max) return OTHER;
    seen.add(value);
    return value;
  }
}

/** Runs `action` the first time the returned function is called. */
function once(action: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    action();
  };
}

/**
 * Counts the server's work in a `prom-client` registry (the metrics are listed in
 * `docs/observability.md`); labels carry bounded values only.
 *
 * @example Counting a turn
 * ```ts
 * import assert from "node:assert/strict";
 * import { PrometheusTelemetry } from "./prometheus_telemetry.ts";
 * const telemetry = new PrometheusTelemetry({ defaultMetrics: false });
 * const turn = telemetry.promptTurn();
 * const request = turn.modelRequest({ provider: "scripted", model: "scripted" });
 * request.firstToken();
 * request.usage({ input: 10, output: 2 });
 * request.end("ok");
 * turn.toolCall("read_file", true).end("completed");
 * turn.end({ stopReason: "end_turn" });
 * const text = await telemetry.metrics();
 * assert.match(text, /^acp_harness_prompts_total\{stop_reason="end_turn"\} 1$/m);
 * assert.match(text, /^acp_harness_tool_calls_total\{tool="read_file",status="completed"\} 1$/m);
 * ```
 */
export class PrometheusTelemetry implements Telemetry, MetricsText {
  readonly enabled: boolean = true;
  /** The registry the metrics are in. */
  readonly registry: Registry;
  readonly #now: () => number;
  readonly #cap: LabelCap;
  readonly #prompts: Counter<"stop_reason">;
  readonly #promptSeconds: Histogram;
  readonly #modelRequests: Counter<"provider" | "model" | "outcome">;
  readonly #firstToken: Histogram;
  readonly #tokens: Counter<"provider" | "model" | "direction">;
  readonly #cost: Counter<"provider" | "model">;
  readonly #toolCalls: Counter<"tool" | "status">;
  readonly #permissions: Counter<"outcome">;
  readonly #sessions: Gauge;
  readonly #connections: Gauge<"transport">;
  readonly #mcpStarts: Counter<"result">;
  readonly #commitSeconds: Histogram;
  readonly #budgetStops: Counter<"limit">;
  readonly #tenantPrompts: Counter<"tenant" | "stop_reason">;
  readonly #tenantTokens: Counter<"tenant" | "direction">;
  readonly #tenantSessions: Gauge<"tenant">;
  readonly #tenantRefusals: Counter<"tenant" | "limit">;
  /** Each tenant's telemetry (see {@link forTenant}), built once. */
  readonly #tenants = new Map<string, Telemetry>();

  /** @param options Default metrics, clock and label cap */
  constructor(options: PrometheusTelemetryOptions = {}) {
    const registry = this.registry = new Registry();
    this.#now = options.now ?? (() => performance.now());
    this.#cap = new LabelCap(options.maxLabelValues ?? 64);
    const registers = [registry];
    this.#prompts = new Counter({
      name: "acp_harness_prompts_total",
      help: "Prompt turns ended, by ACP stop reason (error: the turn failed)",
      labelNames: ["stop_reason"],
      registers,
    });
    this.#promptSeconds = new Histogram({
      name: "acp_harness_prompt_duration_seconds",
      help: "Time from a prompt's admission to its turn's end",
      buckets: TURN_BUCKETS,
      registers,
    });
    this.#modelRequests = new Counter({
      name: "acp_harness_model_requests_total",
      help: "Model requests (each attempt), by provider, model and outcome",
      labelNames: ["provider", "model", "outcome"],
      registers,
    });
    this.#firstToken = new Histogram({
      name: "acp_harness_model_time_to_first_token_seconds",
      help: "Time from sending a model request to its first text, reasoning or tool-call delta",
      buckets: FIRST_TOKEN_BUCKETS,
      registers,
    });
    this.#tokens = new Counter({
      name: "acp_harness_tokens_total",
      help: "Tokens reported by providers, by direction (input includes cache_read and " +
        "cache_write, output includes reasoning)",
      labelNames: ["provider", "model", "direction"],
      registers,
    });
    this.#cost = new Counter({
      name: "acp_harness_cost_usd_total",
      help: "Cost of model requests in USD, for priced models",
      labelNames: ["provider", "model"],
      registers,
    });
    this.#toolCalls = new Counter({
      name: "acp_harness_tool_calls_total",
      help: "Tool calls ended, by tool (MCP tools as mcp) and status",
      labelNames: ["tool", "status"],
      registers,
    });
    this.#permissions = new Counter({
      name: "acp_harness_permission_decisions_total",
      help: "Permission decisions on tool calls, by outcome (by rule, by mode, by the user)",
      labelNames: ["outcome"],
      registers,
    });
    this.#sessions = new Gauge({
      name: "acp_harness_sessions_open",
      help: "Sessions open in this process",
      registers,
    });
    this.#connections = new Gauge({
      name: "acp_harness_connections_open",
      help: "ACP connections open, by transport",
      labelNames: ["transport"],
      registers,
    });
    this.#mcpStarts = new Counter({
      name: "acp_harness_mcp_server_starts_total",
      help: "MCP server starts, by result",
      labelNames: ["result"],
      registers,
    });
    this.#commitSeconds = new Histogram({
      name: "acp_harness_store_commit_seconds",
      help: "Time from an append handed to the session store to the store acknowledging it",
      buckets: COMMIT_BUCKETS,
      registers,
    });
    this.#budgetStops = new Counter({
      name: "acp_harness_budget_stops_total",
      help: "Prompt turns ended by a budget, by limit",
      labelNames: ["limit"],
      registers,
    });
    // Per tenant (`--tenants`): the label's values come from the tenants file only.
    this.#tenantPrompts = new Counter({
      name: "acp_harness_tenant_prompts_total",
      help: "Prompt turns ended, by tenant and ACP stop reason",
      labelNames: ["tenant", "stop_reason"],
      registers,
    });
    this.#tenantTokens = new Counter({
      name: "acp_harness_tenant_tokens_total",
      help: "Tokens reported by providers, by tenant and direction",
      labelNames: ["tenant", "direction"],
      registers,
    });
    this.#tenantSessions = new Gauge({
      name: "acp_harness_tenant_sessions_open",
      help: "Sessions open in this process, by tenant",
      labelNames: ["tenant"],
      registers,
    });
    this.#tenantRefusals = new Counter({
      name: "acp_harness_tenant_refusals_total",
      help: "Requests of a tenant refused at one of its limits (sessions, prompts, " +
        "requestsPerMinute)",
      labelNames: ["tenant", "limit"],
      registers,
    });
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
  }

  /** The `Content-Type` of {@link metrics}. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * Renders every metric in the Prometheus text exposition format.
   *
   * @returns The text
   */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  promptTurn(): TurnTelemetry {
    const started = this.#now();
    let ended = false;
    return {
      modelRequest: (labels) => this.#modelRequest(labels),
      toolCall: (name, known) => this.#toolCall(name, known),
      cost: (labels, usd) => {
        if (usd > 0 && Number.isFinite(usd)) this.#cost.inc(this.#modelLabels(labels), usd);
      },
      end: (result: TurnEnd) => {
        if (ended) return;
        ended = true;
        this.#promptSeconds.observe((this.#now() - started) / 1000);
        this.#prompts.inc({ stop_reason: this.#cap.bound("stop_reason", result.stopReason) });
        if (result.budgetLimit !== undefined) {
          this.#budgetStops.inc({ limit: this.#cap.bound("limit", result.budgetLimit) });
        }
      },
    };
  }

  permissionDecision(outcome: PermissionOutcome): void {
    this.#permissions.inc({ outcome: this.#cap.bound("permission_outcome", outcome) });
  }

  sessionOpened(): OpenHandle {
    this.#sessions.inc();
    return { end: once(() => this.#sessions.dec()) };
  }

  connectionOpened(transport: ConnectionTransport): OpenHandle {
    const labels = { transport: this.#cap.bound("transport", transport) };
    this.#connections.inc(labels);
    return { end: once(() => this.#connections.dec(labels)) };
  }

  mcpServerStart(): McpStartTelemetry {
    let ended = false;
    return {
      end: (result: McpStartResult) => {
        if (ended) return;
        ended = true;
        this.#mcpStarts.inc({ result: this.#cap.bound("result", result) });
      },
    };
  }

  storeCommit(): StoreCommitTelemetry {
    const started = this.#now();
    let ended = false;
    return {
      end: () => {
        if (ended) return;
        ended = true;
        this.#commitSeconds.observe((this.#now() - started) / 1000);
      },
    };
  }

  forTenant(tenant: string): Telemetry {
    let built = this.#tenants.get(tenant);
    if (built === undefined) {
      built = tenantTelemetry(this, tenant, {
        prompts: this.#tenantPrompts,
        tokens: this.#tenantTokens,
        sessions: this.#tenantSessions,
        bound: (label, value) => this.#cap.bound(label, value),
      });
      this.#tenants.set(tenant, built);
    }
    return built;
  }

  tenantRefusal(tenant: string, limit: string): void {
    this.#tenantRefusals.inc({ tenant, limit: this.#cap.bound("limit", limit) });
  }

  #modelLabels(labels: ModelLabels): LabelValues<"provider" | "model"> {
    return {
      provider: this.#cap.bound("provider", labels.provider),
      model: this.#cap.bound("model", labels.model),
    };
  }

  #modelRequest(labels: ModelLabels): ModelRequestTelemetry {
    const started = this.#now();
    const bounded = this.#modelLabels(labels);
    let first = false;
    let ended = false;
    return {
      firstToken: () => {
        if (first || ended) return;
        first = true;
        this.#firstToken.observe((this.#now() - started) / 1000);
      },
      usage: (tokens) => {
        for (const [key, direction] of DIRECTIONS) {
          const count = tokens[key];
          if (count !== undefined && count > 0) this.#tokens.inc({ ...bounded, direction }, count);
        }
      },
      end: (outcome: ModelOutcome) => {
        if (ended) return;
        ended = true;
        this.#modelRequests.inc({ ...bounded, outcome: this.#cap.bound("model_outcome", outcome) });
      },
    };
  }

  #toolCall(name: string, known: boolean): ToolCallTelemetry {
    const tool = this.#cap.bound("tool", toolLabel(name, known));
    let ended = false;
    return {
      end: (status: ToolCallStatus) => {
        if (ended) return;
        ended = true;
        this.#toolCalls.inc({ tool, status });
      },
    };
  }
}

/** The per-tenant series {@link tenantTelemetry} adds to. */
interface TenantSeries {
  readonly prompts: Counter<"tenant" | "stop_reason">;
  readonly tokens: Counter<"tenant" | "direction">;
  readonly sessions: Gauge<"tenant">;
  bound(label: string, value: string): string;
}

/** `base` as a tenant's connections use it: its series, and the tenant's beside them. */
function tenantTelemetry(base: Telemetry, tenant: string, series: TenantSeries): Telemetry {
  return {
    enabled: true,
    promptTurn: (start) => {
      const turn = base.promptTurn(start);
      return {
        ...turn,
        modelRequest: (labels, attempt) => {
          const request = turn.modelRequest(labels, attempt);
          return {
            ...request,
            usage: (tokens) => {
              request.usage(tokens);
              for (const [key, direction] of DIRECTIONS) {
                const count = tokens[key];
                if (count !== undefined && count > 0) {
                  series.tokens.inc({ tenant, direction }, count);
                }
              }
            },
          };
        },
        end: (result) => {
          turn.end(result);
          series.prompts.inc({
            tenant,
            stop_reason: series.bound("stop_reason", result.stopReason),
          });
        },
      };
    },
    permissionDecision: (outcome) => base.permissionDecision(outcome),
    sessionOpened: () => {
      const open = base.sessionOpened();
      series.sessions.inc({ tenant });
      return {
        end: once(() => {
          open.end();
          series.sessions.dec({ tenant });
        }),
      };
    },
    connectionOpened: (transport) => base.connectionOpened(transport),
    mcpServerStart: () => base.mcpServerStart(),
    storeCommit: (parent, events) => base.storeCommit(parent, events),
    tenantRefusal: (name, limit) => base.tenantRefusal?.(name, limit),
  };
}
