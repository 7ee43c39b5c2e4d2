/**
 * The scale phase of `bench/main.ts` (issue 35, "figures at scale"), run only when named
 * (`deno run -A bench/main.ts --only scale`, about ten minutes): its four parts run one after
 * the other, each in its own file, and this module renders the one `## Scale` section and splices
 * it into `bench/RESULTS.md`, so that a scale run leaves the other sections as they were and a
 * run without it keeps the last measured scale section.
 *
 * - `bench/scale_http.ts`: 1,000 HTTP sessions streaming a turn at once, ours against the SDK's
 *   `AcpServer` with a bare agent;
 * - `bench/scale_store.ts`: 100,000 stored sessions on JSONL and on PostgreSQL against 100;
 * - `bench/scale_long.ts`: a 10,000-turn session against a 400-turn one;
 * - `bench/scale_cluster.ts`: three instances behind HAProxy against one.
 *
 * @module
 */
import os from "node:os";
import { printError } from "../tests/_helpers/print.ts";
import { killAllChildren } from "./agent_process.ts";
import { fixed, ratioOf, ratioText, table, thousands } from "./format.ts";
import { TMP } from "./paths.ts";
import { type ClusterResult, type ClusterSide, measureCluster } from "./scale_cluster.ts";
import { measureScaleHttp, type ScaleHttpResult, type ScaleHttpSide } from "./scale_http.ts";
import { measureScaleLong, type ScaleLongResult } from "./scale_long.ts";
import { bundleBareHttpAgent, type ScaleSpread } from "./scale_serve.ts";
import { measureScaleStores, type ScaleStoreResult } from "./scale_store.ts";
import type { Runtime, Settings } from "./settings.ts";

/** The section's heading, as the splice finds it. */
export const SCALE_HEADING = "## Scale";

/** What the scale phase measured; each part its figures or why not. */
export interface ScaleResult {
  readonly date: string;
  /** The 1-minute load average at the start and the end of the phase. */
  readonly load: readonly [number, number];
  readonly seconds: number;
  readonly http: readonly (ScaleHttpResult | string)[];
  readonly stores: {
    readonly jsonl: ScaleStoreResult;
    readonly postgres: ScaleStoreResult | string;
  } | string;
  readonly long: ScaleLongResult | string;
  readonly cluster: ClusterResult | string;
}

