/**
 * The scale section's 100,000 stored sessions, on the JSONL store and on PostgreSQL, against the
 * same at 100 sessions: in a fresh stdio server each round, spawn → `initialize` answered, the
 * first `session/list` page (request → answer, and spawn → answer), then `session/load` of one
 * session from the middle of the list. The 100 and 100,000 servers alternate round by round.
 *
 * The data is generated fast, not through turns: for JSONL, the log files and the index in the
 * format the store writes (checked by listing and loading with the store in this process, which
 * fails on any warning, so no rebuild); for PostgreSQL, one session through the store's API (which
 * also makes the schema), then `INSERT … SELECT` from `generate_series` copying it into the
 * others, and `ANALYZE`. Every session is one short turn (six events). The generation time is
 * reported beside the figures, not as one.
 *
 * @module
 */
import postgres from "postgres";
import { withTestDatabase } from "../tests/_helpers/postgres.ts";
import { NodeHost } from "../src/host/node_host.ts";
import type { Logger } from "../src/log/logger.ts";
import { JsonlSessionStore } from "../src/store/jsonl_session_store.ts";
import { openPostgresStore } from "../src/store/postgres/postgres_store.ts";
import type { SessionHeader, StoredEvent } from "../src/store/session_store.ts";
import { AgentProcess, oursCommand } from "./agent_process.ts";
import { INITIALIZE_PARAMS } from "./rpc_client.ts";
import { inBatches, type ScaleSpread, spreadOf } from "./scale_serve.ts";
import type { Runtime } from "./settings.ts";

/** The two sizes measured. */
export const STORE_SIZES = [100, 100_000] as const;

/** One store's figures at one size. */
export interface ScaleStoreSide {
  readonly sessions: number;
  /** Spawn → `initialize` answered (ms). */
  readonly initializeMs: ScaleSpread;
  /** `session/list` request → first page (ms), the server's first. */
  readonly listMs: ScaleSpread;
  /** Spawn → first page answered (ms). */
  readonly startToListMs: ScaleSpread;
  /** `session/load` of one session → answer (ms). */
  readonly loadMs: ScaleSpread;
  /** Writing and checking the data (s). */
  readonly generateSeconds: number;
}

/** One store kind's figures. */
export interface ScaleStoreResult {
  readonly store: "JSONL" | "PostgreSQL";
  readonly runtime: Runtime;
  readonly small: ScaleStoreSide;
  readonly large: ScaleStoreSide;
  readonly rounds: number;
}

const DAY_MS = 86_400_000;
const EVENTS_PER_SESSION = 6;

/** A logger that fails on warnings: generated data that makes the store repair is wrong. */
function strictLogger(what: string): Logger {
  const fail = (message: string): never => {
    throw new Error(`${what}: the store warned: ${message}`);
  };
  const quiet = (): void => {};
  return { debug: quiet, info: quiet, warn: fail, error: fail } as unknown as Logger;
}

/** A session's six events: a one-prompt turn with a title and an answer. */
function shortTurn(n: number): StoredEvent[] {
  return [
    { type: "config", model: "echo", mode: "ask" },
    { type: "turn_start" },
    {
      type: "user",
      messageId: crypto.randomUUID(),
      content: [{ type: "text", text: `Look at module ${n % 40} and tell me what it does.` }],
    },
    { type: "title", title: `Module ${n % 40}, session ${n}` },
    {
      type: "assistant",
      messageId: crypto.randomUUID(),
      text: `Module ${n % 40} parses the configuration and hands it to the server. `.repeat(4),
    },
    { type: "turn_end", stopReason: "end_turn" },
  ] as StoredEvent[];
}

/** Writes `count` sessions in the JSONL store's format under `dir`; resolves with a middle id. */
async function writeJsonl(dir: string, cwd: string, count: number): Promise<string> {
  await Deno.mkdir(`${dir}/sessions`, { recursive: true });
  const span = 60 * DAY_MS;
  const start = Date.now() - DAY_MS - span;
  const ids = Array.from({ length: count }, () => crypto.randomUUID());
  const index: string[] = [
    JSON.stringify({ acpHarnessIndex: 1, generation: crypto.randomUUID() }),
  ];
  await inBatches(count, 256, async (n) => {
    const id = ids[n] as string;
    const created = start + Math.floor((n * span) / count);
    const header: SessionHeader = {
      version: 1,
      id,
      cwd,
      additionalDirectories: [],
      createdAt: new Date(created).toISOString(),
    };
    const events = shortTurn(n);
    let text = JSON.stringify(header) + "\n";
    let updatedAt = header.createdAt;
    events.forEach((event, i) => {
      updatedAt = new Date(created + (i + 1) * 1_000).toISOString();
      text += JSON.stringify({ ...event, seq: i + 1, time: updatedAt }) + "\n";
    });
    index[n + 1] = JSON.stringify({
      id,
      cwd,
      additionalDirectories: [],
      title: `Module ${n % 40}, session ${n}`,
      updatedAt,
    });
    await Deno.writeTextFile(`${dir}/sessions/${id}.jsonl`, text);
  });
  await Deno.writeTextFile(`${dir}/index.jsonl`, index.join("\n") + "\n");
  const store = new JsonlSessionStore({
    host: new NodeHost(),
    dataDir: dir,
    logger: strictLogger(dir),
  });
  const page = await store.list({ limit: 100 });
  const middle = ids[Math.floor(count / 2)] as string;
  const loaded = await store.load(middle);
  if (page.sessions.length === 0 || loaded?.records.length !== EVENTS_PER_SESSION) {
    throw new Error(`${dir}: the store does not list or load the generated sessions`);
  }
  return middle;
}

