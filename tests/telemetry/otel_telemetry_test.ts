import assert from "node:assert/strict";
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { OtelTelemetry } from "../../src/telemetry/otel_telemetry.ts";
import {
  combineTelemetry,
  NOOP_TELEMETRY,
  type Telemetry,
  traceCarrierOf,
} from "../../src/telemetry/telemetry.ts";
import { PrometheusTelemetry } from "../../src/telemetry/prometheus_telemetry.ts";

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/** A tracing telemetry over an in-memory exporter. */
async function withTracer(
  body: (telemetry: OtelTelemetry, spans: () => ReadableSpan[]) => Promise<void> | void,
  options: { captureContent?: boolean; commitThresholdMs?: number } = {},
): Promise<void> {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  try {
    await body(
      new OtelTelemetry({ tracer: provider.getTracer("test"), ...options }),
      () => exporter.getFinishedSpans(),
    );
  } finally {
    await provider.shutdown();
  }
}

function named(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const span = spans.find((span) => span.name === name);
  assert.ok(span, `${name} in ${spans.map((span) => span.name).join(", ")}`);
  return span;
}

const parentOf = (span: ReadableSpan): string | undefined => span.parentSpanContext?.spanId;

Deno.test("OtelTelemetry: a turn's spans form one tree under the client's traceparent", async () => {
  await withTracer((telemetry, spans) => {
    const turn = telemetry.promptTurn({
      sessionId: "s1",
      model: { provider: "openai", model: "gpt-x" },
      parent: { traceparent: TRACEPARENT, baggage: "job=nightly" },
    });
    const failed = turn.modelRequest({ provider: "openai", model: "gpt-x" }, 1);
    failed.retry?.("rate-limit", 250);
    failed.end("rate-limit");
    const request = turn.modelRequest({ provider: "openai", model: "gpt-x" }, 2);
    request.firstToken();
    request.firstToken();
    request.usage({ input: 100, output: 20, cacheRead: 60 });
    request.content?.({ input: ["secret prompt"] });
    request.end("ok");
    turn.cost({ provider: "openai", model: "gpt-x" }, 0.25);
    turn.cost({ provider: "openai", model: "gpt-x" }, 0.5);
    const call = turn.toolCall("mcp__files__read", true, { id: "call_1", kind: "read" });
    call.permission?.("denied_by_rule", "mcp__files__*");
    call.permissionWait?.().end();
    call.mcpCall?.("files", "read").end("mcp_error");
    const carrier = call.carrier?.();
    call.content?.({ path: "x" }, "secret result");
    call.end("failed");
    turn.end({
      stopReason: "end_turn",
      spent: { steps: 2, toolCalls: 1, durationMs: 40 },
      usage: { input: 100, output: 20 },
    });
    turn.end({ stopReason: "cancelled" }); // ended once

    const all = spans();
    const agent = named(all, "invoke_agent acp-harness");
    assert.equal(agent.kind, SpanKind.SERVER);
    assert.equal(agent.spanContext().traceId, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert.equal(parentOf(agent), "00f067aa0ba902b7");
    assert.equal(agent.attributes["gen_ai.conversation.id"], "s1");
    assert.equal(agent.attributes["gen_ai.request.model"], "gpt-x");
    assert.equal(agent.attributes["acp_harness.stop_reason"], "end_turn");
    assert.equal(agent.attributes["acp_harness.spent.tool_calls"], 1);
    assert.equal(agent.attributes["acp_harness.cost_usd"], 0.75);
    assert.equal(all.filter((span) => span.name === "invoke_agent acp-harness").length, 1);

    const [first, second] = all.filter((span) => span.name === "chat gpt-x");
    assert.equal(first?.kind, SpanKind.CLIENT);
    assert.equal(parentOf(first!), agent.spanContext().spanId);
    assert.equal(first?.status.code, SpanStatusCode.ERROR);
    assert.equal(first?.attributes["error.type"], "rate-limit");
    assert.deepEqual(first?.events.map((event) => event.name), ["retry"]);
    assert.equal(first?.events[0]?.attributes?.["acp_harness.retry.delay_ms"], 250);
    assert.equal(second?.attributes["acp_harness.attempt"], 2);
    assert.equal(second?.attributes["gen_ai.usage.cache_read.input_tokens"], 60);
    assert.deepEqual(second?.events.map((event) => event.name), ["first_token"]);
    assert.equal(second?.status.code, SpanStatusCode.UNSET);

    const tool = named(all, "execute_tool mcp__files__read");
    assert.equal(parentOf(tool), agent.spanContext().spanId);
    assert.equal(tool.attributes["gen_ai.tool.call.id"], "call_1");
    assert.equal(tool.attributes["gen_ai.tool.type"], "extension");
    assert.equal(tool.attributes["acp_harness.permission.outcome"], "denied_by_rule");
    assert.equal(tool.attributes["acp_harness.permission.rule"], "mcp__files__*");
    assert.equal(tool.status.code, SpanStatusCode.ERROR);
    const wait = named(all, "session/request_permission");
    assert.equal(parentOf(wait), tool.spanContext().spanId);
    const mcp = named(all, "tools/call read");
    assert.equal(parentOf(mcp), tool.spanContext().spanId);
    assert.equal(mcp.attributes["error.type"], "mcp_error");
    // The context handed on names the tool call's span, and keeps the client's baggage.
    assert.equal(
      carrier?.traceparent,
      `00-4bf92f3577b34da6a3ce929d0e0e4736-${tool.spanContext().spanId}-01`,
    );
    assert.equal(carrier?.baggage, "job=nightly");
    // Content is not captured unless asked.
    assert.ok(!JSON.stringify(all.map((span) => span.attributes)).includes("secret"));
  });
});

Deno.test("OtelTelemetry: with content capture, messages and tool input and output are attributes, cut to 16 KiB", async () => {
  await withTracer((telemetry, spans) => {
    const turn = telemetry.promptTurn({ sessionId: "s1" });
    assert.equal(turn.captureContent, true);
    const request = turn.modelRequest({ provider: "p", model: "m" });
    request.content?.({ system: "be brief", input: [{ role: "user", text: "hi" }] });
    request.content?.({ output: { text: "x".repeat(20_000) } });
    request.end("ok");
    const call = turn.toolCall("read_file", true);
    call.content?.({ path: "a.txt" }, "hello");
    call.end("completed");
    turn.end({ stopReason: "end_turn" });
    const chat = named(spans(), "chat m");
    assert.equal(chat.attributes["gen_ai.system_instructions"], "be brief");
    assert.equal(chat.attributes["gen_ai.input.messages"], '[{"role":"user","text":"hi"}]');
    const output = String(chat.attributes["gen_ai.output.messages"]);
    assert.equal(output.length, 16_384 + "…[cut]".length);
    const tool = named(spans(), "execute_tool read_file");
    assert.equal(tool.attributes["gen_ai.tool.call.arguments"], '{"path":"a.txt"}');
    assert.equal(tool.attributes["gen_ai.tool.call.result"], "hello");
  }, { captureContent: true });
});

Deno.test("OtelTelemetry: a store commit is a span of its turn only past the threshold or when it fails", async () => {
  await withTracer((telemetry, spans) => {
    const turn = telemetry.promptTurn({ sessionId: "s1" });
    telemetry.storeCommit(turn.carrier?.(), 3).end(true); // fast: no span
    telemetry.storeCommit(turn.carrier?.(), 2).end(false);
    turn.end({ stopReason: "end_turn" });
    const commits = spans().filter((span) => span.name === "store_commit");
    assert.equal(commits.length, 1);
    assert.equal(commits[0]?.attributes["acp_harness.store.events"], 2);
    assert.equal(commits[0]?.status.code, SpanStatusCode.ERROR);
    assert.equal(
      parentOf(commits[0]!),
      named(spans(), "invoke_agent acp-harness").spanContext().spanId,
    );
  }, { commitThresholdMs: 60_000 });
  await withTracer((telemetry, spans) => {
    telemetry.storeCommit(undefined, 1).end(true);
    assert.equal(spans().filter((span) => span.name === "store_commit").length, 1);
  }, { commitThresholdMs: 0 });
});

Deno.test("OtelTelemetry: a malformed traceparent starts a trace of its own", async () => {
  await withTracer((telemetry, spans) => {
    telemetry.promptTurn({ sessionId: "s1", parent: { traceparent: "00-nonsense-01" } })
      .end({ stopReason: "error" });
    const [agent] = spans();
    assert.equal(parentOf(agent!), undefined);
    assert.match(agent!.spanContext().traceId, /^[0-9a-f]{32}$/);
    assert.equal(agent!.status.code, SpanStatusCode.ERROR);
  });
});

Deno.test("traceCarrierOf() takes the three W3C keys as strings and nothing else", () => {
  assert.deepEqual(
    traceCarrierOf({ traceparent: TRACEPARENT, tracestate: "a=1", baggage: "b=2", x: "y" }),
    { traceparent: TRACEPARENT, tracestate: "a=1", baggage: "b=2" },
  );
  assert.deepEqual(traceCarrierOf({ traceparent: TRACEPARENT, tracestate: 7 }), {
    traceparent: TRACEPARENT,
  });
  assert.equal(traceCarrierOf({ tracestate: "a=1" }), undefined);
  assert.equal(traceCarrierOf({ traceparent: "x".repeat(9000) }), undefined);
  assert.equal(traceCarrierOf([TRACEPARENT]), undefined);
  assert.equal(traceCarrierOf(Object.create({ traceparent: TRACEPARENT })), undefined);
});

Deno.test("combineTelemetry() tells metrics and traces alike, the carrier from the tracer", async () => {
  await withTracer(async (tracing, spans) => {
    const metrics = new PrometheusTelemetry({ defaultMetrics: false });
    const both: Telemetry = combineTelemetry([metrics, NOOP_TELEMETRY, tracing]);
    assert.equal(combineTelemetry([metrics, NOOP_TELEMETRY]), metrics);
    const turn = both.promptTurn({ sessionId: "s1", parent: { traceparent: TRACEPARENT } });
    assert.match(turn.carrier?.().traceparent ?? "", /^00-4bf92f3577b34da6a3ce929d0e0e4736-/);
    const request = turn.modelRequest({ provider: "p", model: "m" });
    request.firstToken();
    request.end("ok");
    const call = turn.toolCall("read_file", true, { id: "c", kind: "read" });
    call.permission?.("allowed_by_mode");
    call.end("completed");
    both.permissionDecision("allowed_by_mode");
    turn.end({ stopReason: "end_turn" });
    both.storeCommit(undefined, 1).end(true);
    const text = await metrics.metrics();
    assert.match(text, /acp_harness_prompts_total\{stop_reason="end_turn"\} 1/);
    assert.match(text, /acp_harness_tool_calls_total\{tool="read_file",status="completed"\} 1/);
    assert.deepEqual(
      spans().map((span) => span.name).sort(),
      ["chat m", "execute_tool read_file", "invoke_agent acp-harness"],
    );
  });
});
