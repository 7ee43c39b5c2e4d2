import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PrometheusTelemetry } from "../../src/telemetry/prometheus_telemetry.ts";
import { NOOP_TELEMETRY } from "../../src/telemetry/telemetry.ts";
import { metricsHandler } from "../../src/cli/metrics_endpoint.ts";
import { type Exposition, parseExposition, sampleSum } from "../_helpers/prometheus_text.ts";
import { startServer } from "../_helpers/server.ts";

async function exposition(telemetry: PrometheusTelemetry): Promise<Exposition> {
  return parseExposition(await telemetry.metrics());
}

Deno.test("PrometheusTelemetry counts every hook into its metric", async () => {
  let clock = 0;
  const telemetry = new PrometheusTelemetry({ defaultMetrics: false, now: () => clock });
  const turn = telemetry.promptTurn();
  const labels = { provider: "openai", model: "gpt-x" };
  const request = turn.modelRequest(labels);
  clock += 250;
  request.firstToken();
  clock += 1000;
  request.firstToken(); // only the first counts
  request.usage({ input: 100, output: 20, cacheRead: 60, reasoning: 5 });
  request.end("ok");
  request.end("server"); // ended once
  turn.modelRequest(labels).end("rate-limit");
  turn.cost(labels, 0.25);
  turn.toolCall("read_file", true).end("completed");
  turn.toolCall("mcp__files__read", true).end("failed");
  turn.toolCall("invented", false).end("not_run");
  clock += 750;
  turn.end({ stopReason: "max_turn_requests", budgetLimit: "maxToolCalls" });
  turn.end({ stopReason: "end_turn" }); // ended once
  telemetry.permissionDecision("allowed_by_rule");
  telemetry.permissionDecision("denied_by_user");
  const session = telemetry.sessionOpened();
  telemetry.sessionOpened();
  session.end();
  session.end();
  const http = telemetry.connectionOpened("http");
  telemetry.connectionOpened("stdio");
  http.end();
  telemetry.mcpServerStart().end("started");
  telemetry.mcpServerStart().end("failed");
  const commit = telemetry.storeCommit();
  clock += 2;
  commit.end(true);

  const text = await exposition(telemetry);
  const value = (name: string, labels: Record<string, string> = {}): number =>
    sampleSum(text, name, labels);
  assert.equal(value("acp_harness_prompts_total", { stop_reason: "max_turn_requests" }), 1);
  assert.equal(value("acp_harness_prompts_total"), 1);
  assert.equal(value("acp_harness_prompt_duration_seconds_count"), 1);
  assert.equal(value("acp_harness_prompt_duration_seconds_sum"), 2);
  assert.equal(value("acp_harness_budget_stops_total", { limit: "maxToolCalls" }), 1);
  assert.equal(value("acp_harness_model_requests_total", { ...labels, outcome: "ok" }), 1);
  assert.equal(value("acp_harness_model_requests_total", { outcome: "rate-limit" }), 1);
  assert.equal(value("acp_harness_model_requests_total", { outcome: "server" }), 0);
  assert.equal(value("acp_harness_model_time_to_first_token_seconds_count"), 1);
  assert.equal(value("acp_harness_model_time_to_first_token_seconds_sum"), 0.25);
  assert.equal(value("acp_harness_tokens_total", { ...labels, direction: "input" }), 100);
  assert.equal(value("acp_harness_tokens_total", { direction: "output" }), 20);
  assert.equal(value("acp_harness_tokens_total", { direction: "cache_read" }), 60);
  assert.equal(value("acp_harness_tokens_total", { direction: "reasoning" }), 5);
  assert.equal(value("acp_harness_tokens_total", { direction: "cache_write" }), 0);
  assert.equal(value("acp_harness_cost_usd_total", labels), 0.25);
  assert.equal(value("acp_harness_tool_calls_total", { tool: "read_file" }), 1);
  assert.equal(value("acp_harness_tool_calls_total", { tool: "mcp", status: "failed" }), 1);
  assert.equal(value("acp_harness_tool_calls_total", { tool: "unknown", status: "not_run" }), 1);
  assert.equal(value("acp_harness_permission_decisions_total", { outcome: "allowed_by_rule" }), 1);
  assert.equal(value("acp_harness_permission_decisions_total", { outcome: "denied_by_user" }), 1);
  assert.equal(value("acp_harness_sessions_open"), 1);
  assert.equal(value("acp_harness_connections_open", { transport: "http" }), 0);
  assert.equal(value("acp_harness_connections_open", { transport: "stdio" }), 1);
  assert.equal(value("acp_harness_mcp_server_starts_total", { result: "started" }), 1);
  assert.equal(value("acp_harness_mcp_server_starts_total", { result: "failed" }), 1);
  assert.equal(value("acp_harness_store_commit_seconds_count"), 1);
  assert.equal(value("acp_harness_store_commit_seconds_sum"), 0.002);
  assert.equal(text.types.get("acp_harness_prompt_duration_seconds"), "histogram");
  assert.equal(text.types.get("acp_harness_sessions_open"), "gauge");
  assert.equal(text.types.get("acp_harness_tool_calls_total"), "counter");
});

