/**
 * `--metrics-port` end to end on every runtime: a real server process over stdio with the
 * scripted model runs a prompt with a tool call; `/metrics` on the port it logged is well-formed
 * Prometheus text whose counters moved; the port is closed once the server exits. Then a real
 * Prometheus scrapes a `serve --http` instance's `/metrics` (behind its bearer token) and its
 * HTTP API returns the prompt counter.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import {
  exitWithin,
  listeningUrl,
  memoryClient,
  spawnAgent,
  type StdioAgent,
} from "../_helpers/acp_client.ts";
import { PROMETHEUS, prometheusAvailable } from "../_helpers/prometheus.ts";
import { parseExposition, sampleSum } from "../_helpers/prometheus_text.ts";
import { RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";

const SCRIPT = [
  {
    toolCalls: [{ name: "read_file", arguments: { path: "a.txt" } }],
    usage: { input: 100, output: 10 },
  },
  { text: "read it", usage: { input: 120, output: 5 } },
];

/** Writes the script and the file it reads; returns the script's path and the workspace. */
async function setUp(dir: string): Promise<{ script: string; cwd: string }> {
  const cwd = join(dir, "ws");
  await mkdir(cwd);
  await writeFile(join(cwd, "a.txt"), "hello\n");
  const script = join(dir, "script.json");
  await writeFile(script, JSON.stringify(SCRIPT));
  return { script, cwd };
}

