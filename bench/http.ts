/**
 * The HTTP part of `bench/main.ts`: ours started as `serve --http --port 0` on each runtime (the
 * address read from the `listening on <url>` line on stderr), driven over the RFD profile `/acp`
 * by lean clients in this process (`fetch` for requests and each SSE stream read off a socket of
 * its own, Deno's WebSocket, and the same line reader over stdio):
 *
 * - update throughput: the throughput section's prompt (one script step of many text deltas, with
 *   `--stream`) over SSE on one connection and over WebSocket, against the same prompt over stdio,
 *   prompt by prompt;
 * - many connections at once, each with one session whose turn streams text deltas from the fake
 *   OpenAI-compatible server of `tests/_helpers/fake_llm_server.ts` (in this process): the
 *   latency from the fake server writing a delta to the client receiving it, the server's peak
 *   RSS, the wall time;
 * - the resident memory each idle connection (one session, both SSE streams open) takes;
 * - whether the HTTP code is in the stdio start-up graph (`deno info` of `mod.ts`, the esbuild
 *   metafile of `dist/cli.js`), and on Node.js spawn → `initialize` of `dist/cli.js` against the
 *   same bundle without the HTTP transport.
 *
 * `bench/main.ts` owns the processes (it kills whatever is left); this module takes the
 * measurements, with the clients of `bench/http_clients.ts`; `bench/http_report.ts` renders its
 * section.
 *
 * @module
 */
import { bundleStartupGraph, sourceStartupGraph } from "./startup_graph.ts";
import type { ChildProcess } from "node:child_process";
import {
  type SseItem,
  type SseResponse,
  startFakeLlmServer,
} from "../tests/_helpers/fake_llm_server.ts";
import { exitOf, type LeanClient, SseClient, StdioClient, WsClient } from "./http_clients.ts";
import { INITIALIZE_PARAMS, REQUEST_TIMEOUT_MS } from "./rpc_client.ts";
import { percentile, summarize, type Summary } from "./stats.ts";