/** Whether the run measures the scale phase: only when `--only` names it. */
export function scaleSelected(settings: Settings): boolean {
  return settings.only?.includes("scale") ?? false;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function part<T>(name: string, task: () => Promise<T>): Promise<T | string> {
  const started = performance.now();
  printError(`[bench] scale: ${name}…`);
  try {
    return await task();
  } catch (error) {
    printError(`[bench] scale: ${name} failed: ${messageOf(error)}`);
    return `failed: ${messageOf(error)}`;
  } finally {
    killAllChildren();
    printError(
      `[bench] scale: ${name} took ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }
}

/**
 * Runs the scale phase: the HTTP part on every runtime of the run (Node.js first, with the most
 * rounds), the others on Node.js (or the run's first runtime).
 *
 * @param settings The run's settings (`--quick` makes every part small)
 * @returns The figures
 */
export async function measureScale(settings: Settings): Promise<ScaleResult> {
  const started = performance.now();
  const loadAtStart = os.loadavg()[0] ?? Number.NaN;
  const quick = settings.quick;
  const runtimes: Runtime[] = [...settings.runtimes].sort((a, b) =>
    (a === "node" ? 0 : 1) - (b === "node" ? 0 : 1)
  );
  const main = runtimes[0] ?? "node";
  const postgresUrl = Deno.env.get("ACP_HARNESS_TEST_POSTGRES") || undefined;
  await bundleBareHttpAgent();
  const http: (ScaleHttpResult | string)[] = [];
  for (const runtime of runtimes) {
    const counts = {
      sessions: quick ? 100 : 1_000,
      deltas: 20,
      chunkDelayMs: 20,
      rounds: quick ? 1 : runtime === main ? 3 : 1,
    };
    const result = await part(
      `1,000 HTTP sessions (${runtime})`,
      () => measureScaleHttp(runtime, counts, printError),
    );
    http.push(typeof result === "string" ? `${runtime}: ${result}` : result);
  }
  const stores = await part(
    "100,000 stored sessions",
    () => measureScaleStores(main, TMP, postgresUrl, quick ? 1 : 5, printError),
  );
  const long = await part(
    "a 10,000-turn session",
    () => measureScaleLong(main, TMP, quick ? 1 : 5, printError),
  );
  const cluster = postgresUrl === undefined
    ? "not measured: ACP_HARNESS_TEST_POSTGRES is not set"
    : await part("three instances behind HAProxy", () =>
      measureCluster(main, postgresUrl, {
        clients: 48,
        seconds: quick ? 3 : 10,
        rounds: quick ? 1 : 3,
      }, printError));
  return {
    date: new Date().toISOString(),
    load: [loadAtStart, os.loadavg()[0] ?? Number.NaN],
    seconds: (performance.now() - started) / 1000,
    http,
    stores,
    long,
    cluster,
  };
}

// ---------------------------------------------------------------------------------------------
// The section

/** `median (min – max)` with `digits` decimals. */
function cell(s: ScaleSpread | undefined, digits = 1): string {
  return s === undefined
    ? "–"
    : `${fixed(s.median, digits)} (${fixed(s.min, digits)} – ${fixed(s.max, digits)})`;
}

function ratio(ours: ScaleSpread | undefined, bare: ScaleSpread | undefined): string {
  return ratioText(ratioOf(ours?.median, bare?.median));
}

function httpRows(results: readonly (ScaleHttpResult | string)[]): string[][] {
  return results.flatMap((r) => {
    if (typeof r === "string") return [[r, "", "", "", "", "", "", ""]];
    const row = (who: string, s: ScaleHttpSide): string[] => [
      `${r.runtime}: ${who}`,
      cell(s.p50Ms),
      cell(s.p99Ms),
      cell(s.maxMs),
      `${s.errors} + ${s.openErrors}`,
      cell(s.peakRssMib, 0),
      cell(s.idleKibPerSession, 0),
      cell(s.wallMs, 0),
    ];
    return [
      row("ours", r.ours),
      row("bare", r.bare),
      [
        `${r.runtime}: ratio`,
        ratio(r.ours.p50Ms, r.bare.p50Ms),
        ratio(r.ours.p99Ms, r.bare.p99Ms),
        ratio(r.ours.maxMs, r.bare.maxMs),
        "",
        ratio(r.ours.peakRssMib, r.bare.peakRssMib),
        ratio(r.ours.idleKibPerSession, r.bare.idleKibPerSession),
        ratio(r.ours.wallMs, r.bare.wallMs),
      ],
    ];
  });
}

function renderHttp(results: readonly (ScaleHttpResult | string)[]): string {
  const first = results.find((r): r is ScaleHttpResult => typeof r !== "string");
  const rounds = results.map((r) => typeof r === "string" ? "" : `${r.runtime} ${r.counts.rounds}`)
    .filter((x) => x !== "").join(", ");
  return [
    `### ${
      thousands(first?.counts.sessions)
    } HTTP sessions at once on one process, each streaming ` +
    `one turn (ms, median (min – max) of the rounds: ${rounds || "none"})`,
    "",
    table(
      [
        "runtime: server",
        "delta → client p50",
        "p99",
        "max",
        "errors",
        "peak RSS (MiB)",
        "idle KiB per session",
        "prompts → last answer",
      ],
      httpRows(results),
    ),
    "",
    "One ACP connection per session over the RFD profile (`POST /acp`, a connection SSE stream " +
    "and a session SSE stream, each a socket of its own), all from the bench's lean clients in one " +
    "Deno process, opened 50 at a time, then every `session/prompt` sent at once. Each turn " +
    `streams ${first?.counts.deltas ?? 20} text deltas from the fake OpenAI-compatible model in ` +
    `the bench process, ${first?.counts.chunkDelayMs ?? 20} ms apart, each stamped with the ` +
    "time the fake server writes it; the latency is stamp → the client reading the " +
    "`agent_message_chunk` carrying it. Ours: `serve --http --stream` on the JSONL store (durable), " +
    "`--mode auto`, the connection and socket limits raised by flags. Bare: the SDK's `AcpServer` " +
    "(`@agentclientprotocol/sdk/experimental/server`) through its `node:http` adapter on the same " +
    "runtime, with a bare agent that streams the same endpoint and sends each delta as one chunk " +
    "(`bench/bare_http_agent.ts`: no store, no history, no limits). Errors: turns that did not end " +
    "`end_turn` with every delta + connections that could not open. Idle KiB per session: VmRSS " +
    "after opening every session minus VmRSS after the warm-up, over the sessions (connection and " +
    "streams included). Peak RSS: VmHWM after the turns. The clients, the fake model and both " +
    "servers share the machine's 2 cores, so the latencies are mostly queueing.",
  ].join("\n");
}

function storeRows(r: ScaleStoreResult): string[][] {
  const row = (what: string, pick: (s: ScaleStoreResult["small"]) => ScaleSpread): string[] => [
    `${r.store}: ${what}`,
    cell(pick(r.small)),
    cell(pick(r.large)),
    ratio(pick(r.large), pick(r.small)),
  ];
  return [
    row("spawn → `initialize`", (s) => s.initializeMs),
    row("first `session/list` page", (s) => s.listMs),
    row("spawn → first page", (s) => s.startToListMs),
    row("`session/load` of one", (s) => s.loadMs),
  ];
}

function renderStores(stores: ScaleResult["stores"]): string {
  const heading =
    "### 100,000 stored sessions against 100, in a fresh server (ms, median (min – max))";
  if (typeof stores === "string") return [heading, "", stores].join("\n");
  const results = [stores.jsonl, ...(typeof stores.postgres === "string" ? [] : [stores.postgres])];
  const generated = results.map((r) => `${r.store} ${fixed(r.large.generateSeconds, 1)} s`).join(
    ", ",
  );
  return [
    heading,
    "",
    table(
      ["store: figure", "100 sessions", "100,000 sessions", "ratio 100,000 / 100"],
      results.flatMap(storeRows),
    ),
    ...(typeof stores.postgres === "string" ? ["", `PostgreSQL: ${stores.postgres}`] : []),
    "",
    `Ours over stdio on ${stores.jsonl.runtime}, ${stores.jsonl.rounds} fresh servers per size after ` +
    "a warm-up, the sizes alternating. Every session is one short turn (six events). The 100,000 " +
    `were generated, not played (${generated}; not a figure): JSONL as the store writes its logs ` +
    "and its index, checked by the store listing and loading them with no warning (no rebuild); " +
    "PostgreSQL as one session through the store's API (which made the schema), copied by " +
    "`INSERT … SELECT` over `generate_series`, then `ANALYZE`. The first `session/list` page is " +
    "the server's first request after `initialize`; the load is of a session from the middle of " +
    "the list.",
  ].join("\n");
}

function renderLong(long: ScaleResult["long"]): string {
  const heading = "### A 10,000-turn session against a 400-turn one (ms, median (min – max))";
  if (typeof long === "string") return [heading, "", long].join("\n");
  const { reference: a, long: b } = long;
  const row = (what: string, pick: (s: typeof a) => ScaleSpread): string[] => [
    what,
    cell(pick(a)),
    cell(pick(b)),
    ratio(pick(b), pick(a)),
  ];
  return [
    heading,
    "",
    table(
      [
        "figure",
        `${thousands(a.turns)} turns (${thousands(a.events)} events, ${fixed(a.logMib, 1)} MiB)`,
        `${thousands(b.turns)} turns (${thousands(b.events)} events, ${fixed(b.logMib, 1)} MiB)`,
        `ratio (events ×${fixed(b.events / a.events, 1)})`,
      ],
      [
        row("`session/load` (replay included)", (s) => s.loadMs),
        row("`session/fork` of it", (s) => s.forkMs),
        row("`/compact` of it", (s) => s.compactMs),
      ],
    ),
    "",
    `Ours over stdio on ${long.runtime} on the JSONL store, a fresh server per round on a fresh ` +
    `copy of the data directory, ${long.rounds} rounds after a warm-up, the lengths alternating. ` +
    "A turn is five events (`turn_start`, `user`, `assistant`, `usage`, `turn_end`; no tool " +
    `calls); a load replays ${thousands(a.frames)} and ${thousands(b.frames)} updates. ` +
    "`/compact` runs on the loaded session with the scripted model giving the summary, so its " +
    "time is the server's: the transcript of the whole history, the estimates, the record. The " +
    "durable sessions section's 10,000-event session is the main run's reference of another " +
    "shape: 400 turns with tool calls, 25 events a turn.",
  ].join("\n");
}

function clusterRow(s: ClusterSide): string[] {
  const writes = Object.values(s.perTurn.inserted).reduce((a, b) => a + b, 0) +
    Object.values(s.perTurn.updated).reduce((a, b) => a + b, 0) +
    Object.values(s.perTurn.deleted).reduce((a, b) => a + b, 0);
  return [
    String(s.instances),
    cell(s.turnsPerSecond, 0),
    cell(s.p50Ms),
    cell(s.p99Ms),
    String(s.errors),
    `${fixed(s.cpuMsPerTurn.instances, 2)} / ${fixed(s.cpuMsPerTurn.proxy, 2)} / ${
      fixed(s.cpuMsPerTurn.client, 2)
    }`,
    fixed(writes, 2),
    fixed(s.perTurn.transactions, 2),
  ];
}

function renderCluster(cluster: ScaleResult["cluster"]): string {
  const heading =
    "### Three instances behind HAProxy against one (median (min – max) of the rounds)";
  if (typeof cluster === "string") return [heading, "", cluster].join("\n");
  const { one, three, counts } = cluster;
  const perTable = (s: ClusterSide): string =>
    Object.entries({ ...s.perTurn.inserted }).map(([t, v]) => `${t} +${fixed(v, 2)}`)
      .concat(Object.entries(s.perTurn.updated).map(([t, v]) => `${t} ~${fixed(v, 2)}`))
      .concat(Object.entries(s.perTurn.deleted).map(([t, v]) => `${t} −${fixed(v, 2)}`))
      .join(", ");
  return [
    heading,
    "",
    table(
      [
        "instances",
        "turns/s",
        "prompt p50 (ms)",
        "p99 (ms)",
        "errors",
        "CPU ms per turn: instances / proxy / clients",
        "rows written per turn",
        "transactions per turn",
      ],
      [clusterRow(one), clusterRow(three)],
    ),
    "",
    `Ratio three / one: throughput ${ratio(three.turnsPerSecond, one.turnsPerSecond)}, p99 ` +
    `${ratio(three.p99Ms, one.p99Ms)}. ${counts.clients} clients (one RFD connection and one ` +
    `session each) prompt back to back for ${counts.seconds} s through HAProxy ` +
    (cluster.patched
      ? "(`examples/deploy/haproxy.cfg` with one line added, `option http-no-delay` in its " +
        "`defaults`: without it HAProxy corks the small SSE chunks and every turn took about " +
        "210 ms, one client alone, measured by hand; otherwise unchanged: sticky `/acp` by " +
        "`Acp-Connection-Id`, health checks)"
      : "(`examples/deploy/haproxy.cfg` unchanged: sticky `/acp` by `Acp-Connection-Id`, " +
        "health checks)") +
    "; for one instance the config's three `server` lines all name it, so the proxy is in " +
    `both. Ours \`serve --http\` on ${cluster.runtime}, echo model, every instance on one ` +
    `PostgreSQL database (the shared test server). ${counts.rounds} rounds per side, alternating. ` +
    "CPU from `/proc/<pid>/stat` of the instances and the proxy and `process.cpuUsage()` of the " +
    "bench (the clients) over the timed window. Rows per turn from `pg_stat_user_tables` " +
    "(read before the instances start and after they exit, so opening the sessions, the warm-up " +
    `and the leases are in it): one instance ${perTable(one)}; three ${perTable(three)} ` +
    "(+ inserted, ~ updated, − deleted). On this 2-core machine the clients, the proxy, " +
    "PostgreSQL and the instances share two cores (and the other work on it): three instances " +
    "cannot be faster than the cores, only show what spreading costs.",
  ].join("\n");
}

