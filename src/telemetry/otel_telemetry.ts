/**
 * Traces of the server's work as OpenTelemetry spans, after the GenAI semantic conventions:
 * `invoke_agent acp-harness` for each prompt turn, `chat {model}` for each model request (each
 * attempt), `execute_tool {tool}` for each tool call, and inside a call a span for each
 * permission question (`session/request_permission`) and MCP call (`tools/call {tool}`); a store
 * commit that took longer than a threshold is a `store_commit` span of its turn. A turn whose
 * `session/prompt` carried a W3C `traceparent` in its `_meta` is a child of it; a tool call hands
 * its own context on ({@link ToolCallTelemetry.carrier}) to the MCP servers and delegated agents
 * it calls. Content (messages, tool arguments and results) is recorded only when asked
 * (`captureContent`), and then cut to 16 KiB an attribute.
 *
 * Loaded only when tracing is on (`src/telemetry/otel_tracing.ts` builds the tracer from the
 * `OTEL_*` variables): nothing of OpenTelemetry is in the start-up graph otherwise.
 *
 * @module
 */
import {
  type Attributes,
  type Context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from "@opentelemetry/api";
import {
  CompositePropagator,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
} from "@opentelemetry/core";
import {
  type ChildSpanTelemetry,
  type McpStartTelemetry,
  type ModelLabels,
  type ModelOutcome,
  type ModelRequestTelemetry,
  NOOP_TELEMETRY,
  type OpenHandle,
  type PermissionOutcome,
  type StoreCommitTelemetry,
  type Telemetry,
  type TokenCounts,
  type ToolCallDetails,
  type ToolCallStatus,
  type ToolCallTelemetry,
  type TraceCarrier,
  type TurnEnd,
  type TurnStart,
  type TurnTelemetry,
} from "./telemetry.ts";

/** How {@link OtelTelemetry} records. */
export interface OtelTelemetryOptions {
  /** The tracer spans are made with. */
  readonly tracer: Tracer;
  /**
   * Whether prompt and tool content goes in span attributes
   * (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`). @default {false}
   */
  readonly captureContent?: boolean;
  /** A store commit that takes at least this long is a span. @default {10} */
  readonly commitThresholdMs?: number;
}

/** The agent's name in span names and `gen_ai.agent.name`. */
const AGENT_NAME = "acp-harness";

/** The longest content attribute (characters); longer ones are cut and marked. */
const MAX_CONTENT = 16_384;

/** The W3C trace context and baggage, in and out of `_meta`. */
const PROPAGATOR = new CompositePropagator({
  propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
});

const CARRIER_GETTER = {
  keys: (carrier: TraceCarrier): string[] => Object.keys(carrier),
  get: (carrier: TraceCarrier, key: string): string | undefined =>
    key === "traceparent" || key === "tracestate" || key === "baggage" ? carrier[key] : undefined,
};

const CARRIER_SETTER = {
  set: (carrier: Record<string, string>, key: string, value: string): void => {
    carrier[key] = value;
  },
};

/** The context a trace context names (the root context when it names none). */
function contextOf(carrier: TraceCarrier | undefined): Context {
  if (carrier?.traceparent === undefined) return ROOT_CONTEXT;
  return PROPAGATOR.extract(ROOT_CONTEXT, carrier, CARRIER_GETTER);
}

/** The trace context of `context`, to hand to another agent or server. */
function carrierOf(context: Context): TraceCarrier {
  const carrier: Record<string, string> = {};
  PROPAGATOR.inject(context, carrier, CARRIER_SETTER);
  return carrier;
}

/** Content as an attribute value: JSON, cut to {@link MAX_CONTENT}. */
function contentValue(value: unknown): string {
  let text: string;
  try {
    text = typeof value === "string" ? value : JSON.stringify(value) ?? "null";
  } catch {
    text = String(value);
  }
  return text.length > MAX_CONTENT ? `${text.slice(0, MAX_CONTENT)}…[cut]` : text;
}

/** Now, in milliseconds since the epoch with sub-millisecond precision (span times). */
function now(): number {
  return performance.timeOrigin + performance.now();
}

/** A span that ends once; later ends are ignored. */
function ender(span: Span): (attributes?: Attributes, error?: string) => void {
  let ended = false;
  return (attributes, error) => {
    if (ended) return;
    ended = true;
    if (attributes) span.setAttributes(attributes);
    if (error !== undefined) {
      span.setAttribute("error.type", error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    }
    span.end();
  };
}

/** The usage attributes of the GenAI conventions. */
function usageAttributes(tokens: TokenCounts): Attributes {
  return {
    "gen_ai.usage.input_tokens": tokens.input,
    "gen_ai.usage.output_tokens": tokens.output,
    ...(tokens.cacheRead === undefined
      ? {}
      : { "gen_ai.usage.cache_read.input_tokens": tokens.cacheRead }),
    ...(tokens.cacheWrite === undefined
      ? {}
      : { "gen_ai.usage.cache_creation.input_tokens": tokens.cacheWrite }),
    ...(tokens.reasoning === undefined
      ? {}
      : { "acp_harness.usage.reasoning_tokens": tokens.reasoning }),
  };
}

/**
 * The tracing {@link Telemetry}: spans for turns, model requests, tool calls, permission
 * questions, MCP calls and slow store commits (see the module doc). The hooks that only count
 * (sessions, connections, MCP server starts, permission decisions) record nothing here: metrics
 * have them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
 * import { OtelTelemetry } from "./otel_telemetry.ts";
 * const exporter = new InMemorySpanExporter();
 * const provider = new TracerProvider({
 *   spanProcessors: [new SimpleSpanProcessor({ exporter })],
 * });
 * const telemetry = new OtelTelemetry({ tracer: provider.getTracer("example") });
 * const turn = telemetry.promptTurn({
 *   sessionId: "s1",
 *   parent: { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
 * });
 * turn.modelRequest({ provider: "scripted", model: "scripted" }).end("ok");
 * turn.end({ stopReason: "end_turn" });
 * const [chat, agent] = exporter.getFinishedSpans();
 * assert.equal(agent?.name, "invoke_agent acp-harness");
 * assert.equal(agent?.spanContext().traceId, "4bf92f3577b34da6a3ce929d0e0e4736");
 * assert.equal(chat?.name, "chat scripted");
 * await provider.shutdown();
 * ```
 */
export class OtelTelemetry implements Telemetry {
  readonly enabled = true;
  readonly #tracer: Tracer;
  readonly #captureContent: boolean;
  readonly #commitThresholdMs: number;

  /** @param options The tracer, and whether content is captured */
  constructor(options: OtelTelemetryOptions) {
    this.#tracer = options.tracer;
    this.#captureContent = options.captureContent ?? false;
    this.#commitThresholdMs = options.commitThresholdMs ?? 10;
  }

  promptTurn(start?: TurnStart): TurnTelemetry {
    const parent = contextOf(start?.parent);
    const span = this.#tracer.startSpan(`invoke_agent ${AGENT_NAME}`, {
      kind: SpanKind.SERVER,
      attributes: {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": AGENT_NAME,
        ...(start ? { "gen_ai.conversation.id": start.sessionId } : {}),
        ...(start?.model
          ? {
            "gen_ai.provider.name": start.model.provider,
            "gen_ai.request.model": start.model.model,
          }
          : {}),
      },
    }, parent);
    const context = trace.setSpan(parent, span);
    const end = ender(span);
    let cost = 0;
    return {
      captureContent: this.#captureContent,
      carrier: () => carrierOf(context),
      modelRequest: (labels, attempt) => this.#modelRequest(context, labels, attempt ?? 1),
      toolCall: (name, known, details) => this.#toolCall(context, name, known, details),
      cost: (_labels, usd) => {
        if (!(usd > 0 && Number.isFinite(usd))) return;
        cost += usd;
        span.setAttribute("acp_harness.cost_usd", cost);
      },
      end: (result: TurnEnd) =>
        end(turnEndAttributes(result), result.stopReason === "error" ? "error" : undefined),
    };
  }

  permissionDecision(_outcome: PermissionOutcome): void {}

  sessionOpened(): OpenHandle {
    return NOOP_TELEMETRY.sessionOpened();
  }

  connectionOpened(): OpenHandle {
    return NOOP_TELEMETRY.connectionOpened("memory");
  }

  mcpServerStart(): McpStartTelemetry {
    return NOOP_TELEMETRY.mcpServerStart();
  }

  storeCommit(parent?: TraceCarrier, events?: number): StoreCommitTelemetry {
    const started = now();
    let ended = false;
    return {
      end: (ok: boolean) => {
        if (ended) return;
        ended = true;
        const finished = now();
        if (finished - started < this.#commitThresholdMs && ok) return;
        const span = this.#tracer.startSpan("store_commit", {
          kind: SpanKind.INTERNAL,
          startTime: started,
          attributes: events === undefined ? {} : { "acp_harness.store.events": events },
        }, contextOf(parent));
        if (!ok) span.setStatus({ code: SpanStatusCode.ERROR, message: "store append failed" });
        span.end(finished);
      },
    };
  }

  #modelRequest(parent: Context, labels: ModelLabels, attempt: number): ModelRequestTelemetry {
    const started = now();
    const span = this.#tracer.startSpan(`chat ${labels.model}`, {
      kind: SpanKind.CLIENT,
      startTime: started,
      attributes: {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": labels.provider,
        "gen_ai.request.model": labels.model,
        "acp_harness.attempt": attempt,
      },
    }, parent);
    const end = ender(span);
    let first = false;
    return {
      firstToken: () => {
        if (first) return;
        first = true;
        span.addEvent("first_token", {
          "acp_harness.time_to_first_token_ms": Math.round(now() - started),
        });
      },
      usage: (tokens) => span.setAttributes(usageAttributes(tokens)),
      retry: (outcome: ModelOutcome, delayMs: number) => {
        span.addEvent("retry", { "error.type": outcome, "acp_harness.retry.delay_ms": delayMs });
      },
      content: (content) => {
        if (!this.#captureContent) return;
        if (content.system !== undefined) {
          span.setAttribute("gen_ai.system_instructions", contentValue(content.system));
        }
        if (content.input !== undefined) {
          span.setAttribute("gen_ai.input.messages", contentValue(content.input));
        }
        if (content.output !== undefined) {
          span.setAttribute("gen_ai.output.messages", contentValue(content.output));
        }
      },
      end: (outcome: ModelOutcome) => {
        if (outcome === "ok" || outcome === "cancelled") {
          end({ "acp_harness.outcome": outcome });
        } else end({ "acp_harness.outcome": outcome }, outcome);
      },
    };
  }

  #toolCall(
    parent: Context,
    name: string,
    known: boolean,
    details: ToolCallDetails | undefined,
  ): ToolCallTelemetry {
    const span = this.#tracer.startSpan(`execute_tool ${name}`, {
      kind: SpanKind.INTERNAL,
      attributes: {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.type": name.startsWith("mcp__") ? "extension" : "function",
        "acp_harness.tool.known": known,
        ...(details
          ? { "gen_ai.tool.call.id": details.id, "acp_harness.tool.kind": details.kind }
          : {}),
      },
    }, parent);
    const context = trace.setSpan(parent, span);
    const end = ender(span);
    return {
      permission: (outcome, rule) => {
        span.setAttribute("acp_harness.permission.outcome", outcome);
        if (rule !== undefined) span.setAttribute("acp_harness.permission.rule", rule);
      },
      permissionWait: () =>
        this.#child(context, "session/request_permission", {
          "rpc.system": "jsonrpc",
          "rpc.method": "session/request_permission",
        }),
      mcpCall: (server, tool) =>
        this.#child(context, `tools/call ${tool}`, {
          "mcp.method.name": "tools/call",
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": tool,
          "acp_harness.mcp.server": server,
        }),
      carrier: () => carrierOf(context),
      content: (input, result) => {
        if (!this.#captureContent) return;
        span.setAttribute("gen_ai.tool.call.arguments", contentValue(input));
        span.setAttribute("gen_ai.tool.call.result", contentValue(result));
      },
      end: (status: ToolCallStatus) => {
        const attributes = { "acp_harness.tool.status": status };
        if (status === "failed") end(attributes, "tool_error");
        else end(attributes);
      },
    };
  }

  /** A client span under `parent` (a permission question, an MCP call). */
  #child(parent: Context, name: string, attributes: Attributes): ChildSpanTelemetry {
    const span = this.#tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, parent);
    const end = ender(span);
    return { end: (error) => end(undefined, error) };
  }
}

/** The attributes a turn's span gets when it ends. */
function turnEndAttributes(result: TurnEnd): Attributes {
  return {
    "acp_harness.stop_reason": result.stopReason,
    "gen_ai.response.finish_reasons": [result.stopReason],
    ...(result.budgetLimit === undefined ? {} : { "acp_harness.budget.limit": result.budgetLimit }),
    ...(result.spent
      ? {
        "acp_harness.spent.steps": result.spent.steps,
        "acp_harness.spent.tool_calls": result.spent.toolCalls,
        "acp_harness.spent.duration_ms": result.spent.durationMs,
      }
      : {}),
    ...(result.usage ? usageAttributes(result.usage) : {}),
  };
}
