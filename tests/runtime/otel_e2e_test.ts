/**
 * OpenTelemetry traces end to end on Deno, Node.js and Bun: a real acp-harness over stdio
 * (scripted model) exports to an OTLP/HTTP receiver on loopback (protobuf on every runtime, JSON
 * on one) the spans of a turn that reads a file, calls an MCP tool and delegates to a second
 * acp-harness process. One trace: the client's `traceparent` is the root's parent, the child's
 * spans sit under the parent's `execute_tool delegate` span from another process, and the MCP
 * server is handed the context in `_meta`. Tracing off (`--otel=false`, `OTEL_SDK_DISABLED`) sends
 * nothing.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { exitWithin, spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { fakeStdio } from "../_helpers/mcp_servers.ts";
import { type ReceivedSpan, spanNamed, startOtlpReceiver } from "../_helpers/otlp_receiver.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";
const TRACEPARENT = `00-${TRACE_ID}-${CLIENT_SPAN}-01`;

const PARENT_SCRIPT = [
  {
    toolCalls: [
      { id: "call_read", name: "read_file", arguments: { path: "a.txt" } },
      { id: "call_meta", name: "mcp__fake__meta", arguments: {} },
    ],
    usage: { input: 100, output: 10 },
  },
  {
    toolCalls: [{
      id: "call_delegate",
      name: "delegate",
      arguments: { agent: "worker", prompt: "Say hello" },
    }],
    usage: { input: 120, output: 12 },
  },
  { text: "All done.", usage: { input: 140, output: 4 } },
];

const CHILD_SCRIPT = [{ text: "Hello from the worker.", usage: { input: 10, output: 3 } }];

interface Traced {
  readonly agent: StdioAgent;
  readonly cwd: string;
}

/** Starts a traced parent with a `worker` agent (an acp-harness on the same runtime). */
async function startParent(
  runtime: Runtime,
  dir: string,
  env: Record<string, string>,
  extra: string[] = [],
  parentScript: unknown = PARENT_SCRIPT,
): Promise<Traced> {
  const cwd = join(dir, "ws");
  await mkdir(cwd);
  await writeFile(join(cwd, "a.txt"), "hello\n");
  const file = async (name: string, content: unknown): Promise<string> => {
    const path = join(dir, name);
    await writeFile(path, JSON.stringify(content));
    return path;
  };
  const childScript = await file("child.json", CHILD_SCRIPT);
  const config = await file("config.json", {
    agents: {
      worker: {
        command: runtime.command,
        args: [
          ...runtime.args,
          "--store",
          "memory:",
          "--model",
          "scripted",
          "--script",
          childScript,
        ],
        // The child exports to the same collector: the OTEL_* variables are declared for it.
        inheritEnv: ["OTEL_*"],
        description: "Says hello",
      },
    },
  });
  const script = await file("parent.json", parentScript);
  const agent = spawnAgent(runtime.command, [
    ...runtime.args,
    ...["--store", "memory:", "--model", "scripted", "--script", script, "--config", config],
    ...["--mode", "ask", "--data-dir", join(dir, "data")],
    ...extra,
  ], {
    cwd,
    env: { ...Deno.env.toObject(), ACP_HARNESS_DELEGATION_DEPTH: "", ...env },
  });
  agent.client.handlers.set("session/request_permission", () => ({
    outcome: { outcome: "selected", optionId: "allow_once" },
  }));
  await agent.client.initialize();
  return { agent, cwd };
}

/** The parent's first step and its answer: no delegation. */
const UNDELEGATED_SCRIPT = [PARENT_SCRIPT[0], PARENT_SCRIPT[2]];

/** Runs the scripted turn under the client's `traceparent`; returns the session id. */
async function tracedTurn({ agent, cwd }: Traced): Promise<string> {
  const fake = fakeStdio();
  const sessionId = await agent.client.newSession(cwd, {
    mcpServers: [{ name: "fake", command: fake.command, args: fake.args, env: [] }],
  });
  const answer = await agent.client.request<{ stopReason: string }>("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "read, ask the MCP server, delegate" }],
    _meta: { traceparent: TRACEPARENT, tracestate: "vendor=1", baggage: "job=nightly" },
  });
  assert.equal(answer.stopReason, "end_turn");
  return sessionId;
}

/** The final text of a tool call's updates. */
function callText(agent: StdioAgent, toolCallId: string): string {
  return agent.client.frames
    .filter((frame) => frame.method === "session/update")
    .map((frame) => (frame.params as { update: Record<string, unknown> }).update)
    .filter((update) => update.toolCallId === toolCallId && Array.isArray(update.content))
    .map((update) => JSON.stringify(update.content))
    .join("");
}

