import assert from "node:assert/strict";
import { otlpProtocol, startTracing, tracesEndpoint } from "../../src/telemetry/otel_tracing.ts";
import { tracesWanted } from "../../src/telemetry/telemetry.ts";
import { createLogger } from "../../src/log/logger.ts";
import { spanNamed, startOtlpReceiver } from "../_helpers/otlp_receiver.ts";

const env = (vars: Record<string, string>) => (name: string): string | undefined => vars[name];

/** A logger whose lines are kept. */
function keptLogger(): { logger: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  return { logger: createLogger("info", (line) => lines.push(line)), lines };
}

Deno.test("tracesWanted(): the flag, the endpoint variables, and the two ways to turn it off", () => {
  assert.equal(tracesWanted(undefined, env({})), false);
  assert.equal(tracesWanted(true, env({})), true);
  assert.equal(tracesWanted(undefined, env({ OTEL_EXPORTER_OTLP_ENDPOINT: " " })), false);
  assert.equal(
    tracesWanted(undefined, env({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://x" })),
    true,
  );
  assert.equal(tracesWanted(false, env({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x" })), false);
  assert.equal(tracesWanted(true, env({ OTEL_TRACES_EXPORTER: "otlp, none" })), false);
  assert.equal(tracesWanted(true, env({ OTEL_SDK_DISABLED: "TRUE" })), false);
});

Deno.test("tracesEndpoint() and otlpProtocol() follow the OTLP exporter's variables", () => {
  assert.equal(tracesEndpoint(env({})), "http://localhost:4318/v1/traces");
  assert.equal(
    tracesEndpoint(env({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://collector:4318/" })),
    "https://collector:4318/v1/traces",
  );
  assert.equal(
    tracesEndpoint(env({
      OTEL_EXPORTER_OTLP_ENDPOINT: "https://collector:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://traces.example/custom",
    })),
    "https://traces.example/custom",
  );
  assert.equal(otlpProtocol(env({})), "http/protobuf");
  assert.equal(otlpProtocol(env({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" })), "http/json");
  assert.equal(
    otlpProtocol(env({
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf",
    })),
    "http/protobuf",
  );
  assert.equal(otlpProtocol(env({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })), undefined);
});

Deno.test("startTracing(): grpc is refused with a warning, and tracing stays off", () => {
  const { logger, lines } = keptLogger();
  const tracing = startTracing({
    env: env({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }),
    version: "0.1.0",
    logger,
  });
  assert.equal(tracing, undefined);
  assert.match(lines.join("\n"), /traces are off: .*http\/protobuf and http\/json.*grpc/);
});

Deno.test("startTracing(): the resource, the service name and the headers reach the collector; close() flushes", async () => {
  await using receiver = await startOtlpReceiver();
  const { logger, lines } = keptLogger();
  const tracing = startTracing({
    env: env({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20abc",
      OTEL_SERVICE_NAME: "night-runs",
      OTEL_RESOURCE_ATTRIBUTES: "service.name=ignored,team=infra",
      OTEL_BSP_SCHEDULE_DELAY: "soon",
    }),
    version: "1.2.3",
    logger,
  });
  assert.ok(tracing);
  assert.equal(tracing.endpoint, `${receiver.endpoint}/v1/traces`);
  tracing.telemetry.promptTurn({ sessionId: "s1" }).end({ stopReason: "end_turn" });
  await tracing.close(5_000);
  await tracing.close(5_000); // once
  const [span] = receiver.spans;
  assert.equal(span?.name, "invoke_agent acp-harness");
  assert.equal(span?.resource["service.name"], "night-runs");
  assert.equal(span?.resource["service.version"], "1.2.3");
  assert.equal(span?.resource["team"], "infra");
  assert.equal(span?.resource["service.instance.id"], tracing.instanceId);
  assert.equal(receiver.requests[0]?.headers.authorization, "Bearer abc");
  assert.match(lines.join("\n"), /OTEL_BSP_SCHEDULE_DELAY is not a positive integer/);
});

Deno.test("startTracing(): OTEL_TRACES_SAMPLER=always_off exports nothing; parentbased follows the client's flag", async () => {
  await using receiver = await startOtlpReceiver();
  const { logger } = keptLogger();
  const off = startTracing({
    env: env({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_TRACES_SAMPLER: "always_off" }),
    version: "0.1.0",
    logger,
  });
  off?.telemetry.promptTurn({ sessionId: "s1" }).end({ stopReason: "end_turn" });
  await off?.close(5_000);
  assert.equal(receiver.spans.length, 0);

  const parentBased = startTracing({
    env: env({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint }),
    version: "0.1.0",
    logger,
  });
  const unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
  const sampled = "00-5bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  parentBased?.telemetry.promptTurn({ sessionId: "a", parent: { traceparent: unsampled } })
    .end({ stopReason: "end_turn" });
  parentBased?.telemetry.promptTurn({ sessionId: "b", parent: { traceparent: sampled } })
    .end({ stopReason: "end_turn" });
  await parentBased?.close(5_000);
  assert.deepEqual(receiver.spans.map((span) => span.traceId), [
    "5bf92f3577b34da6a3ce929d0e0e4736",
  ]);
  spanNamed(receiver.spans, "invoke_agent acp-harness");
});

Deno.test("startTracing(): an endpoint that does not answer is told once, and close() gives up in time", async () => {
  const { logger, lines } = keptLogger();
  // A port nothing listens on (the receiver's, once closed).
  const receiver = await startOtlpReceiver();
  const endpoint = receiver.endpoint;
  await receiver[Symbol.asyncDispose]();
  const tracing = startTracing({
    env: env({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_TIMEOUT: "500" }),
    version: "0.1.0",
    logger,
  });
  tracing?.telemetry.promptTurn({ sessionId: "s1" }).end({ stopReason: "end_turn" });
  await tracing?.close(3_000);
  const told = lines.filter((line) =>
    line.includes("cannot export trace spans") || line.includes("still buffered")
  );
  assert.ok(told.length >= 1 && told.length <= 2, lines.join("\n"));
});