/** A command line: what the bench spawns. */
export interface HttpCommandLine {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/** What this module needs from the bench (`bench/phases.ts` gives it), for one runtime. */
export interface HttpBenchHost {
  /** The repository root (the sessions' cwd). */
  readonly root: string;
  /** A scratch directory (scripts, configs and data directories go in it, removed after). */
  readonly tmp: string;
  /** Ours on the runtime with these arguments (after the entry point). */
  ours(args: readonly string[], env?: Readonly<Record<string, string>>): HttpCommandLine;
  /** Spawns a child with piped stdio; the caller kills it if it is left running. */
  spawn(line: HttpCommandLine): ChildProcess;
}

/** Targets: the throughput ratio is the issue's; the others were set from measured figures. */
export const HTTP_TARGETS = {
  /** SSE notifications/s over stdio's, on one connection. */
  throughputRatio: 0.5,
  /** p99 of the model's delta → the client's update, with every connection streaming (ms). */
  p99LatencyMs: 400,
  /** Resident memory per idle connection with one session and both streams open (KiB). */
  idleKibPerConnection: 512,
} as const;

/** How much work one runtime's HTTP benchmark does. */
export interface HttpBenchCounts {
  /** Text deltas of the throughput prompt (the throughput section's). */
  readonly chunks: number;
  /** Measured throughput prompts per transport (after one warm-up each). */
  readonly throughputRuns: number;
  /** Connections streaming a turn at once. */
  readonly connections: number;
  /** Text deltas per streamed turn. */
  readonly deltas: number;
  /** The fake server's pause before each SSE item of a streamed turn (ms). */
  readonly chunkDelayMs: number;
  /** Idle connections opened for the memory figure. */
  readonly idleConnections: number;
  /** Start-ups of each Node.js bundle (after a warm-up). */
  readonly startupRuns: number;
}

/**
 * The counts for a full or a `--quick` run.
 *
 * @param quick Whether the run is a smoke test
 * @param chunks The throughput section's text deltas per prompt
 * @returns The counts
 */
export function httpBenchCounts(quick: boolean, chunks: number): HttpBenchCounts {
  return {
    chunks,
    throughputRuns: quick ? 1 : 5,
    connections: quick ? 50 : 200,
    deltas: 20,
    chunkDelayMs: 20,
    idleConnections: quick ? 50 : 200,
    startupRuns: quick ? 3 : 25,
  };
}

/** On Node.js: how to start a bundle (`undefined`: `dist/cli.js`), and the one without HTTP. */
export interface HttpBundles {
  readonly start: (file: string | undefined) => HttpCommandLine;
  readonly withoutHttp: string;
}

/** Median, min and max of some samples. */
export type HttpStats = Summary;

/** One runtime's HTTP figures. */
export interface HttpResult {
  readonly throughput: {
    /** Notifications per second, median over the measured prompts. */
    readonly stdio: HttpStats;
    readonly sse: HttpStats;
    readonly ws: HttpStats;
    /** The fewest `agent_message_chunk`s one prompt brought, per transport. */
    readonly chunks: { readonly stdio: number; readonly sse: number; readonly ws: number };
    readonly runs: number;
  };
  readonly concurrency: {
    readonly connections: number;
    /** Connections whose turn ended `end_turn` with every delta received. */
    readonly completed: number;
    readonly deltas: number;
    /** Model delta written → client received the update carrying it (ms). */
    readonly p50Ms: number;
    readonly p99Ms: number;
    readonly maxMs: number;
    /** Every prompt sent at once → the last answer (ms). */
    readonly wallMs: number;
    /** How long one turn's stream takes at the fake server alone: its pauses (ms). */
    readonly modelMs: number;
    /** Opening every connection and session, all at once (ms). */
    readonly openMs: number;
    /** The server's VmHWM after the turns (MiB). */
    readonly peakRssMib: number | undefined;
  };
  readonly idle: {
    readonly connections: number;
    /** VmRSS with no connection open, after a warm-up connection came and went (MiB). */
    readonly baseRssMib: number | undefined;
    /** VmRSS with every idle connection open (MiB). */
    readonly openRssMib: number | undefined;
    readonly kibPerConnection: number | undefined;
    /** Opening one connection and its session, one after another (ms). */
    readonly openMs: HttpStats;
    /** The same number of sessions opened on one stdio connection: VmRSS growth per session. */
    readonly stdioKibPerSession: number | undefined;
    /** SIGTERM → exit with every idle connection open (ms). */
    readonly exitMs: number;
  };
  /** Node.js only: spawn → `initialize` of `dist/cli.js` and of the bundle without HTTP. */
  readonly bundleStartup?: {
    readonly withHttp: HttpStats;
    readonly withoutHttp: HttpStats;
    readonly runs: number;
  };
  /** stdin EOF → exit of the stdio process of the throughput comparison (ms). */
  readonly stdioExitMs: number;
}

const LISTEN_TIMEOUT_MS = 30_000;

// ---------------------------------------------------------------------------------------------
// Helpers

/** A field of `/proc/<pid>/status` in MiB (`VmRSS`, `VmHWM`), or undefined without /proc. */
async function procMib(pid: number | undefined, field: string): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  try {
    const status = await Deno.readTextFile(`/proc/${pid}/status`);
    const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, "m").exec(status);
    return match?.[1] === undefined ? undefined : Number(match[1]) / 1024;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// The server

/** `serve --http --port 0` running. */
interface ServeProcess {
  readonly child: ChildProcess;
  readonly url: string;
  /** Lines of stderr matching `pattern` so far. */
  count(pattern: RegExp): number;
  /** Resolves once stderr has `count` lines matching `pattern` (bounded). */
  waitFor(pattern: RegExp, count: number): Promise<void>;
  /** SIGTERM, then the exit (SIGKILL after a bound); resolves with the time it took (ms). */
  stop(): Promise<number>;
}

/** What `serve --http` is started with, after its own arguments. */
interface ServeOptions {
  readonly args: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
}

async function startServe(
  host: HttpBenchHost,
  label: string,
  { args, env = {} }: ServeOptions,
): Promise<ServeProcess> {
  // Every bench client comes from 127.0.0.1: up to 200 connections at once, past the default cap.
  const perAddress = ["--max-connections-per-address", "1000"];
  const child = host.spawn(
    host.ours(["serve", "--http", "--port", "0", ...perAddress, ...args], env),
  );
  let stderr = "";
  const listeners = new Set<() => void>();
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (data: string) => {
    stderr += data;
    for (const listener of [...listeners]) listener();
  });
  child.stdin?.on("error", () => {});
  const waitUntil = (ready: () => boolean, what: string, timeoutMs: number): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const done = (error?: Error): void => {
        listeners.delete(check);
        child.off("exit", onExit);
        clearTimeout(timer);
        if (error) reject(error);
        else resolve();
      };
      const check = (): void => {
        if (ready()) done();
      };
      const onExit = (): void =>
        done(new Error(`${label} exited before ${what}: ${stderr.slice(-500)}`));
      const timer = setTimeout(
        () => done(new Error(`${label}: no ${what} within ${timeoutMs} ms`)),
        timeoutMs,
      );
      listeners.add(check);
      child.once("exit", onExit);
      check();
    });
  const lines = (pattern: RegExp): number =>
    stderr.split("\n").filter((line) => pattern.test(line)).length;
  await waitUntil(
    () => /listening on http:\/\/\S+\n/.test(stderr),
    "`listening on <url>`",
    LISTEN_TIMEOUT_MS,
  );
  const url = /listening on (http:\/\/\S+)\n/.exec(stderr)?.[1] as string;
  return {
    child,
    url,
    count: lines,
    waitFor: (pattern, count) =>
      waitUntil(() => lines(pattern) >= count, `${count} × ${pattern}`, REQUEST_TIMEOUT_MS),
    async stop(): Promise<number> {
      const at = performance.now();
      const exited = exitOf(child, label);
      child.kill("SIGTERM");
      return (await exited) - at;
    },
  };
}