/** Resolves with the URL of the `serving metrics` line the server logs at `info`. */
function metricsUrl(agent: StdioAgent): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const check = (): void => {
      const match = /serving metrics \{"url":"(http:\/\/[^"]+)"\}/.exec(agent.stderr());
      if (!match) return;
      agent.child.stderr?.off("data", check);
      resolve(match[1] as string);
    };
    agent.child.stderr?.on("data", check);
    check();
    void agent.exited.then(({ code }) =>
      reject(new Error(`exited with ${code} before serving metrics:\n${agent.stderr()}`))
    );
  });
}

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: --metrics-port 0 serves /metrics on stdio, counting a turn with a tool call`, async () => {
    await using dir = await tempDir("acp-harness-metrics-");
    const { script, cwd } = await setUp(dir.path);
    const agent = spawnAgent(runtime.command, [
      ...runtime.args,
      "--store",
      "memory:",
      "--model",
      "scripted",
      "--script",
      script,
      "--metrics-port",
      "0",
      "--log-level",
      "info",
    ], { cwd });
    try {
      const url = await metricsUrl(agent);
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      await agent.client.initialize();
      const sessionId = await agent.client.newSession(cwd);
      assert.equal(await agent.client.prompt(sessionId, "read a.txt"), "end_turn");

      const response = await fetch(url);
      assert.equal(response.status, 200);
      assert.match(response.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
      const text = parseExposition(await response.text());
      const value = (name: string, labels: Record<string, string> = {}): number =>
        sampleSum(text, name, labels);
      assert.equal(value("acp_harness_prompts_total", { stop_reason: "end_turn" }), 1);
      assert.equal(value("acp_harness_prompt_duration_seconds_count"), 1);
      assert.equal(value("acp_harness_model_requests_total", { outcome: "ok" }), 2);
      assert.equal(value("acp_harness_model_time_to_first_token_seconds_count"), 2);
      assert.equal(
        value("acp_harness_tokens_total", { provider: "scripted", direction: "input" }),
        220,
      );
      assert.equal(
        value("acp_harness_tool_calls_total", { tool: "read_file", status: "completed" }),
        1,
      );
      assert.equal(
        value("acp_harness_permission_decisions_total", { outcome: "allowed_by_mode" }),
        1,
      );
      assert.equal(value("acp_harness_sessions_open"), 1);
      assert.equal(value("acp_harness_connections_open", { transport: "stdio" }), 1);
      assert.ok(value("acp_harness_store_commit_seconds_count") >= 1);
      // The runtime's process metrics (prom-client's defaults) are there on every runtime.
      assert.ok(value("process_resident_memory_bytes") > 0, runtime.name);
      assert.ok(text.types.has("nodejs_eventloop_lag_seconds"), runtime.name);
      // Nothing of the session is exported.
      assert.ok(!text.samples.some((sample) => Object.values(sample.labels).includes(sessionId)));
      assert.equal((await fetch(url.replace(/metrics$/, "other"))).status, 404);

      agent.end();
      assert.equal(await exitWithin(agent, 15_000), 0, agent.stderr());
      // The listener closed with the server.
      await assert.rejects(fetch(url));
    } finally {
      agent.child.kill("SIGKILL");
      await agent.exited;
    }
  });
}

/** A free port of 127.0.0.1, found by binding port 0 and closing it. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

const TOKEN = "metrics-e2e-token";

Deno.test({
  name: "a real Prometheus scrapes serve --http's /metrics with the bearer token",
  ignore: !prometheusAvailable(),
  async fn() {
    await using dir = await tempDir("acp-harness-prometheus-");
    const { script, cwd } = await setUp(dir.path);
    const deno = RUNTIMES[0]!;
    const agent = spawnAgent(deno.command, [
      ...deno.args,
      "serve",
      "--http",
      "--port",
      "0",
      "--token",
      TOKEN,
      "--store",
      "memory:",
      "--model",
      "scripted",
      "--script",
      script,
      "--metrics-port",
      "0",
    ], { cwd });
    let prometheus: ReturnType<typeof spawn> | undefined;
    let prometheusExited: Promise<unknown> = Promise.resolve();
    try {
      const url = await listeningUrl(agent);
      const target = new URL(url);
      // The main listener's /metrics is behind the token.
      const refused = await fetch(`${url}/metrics`);
      assert.equal(refused.status, 401);
      await refused.body?.cancel();

      const port = await freePort();
      const config = join(dir.path, "prometheus.yml");
      await writeFile(
        config,
        [
          "global:",
          "  scrape_interval: 1s",
          "  scrape_timeout: 1s",
          "scrape_configs:",
          "  - job_name: acp-harness",
          "    metrics_path: /metrics",
          "    authorization:",
          "      type: Bearer",
          `      credentials: ${TOKEN}`,
          "    static_configs:",
          `      - targets: ["${target.host}"]`,
          "",
        ].join("\n"),
      );
      const data = join(dir.path, "tsdb");
      prometheus = spawn(PROMETHEUS, [
        `--config.file=${config}`,
        `--storage.tsdb.path=${data}`,
        `--web.listen-address=127.0.0.1:${port}`,
        "--log.level=warn",
      ], { stdio: ["ignore", "ignore", "pipe"] });
      let log = "";
      prometheus.stderr?.setEncoding("utf8");
      prometheus.stderr?.on("data", (text: string) => log += text);
      const child = prometheus;
      prometheusExited = new Promise((resolve) => child.once("exit", resolve));

      const client = memoryClient(
        createHttpStream(`${url}/acp`, { headers: { authorization: `Bearer ${TOKEN}` } }),
      );
      try {
        await client.initialize();
        const sessionId = await client.newSession(cwd);
        assert.equal(await client.prompt(sessionId, "read a.txt"), "end_turn");
      } finally {
        await (client as unknown as { close(): Promise<void> }).close().catch(() => {});
      }

      // Prometheus is another process with no event to wait on: its API is polled, bounded.
      const query = `http://127.0.0.1:${port}/api/v1/query?query=` +
        encodeURIComponent('acp_harness_prompts_total{stop_reason="end_turn"}');
      let found: unknown;
      await pollUntil(async () => {
        if (child.exitCode !== null) throw new Error(`prometheus exited:\n${log}`);
        const answer = await fetch(query).then((response) => response.json()).catch(() =>
          undefined
        );
        const result = (answer as { data?: { result?: Array<{ value: [number, string] }> } })
          ?.data?.result;
        found = result?.[0]?.value[1];
        return found === "1";
      }, {
        what: "Prometheus to have scraped the prompt counter",
        timeoutMs: 30_000,
        intervalMs: 250,
      });
      assert.equal(found, "1");
      // The scrape itself succeeded (up is 1: the token was accepted).
      const up = await fetch(
        `http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent("up")}`,
      ).then((response) => response.json()) as {
        data: { result: Array<{ value: [number, string] }> };
      };
      assert.equal(up.data.result[0]?.value[1], "1");
    } finally {
      prometheus?.kill("SIGTERM");
      await prometheusExited;
      agent.child.kill("SIGTERM");
      await exitWithin(agent, 15_000).catch(() => {});
    }
  },
});

