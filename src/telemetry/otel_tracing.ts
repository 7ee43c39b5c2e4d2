/**
 * The OpenTelemetry trace pipeline of the server, set up from the standard `OTEL_*` variables: a
 * tracer provider with the server's resource, the sampler, a batch span processor and an OTLP/HTTP
 * exporter (protobuf or JSON). {@link startTracing} builds it and gives the tracing
 * {@link OtelTelemetry}; {@link Tracing.close} flushes what is left, within a time limit.
 *
 * Loaded only when tracing is on (see `tracesWanted` in `telemetry.ts`).
 *
 * @module
 */
import type { Sampler, SpanExporter } from "@opentelemetry/sdk-trace";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { ExportResultCode, parseKeyPairsIntoRecord } from "@opentelemetry/core";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import type { Logger } from "../log/logger.ts";
import { OtelTelemetry } from "./otel_telemetry.ts";
import type { EnvReader } from "./telemetry.ts";

/** The OTLP protocols the server speaks. */
export type OtlpProtocol = "http/protobuf" | "http/json";

/** What {@link startTracing} reads. */
export interface TracingOptions {
  /** Reads the environment (the `OTEL_*` variables). */
  readonly env: EnvReader;
  /** The server's version (`service.version`). */
  readonly version: string;
  /** Where export failures and ignored settings are told. */
  readonly logger: Logger;
}

/** A running trace pipeline. */
export interface Tracing {
  /** The telemetry that makes the spans. */
  readonly telemetry: OtelTelemetry;
  /** Where spans go. */
  readonly endpoint: string;
  /** How they are encoded. */
  readonly protocol: OtlpProtocol;
  /** The resource's `service.instance.id` (unique to this process). */
  readonly instanceId: string;
  /**
   * Exports what is still buffered and stops; gives up after `timeoutMs` (spans still buffered
   * then are lost, and a warning says so).
   */
  close(timeoutMs: number): Promise<void>;
}

/** The default of `OTEL_EXPORTER_OTLP_ENDPOINT` (an OpenTelemetry Collector on this machine). */
const DEFAULT_ENDPOINT = "http://localhost:4318";

/** A non-empty variable's value. */
function variable(
  env: EnvReader,
  name: string,
): string | undefined {
  const value = env(name)?.trim();
  return value ? value : undefined;
}

/**
 * The trace endpoint: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, else
 * `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces`, else the local collector.
 *
 * @param env The environment
 * @returns The URL spans are posted to
 */