/** A scratch data directory for one server (removed by the caller). */
async function dataDir(host: HttpBenchHost, name: string): Promise<string> {
  const path = `${host.tmp}/http_${name}`;
  await Deno.remove(path, { recursive: true }).catch(() => {});
  await Deno.mkdir(path, { recursive: true });
  return path;
}

// ---------------------------------------------------------------------------------------------
// Update throughput

type Transport = "stdio" | "sse" | "ws";

function rotation(run: number): readonly Transport[] {
  const all: Transport[] = ["sse", "stdio", "ws"];
  const shift = run % all.length;
  return [...all.slice(shift), ...all.slice(0, shift)];
}

async function measureThroughput(
  host: HttpBenchHost,
  counts: HttpBenchCounts,
  cleanup: Array<() => Promise<unknown>>,
): Promise<{ throughput: HttpResult["throughput"]; stdioExitMs: number }> {
  // One step per prompt: stdio takes runs + 1, the HTTP server twice that (SSE and WebSocket).
  const words = Array.from({ length: counts.chunks }, (_, i) => `w${i} `);
  const script = `${host.tmp}/http_stream_script.json`;
  const steps = Array.from({ length: 2 * (counts.throughputRuns + 1) }, () => ({ text: words }));
  await Deno.writeTextFile(script, JSON.stringify(steps));
  cleanup.push(() => Deno.remove(script));
  const model = ["--stream", "--model", "scripted", "--script", script];
  const stdioData = await dataDir(host, "stdio");
  const httpData = await dataDir(host, "sse");
  cleanup.push(() => Deno.remove(stdioData, { recursive: true }));
  cleanup.push(() => Deno.remove(httpData, { recursive: true }));
  const stdio = new StdioClient(
    "stdio",
    host.spawn(host.ours([...model, "--data-dir", stdioData])),
  );
  const server = await startServe(host, "serve --http", {
    args: [...model, "--data-dir", httpData],
  });
  cleanup.push(() => server.stop());
  const clients: Record<Transport, LeanClient> = {
    stdio,
    sse: new SseClient("SSE", server.url),
    ws: new WsClient("WebSocket", server.url),
  };
  cleanup.push(() => (clients.sse as SseClient).abandon());
  const sessions = {} as Record<Transport, string>;
  for (const kind of ["stdio", "sse", "ws"] as const) {
    await clients[kind].initialize();
    sessions[kind] = await clients[kind].newSession(host.root);
  }
  const rates: Record<Transport, number[]> = { stdio: [], sse: [], ws: [] };
  const seen: Record<Transport, number[]> = { stdio: [], sse: [], ws: [] };
  for (let run = 0; run <= counts.throughputRuns; run++) {
    for (const kind of rotation(run)) {
      const client = clients[kind];
      client.messageChunks = 0;
      const sentAt = performance.now();
      const reply = await client.prompt(sessions[kind], `stream ${run}`);
      if (run === 0) continue; // warm-up
      rates[kind].push(client.messageChunks / ((reply.at - sentAt) / 1000));
      seen[kind].push(client.messageChunks);
    }
  }
  await clients.sse.close();
  await clients.ws.close();
  const stdioExitMs = await stdio.closeAndTime();
  await server.stop();
  return {
    throughput: {
      stdio: summarize(rates.stdio),
      sse: summarize(rates.sse),
      ws: summarize(rates.ws),
      chunks: {
        stdio: Math.min(...seen.stdio),
        sse: Math.min(...seen.sse),
        ws: Math.min(...seen.ws),
      },
      runs: counts.throughputRuns,
    },
    stdioExitMs,
  };
}