Deno.test("--metrics-host beyond loopback needs the token and then asks every scrape for it; acp-harness run serves metrics while its turn runs", async () => {
  const deno = RUNTIMES.find((runtime) => runtime.name === "deno") as (typeof RUNTIMES)[number];
  await using dir = await tempDir("acp-harness-metrics-");
  const { cwd } = await setUp(dir.path);
  const script = join(dir.path, "slow.json");
  await writeFile(script, JSON.stringify([{ delayMs: 120_000, text: "too late" }]));
  const flags = ["--store", "memory:", "--model", "scripted", "--script", script];

  const refused = spawnAgent(deno.command, [
    ...deno.args,
    ...flags,
    "--metrics-port",
    "0",
    "--metrics-host",
    "0.0.0.0",
  ], { cwd });
  assert.equal(await exitWithin(refused, 15_000), 2);
  assert.match(refused.stderr(), /Refusing to serve metrics on 0\.0\.0\.0 without a bearer token/);

  const open = spawnAgent(deno.command, [
    ...deno.args,
    ...flags,
    "--metrics-port",
    "0",
    "--metrics-host",
    "0.0.0.0",
    "--token",
    TOKEN,
    "--log-level",
    "info",
  ], { cwd });
  try {
    // Bound on every interface; scraped over loopback only (never beyond it in a test).
    const bound = await metricsUrl(open);
    const url = bound.replace(/\/\/[^/:]+:/, "//127.0.0.1:");
    assert.equal((await fetch(url)).status, 401);
    const other = await fetch(url, { headers: { authorization: "Bearer wrong" } });
    assert.equal(other.status, 401);
    await other.body?.cancel();
    const scraped = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(scraped.status, 200);
    assert.ok(parseExposition(await scraped.text()).types.has("acp_harness_prompts_total"));
    open.end();
    assert.equal(await exitWithin(open, 15_000), 0, open.stderr());
  } finally {
    open.child.kill("SIGKILL");
    await open.exited;
  }

  // `run`: the metrics of its one turn, scraped while the model thinks; SIGINT ends it.
  const run = spawn(deno.command, [
    ...deno.args,
    "run",
    ...flags,
    "--metrics-port",
    "0",
    "--log-level",
    "info",
    "think",
  ], { cwd, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  run.stderr.setEncoding("utf8").on("data", (text: string) => stderr += text);
  run.stdout.resume();
  const exited = new Promise<void>((resolve) => run.on("close", () => resolve()));
  try {
    let url = "";
    await pollUntil(() => {
      url = /serving metrics \{"url":"(http:\/\/[^"]+)"\}/.exec(stderr)?.[1] ?? "";
      return url !== "";
    }, { what: "the run's metrics URL", timeoutMs: 30_000 });
    // The run's session is open while its turn runs (the model takes two minutes).
    let text: ReturnType<typeof parseExposition> | undefined;
    await pollUntil(async () => {
      text = parseExposition(await (await fetch(url)).text());
      return sampleSum(text, "acp_harness_sessions_open", {}) === 1;
    }, { what: "the run's session in its metrics", timeoutMs: 30_000 });
    assert.ok(text);
    assert.equal(sampleSum(text, "acp_harness_connections_open", { transport: "memory" }), 1);
    run.kill("SIGINT");
    await exited;
  } finally {
    run.kill("SIGKILL");
    await exited;
  }
});