/** Checks the one trace of the turn: the tree, the two processes, the MCP `_meta`. */
function checkTrace(spans: readonly ReceivedSpan[], sessionId: string, agent: StdioAgent): void {
  const trace = spans.filter((span) => span.traceId === TRACE_ID);
  assert.equal(trace.length, spans.length, "every span is in the client's trace");
  const parentTurn = spanNamed(
    trace,
    "invoke_agent acp-harness",
    (span) => span.parentSpanId === CLIENT_SPAN,
  );
  assert.equal(parentTurn.kind, 2, "a server span");
  assert.equal(parentTurn.attributes["gen_ai.conversation.id"], sessionId);
  assert.equal(parentTurn.attributes["gen_ai.operation.name"], "invoke_agent");
  assert.equal(parentTurn.attributes["acp_harness.stop_reason"], "end_turn");
  assert.equal(parentTurn.attributes["acp_harness.spent.steps"], 3);
  assert.equal(parentTurn.attributes["acp_harness.spent.tool_calls"], 3);
  assert.ok(Number(parentTurn.attributes["acp_harness.spent.duration_ms"]) >= 0);
  assert.equal(parentTurn.attributes["gen_ai.usage.input_tokens"], 360);
  assert.equal(parentTurn.resource["service.name"], "acp-harness");
  assert.equal(parentTurn.resource["deployment.environment"], "test");
  assert.match(String(parentTurn.resource["service.version"]), /^\d+\.\d+\.\d+/);
  const parentInstance = parentTurn.resource["service.instance.id"];
  assert.ok(parentInstance);

  const under = (parent: ReceivedSpan) => (span: ReceivedSpan) =>
    span.parentSpanId === parent.spanId;
  const chats = trace.filter((span) => span.name === "chat scripted" && under(parentTurn)(span));
  assert.equal(chats.length, 3);
  assert.equal(chats[0]?.attributes["gen_ai.provider.name"], "scripted");
  assert.equal(chats[0]?.kind, 3, "a client span");
  assert.ok(chats.every((chat) => chat.events.some((event) => event.name === "first_token")));
  assert.deepEqual(
    chats.map((chat) => chat.attributes["gen_ai.usage.output_tokens"]).sort(),
    [10, 12, 4],
  );

  const read = spanNamed(trace, "execute_tool read_file", under(parentTurn));
  assert.equal(read.attributes["gen_ai.tool.call.id"], "call_read");
  assert.equal(read.attributes["acp_harness.tool.status"], "completed");
  assert.equal(read.attributes["acp_harness.permission.outcome"], "allowed_by_mode");
  const meta = spanNamed(trace, "execute_tool mcp__fake__meta", under(parentTurn));
  assert.equal(meta.attributes["gen_ai.tool.type"], "extension");
  const mcpCall = spanNamed(trace, "tools/call meta", under(meta));
  assert.equal(mcpCall.attributes["mcp.method.name"], "tools/call");
  assert.equal(mcpCall.attributes["acp_harness.mcp.server"], "fake");
  // The MCP server was handed the call's context (and the client's baggage) in `_meta`.
  const handed = callText(agent, "call_meta");
  assert.ok(handed.includes(`00-${TRACE_ID}-${meta.spanId}-01`), handed);
  assert.ok(handed.includes("job=nightly"), handed);

  const delegate = spanNamed(trace, "execute_tool delegate", under(parentTurn));
  assert.equal(delegate.attributes["acp_harness.permission.outcome"], "allowed_by_user");
  spanNamed(trace, "session/request_permission", under(delegate));
  const childTurn = spanNamed(trace, "invoke_agent acp-harness", under(delegate));
  assert.notEqual(childTurn.resource["service.instance.id"], parentInstance, "another process");
  spanNamed(trace, "chat scripted", under(childTurn));
  // Content is not captured unless asked.
  assert.ok(
    !trace.some((span) =>
      "gen_ai.input.messages" in span.attributes || "gen_ai.tool.call.arguments" in span.attributes
    ),
  );
}

const PROTOCOLS: ReadonlyArray<readonly [Runtime, string]> = [
  ...RUNTIMES.map((runtime) => [runtime, "http/protobuf"] as const),
  ...RUNTIMES.slice(0, 1).map((runtime) => [runtime, "http/json"] as const),
];

for (const [runtime, protocol] of PROTOCOLS) {
  Deno.test(`${runtime.name}: a traced turn with a tool, an MCP call and a delegation exports one trace (${protocol})`, async () => {
    await using dir = await tempDir("acp-harness-otel-");
    await using receiver = await startOtlpReceiver();
    const traced = await startParent(runtime, dir.path, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test",
      OTEL_EXPORTER_OTLP_HEADERS: "x-test-tenant=acme",
    });
    try {
      const sessionId = await tracedTurn(traced);
      traced.agent.end();
      // Spans are flushed on shutdown, before the process exits.
      assert.equal(await exitWithin(traced.agent, 20_000), 0, traced.agent.stderr());
      const spans = await receiver.waitFor((spans) =>
        spans.filter((span) => span.name === "invoke_agent acp-harness").length === 2
      );
      checkTrace(spans, sessionId, traced.agent);
      assert.ok(spans.every((span) =>
        span.contentType.startsWith(
          protocol === "http/json" ? "application/json" : "application/x-protobuf",
        )
      ));
      assert.ok(receiver.requests.every((request) => request.headers["x-test-tenant"] === "acme"));
      assert.deepEqual(traced.agent.client.problems, []);
    } finally {
      traced.agent.child.kill("SIGKILL");
      await traced.agent.exited;
    }
  });
}

for (
  const [label, extra, env] of [
    ["--otel=false", ["--otel=false"], {}],
    ["OTEL_SDK_DISABLED=true", [], { OTEL_SDK_DISABLED: "true" }],
  ] as const
) {
  const runtime = RUNTIMES[0] as Runtime;
  Deno.test(`${runtime.name}: with ${label} nothing is exported though an endpoint is set`, async () => {
    await using dir = await tempDir("acp-harness-otel-off-");
    await using receiver = await startOtlpReceiver();
    const traced = await startParent(
      runtime,
      dir.path,
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        ...env,
      },
      [...extra],
      UNDELEGATED_SCRIPT,
    );
    try {
      await tracedTurn(traced);
      // The MCP server was handed no trace context.
      assert.match(callText(traced.agent, "call_meta"), /null/);
      traced.agent.end();
      assert.equal(await exitWithin(traced.agent, 20_000), 0, traced.agent.stderr());
      // It has exited: whatever it would have sent has been sent.
      assert.deepEqual(receiver.requests, []);
    } finally {
      traced.agent.child.kill("SIGKILL");
      await traced.agent.exited;
    }
  });
}
