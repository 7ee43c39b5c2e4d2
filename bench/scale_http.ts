/**
 * The scale section's 1,000 HTTP sessions on one process: ours as `serve --http --stream` on the
 * fake OpenAI-compatible model of `tests/_helpers/fake_llm_server.ts` against the bare agent of
 * `bench/bare_http_agent.ts` (the SDK's `AcpServer` over `node:http`, streaming the same model
 * endpoint), on the same runtime, driven by the same lean RFD clients of `bench/http_clients.ts`
 * in this process: one ACP connection per session (its connection stream and its session stream
 * each a socket of their own, its POSTs through this process's `fetch` pool).
 *
 * A round starts the server, warms it up with one connection's turn, then:
 * 1. opens every connection (`initialize`, `session/new`, both SSE streams), 50 at a time, and
 *    reads VmRSS before and after: the idle memory per open session;
 * 2. queues one streamed answer per session at the fake model (20 deltas, each stamped with the
 *    time the fake server writes it, 20 ms apart) and sends every `session/prompt` at once: the
 *    latency of each stamped delta to the client's `agent_message_chunk`, the turns that did not
 *    end `end_turn` with every delta (errors), the server's peak RSS (VmHWM);
 * then stops it. Ours and bare alternate round by round.
 *
 * @module
 */
import { startFakeLlmServer } from "../tests/_helpers/fake_llm_server.ts";
import { oursCommand } from "./agent_process.ts";
import { stampedTurn, stampsOf } from "./http.ts";
import { SseClient } from "./http_clients.ts";
import { ROOT, TMP } from "./paths.ts";
import {
  bareHttpCommand,
  inBatches,
  type ListeningServer,
  procMib,
  type ScaleSpread,
  spreadOf,
  startListening,
} from "./scale_serve.ts";
import type { Kind, Runtime } from "./settings.ts";
import { percentile } from "./stats.ts";

/** How much the 1,000-session benchmark does. */
export interface ScaleHttpCounts {
  readonly sessions: number;
  readonly deltas: number;
  readonly chunkDelayMs: number;
  /** Rounds per side (ours and bare alternating). */
  readonly rounds: number;
}

/** One side's figures on one runtime, each over its rounds. */
export interface ScaleHttpSide {
  readonly p50Ms: ScaleSpread;
  readonly p99Ms: ScaleSpread;
  readonly maxMs: ScaleSpread;
  /** Turns that failed or lost deltas, summed over the rounds. */
  readonly errors: number;
  /** Connections that could not be opened, summed over the rounds. */
  readonly openErrors: number;
  readonly peakRssMib: ScaleSpread;
  readonly idleKibPerSession: ScaleSpread;
  /** First prompt sent → last answer (ms). */
  readonly wallMs: ScaleSpread;
  /** Opening every connection and session (ms). */
  readonly openMs: ScaleSpread;
}

/** One runtime's figures. */
export interface ScaleHttpResult {
  readonly runtime: Runtime;
  readonly counts: ScaleHttpCounts;
  readonly ours: ScaleHttpSide;
  readonly bare: ScaleHttpSide;
}

interface Round {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly errors: number;
  readonly openErrors: number;
  readonly peakRssMib: number;
  readonly idleKib: number;
  readonly wallMs: number;
  readonly openMs: number;
}

const OPEN_BATCH = 50;

async function start(
  kind: Kind,
  runtime: Runtime,
  llmUrl: string,
  dataDir: string,
  config: string,
): Promise<ListeningServer> {
  if (kind === "bare") return await startListening(bareHttpCommand(runtime, llmUrl), "bare");
  const line = oursCommand(runtime, [
    ...["serve", "--http", "--port", "0", "--data-dir", dataDir],
    ...["--config", config, "--model", "fake/coder", "--mode", "auto", "--stream"],
    ...["--max-connections", "4000", "--max-connections-per-address", "4000"],
    ...["--max-sockets", "12000", "--max-sockets-per-address", "4000"],
  ], { FAKE_API_KEY: "sk-bench" });
  return await startListening(line, `ours/${runtime}`);
}

/** Opens a client's connection and session; resolves with the session id or undefined. */
async function open(client: SseClient): Promise<string | undefined> {
  try {
    await client.initialize();
    return await client.newSession(ROOT);
  } catch {
    return undefined;
  }
}

