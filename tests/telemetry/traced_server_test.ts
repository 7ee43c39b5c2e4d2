/**
 * The tracing telemetry inside a real server (in memory, scripted model): every span that starts
 * ends, on a cancel, a refusal and a failed model request as on a clean turn, and content is
 * recorded only when asked.
 *
 * @module
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Context } from "@opentelemetry/api";
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type Span,
  type SpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { OtelTelemetry } from "../../src/telemetry/otel_telemetry.ts";
import { parseRule } from "../../src/permission/rule_syntax.ts";
import { type StartOptions, startServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

/** Spans started and ended, with a wait for a started one. */
class Watch implements SpanProcessor {
  readonly started: string[] = [];
  readonly exporter = new InMemorySpanExporter();
  readonly #simple = new SimpleSpanProcessor({ exporter: this.exporter });
  #waiters: Array<() => void> = [];

  onStart(span: Span, context: Context): void {
    this.started.push(span.name);
    this.#simple.onStart(span, context);
    for (const wake of this.#waiters.splice(0)) wake();
  }

  onEnd(span: ReadableSpan): void {
    this.#simple.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.#simple.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.#simple.shutdown();
  }

  get ended(): ReadableSpan[] {
    return this.exporter.getFinishedSpans();
  }

  /** Settles once `count` spans named `name` have started. */
  async startedAt(name: string, count = 1): Promise<void> {
    while (this.started.filter((started) => started === name).length < count) {
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }
}

/** Runs `body` with a traced in-memory server on `script`. */
async function traced(
  script: unknown,
  body: (
    server: ReturnType<typeof startServer>,
    sessionId: string,
    watch: Watch,
    cwd: string,
  ) => Promise<void>,
  options: { captureContent?: boolean; config?: StartOptions["config"] } = {},
): Promise<void> {
  const watch = new Watch();
  const provider = new TracerProvider({ spanProcessors: [watch] });
  await using dir = await tempDir("acp-harness-traced-");
  await writeFile(join(dir.path, "a.txt"), "hello\n");
  const server = startServer({
    config: { model: "scripted", ...options.config },
    script,
    telemetry: new OtelTelemetry({
      tracer: provider.getTracer("test"),
      captureContent: options.captureContent ?? false,
    }),
  });
  try {
    try {
      await server.client.initialize();
      const sessionId = await server.client.newSession(dir.path);
      await body(server, sessionId, watch, dir.path);
    } finally {
      await server.disconnect();
    }
    // Every span that started has ended.
    assert.deepEqual(watch.ended.map((span) => span.name).sort(), [...watch.started].sort());
  } finally {
    await provider.shutdown();
  }
}

const named = (spans: readonly ReadableSpan[], name: string): ReadableSpan => {
  const span = spans.find((span) => span.name === name);
  assert.ok(span, `${name} in ${spans.map((span) => span.name).join(", ")}`);
  return span;
};

Deno.test("a cancel mid model request ends the turn's spans, cancelled", async () => {
  const script = [
    { toolCalls: [{ name: "read_file", arguments: { path: "a.txt" } }] },
    { delayMs: 60_000, text: "never" },
  ];
  await traced(script, async (server, sessionId, watch) => {
    const prompt = server.client.prompt(sessionId, "read, then wait");
    await watch.startedAt("chat scripted", 2);
    await server.client.notify("session/cancel", { sessionId });
    assert.equal(await prompt, "cancelled");
    const agent = named(watch.ended, "invoke_agent acp-harness");
    assert.equal(agent.attributes["acp_harness.stop_reason"], "cancelled");
    const chats = watch.ended.filter((span) => span.name === "chat scripted");
    assert.deepEqual(chats.map((chat) => chat.attributes["acp_harness.outcome"]), [
      "ok",
      "cancelled",
    ]);
    assert.equal(
      named(watch.ended, "execute_tool read_file").attributes["acp_harness.tool.status"],
      "completed",
    );
  });
});

Deno.test("a call a deny rule refuses has its decision and rule on its span", async () => {
  const script = [
    { toolCalls: [{ name: "run_command", arguments: { command: "rm -rf build" } }] },
    { text: "refused" },
  ];
  await traced(script, async (server, sessionId, watch) => {
    assert.equal(await server.client.prompt(sessionId, "clean"), "end_turn");
    const call = named(watch.ended, "execute_tool run_command");
    assert.equal(call.attributes["acp_harness.tool.status"], "denied");
    assert.equal(call.attributes["acp_harness.permission.outcome"], "denied_by_rule");
    assert.equal(call.attributes["acp_harness.permission.rule"], "run_command(rm *)");
    assert.equal(call.attributes["acp_harness.tool.kind"], "execute");
  }, { config: { deny: [parseRule("deny", "run_command(rm *)")] } });
});

Deno.test("a model request that fails for good ends its span and the turn's in error", async () => {
  const script = [{ error: { message: "bad key", kind: "auth", status: 401 } }];
  await traced(script, async (server, sessionId, watch) => {
    await assert.rejects(server.client.prompt(sessionId, "hi"));
    const chat = named(watch.ended, "chat scripted");
    assert.equal(chat.attributes["error.type"], "auth");
    const agent = named(watch.ended, "invoke_agent acp-harness");
    assert.equal(agent.attributes["acp_harness.stop_reason"], "error");
    assert.equal(agent.attributes["error.type"], "error");
  });
});

Deno.test("a retried model request has a retry event and a second attempt", async () => {
  const script = [
    { error: { message: "busy", kind: "server", status: 503, retryable: true } },
    { text: "fine", usage: { input: 5, output: 1 } },
  ];
  await traced(script, async (server, sessionId, watch) => {
    assert.equal(await server.client.prompt(sessionId, "hi"), "end_turn");
    const [first, second] = watch.ended.filter((span) => span.name === "chat scripted");
    assert.equal(
      first?.events.find((event) => event.name === "retry")?.attributes?.["error.type"],
      "server",
    );
    assert.equal(second?.attributes["acp_harness.attempt"], 2);
    assert.equal(second?.attributes["gen_ai.usage.input_tokens"], 5);
  });
});

Deno.test("with content capture the prompt, the answer and the tool's input and result are on the spans", async () => {
  const script = [
    { toolCalls: [{ name: "read_file", arguments: { path: "a.txt" } }] },
    { text: "it says hello" },
  ];
  await traced(script, async (server, sessionId, watch) => {
    assert.equal(await server.client.prompt(sessionId, "what does a.txt say?"), "end_turn");
    const chats = watch.ended.filter((span) => span.name === "chat scripted");
    assert.match(String(chats[0]?.attributes["gen_ai.input.messages"]), /what does a\.txt say\?/);
    assert.match(String(chats[1]?.attributes["gen_ai.output.messages"]), /it says hello/);
    assert.ok(chats[0]?.attributes["gen_ai.system_instructions"]);
    const call = named(watch.ended, "execute_tool read_file");
    assert.match(String(call.attributes["gen_ai.tool.call.arguments"]), /a\.txt/);
    assert.match(String(call.attributes["gen_ai.tool.call.result"]), /hello/);
  }, { captureContent: true });
});