export function tracesEndpoint(env: EnvReader): string {
  const own = variable(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  if (own) return own;
  const base = variable(env, "OTEL_EXPORTER_OTLP_ENDPOINT") ?? DEFAULT_ENDPOINT;
  return `${base.replace(/\/+$/, "")}/v1/traces`;
}

/** The sampler `OTEL_TRACES_SAMPLER` (and `_ARG`) names; `parentbased_always_on` by default. */
function samplerOf(env: EnvReader, logger: Logger): Sampler {
  const name = variable(env, "OTEL_TRACES_SAMPLER")?.toLowerCase() ?? "parentbased_always_on";
  const argument = variable(env, "OTEL_TRACES_SAMPLER_ARG");
  const parsed = argument === undefined ? Number.NaN : Number(argument);
  const ratio = Number.isFinite(parsed) && parsed >= 0 && parsed <= 1 ? parsed : 1;
  if (argument !== undefined && ratio !== parsed) {
    logger.warn("OTEL_TRACES_SAMPLER_ARG is not a ratio from 0 to 1: 1 is used", { argument });
  }
  switch (name) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return new TraceIdRatioBasedSampler(ratio);
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
    case "parentbased_always_on":
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    default:
      logger.warn("OTEL_TRACES_SAMPLER is not a sampler this server has: parentbased_always_on", {
        sampler: name,
      });
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** A positive integer variable, or `undefined` (and a warning) when it is not one. */
function positive(
  env: EnvReader,
  name: string,
  logger: Logger,
): number | undefined {
  const value = variable(env, name);
  if (value === undefined) return undefined;
  const number = Number(value);
  if (Number.isInteger(number) && number > 0) return number;
  logger.warn(`${name} is not a positive integer: its default is used`, { value });
  return undefined;
}

/** The batch processor's settings from `OTEL_BSP_*`. */
function batchOptions(env: EnvReader, logger: Logger): {
  scheduledDelayMillis?: number;
  exportTimeoutMillis?: number;
  maxQueueSize?: number;
  maxExportBatchSize?: number;
} {
  const settings = {
    scheduledDelayMillis: positive(env, "OTEL_BSP_SCHEDULE_DELAY", logger),
    exportTimeoutMillis: positive(env, "OTEL_BSP_EXPORT_TIMEOUT", logger),
    maxQueueSize: positive(env, "OTEL_BSP_MAX_QUEUE_SIZE", logger),
    maxExportBatchSize: positive(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", logger),
  };
  return Object.fromEntries(Object.entries(settings).filter(([, value]) => value !== undefined));
}

/**
 * The protocol `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` or `OTEL_EXPORTER_OTLP_PROTOCOL` names
 * (`http/protobuf` by default); `undefined` for one the server does not speak (`grpc`).
 *
 * @param env The environment
 * @returns The protocol
 */
export function otlpProtocol(
  env: EnvReader,
): OtlpProtocol | undefined {
  const name = variable(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ??
    variable(env, "OTEL_EXPORTER_OTLP_PROTOCOL") ?? "http/protobuf";
  return name === "http/protobuf" || name === "http/json" ? name : undefined;
}

/** An exporter that tells when exports start failing and when they work again. */
function toldExporter(exporter: SpanExporter, endpoint: string, logger: Logger): SpanExporter {
  let failing = false;
  return {
    export: (spans, done) =>
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS && !failing) {
          failing = true;
          logger.warn("cannot export trace spans: they are dropped until the endpoint answers", {
            endpoint,
            error: result.error,
          });
        } else if (result.code === ExportResultCode.SUCCESS && failing) {
          failing = false;
          logger.info("trace spans are exported again", { endpoint });
        }
        done(result);
      }),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/**
 * Starts the trace pipeline from the environment:
 *
 * - the resource: `service.name` (`OTEL_SERVICE_NAME`, default `acp-harness`), `service.version`,
 *   a `service.instance.id` unique to this process, and `OTEL_RESOURCE_ATTRIBUTES`;
 * - the sampler (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`);
 * - a batch processor (`OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BSP_EXPORT_TIMEOUT`,
 *   `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`);
 * - an OTLP/HTTP exporter (`OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT`, `…_HEADERS`, `…_PROTOCOL`
 *   `http/protobuf` or `http/json`, `…_TIMEOUT`, `…_COMPRESSION`).
 *
 * Content goes in spans only with `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
 *
 * @example
 * ```ts ignore
 * const tracing = startTracing({ env: (name) => host.env(name), version: "0.1.0", logger });
 * const server = createAgentServer({ host, telemetry: tracing?.telemetry });
 * // …
 * await tracing?.close(2_000);
 * ```
 *
 * @param options The environment, the version and the logger
 * @returns The pipeline; `undefined` (and a warning) when the protocol is one the server does
 *   not speak
 */
export function startTracing(options: TracingOptions): Tracing | undefined {
  const { env, logger } = options;
  const protocol = otlpProtocol(env);
  if (protocol === undefined) {
    logger.warn(
      "traces are off: OTEL_EXPORTER_OTLP_PROTOCOL names a protocol this server does not speak " +
        "(it speaks http/protobuf and http/json)",
      {
        protocol: variable(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ??
          variable(env, "OTEL_EXPORTER_OTLP_PROTOCOL"),
      },
    );
    return undefined;
  }
  const instanceId = crypto.randomUUID();
  const endpoint = tracesEndpoint(env);
  const headers = {
    ...parseKeyPairsIntoRecord(variable(env, "OTEL_EXPORTER_OTLP_HEADERS")),
    ...parseKeyPairsIntoRecord(variable(env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS")),
  };
  const config = { url: endpoint, headers };
  const exporter = protocol === "http/json"
    ? new JsonExporter(config)
    : new ProtobufExporter(config);
  const resource = resourceFromAttributes({
    "service.name": "acp-harness",
    ...parseKeyPairsIntoRecord(variable(env, "OTEL_RESOURCE_ATTRIBUTES")),
    ...(variable(env, "OTEL_SERVICE_NAME")
      ? { "service.name": variable(env, "OTEL_SERVICE_NAME") }
      : {}),
    "service.version": options.version,
    "service.instance.id": instanceId,
  });
  const provider = new TracerProvider({
    resource,
    sampler: samplerOf(env, logger),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: toldExporter(exporter, endpoint, logger),
        ...batchOptions(env, logger),
      }),
    ],
  });
  const capture = variable(env, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
    ?.toLowerCase() === "true";
  const telemetry = new OtelTelemetry({
    tracer: provider.getTracer("acp-harness", options.version),
    captureContent: capture,
  });
  logger.info("exporting traces", { endpoint, protocol, captureContent: capture });
  let closing: Promise<void> | undefined;
  return {
    telemetry,
    endpoint,
    protocol,
    instanceId,
    close: (timeoutMs) =>
      closing ??= (async () => {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const late = new Promise<"late">((resolve) => {
          timer = setTimeout(() => resolve("late"), timeoutMs);
        });
        try {
          const outcome = await Promise.race([provider.shutdown().catch(() => {}), late]);
          if (outcome === "late") {
            logger.warn("trace spans still buffered at shutdown are lost", { endpoint, timeoutMs });
          }
        } finally {
          clearTimeout(timer);
        }
      })(),
  };
}