async function round(
  server: ListeningServer,
  fake: Awaited<ReturnType<typeof startFakeLlmServer>>,
  counts: ScaleHttpCounts,
): Promise<Round> {
  const turn = stampedTurn(counts.deltas, counts.chunkDelayMs);
  const warm = new SseClient("warm-up", server.url);
  await warm.initialize();
  fake.enqueue(turn);
  await warm.prompt(await warm.newSession(ROOT), "warm up");
  await warm.close();
  await new Promise((resolve) => setTimeout(resolve, 500));
  const baseRss = await procMib(server.child.pid, "VmRSS") ?? Number.NaN;
  const clients = Array.from(
    { length: counts.sessions },
    (_, i) => new SseClient(`session ${i}`, server.url),
  );
  try {
    const openedAt = performance.now();
    const sessions = await inBatches(counts.sessions, OPEN_BATCH, (i) => open(clients[i]!));
    const openMs = performance.now() - openedAt;
    await new Promise((resolve) => setTimeout(resolve, 500));
    const openRss = await procMib(server.child.pid, "VmRSS") ?? Number.NaN;
    const opened = sessions.filter((id) => id !== undefined).length;
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
    for (let i = 0; i < opened; i++) fake.enqueue(turn);
    const sentAt = performance.now();
    const replies = await Promise.allSettled(
      clients.flatMap((client, i) => {
        const id = sessions[i];
        return id === undefined
          ? []
          : [client.prompt(id, `turn ${i}`).then((reply) => ({ reply, i }))];
      }),
    );
    const lastAt = Math.max(
      ...replies.map((r) => r.status === "fulfilled" ? r.value.reply.at : performance.now()),
    );
    const completed = replies.filter((r) =>
      r.status === "fulfilled" &&
      (r.value.reply.result as { stopReason?: unknown } | null)?.stopReason === "end_turn" &&
      received[r.value.i] === counts.deltas
    ).length;
    const peakRssMib = await procMib(server.child.pid, "VmHWM") ?? Number.NaN;
    return {
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      max: percentile(latencies, 1),
      errors: opened - completed,
      openErrors: counts.sessions - opened,
      peakRssMib,
      idleKib: (openRss - baseRss) * 1024 / Math.max(1, opened),
      wallMs: lastAt - sentAt,
      openMs,
    };
  } finally {
    await inBatches(clients.length, 200, (i) => clients[i]!.close().catch(() => {}));
  }
}

function side(rounds: readonly Round[]): ScaleHttpSide {
  const of = (pick: (r: Round) => number): ScaleSpread => spreadOf(rounds.map(pick));
  return {
    p50Ms: of((r) => r.p50),
    p99Ms: of((r) => r.p99),
    maxMs: of((r) => r.max),
    errors: rounds.reduce((sum, r) => sum + r.errors, 0),
    openErrors: rounds.reduce((sum, r) => sum + r.openErrors, 0),
    peakRssMib: of((r) => r.peakRssMib),
    idleKibPerSession: of((r) => r.idleKib),
    wallMs: of((r) => r.wallMs),
    openMs: of((r) => r.openMs),
  };
}

/**
 * Measures ours and the bare agent with `counts.sessions` sessions streaming at once on one
 * runtime, in interleaved rounds.
 *
 * @param runtime The runtime both run on
 * @param counts How much to do
 * @param log Progress lines
 * @returns The figures
 */
export async function measureScaleHttp(
  runtime: Runtime,
  counts: ScaleHttpCounts,
  log: (line: string) => void,
): Promise<ScaleHttpResult> {
  await using fake = await startFakeLlmServer();
  const dir = await Deno.makeTempDir({ dir: TMP, prefix: "scale_http_" });
  try {
    const config = `${dir}/config.json`;
    await Deno.writeTextFile(
      config,
      JSON.stringify({
        providers: {
          fake: { api: "openai-chat", baseUrl: `${fake.url}/v1`, apiKeyEnv: "FAKE_API_KEY" },
        },
        models: { "fake/coder": { contextWindow: 128_000 } },
      }),
    );
    const rounds: Record<Kind, Round[]> = { ours: [], bare: [] };
    for (let r = 0; r < counts.rounds; r++) {
      const order: readonly Kind[] = r % 2 === 0 ? ["ours", "bare"] : ["bare", "ours"];
      for (const kind of order) {
        const dataDir = `${dir}/data_${kind}_${r}`;
        await Deno.mkdir(dataDir, { recursive: true });
        const server = await start(kind, runtime, `${fake.url}/v1`, dataDir, config);
        try {
          const result = await round(server, fake, counts);
          rounds[kind].push(result);
          log(
            `[bench] scale http ${runtime} ${kind} round ${r}: p50 ${result.p50.toFixed(1)} ` +
              `p99 ${result.p99.toFixed(1)} ms, errors ${result.errors}+${result.openErrors}, ` +
              `peak ${result.peakRssMib.toFixed(0)} MiB, idle ${result.idleKib.toFixed(0)} KiB`,
          );
        } finally {
          await server.stop();
          await Deno.remove(dataDir, { recursive: true }).catch(() => {});
        }
      }
    }
    return { runtime, counts, ours: side(rounds.ours), bare: side(rounds.bare) };
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