/** Fills the database at `url` with `count` sessions; resolves with a middle id. */
async function writePostgres(url: string, cwd: string, count: number): Promise<string> {
  const template = crypto.randomUUID();
  const opened = await openPostgresStore({ url, logger: strictLogger(url) });
  try {
    await opened.store.create(
      {
        version: 1,
        id: template,
        cwd,
        additionalDirectories: [],
        createdAt: new Date().toISOString(),
      },
      { events: shortTurn(0) },
    );
  } finally {
    await opened.close();
  }
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(
      `INSERT INTO acp_harness.sessions (id, header, cwd, additional_directories, title,
        created_at, updated_at, last_seq, parent_id)
      SELECT g.id, json_build_object('version', 1, 'id', g.id, 'cwd', t.cwd,
          'additionalDirectories', json_build_array(),
          'createdAt', to_char(g.created AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
        t.cwd, '{}', 'Module ' || (g.n % 40) || ', session ' || g.n, g.created,
        g.created + interval '6 seconds', t.last_seq, NULL
      FROM (SELECT n, gen_random_uuid()::text AS id,
          date_trunc('milliseconds', now() - interval '61 days' + n * (interval '60 days' / $1))
            AS created
        FROM generate_series(1, $1 - 1) AS n) AS g,
        (SELECT cwd, last_seq FROM acp_harness.sessions WHERE id = $2) AS t`,
      [count, template],
    );
    await sql.unsafe(
      `INSERT INTO acp_harness.events (session_id, seq, time, event)
      SELECT s.id, e.seq, s.created_at + e.seq * interval '1 second', e.event
      FROM acp_harness.sessions AS s
        CROSS JOIN (SELECT seq, event FROM acp_harness.events WHERE session_id = $1) AS e
      WHERE s.id <> $1`,
      [template],
    );
    await sql.unsafe("ANALYZE acp_harness.sessions");
    await sql.unsafe("ANALYZE acp_harness.events");
    const [row] = await sql.unsafe<{ id: string }[]>(
      `SELECT id FROM acp_harness.sessions ORDER BY created_at DESC, id OFFSET $1 LIMIT 1`,
      [Math.floor(count / 2)],
    );
    if (row === undefined) throw new Error("no generated session");
    const check = await openPostgresStore({ url, logger: strictLogger(url) });
    try {
      const loaded = await check.store.load(row.id);
      const total = await sql.unsafe<{ n: string }[]>(
        "SELECT count(*)::text AS n FROM acp_harness.sessions",
      );
      if (loaded?.records.length !== EVENTS_PER_SESSION || total[0]?.n !== String(count)) {
        throw new Error(`${url}: the store does not load the generated sessions`);
      }
    } finally {
      await check.close();
    }
    return row.id;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

interface Sample {
  readonly initialize: number;
  readonly list: number;
  readonly startToList: number;
  readonly load: number;
}

/** One fresh server: initialize, the first page, the load of `sessionId`. */
async function sample(
  runtime: Runtime,
  location: string,
  sessionId: string,
  cwd: string,
  size: number,
): Promise<Sample> {
  const agent = new AgentProcess(`ours/${runtime}`, oursCommand(runtime, ["--store", location]));
  try {
    const init = await agent.request("initialize", INITIALIZE_PARAMS);
    const sentAt = performance.now();
    const list = await agent.request("session/list", {});
    const page = list.result as { sessions?: unknown[]; nextCursor?: unknown } | null;
    if (
      (page?.sessions?.length ?? 0) === 0 || (typeof page?.nextCursor === "string") !== size > 100
    ) {
      throw new Error(`session/list of ${size} sessions gave a wrong first page`);
    }
    const loadAt = performance.now();
    const loaded = await agent.request("session/load", { sessionId, cwd, mcpServers: [] });
    return {
      initialize: init.at - agent.spawnedAt,
      list: list.at - sentAt,
      startToList: list.at - agent.spawnedAt,
      load: loaded.at - loadAt,
    };
  } finally {
    agent.closeStdin();
    await agent.waitExit();
  }
}

function sideOf(samples: readonly Sample[], sessions: number, seconds: number): ScaleStoreSide {
  return {
    sessions,
    initializeMs: spreadOf(samples.map((s) => s.initialize)),
    listMs: spreadOf(samples.map((s) => s.list)),
    startToListMs: spreadOf(samples.map((s) => s.startToList)),
    loadMs: spreadOf(samples.map((s) => s.load)),
    generateSeconds: seconds,
  };
}

/** Where one size's data is, once written. */
interface Prepared {
  readonly location: string;
  readonly sessionId: string;
  readonly seconds: number;
}

async function measureSizes(
  runtime: Runtime,
  store: ScaleStoreResult["store"],
  cwd: string,
  prepared: readonly [Prepared, Prepared],
  rounds: number,
): Promise<ScaleStoreResult> {
  const samples: [Sample[], Sample[]] = [[], []];
  // A warm-up of each (the runtime's code cache, the page cache), then interleaved rounds.
  for (const which of [0, 1] as const) {
    const p = prepared[which];
    await sample(runtime, p.location, p.sessionId, cwd, STORE_SIZES[which]);
  }
  for (let r = 0; r < rounds; r++) {
    for (const which of r % 2 === 0 ? [0, 1] as const : [1, 0] as const) {
      const p = prepared[which];
      samples[which].push(await sample(runtime, p.location, p.sessionId, cwd, STORE_SIZES[which]));
    }
  }
  return {
    store,
    runtime,
    rounds,
    small: sideOf(samples[0], STORE_SIZES[0], prepared[0].seconds),
    large: sideOf(samples[1], STORE_SIZES[1], prepared[1].seconds),
  };
}

async function timed<T>(task: () => Promise<T>): Promise<{ value: T; seconds: number }> {
  const at = performance.now();
  const value = await task();
  return { value, seconds: (performance.now() - at) / 1000 };
}

/**
 * Measures the JSONL store at 100 and 100,000 sessions under `tmp`, then PostgreSQL (when
 * `postgresUrl` is given) on two fresh databases, dropped after.
 *
 * @param runtime The runtime ours runs on
 * @param tmp A scratch directory (the data goes in a directory of its own, removed after)
 * @param postgresUrl The test server, or undefined to leave PostgreSQL out
 * @param rounds Fresh servers per size
 * @returns The JSONL figures, then PostgreSQL's (or why not)
 */
export async function measureScaleStores(
  runtime: Runtime,
  tmp: string,
  postgresUrl: string | undefined,
  rounds: number,
  log: (line: string) => void,
): Promise<{ jsonl: ScaleStoreResult; postgres: ScaleStoreResult | string }> {
  const dir = await Deno.makeTempDir({ dir: tmp, prefix: "scale_store_" });
  try {
    const cwd = await Deno.realPath(dir);
    const jsonlPrepared = [] as unknown as [Prepared, Prepared];
    for (const [i, size] of STORE_SIZES.entries()) {
      const location = `${cwd}/jsonl_${size}`;
      const { value, seconds } = await timed(() => writeJsonl(location, cwd, size));
      jsonlPrepared[i] = { location, sessionId: value, seconds };
      log(`[bench] scale store: wrote ${size} JSONL sessions in ${seconds.toFixed(1)} s`);
    }
    const jsonl = await measureSizes(runtime, "JSONL", cwd, jsonlPrepared, rounds);
    await Deno.remove(`${cwd}/jsonl_${STORE_SIZES[1]}`, { recursive: true });
    if (postgresUrl === undefined) {
      return { jsonl, postgres: "not measured: ACP_HARNESS_TEST_POSTGRES is not set" };
    }
    await using small = await withTestDatabase(postgresUrl);
    await using large = await withTestDatabase(postgresUrl);
    const pgPrepared = [] as unknown as [Prepared, Prepared];
    for (const [i, db] of [small, large].entries()) {
      const size = STORE_SIZES[i] as number;
      const { value, seconds } = await timed(() => writePostgres(db.url, cwd, size));
      pgPrepared[i] = { location: db.url, sessionId: value, seconds };
      log(`[bench] scale store: wrote ${size} PostgreSQL sessions in ${seconds.toFixed(1)} s`);
    }
    const pg = await measureSizes(runtime, "PostgreSQL", cwd, pgPrepared, rounds);
    return { jsonl, postgres: pg };
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