// ---------------------------------------------------------------------------------------------
// Many connections streaming at once

/** One OpenAI chat chunk as an SSE item's text. */
function chatChunk(delta: Record<string, unknown>, finish: string | null = null): string {
  const data = {
    id: "chatcmpl-bench",
    object: "chat.completion.chunk",
    created: 1,
    model: "coder",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(data)}\n\n`;
}

/**
 * A streamed answer of `deltas` text deltas, each stamped with the time the fake server writes
 * it: the item's `raw` text is built by a getter, which the fake server reads right before its
 * `res.write` (after the item's pause). The same response serves every request.
 */
export function stampedTurn(deltas: number, chunkDelayMs: number): SseResponse {
  const stamped: SseItem = {
    get raw(): string {
      return chatChunk({ content: `t${performance.now().toFixed(3)} ` });
    },
  };
  const usage = {
    id: "chatcmpl-bench",
    object: "chat.completion.chunk",
    choices: [],
    usage: { prompt_tokens: 100, completion_tokens: deltas, total_tokens: 100 + deltas },
  };
  return {
    type: "sse",
    chunkDelayMs,
    items: [
      { raw: chatChunk({ role: "assistant", content: "" }) },
      ...Array.from({ length: deltas }, () => stamped),
      { raw: chatChunk({}, "stop") },
      { raw: `data: ${JSON.stringify(usage)}\n\n` },
      { raw: "data: [DONE]\n\n" },
    ],
  };
}

/** The stamps (`t<ms> `) in an `agent_message_chunk` message. */
export function stampsOf(text: string): number[] {
  const message = JSON.parse(text) as {
    params?: { update?: { content?: { text?: string } } };
  };
  const content = message.params?.update?.content?.text ?? "";
  return [...content.matchAll(/t(\d+(?:\.\d+)?) /g)].map((match) => Number(match[1]));
}

async function measureConcurrency(
  host: HttpBenchHost,
  counts: HttpBenchCounts,
  cleanup: Array<() => Promise<unknown>>,
): Promise<HttpResult["concurrency"]> {
  const fake = await startFakeLlmServer();
  cleanup.push(() => fake.close());
  const config = `${host.tmp}/http_llm_config.json`;
  await Deno.writeTextFile(
    config,
    JSON.stringify({
      providers: {
        fake: { api: "openai-chat", baseUrl: `${fake.url}/v1`, apiKeyEnv: "FAKE_API_KEY" },
      },
      models: { "fake/coder": { contextWindow: 128_000 } },
    }),
  );
  cleanup.push(() => Deno.remove(config));
  const data = await dataDir(host, "llm");
  cleanup.push(() => Deno.remove(data, { recursive: true }));
  const server = await startServe(host, "serve --http (fake model)", {
    args: [
      ...["--config", config, "--model", "fake/coder", "--mode", "auto", "--stream"],
      ...["--data-dir", data],
    ],
    env: { FAKE_API_KEY: "sk-bench" },
  });
  cleanup.push(() => server.stop());
  const turn = stampedTurn(counts.deltas, counts.chunkDelayMs);

  // Warm-up: one connection, one turn.
  const warm = new SseClient("warm-up", server.url);
  await warm.initialize();
  const warmSession = await warm.newSession(host.root);
  fake.enqueue(turn);
  await warm.prompt(warmSession, "warm up");
  await warm.close();

  const clients = Array.from(
    { length: counts.connections },
    (_, i) => new SseClient(`SSE connection ${i}`, server.url),
  );
  cleanup.push(() => Promise.all(clients.map((client) => client.abandon())));
  const openedAt = performance.now();
  const sessions = await Promise.all(clients.map(async (client) => {
    await client.initialize();
    return await client.newSession(host.root);
  }));
  const openMs = performance.now() - openedAt;
  const latencies: number[] = [];
  const received = clients.map(() => 0);
  clients.forEach((client, i) => {
    client.onChunk = (text, at) => {
      for (const stamp of stampsOf(text)) {
        latencies.push(at - stamp);
        received[i]!++;
      }
    };
  });
  for (let i = 0; i < counts.connections; i++) fake.enqueue(turn);
  const sentAt = performance.now();
  const replies = await Promise.allSettled(
    clients.map((client, i) => client.prompt(sessions[i] as string, `turn ${i}`)),
  );
  const lastAt = Math.max(
    ...replies.map((reply) => reply.status === "fulfilled" ? reply.value.at : performance.now()),
  );
  const completed = replies.filter((reply, i) =>
    reply.status === "fulfilled" &&
    (reply.value.result as { stopReason?: unknown } | null)?.stopReason === "end_turn" &&
    received[i] === counts.deltas
  ).length;
  const peakRssMib = await procMib(server.child.pid, "VmHWM");
  await Promise.all(clients.map((client) => client.close()));
  await server.stop();
  if (completed !== counts.connections) {
    const failure = replies.find((reply) => reply.status === "rejected");
    throw new Error(
      `${completed} of ${counts.connections} streamed turns completed` +
        (failure?.status === "rejected" ? `; first failure: ${String(failure.reason)}` : ""),
    );
  }
  latencies.sort((a, b) => a - b);
  return {
    connections: counts.connections,
    completed,
    deltas: counts.deltas,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    maxMs: latencies.at(-1) ?? Number.NaN,
    wallMs: lastAt - sentAt,
    modelMs: (counts.deltas + 4) * counts.chunkDelayMs,
    openMs,
    peakRssMib,
  };
}

// ---------------------------------------------------------------------------------------------
// Idle connections

async function measureIdle(
  host: HttpBenchHost,
  counts: HttpBenchCounts,
  cleanup: Array<() => Promise<unknown>>,
): Promise<HttpResult["idle"]> {
  const data = await dataDir(host, "idle");
  cleanup.push(() => Deno.remove(data, { recursive: true }));
  const server = await startServe(host, "serve --http (idle)", {
    args: ["--data-dir", data, "--log-level", "info"],
  });
  cleanup.push(() => server.stop());
  const clients: SseClient[] = [];
  cleanup.push(() => Promise.all(clients.map((client) => client.abandon())));
  // Warm-up: one connection opens a session, runs a prompt and goes.
  const warm = new SseClient("warm-up", server.url);
  await warm.initialize();
  await warm.prompt(await warm.newSession(host.root), "warm up");
  await warm.close();
  await server.waitFor(/connection closed/, 1);
  const baseRssMib = await procMib(server.child.pid, "VmRSS");
  const openMs: number[] = [];
  for (let i = 0; i < counts.idleConnections; i++) {
    const client = new SseClient(`idle connection ${i}`, server.url);
    clients.push(client);
    const startedAt = performance.now();
    await client.initialize();
    await client.newSession(host.root);
    openMs.push(performance.now() - startedAt);
  }
  const openRssMib = await procMib(server.child.pid, "VmRSS");
  const exitMs = await server.stop();
  await Promise.all(clients.map((client) => client.abandon()));
  return {
    connections: counts.idleConnections,
    baseRssMib,
    openRssMib,
    kibPerConnection: baseRssMib === undefined || openRssMib === undefined
      ? undefined
      : (openRssMib - baseRssMib) * 1024 / counts.idleConnections,
    openMs: summarize(openMs),
    stdioKibPerSession: await stdioSessionsKib(host, counts.idleConnections, cleanup),
    exitMs,
  };
}

/**
 * The share of a session in the idle figure: VmRSS growth per session of `sessions` sessions
 * opened on one stdio connection (after the same warm-up: a session and a prompt).
 */
async function stdioSessionsKib(
  host: HttpBenchHost,
  sessions: number,
  cleanup: Array<() => Promise<unknown>>,
): Promise<number | undefined> {
  const data = await dataDir(host, "idle_stdio");
  cleanup.push(() => Deno.remove(data, { recursive: true }));
  const client = new StdioClient("stdio (sessions)", host.spawn(host.ours(["--data-dir", data])));
  try {
    await client.initialize();
    await client.prompt(await client.newSession(host.root), "warm up");
    const base = await procMib(client.child.pid, "VmRSS");
    for (let i = 0; i < sessions; i++) await client.newSession(host.root);
    const open = await procMib(client.child.pid, "VmRSS");
    return base === undefined || open === undefined ? undefined : (open - base) * 1024 / sessions;
  } finally {
    await client.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Start-up of the Node.js bundle with and without the HTTP transport

async function measureBundleStartup(
  host: HttpBenchHost,
  { start: bundle, withoutHttp }: HttpBundles,
  runs: number,
): Promise<NonNullable<HttpResult["bundleStartup"]>> {
  const samples = { withHttp: [] as number[], withoutHttp: [] as number[] };
  for (let i = -1; i < runs; i++) {
    const sides = i % 2 === 0
      ? ["withHttp", "withoutHttp"] as const
      : ["withoutHttp", "withHttp"] as const;
    for (const side of sides) {
      const spawnedAt = performance.now();
      const client = new StdioClient(
        `node ${side}`,
        host.spawn(bundle(side === "withHttp" ? undefined : withoutHttp)),
      );
      const reply = await client.request("initialize", INITIALIZE_PARAMS);
      await client.close();
      if (i >= 0) samples[side].push(reply.at - spawnedAt);
    }
  }
  return {
    withHttp: summarize(samples.withHttp),
    withoutHttp: summarize(samples.withoutHttp),
    runs,
  };
}

// ---------------------------------------------------------------------------------------------
// The measurement

/**
 * Runs one runtime's HTTP benchmarks: throughput (its own stdio process and one HTTP server),
 * many connections streaming at once (a server on the fake model), idle connections (a server on
 * the echo model), and on Node.js the bundle start-up with and without the HTTP transport.
 *
 * @param host How to start ours on this runtime, and where to put files
 * @param counts How much work
 * @param bundles For Node.js: how to start a bundle (`undefined`: `dist/cli.js`), and the bundle
 *   without the HTTP transport
 * @returns The figures
 */
export async function measureHttp(
  host: HttpBenchHost,
  counts: HttpBenchCounts,
  bundles?: HttpBundles,
): Promise<HttpResult> {
  const cleanup: Array<() => Promise<unknown>> = [];
  try {
    const bundleStartup = bundles === undefined
      ? undefined
      : await measureBundleStartup(host, bundles, counts.startupRuns);
    const { throughput, stdioExitMs } = await measureThroughput(host, counts, cleanup);
    const concurrency = await measureConcurrency(host, counts, cleanup);
    const idle = await measureIdle(host, counts, cleanup);
    return {
      throughput,
      concurrency,
      idle,
      ...(bundleStartup === undefined ? {} : { bundleStartup }),
      stdioExitMs,
    };
  } finally {
    for (const step of cleanup.reverse()) await step().catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------
// Start-up graph

/** Whether the HTTP code is loaded at start-up, from the module graphs. */
export interface HttpStartupGraph {
  /** Modules `deno run mod.ts` / `bun mod.ts` load at start-up (static closure, see below). */
  readonly sourceModules: number;
  /**
   * Of those, HTTP modules (ours, hono, `@hono/node-server`, `ws`, the SDK's server), as paths
   * relative to the root or npm specifiers, with their source size where `deno info` gives one.
   */
  readonly sourceHttpModules: ReadonlyArray<{ readonly name: string; readonly bytes?: number }>;
  /** The lazy `import()`s through which the HTTP code is reached (`importer → target`). */
  readonly lazyEdges: readonly string[];
  /** What `node dist/cli.js` reads at start-up: `cli.js` and its static chunks (bytes). */
  readonly bundleBytes: number;
  /** How many files that is. */
  readonly bundleFiles: number;
  /** The HTTP inputs in those files, with their bytes in the output. */
  readonly bundleHttpInputs: ReadonlyArray<{ readonly name: string; readonly bytes: number }>;
  /** Bytes from HTTP inputs in chunks loaded only on demand. */
  readonly lazyHttpBytes: number;
  /** The same bundle with the HTTP transport and listener left out, for the start-up comparison. */
  readonly withoutHttp: { readonly file: string; readonly bytes: number };
}

/** HTTP modules in `deno info`'s graph: ours, and the npm packages only HTTP uses. */
const HTTP_SOURCE =
  /\/src\/transport\/http\/|\/src\/runtime\/(?:\w+_http|http_common)\.ts$|^npm:\/(?:hono@|@hono\/|ws@)|^npm:\/@agentclientprotocol\/sdk@[^/]+\/experimental\/server/;
/** HTTP inputs of the esbuild metafile (the SDK's server-side transport files included). */
const HTTP_INPUT =
  /(?:^|\/)src\/transport\/http\/|(?:^|\/)src\/runtime\/(?:\w+_http|http_common)\.ts$|node_modules\/(?:hono|@hono\/node-server|ws)\/|@agentclientprotocol\/sdk\/dist\/transports\/(?:server|server-sse|ws-server|node-adapter|node-body)\.js$/;
/**
 * The HTTP module stdio start-up may load: the loopback checks the CLI runs on its settings
 * (`isLoopback`, `loopbackHosts`), a leaf module with no imports. Anything else of the HTTP code
 * at start-up misses the target.
 */
const HTTP_HELPER = /(?:^|\/)src\/transport\/http\/http_security\.ts$/;

/**
 * Whether a start-up graph meets the target: no HTTP module but the helper.
 *
 * @param graph The graphs
 * @param bundle Whether to judge the Node.js bundle (else the sources)
 * @returns True when the target is met
 */
export function httpOutOfStartup(graph: HttpStartupGraph, bundle: boolean): boolean {
  const names = bundle ? graph.bundleHttpInputs : graph.sourceHttpModules;
  return names.every(({ name }) => HTTP_HELPER.test(name));
}

/** What the bundle without HTTP leaves out (kept as external `import()`s, never run at start). */
const HTTP_ENTRY_FILES = /(?:http_transport|node_http)\.ts$/;

/**
 * Reads the start-up module graph of `mod.ts` (`deno info --json`) and bundles `dist/cli.js`
 * again with a metafile, plus a variant without the HTTP transport and the Node.js listener.
 *
 * The start-up graph of the sources is the closure of `mod.ts` over static imports plus the
 * `import()`s of `mod.ts` and `src/runtime/main.ts` (the entry and the runtime dispatch, run at
 * every start); every other `import()` is lazy.
 *
 * @param root The repository root
 * @param deno The Deno executable
 * @returns What the graphs say
 */
export async function httpStartupGraph(root: string, deno: string): Promise<HttpStartupGraph> {
  const isHttp = (specifier: string): boolean => HTTP_SOURCE.test(specifier);
  const { startup, modules, lazyEdges } = await sourceStartupGraph(root, deno, isHttp);

  const { outputs, startupFiles, without } = await bundleStartupGraph(
    root,
    "http",
    HTTP_ENTRY_FILES,
  );
  const bundleHttpInputs: Array<{ name: string; bytes: number }> = [];
  let lazyHttpBytes = 0;
  for (const [file, out] of Object.entries(outputs)) {
    for (const [path, input] of Object.entries(out.inputs)) {
      if (!HTTP_INPUT.test(path) || input.bytesInOutput === 0) continue;
      if (startupFiles.has(file)) bundleHttpInputs.push({ name: path, bytes: input.bytesInOutput });
      else lazyHttpBytes += input.bytesInOutput;
    }
  }
  return {
    sourceModules: startup.size,
    sourceHttpModules: [...startup].filter(isHttp).map((specifier) => {
      const size = modules.get(specifier)?.size;
      const name = specifier.replace(`file://${root}/`, "");
      return size === undefined ? { name } : { name, bytes: size };
    }),
    lazyEdges,
    bundleBytes: [...startupFiles].reduce((sum, file) => sum + (outputs[file]?.bytes ?? 0), 0),
    bundleFiles: startupFiles.size,
    bundleHttpInputs,
    lazyHttpBytes,
    withoutHttp: without,
  };
}
