/**
 * The scale section's instances behind HAProxy: three `serve --http` instances of ours on one
 * PostgreSQL database behind a real HAProxy running `examples/deploy/haproxy.cfg` unchanged
 * (its `${ACP_SERVER_n}` filled in), against one instance behind the same proxy (the config's
 * three `server` lines all naming it), so the proxy's cost is in both. Rounds alternate.
 *
 * A round starts the instances (echo model) and the proxy, opens `clients` connections through
 * the proxy (one session each, the RFD profile's SSE clients of `bench/http_clients.ts`), warms
 * each up with one prompt, then every client prompts back to back for `seconds`: turns per
 * second, and the p50/p99 of the prompt round trips. The database's own counters
 * (`pg_stat_user_tables`, `pg_stat_database`) are read before the instances start and after they
 * stopped (a backend flushes its counters when it exits), giving the rows written and the
 * transactions per turn (opening the sessions and the leases' heartbeats included).
 *
 * @module
 */
import postgres from "postgres";
import { withTestDatabase } from "../tests/_helpers/postgres.ts";
import { oursCommand } from "./agent_process.ts";
import { SseClient } from "./http_clients.ts";
import { ROOT, TMP } from "./paths.ts";
import process from "node:process";
import {
  cpuSeconds,
  inBatches,
  type ListeningServer,
  type ScaleSpread,
  spreadOf,
  startListening,
} from "./scale_serve.ts";
import type { Runtime } from "./settings.ts";
import { percentile } from "./stats.ts";

/** The example config the phase runs. */
export const HAPROXY_CONFIG = `${ROOT}/examples/deploy/haproxy.cfg`;

/**
 * The example config as the phase runs it: unchanged, but with `option http-no-delay` in its
 * `defaults` when it lacks it. Without it HAProxy sends the small chunks of an SSE response with
 * `MSG_MORE`, and the kernel holds each for up to 200 ms: every turn through the proxy took about
 * 210 ms (one client alone, measured by hand), which would measure the cork, not the instances.
 *
 * @param dir Where the copy goes
 * @returns Its path, and whether the option was added
 */
async function proxyConfig(dir: string): Promise<{ path: string; patched: boolean }> {
  const text = await Deno.readTextFile(HAPROXY_CONFIG);
  if (/^\s*option http-no-delay/m.test(text)) return { path: HAPROXY_CONFIG, patched: false };
  const patched = text.replace(/^defaults\n/m, "defaults\n    option http-no-delay\n");
  if (patched === text) throw new Error(`${HAPROXY_CONFIG} has no defaults section`);
  const path = `${dir}/scale_haproxy.cfg`;
  await Deno.writeTextFile(path, patched);
  return { path, patched: true };
}

/** How much one side's round does. */
export interface ClusterCounts {
  readonly clients: number;
  readonly seconds: number;
  readonly rounds: number;
}

/** One side's figures over its rounds. */
export interface ClusterSide {
  readonly instances: number;
  readonly turnsPerSecond: ScaleSpread;
  readonly p50Ms: ScaleSpread;
  readonly p99Ms: ScaleSpread;
  readonly errors: number;
  /** CPU ms per turn in the timed window (median over the rounds): the instances, the proxy,
   * and this process (the clients). */
  readonly cpuMsPerTurn: {
    readonly instances: number;
    readonly proxy: number;
    readonly client: number;
  };
  /** Per turn, the median over the rounds: rows inserted and updated by table, transactions. */
  readonly perTurn: {
    readonly inserted: Readonly<Record<string, number>>;
    readonly updated: Readonly<Record<string, number>>;
    readonly deleted: Readonly<Record<string, number>>;
    readonly transactions: number;
  };
}

/** The section's figures. */
export interface ClusterResult {
  readonly runtime: Runtime;
  readonly counts: ClusterCounts;
  /** Whether the phase added `option http-no-delay` to the example config. */
  readonly patched: boolean;
  readonly one: ClusterSide;
  readonly three: ClusterSide;
}