Deno.test("PrometheusTelemetry bounds label values: past the cap a value is other", async () => {
  const telemetry = new PrometheusTelemetry({ defaultMetrics: false, maxLabelValues: 2 });
  const turn = telemetry.promptTurn();
  for (const model of ["a", "b", "c", "d", "a"]) {
    turn.modelRequest({ provider: "p", model }).end("ok");
  }
  for (let index = 0; index < 5; index++) {
    turn.toolCall(`mcp__server${index}__t`, true).end("completed");
  }
  const text = await exposition(telemetry);
  const models = text.samples.filter((sample) => sample.name === "acp_harness_model_requests_total")
    .map((sample) => [sample.labels.model, sample.value]);
  assert.deepEqual(models.sort(), [["a", 2], ["b", 1], ["other", 2]]);
  // Every MCP tool is one label value, whichever server and tool.
  const tools = text.samples.filter((sample) => sample.name === "acp_harness_tool_calls_total");
  assert.deepEqual(tools.map((sample) => [sample.labels.tool, sample.value]), [["mcp", 5]]);
});

Deno.test("PrometheusTelemetry with the default process metrics renders them on this runtime", async () => {
  const telemetry = new PrometheusTelemetry();
  const text = await exposition(telemetry);
  for (const name of ["process_resident_memory_bytes", "nodejs_eventloop_lag_seconds"]) {
    assert.ok(text.types.has(name), name);
  }
  assert.ok(sampleSum(text, "process_resident_memory_bytes") > 0);
});

Deno.test("NOOP_TELEMETRY records nothing and returns shared handles", () => {
  assert.equal(NOOP_TELEMETRY.enabled, false);
  assert.equal(NOOP_TELEMETRY.promptTurn(), NOOP_TELEMETRY.promptTurn());
  assert.equal(NOOP_TELEMETRY.storeCommit(), NOOP_TELEMETRY.mcpServerStart());
});

Deno.test("metricsHandler() answers GET /metrics for a loopback Host only", async () => {
  const handler = metricsHandler({ contentType: "text/plain", metrics: () => Promise.resolve("") });
  const at = (path: string, init: RequestInit = {}): Promise<Response> =>
    handler.fetch(new Request(`http://127.0.0.1:9/${path}`, init), {});
  assert.equal((await at("metrics")).status, 200);
  assert.equal((await at("metrics", { method: "POST", body: "x" })).status, 405);
  assert.equal((await at("other")).status, 404);
  const rebound = await at("metrics", { headers: { host: "evil.example:9" } });
  assert.equal(rebound.status, 403);
  assert.equal((await at("metrics", { headers: { host: "localhost:9" } })).status, 200);
  await rebound.body?.cancel();
});

Deno.test("a turn with a tool call moves the counters of every hook it passes", async () => {
  const dir = await mkdtemp(join(tmpdir(), "acp-harness-telemetry-"));
  try {
    await writeFile(join(dir, "a.txt"), "hello\n");
    const telemetry = new PrometheusTelemetry({ defaultMetrics: false });
    const server = startServer({
      telemetry,
      config: {
        model: "scripted",
        models: { scripted: { pricing: { input: 1, output: 2 } } },
      },
      script: [
        {
          toolCalls: [
            { name: "read_file", arguments: { path: "a.txt" } },
            { name: "made_up", arguments: {} },
          ],
          usage: { input: 1000, output: 100 },
        },
        { text: "done", usage: { input: 1200, output: 10 } },
      ],
    });
    await server.client.initialize();
    const sessionId = await server.client.newSession(dir);
    assert.equal(await server.client.prompt(sessionId, "read it"), "end_turn");
    let text = await exposition(telemetry);
    const value = (name: string, labels: Record<string, string> = {}): number =>
      sampleSum(text, name, labels);
    assert.equal(value("acp_harness_prompts_total", { stop_reason: "end_turn" }), 1);
    assert.equal(value("acp_harness_prompt_duration_seconds_count"), 1);
    assert.equal(
      value("acp_harness_model_requests_total", {
        provider: "scripted",
        model: "scripted",
        outcome: "ok",
      }),
      2,
    );
    assert.equal(value("acp_harness_model_time_to_first_token_seconds_count"), 2);
    assert.equal(value("acp_harness_tokens_total", { direction: "input" }), 2200);
    assert.equal(value("acp_harness_tokens_total", { direction: "output" }), 110);
    // (1000 + 1200) × $1 + (100 + 10) × $2, per million tokens.
    assert.ok(Math.abs(value("acp_harness_cost_usd_total") - 0.00242) < 1e-12);
    assert.equal(
      value("acp_harness_tool_calls_total", { tool: "read_file", status: "completed" }),
      1,
    );
    assert.equal(value("acp_harness_tool_calls_total", { tool: "unknown", status: "not_run" }), 1);
    assert.equal(
      value("acp_harness_permission_decisions_total", { outcome: "allowed_by_mode" }),
      1,
    );
    assert.equal(value("acp_harness_sessions_open"), 1);
    assert.equal(value("acp_harness_connections_open", { transport: "memory" }), 1);
    assert.ok(value("acp_harness_store_commit_seconds_count") >= 1);
    await server.disconnect();
    text = await exposition(telemetry);
    assert.equal(value("acp_harness_sessions_open"), 0);
    assert.equal(value("acp_harness_connections_open", { transport: "memory" }), 0);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