/**
 * The `## Scale` section of `bench/RESULTS.md`.
 *
 * @param scale The figures, or undefined when the run did not measure them
 * @returns The section's Markdown
 */
export function renderScaleSection(scale: ScaleResult | undefined): string {
  if (scale === undefined) {
    return [
      `${SCALE_HEADING} (issue 35; not measured: \`deno run -A bench/main.ts --only scale\`)`,
    ].join("\n");
  }
  return [
    `${SCALE_HEADING} (issue 35; measured ${scale.date.slice(0, 16).replace("T", " ")} UTC in ` +
    `${fixed(scale.seconds / 60, 1)} min, 1-minute load average ${fixed(scale.load[0], 2)} → ` +
    `${fixed(scale.load[1], 2)}; no target)`,
    "",
    "Measured by its own phase (`deno run -A bench/main.ts --only scale`, not in a full run; " +
    "`bench/scale.ts`) and spliced in here, so its date and load are its own. The sizing note " +
    "built on these figures is `docs/scaling.md`.",
    "",
    renderHttp(scale.http),
    "",
    renderStores(scale.stores),
    "",
    renderLong(scale.long),
    "",
    renderCluster(scale.cluster),
  ].join("\n");
}

/** The `## Scale` section of a report's text: from its heading to the next `## `, or undefined. */
function sectionOf(text: string): { start: number; end: number } | undefined {
  const start = text.search(/^## Scale\b/m);
  if (start < 0) return undefined;
  const next = text.slice(start + 1).search(/^## /m);
  return { start, end: next < 0 ? text.length : start + 1 + next };
}

/**
 * What `bench/RESULTS.md` becomes: with a scale-only run, the previous report with its scale
 * section replaced (or added before `## Peak RSS`); with a run that did not measure scale, the
 * new report with the previous scale section kept; otherwise the new report.
 *
 * @param rendered The new report
 * @param previous The previous report's text, if any
 * @param onlyScale Whether the run measured nothing but the scale phase
 * @param measured Whether the run measured the scale phase
 * @returns The text to write
 */
export function spliceScaleSection(
  rendered: string,
  previous: string | undefined,
  options: { readonly onlyScale: boolean; readonly measured: boolean },
): string {
  const fresh = sectionOf(rendered);
  const old = previous === undefined ? undefined : sectionOf(previous);
  if (options.onlyScale && previous !== undefined && fresh !== undefined) {
    const section = rendered.slice(fresh.start, fresh.end);
    if (old !== undefined) return previous.slice(0, old.start) + section + previous.slice(old.end);
    const at = previous.search(/^## Peak RSS/m);
    const cut = at < 0 ? previous.length : at;
    return previous.slice(0, cut) + section + previous.slice(cut);
  }
  if (!options.measured && previous !== undefined && old !== undefined && fresh !== undefined) {
    return rendered.slice(0, fresh.start) + previous.slice(old.start, old.end) +
      rendered.slice(fresh.end);
  }
  return rendered;
}