type Counters = { tables: Record<string, [number, number, number]>; commits: number };

async function counters(url: string): Promise<Counters> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const rows = await sql<{ relname: string; ins: string; upd: string; del: string }[]>`
      SELECT relname, n_tup_ins::text AS ins, n_tup_upd::text AS upd, n_tup_del::text AS del
      FROM pg_stat_user_tables WHERE schemaname = 'acp_harness'`;
    const [db] = await sql<{ commits: string }[]>`
      SELECT xact_commit::text AS commits FROM pg_stat_database WHERE datname = current_database()`;
    const tables: Counters["tables"] = {};
    for (const row of rows) {
      tables[row.relname] = [Number(row.ins), Number(row.upd), Number(row.del)];
    }
    return { tables, commits: Number(db?.commits ?? 0) };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Starts HAProxy on the example config; resolves once `/health` answers through it. */
export async function startProxy(
  config: string,
  servers: readonly string[],
): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const env: Record<string, string> = { ACP_LISTEN: `127.0.0.1:${port}` };
  servers.forEach((server, i) => env[`ACP_SERVER_${i + 1}`] = server.replace(/^http:\/\//, ""));
  const child = new Deno.Command("haproxy", {
    args: ["-db", "-f", config],
    env,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const url = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    try {
      child.kill("SIGTERM");
    } catch { /* gone */ }
    await child.status;
  };
  const deadline = performance.now() + 20_000;
  for (;;) {
    const ok = await fetch(`${url}/health`).then(async (r) => {
      await r.body?.cancel();
      return r.ok;
    }, () => false);
    if (ok) return { url, pid: child.pid, stop };
    if (performance.now() > deadline) {
      await stop();
      throw new Error("HAProxy did not answer /health within 20 s");
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

interface Round {
  readonly turns: number;
  readonly seconds: number;
  readonly latencies: number[];
  readonly errors: number;
  readonly cpu: { readonly instances: number; readonly proxy: number; readonly client: number };
  readonly before: Counters;
  readonly after: Counters;
}

async function round(
  config: string,
  runtime: Runtime,
  instances: number,
  url: string,
  counts: ClusterCounts,
): Promise<Round> {
  const before = await counters(url);
  const servers: ListeningServer[] = [];
  const clients: SseClient[] = [];
  let proxy: Awaited<ReturnType<typeof startProxy>> | undefined;
  try {
    for (let i = 0; i < instances; i++) {
      const line = oursCommand(runtime, [
        ...["serve", "--http", "--port", "0", "--store", url],
        ...["--max-connections-per-address", "1000"],
      ]);
      servers.push(await startListening(line, `ours/${runtime} instance ${i}`));
    }
    const addresses = [0, 1, 2].map((i) => (servers[i % servers.length] as ListeningServer).url);
    proxy = await startProxy(config, addresses);
    const proxyUrl = proxy.url;
    for (let i = 0; i < counts.clients; i++) clients.push(new SseClient(`client ${i}`, proxyUrl));
    await inBatches(clients.length, 16, (i) => clients[i]!.initialize());
    const latencies: number[] = [];
    // Sessions and warm-ups first, then the timed window starts for everyone at once.
    const sessions = await inBatches(clients.length, 16, async (i) => {
      const id = await clients[i]!.newSession(ROOT);
      await clients[i]!.prompt(id, "warm up");
      return id;
    });
    const running = proxy;
    const cpuNow = async (): Promise<[number, number, number]> => {
      const each = await Promise.all(servers.map((server) => cpuSeconds(server.child.pid)));
      const usage = process.cpuUsage();
      return [
        each.reduce((a, b) => a + b, 0),
        await cpuSeconds(running.pid),
        (usage.user + usage.system) / 1e6,
      ];
    };
    const cpuBefore = await cpuNow();
    const startedAt = performance.now();
    const until = startedAt + counts.seconds * 1000;
    let errors = 0;
    const turns = await Promise.all(clients.map(async (client, i) => {
      let n = 0;
      while (performance.now() < until) {
        const sent = performance.now();
        try {
          const reply = await client.prompt(sessions[i] as string, `turn ${n}`);
          latencies.push(reply.at - sent);
          n++;
        } catch {
          errors++;
          break;
        }
      }
      return n;
    }));
    const seconds = (performance.now() - startedAt) / 1000;
    const cpuAfter = await cpuNow();
    const cpu = {
      instances: cpuAfter[0] - cpuBefore[0],
      proxy: cpuAfter[1] - cpuBefore[1],
      client: cpuAfter[2] - cpuBefore[2],
    };
    await inBatches(clients.length, 16, (i) => clients[i]!.close().catch(() => {}));
    clients.length = 0;
    await proxy.stop();
    proxy = undefined;
    await Promise.all(servers.map((server) => server.stop()));
    servers.length = 0;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const after = await counters(url);
    const total = turns.reduce((a, b) => a + b, 0);
    return { turns: total, seconds, latencies, errors, cpu, before, after };
  } finally {
    await Promise.all(clients.map((client) => client.abandon()));
    await proxy?.stop();
    await Promise.all(servers.map((server) => server.stop()));
  }
}

function sideOf(instances: number, rounds: readonly Round[]): ClusterSide {
  const perTurn = (pick: (r: Round) => number): number =>
    spreadOf(rounds.map((r) => pick(r) / Math.max(1, r.turns))).median;
  const tables = new Set(rounds.flatMap((r) => Object.keys(r.after.tables)));
  const byTable = (column: 0 | 1 | 2): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const table of tables) {
      const value = perTurn((r) =>
        (r.after.tables[table]?.[column] ?? 0) - (r.before.tables[table]?.[column] ?? 0)
      );
      if (value >= 0.005) out[table] = value;
    }
    return out;
  };
  return {
    instances,
    turnsPerSecond: spreadOf(rounds.map((r) => r.turns / r.seconds)),
    p50Ms: spreadOf(rounds.map((r) => percentile(r.latencies, 0.5))),
    p99Ms: spreadOf(rounds.map((r) => percentile(r.latencies, 0.99))),
    errors: rounds.reduce((sum, r) => sum + r.errors, 0),
    cpuMsPerTurn: {
      instances: perTurn((r) => r.cpu.instances * 1000),
      proxy: perTurn((r) => r.cpu.proxy * 1000),
      client: perTurn((r) => r.cpu.client * 1000),
    },
    perTurn: {
      inserted: byTable(0),
      updated: byTable(1),
      deleted: byTable(2),
      transactions: perTurn((r) => r.after.commits - r.before.commits),
    },
  };
}

/**
 * Measures one and three instances behind HAProxy on a fresh database (dropped after).
 *
 * @param runtime The runtime the instances run on
 * @param postgresUrl The PostgreSQL server
 * @param counts How much to do
 * @returns The figures
 */
export async function measureCluster(
  runtime: Runtime,
  postgresUrl: string,
  counts: ClusterCounts,
  log: (line: string) => void,
): Promise<ClusterResult> {
  await using db = await withTestDatabase(postgresUrl);
  const config = await proxyConfig(TMP);
  const rounds: Record<1 | 3, Round[]> = { 1: [], 3: [] };
  try {
    for (let r = 0; r < counts.rounds; r++) {
      for (const instances of r % 2 === 0 ? [1, 3] as const : [3, 1] as const) {
        const result = await round(config.path, runtime, instances, db.url, counts);
        rounds[instances].push(result);
        log(
          `[bench] scale cluster ${instances} instance(s): ` +
            `${(result.turns / result.seconds).toFixed(0)} turns/s, p99 ` +
            `${percentile(result.latencies, 0.99).toFixed(1)} ms, errors ${result.errors}`,
        );
      }
    }
  } finally {
    if (config.patched) await Deno.remove(config.path).catch(() => {});
  }
  return {
    runtime,
    counts,
    patched: config.patched,
    one: sideOf(1, rounds[1]),
    three: sideOf(3, rounds[3]),
  };
}
