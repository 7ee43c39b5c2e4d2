/**
 * The durable-session part of `bench/main.ts`:
 *
 * - data directories written directly in the store's format (`sessions/<id>.jsonl` logs and a
 *   compact `index.jsonl`, as `JsonlSessionStore` documents them), checked by opening them with
 *   the store in this process;
 * - `session/list` first page at 100 and at 10,000 stored sessions, through a real server;
 * - `session/load` of one session of 10,000 events through a real server (to its response, and
 *   to the first replayed `session/update`), against reading and parsing the same log in this
 *   process;
 * - appends per second with `JsonlSessionStore` in this process, awaited commit points, bursts
 *   of commit points (group commit), and appends without a commit point.
 *
 * The servers are started by `bench/phases.ts` (a {@link StartServer}), and `bench/report.ts`
 * renders the figures; this module writes the data and takes the measurements.
 *
 * @module
 */
import type { AppendFileOptions } from "../src/host/host.ts";
import { NodeHost } from "../src/host/node_host.ts";
import type { Logger } from "../src/log/logger.ts";
import { JsonlSessionStore } from "../src/store/jsonl_session_store.ts";
import type {
  SessionHeader,
  SessionSummary,
  StoredEvent,
  StoredRecord,
} from "../src/store/session_store.ts";
import type { BenchAgent } from "./agent_process.ts";
import { INITIALIZE_PARAMS } from "./rpc_client.ts";
import type { AppendMode } from "./settings.ts";
import { median } from "./stats.ts";

/** The part of a running server (an `AgentProcess`) these benchmarks use. */
export type BenchServer = Pick<
  BenchAgent,
  "label" | "messageChunks" | "otherUpdates" | "onUpdateAt" | "request" | "closeStdin" | "waitExit"
>;

/** Starts our server (over stdio) on a data directory. */
export type StartServer = (dataDir: string) => BenchServer;

/** Sizes of the generated data. */
export const STORE_BENCH = {
  /** Sessions of the two `session/list` data directories. */
  listSizes: [100, 10_000],
  /** Events of the `session/load` session (a multiple of {@link STORE_BENCH.turnEvents}). */
  loadEvents: 10_000,
  /** Events of one generated turn; each list session is one turn. */
  turnEvents: 25,
} as const;

// ---------------------------------------------------------------------------------------------
// Generated data

/** The generated data directories, shared by every runtime (nothing in them changes). */
export interface StoreFixture {
  /** The session cwd of the `session/load` session (an existing, empty directory). */
  readonly workspace: string;
  /** Data directories for `session/list`, by number of sessions. */
  readonly listDirs: ReadonlyMap<number, string>;
  readonly load: {
    readonly dataDir: string;
    readonly sessionId: string;
    /** The session's log file. */
    readonly logPath: string;
    readonly logBytes: number;
    readonly events: number;
    /** The `session/update`s a load replays (computed from the events as the server does). */
    readonly replayFrames: number;
  };
  /** Seconds spent writing and checking the data. */
  readonly seconds: number;
}

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;

/** A logger for the sanity checks: any warning (a rebuild, a torn tail) means the data is off. */
function strictLogger(what: string): Logger {
  const fail = (message: string, fields?: Record<string, unknown>): never => {
    throw new Error(`${what}: the store says "${message}" ${JSON.stringify(fields ?? {})}`);
  };
  return { error: fail, warn: fail, info: () => {}, debug: () => {} };
}

/** A few hundred bytes of varied prose. */
function prose(seed: number, length: number): string {
  const words = [
    "the",
    "session",
    "parser",
    "returns",
    "a",
    "config",
    "value",
    "when",
    "index",
    "reads",
    "log",
    "build",
    "fails",
    "test",
    "file",
    "fixes",
    "handler",
    "type",
    "error",
    "module",
  ];
  let text = "";
  for (let i = 0; text.length < length; i++) {
    text += `${words[(seed * 7 + i * 13 + (i >> 2)) % words.length]} `;
    if (i % 11 === 10) text += `${seed + i}. `;
  }
  return text.slice(0, length).trimEnd();
}

/**
 * The events of a realistic conversation, exactly `count` of them (a multiple of 25): turns of
 * 25 events, each a prompt and four model steps, three of them with two tool calls (the second
 * and third steps asking permission for one call), then the answer:
 * `turn_start`, `user`, 3 × (`assistant` with reasoning, text and two calls, `usage`, two
 * `tool_call`s, [a `permission`], two `tool_result`s), `assistant`, `usage`, `turn_end`.
 * The first turn has the session's `config` and `title` instead of its two permissions.
 */
function conversation(count: number, seed = 0): StoredEvent[] {
  const { turnEvents } = STORE_BENCH;
  if (count % turnEvents !== 0) {
    throw new Error(`conversation(): ${count} is not a multiple of ${turnEvents}`);
  }
  const events: StoredEvent[] = [];
  const tools = [
    { name: "read_file", kind: "read", verb: "Read" },
    { name: "edit_file", kind: "edit", verb: "Edit" },
    { name: "run_command", kind: "execute", verb: "Run" },
  ] as const;
  let input = 2_000;
  for (let turn = 0; turn < count / turnEvents; turn++) {
    if (turn === 0) events.push({ type: "config", model: "echo", mode: "ask" });
    events.push({ type: "turn_start" });
    events.push({
      type: "user",
      messageId: crypto.randomUUID(),
      content: [{ type: "text", text: prose(seed + turn, 240) }],
    });
    if (turn === 0) events.push({ type: "title", title: prose(seed, 60) });
    for (let step = 0; step < 4; step++) {
      const stepSeed = seed + turn * 4 + step;
      const tool = tools[step % 3] ?? tools[0];
      const calls = step === 3 ? [] : [0, 1].map((n) => {
        const path = `src/module_${(stepSeed + n) % 40}/file_${stepSeed % 17}.ts`;
        return {
          id: `call_${turn}_${step}_${n}`,
          path,
          rawInput: tool.name === "run_command"
            ? { command: `deno test ${path}` }
            : tool.name === "edit_file"
            ? { path, oldText: prose(stepSeed + n, 40), newText: prose(stepSeed + n + 1, 40) }
            : { path },
        };
      });
      events.push({
        type: "assistant",
        messageId: crypto.randomUUID(),
        thoughtId: crypto.randomUUID(),
        text: prose(stepSeed, step === 3 ? 320 : 120),
        reasoning: prose(stepSeed + 1, 160),
        ...(calls.length === 0 ? {} : {
          toolCalls: calls.map((call) => ({
            id: call.id,
            name: tool.name,
            arguments: JSON.stringify(call.rawInput),
          })),
        }),
      });
      input += 900;
      events.push({
        type: "usage",
        usage: { input, output: 350, cacheRead: input - 1_000 },
        used: input + 350,
        size: 128_000,
      });
      if (calls.length === 0) continue;
      for (const call of calls) {
        events.push({
          type: "tool_call",
          toolCallId: call.id,
          name: tool.name,
          title: `${tool.verb} ${call.path}`,
          kind: tool.kind,
          rawInput: call.rawInput,
          locations: [{ path: `/home/user/project/${call.path}` }],
        });
      }
      if (turn !== 0 && step > 0) {
        events.push({
          type: "permission",
          toolCallId: calls[0]?.id ?? "",
          tool: tool.name,
          answer: "allow_once",
        });
      }
      for (const call of calls) {
        events.push({
          type: "tool_result",
          toolCallId: call.id,
          name: tool.name,
          content: prose(stepSeed + call.id.length, 300),
          isError: false,
          locations: [{ path: `/home/user/project/${call.path}`, line: 1 }],
        });
      }
    }
    events.push({ type: "turn_end", stopReason: "end_turn" });
  }
  if (events.length !== count) throw new Error(`conversation(): made ${events.length} events`);
  return events;
}

/** The `session/update`s `session/load` sends for these events (see `replayUpdates`). */
function replayFrames(events: readonly StoredEvent[]): number {
  let frames = 0;
  let usage = 0;
  for (const event of events) {
    if (event.type === "user") frames += event.content.length;
    else if (event.type === "assistant") frames += (event.reasoning ? 1 : 0) + (event.text ? 1 : 0);
    else if (event.type === "tool_call" || event.type === "tool_result") frames++;
    else if (event.type === "title") frames++;
    else if (event.type === "usage" && event.size !== undefined) usage = 1;
  }
  return frames + usage;
}

/** The log text of a session: the header line, then the records one a line, a second apart. */
function logText(header: SessionHeader, events: readonly StoredEvent[]): {
  text: string;
  updatedAt: string;
  title: string | undefined;
} {
  const start = Date.parse(header.createdAt);
  let text = JSON.stringify(header) + "\n";
  let updatedAt = header.createdAt;
  let title: string | undefined;
  for (const [index, event] of events.entries()) {
    updatedAt = new Date(start + (index + 1) * 1_000).toISOString();
    const record: StoredRecord = { ...event, seq: index + 1, time: updatedAt };
    text += JSON.stringify(record) + "\n";
    if (event.type === "title") title = event.title;
  }
  return { text, updatedAt, title };
}

/** The index line of a session, as the store writes it when it rewrites the index. */
function indexLine(header: SessionHeader, updatedAt: string, title: string | undefined): string {
  const summary: SessionSummary = {
    id: header.id,
    cwd: header.cwd,
    additionalDirectories: header.additionalDirectories,
    ...(title === undefined ? {} : { title }),
    updatedAt,
  };
  return JSON.stringify(summary) + "\n";
}

function indexHeader(): string {
  return JSON.stringify({ acpHarnessIndex: 1, generation: crypto.randomUUID() }) + "\n";
}

/** Runs `task` on every item, at most `limit` at a time. */
async function inBatches<T>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  for (let start = 0; start < items.length; start += limit) {
    await Promise.all(items.slice(start, start + limit).map(task));
  }
}

/**
 * A data directory of `count` short sessions (a one-turn conversation each) spread over 60 days
 * and 25 projects, with a compact index (one line per session, in creation order).
 *
 * @returns The summaries in list order (newest first, ties by id)
 */
async function writeListDataDir(dir: string, count: number): Promise<SessionSummary[]> {
  await Deno.mkdir(`${dir}/sessions`, { recursive: true });
  const now = Date.now() - DAY_MS;
  const span = 60 * DAY_MS;
  const logs: { path: string; text: string }[] = [];
  const summaries: SessionSummary[] = [];
  let index = indexHeader();
  for (let n = 0; n < count; n++) {
    const header: SessionHeader = {
      version: 1,
      id: crypto.randomUUID(),
      cwd: `/home/user/project-${n % 25}`,
      additionalDirectories: [],
      createdAt: new Date(now - span + Math.floor((n * span) / count)).toISOString(),
    };
    const events = conversation(STORE_BENCH.turnEvents, n);
    const { text, updatedAt, title } = logText(header, events);
    logs.push({ path: `${dir}/sessions/${header.id}.jsonl`, text });
    index += indexLine(header, updatedAt, title);
    summaries.push({
      id: header.id,
      cwd: header.cwd,
      additionalDirectories: [],
      ...(title === undefined ? {} : { title }),
      updatedAt,
    });
  }
  await inBatches(logs, 64, (log) => Deno.writeTextFile(log.path, log.text));
  await Deno.writeTextFile(`${dir}/index.jsonl`, index);
  return summaries.sort((a, b) =>
    a.updatedAt !== b.updatedAt ? (a.updatedAt > b.updatedAt ? -1 : 1) : a.id < b.id ? -1 : 1
  );
}

/**
 * Writes the data under `root` (removed first) and checks it with the store: the first page of
 * each list directory is the expected one, and the load session loads whole, all without a
 * warning (no rebuild, no torn tail).
 */
export async function createStoreFixture(root: string): Promise<StoreFixture> {
  const started = performance.now();
  await Deno.remove(root, { recursive: true }).catch(() => {});
  await Deno.mkdir(`${root}/workspace`, { recursive: true });
  const workspace = await Deno.realPath(`${root}/workspace`);
  const host = new NodeHost();

  const listDirs = new Map<number, string>();
  for (const size of STORE_BENCH.listSizes) {
    const dir = `${root}/list-${size}`;
    const expected = await writeListDataDir(dir, size);
    const store = new JsonlSessionStore({ host, dataDir: dir, logger: strictLogger(dir) });
    const page = await store.list({ limit: 100 });
    const ids = page.sessions.map((s) => s.id);
    const want = expected.slice(0, 100).map((s) => s.id);
    if (ids.join() !== want.join() || (page.nextCursor !== undefined) !== (size > 100)) {
      throw new Error(`${dir}: the store's first page is not the generated one`);
    }
    const sample = expected[Math.floor(size / 2)];
    const loaded = sample === undefined ? undefined : await store.load(sample.id);
    if (
      loaded?.records.length !== STORE_BENCH.turnEvents ||
      loaded.records.at(-1)?.time !== sample?.updatedAt
    ) {
      throw new Error(`${dir}: the store does not load a generated session whole`);
    }
    listDirs.set(size, dir);
  }

  const dataDir = `${root}/load`;
  await Deno.mkdir(`${dataDir}/sessions`, { recursive: true });
  const header: SessionHeader = {
    version: 1,
    id: crypto.randomUUID(),
    cwd: workspace,
    additionalDirectories: [],
    createdAt: new Date(Date.now() - 30 * DAY_MS).toISOString(),
  };
  const events = conversation(STORE_BENCH.loadEvents);
  const { text, updatedAt, title } = logText(header, events);
  const logPath = `${dataDir}/sessions/${header.id}.jsonl`;
  await Deno.writeTextFile(logPath, text);
  await Deno.writeTextFile(
    `${dataDir}/index.jsonl`,
    indexHeader() + indexLine(header, updatedAt, title),
  );
  const store = new JsonlSessionStore({ host, dataDir, logger: strictLogger(dataDir) });
  const loaded = await store.load(header.id);
  if (loaded?.records.length !== events.length) {
    throw new Error(`${dataDir}: the store does not load the generated session whole`);
  }
  const listed = (await store.list({ limit: 1 })).sessions[0];
  if (listed?.id !== header.id || listed.updatedAt !== updatedAt) {
    throw new Error(`${dataDir}: the store does not list the generated session`);
  }
  return {
    workspace,
    listDirs,
    load: {
      dataDir,
      sessionId: header.id,
      logPath,
      logBytes: (await Deno.stat(logPath)).size,
      events: events.length,
      replayFrames: replayFrames(events),
    },
    seconds: (performance.now() - started) / 1000,
  };
}

// ---------------------------------------------------------------------------------------------
// session/list and session/load through the server

/** Median, least and most of some samples (ms). */
export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

function spread(values: readonly number[]): Spread {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values) };
}

/** Stops a server: stdin EOF, then its exit; resolves with the time between them (ms). */
async function stop(server: BenchServer): Promise<number> {
  const eofAt = server.closeStdin();
  return await server.waitExit() - eofAt;
}

export interface ListResult {
  /** Round trips by number of stored sessions. */
  readonly small: Spread;
  readonly large: Spread;
  /** Sessions on the first page (the same for both). */
  readonly pageSize: number;
  /** Exit-after-EOF times of the servers (ms). */
  readonly exitMs: readonly number[];
}

/**
 * `session/list` round trips (no cwd, no cursor) against a server on the 100-session data
 * directory and one on the 10,000-session one, alternating call by call after warm-ups.
 */
export async function measureSessionList(
  start: StartServer,
  fixture: StoreFixture,
  options: { readonly warmups: number; readonly runs: number },
): Promise<ListResult> {
  const [smallSize, largeSize] = STORE_BENCH.listSizes;
  const dirs = [fixture.listDirs.get(smallSize), fixture.listDirs.get(largeSize)];
  const servers: BenchServer[] = [];
  for (const dir of dirs) {
    if (dir === undefined) throw new Error("no list data directory");
    const server = start(dir);
    servers.push(server);
    await server.request("initialize", INITIALIZE_PARAMS);
  }
  const samples: number[][] = [[], []];
  const pageSizes = new Set<number>();
  const listOnce = async (which: number): Promise<number> => {
    const server = servers[which] as BenchServer;
    const sentAt = performance.now();
    const reply = await server.request("session/list", {});
    const page = reply.result as { sessions?: unknown[]; nextCursor?: unknown } | null;
    const count = page?.sessions?.length ?? 0;
    const more = typeof page?.nextCursor === "string";
    const size = which === 0 ? smallSize : largeSize;
    if (count === 0 || more !== size > count) {
      throw new Error(
        `${server.label}: session/list on ${size} sessions gave ${count}, more: ${more}`,
      );
    }
    pageSizes.add(count);
    return reply.at - sentAt;
  };
  for (let i = 0; i < options.warmups; i++) {
    for (const which of [0, 1]) await listOnce(which);
  }
  for (let i = 0; i < options.runs; i++) {
    for (const which of i % 2 === 0 ? [0, 1] : [1, 0]) {
      samples[which]?.push(await listOnce(which));
    }
  }
  if (pageSizes.size !== 1) {
    throw new Error(`the first pages differ in size: ${[...pageSizes].join(", ")}`);
  }
  const exitMs: number[] = [];
  for (const server of servers) exitMs.push(await stop(server));
  return {
    small: spread(samples[0] ?? []),
    large: spread(samples[1] ?? []),
    pageSize: [...pageSizes][0] ?? 0,
    exitMs,
  };
}

export interface LoadResult {
  /** Ours: `session/load` request → response, replay included, in a fresh server. */
  readonly load: Spread;
  /** Ours: `session/load` request → the first replayed `session/update` of the session. */
  readonly firstFrame: Spread;
  /** The bare agent, fresh: its prompt request → its response, as many updates sent. */
  readonly bare: Spread;
  /** The bare agent: its prompt request → its first `session/update`. */
  readonly bareFirstFrame: Spread;
  /** Ours / bare, round by round. */
  readonly ratios: readonly number[];
  /** Reading and parsing the log in this process (no target). */
  readonly parse: Spread;
  /** `session/update` notifications per load. */
  readonly frames: number;
  /** Exit-after-EOF time of the last of ours (ms). */
  readonly exitMs: number;
}

/** What the baseline does: read the log, split its lines, `JSON.parse` each. */
async function readAndParse(path: string): Promise<number> {
  const text = await Deno.readTextFile(path);
  let parsed = 0;
  for (const line of text.split("\n")) {
    if (line === "") continue;
    JSON.parse(line);
    parsed++;
  }
  return parsed;
}

/** One timed side of a round: request → response, request → first update (ms). */
interface Timed {
  readonly ms: number;
  readonly firstFrame: number;
}

/**
 * Sends `method` to `server` and times it to its response and to its first `session/update`
 * of `sessionId` (slash-command updates left out); fails unless `frames` updates came before
 * the response.
 */
async function timeUpdates(
  server: BenchServer,
  request: { readonly method: string; readonly params: unknown; readonly sessionId: string },
  frames: number,
): Promise<Timed> {
  let seen = 0;
  let firstAt: number | undefined;
  server.onUpdateAt = (params, at) => {
    if (params.sessionId !== request.sessionId) return;
    // The slash commands follow the answer (they may be read in the same chunk): not replay.
    if (params.update?.sessionUpdate === "available_commands_update") return;
    firstAt ??= at;
    seen++;
  };
  const sentAt = performance.now();
  let reply: { readonly at: number };
  try {
    reply = await server.request(request.method, request.params);
  } finally {
    server.onUpdateAt = undefined;
  }
  if (seen !== frames || firstAt === undefined) {
    throw new Error(
      `${server.label}: ${request.method} sent ${seen} updates before its response, ` +
        `expected ${frames}`,
    );
  }
  return { ms: reply.at - sentAt, firstFrame: firstAt - sentAt };
}

/**
 * `session/load` of the 10,000-event session in a fresh server each round (spawn,
 * `initialize`, then the timed load), against a fresh bare agent each round asked (one
 * prompt: its title, then `BARE_CHUNKS` set to the replay's size less one) to send as many
 * `session/update` notifications, timed the same way; the two alternate in order round by
 * round, after warm-up rounds. The read-and-parse of the log in this process is timed in each
 * round too, for information.
 */
export async function measureSessionLoad(
  servers: { readonly ours: StartServer; readonly bare: (frames: number) => BenchServer },
  fixture: StoreFixture,
  options: { readonly warmups: number; readonly runs: number },
): Promise<LoadResult> {
  const { load } = fixture;
  const params = { sessionId: load.sessionId, cwd: fixture.workspace, mcpServers: [] };
  let exitMs = Number.NaN;
  const ours = async (): Promise<Timed> => {
    const server = servers.ours(load.dataDir);
    await server.request("initialize", INITIALIZE_PARAMS);
    const request = { method: "session/load", params, sessionId: load.sessionId };
    const timed = await timeUpdates(server, request, load.replayFrames);
    exitMs = await stop(server);
    return timed;
  };
  const bare = async (): Promise<Timed> => {
    // The bare agent's first prompt sends a title (`session_info_update`) before its chunks, as
    // ours replays one: one fewer chunk makes as many notifications in all.
    const server = servers.bare(load.replayFrames - 1);
    await server.request("initialize", INITIALIZE_PARAMS);
    const opened = await server.request("session/new", { cwd: fixture.workspace, mcpServers: [] });
    const sessionId = (opened.result as { sessionId: string }).sessionId;
    const prompt = { sessionId, prompt: [{ type: "text", text: "replay" }] };
    const timed = await timeUpdates(
      server,
      { method: "session/prompt", params: prompt, sessionId },
      load.replayFrames,
    );
    await stop(server);
    return timed;
  };
  const parseOnce = async (): Promise<number> => {
    const startedAt = performance.now();
    const parsed = await readAndParse(load.logPath);
    const elapsed = performance.now() - startedAt;
    if (parsed !== load.events + 1) throw new Error(`parsed ${parsed} lines of ${load.logPath}`);
    return elapsed;
  };
  const rounds: { ours: Timed; bare: Timed; parse: number }[] = [];
  for (let i = 0; i < options.warmups + options.runs; i++) {
    const first = i % 2 === 0 ? await ours() : await bare();
    const second = i % 2 === 0 ? await bare() : await ours();
    const round = i % 2 === 0
      ? { ours: first, bare: second, parse: await parseOnce() }
      : { ours: second, bare: first, parse: await parseOnce() };
    if (i >= options.warmups) rounds.push(round);
  }
  return {
    load: spread(rounds.map((r) => r.ours.ms)),
    firstFrame: spread(rounds.map((r) => r.ours.firstFrame)),
    bare: spread(rounds.map((r) => r.bare.ms)),
    bareFirstFrame: spread(rounds.map((r) => r.bare.firstFrame)),
    ratios: rounds.map((r) => r.ours.ms / r.bare.ms),
    parse: spread(rounds.map((r) => r.parse)),
    frames: load.replayFrames,
    exitMs,
  };
}

// ---------------------------------------------------------------------------------------------
// Appends in this process

/** A NodeHost that counts the flushes of session logs and of the index. */
class CountingHost extends NodeHost {
  logSyncs = 0;
  /** Time spent in those flushes. */
  logSyncMs = 0;
  indexSyncs = 0;

  override async syncFile(file: string): Promise<void> {
    this.logSyncs++;
    const startedAt = performance.now();
    try {
      return await super.syncFile(file);
    } finally {
      this.logSyncMs += performance.now() - startedAt;
    }
  }

  override appendFile(
    file: string,
    data: string | Uint8Array,
    options: AppendFileOptions,
  ): Promise<void> {
    if (options.sync) this.indexSyncs++;
    return super.appendFile(file, data, options);
  }
}

/** One way of appending. */

export interface AppendResult {
  readonly mode: AppendMode;
  readonly appends: number;
  readonly seconds: number;
  readonly perSecond: number;
  /** `fdatasync`s of the session log. */
  readonly logSyncs: number;
  /** Mean time of one of them (ms). */
  readonly logSyncMs: number;
  /** Flushed index lines (the index gets a line at most once a second per session). */
  readonly indexSyncs: number;
  /** Bytes each append added to the log (one record and its newline). */
  readonly bytesPerAppend: number;
}

/** The event of every append: one tool result of a few hundred bytes. */
function appendEvent(n: number): StoredEvent {
  return {
    type: "tool_result",
    toolCallId: `call_${n}`,
    name: "read_file",
    content: prose(n, 300),
    isError: false,
    locations: [{ path: `/home/user/project/src/file_${n % 17}.ts`, line: 1 }],
  };
}

/**
 * Appends one event at a time to one session of a fresh store under `root`:
 * `awaited`: `sync: true`, each awaited before the next (every commit point waits for its
 * flush); `burst`: `sync: true`, `burst` appends issued without waiting, then all awaited
 * (group commit shares flushes); `nosync`: `sync: false`, each awaited.
 */
export async function measureAppends(
  root: string,
  mode: AppendMode,
  options: { readonly appends: number; readonly burst: number },
): Promise<AppendResult> {
  const dataDir = `${root}/appends-${mode}`;
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  const host = new CountingHost();
  const store = new JsonlSessionStore({ host, dataDir, logger: strictLogger(dataDir) });
  const id = crypto.randomUUID();
  const lease = await store.acquire(id);
  try {
    await store.create({
      version: 1,
      id,
      cwd: "/home/user/project",
      additionalDirectories: [],
      createdAt: new Date().toISOString(),
    });
    const sync = mode !== "nosync";
    const run = async (count: number, offset: number): Promise<void> => {
      if (mode === "burst") {
        for (let done = 0; done < count; done += options.burst) {
          const size = Math.min(options.burst, count - done);
          const pending: Promise<void>[] = [];
          for (let i = 0; i < size; i++) {
            pending.push(store.append(id, [appendEvent(offset + done + i)], { sync }));
          }
          await Promise.all(pending);
        }
      } else {
        for (let i = 0; i < count; i++) {
          await store.append(id, [appendEvent(offset + i)], { sync });
        }
      }
    };
    const warmups = Math.max(10, Math.floor(options.appends / 20));
    await run(warmups, 0);
    host.logSyncs = 0;
    host.logSyncMs = 0;
    host.indexSyncs = 0;
    const logPath = `${dataDir}/sessions/${id}.jsonl`;
    const sizeBefore = (await Deno.stat(logPath)).size;
    const startedAt = performance.now();
    await run(options.appends, warmups);
    const seconds = (performance.now() - startedAt) / 1000;
    const sizeAfter = (await Deno.stat(logPath)).size;
    const result: AppendResult = {
      mode,
      appends: options.appends,
      seconds,
      perSecond: options.appends / seconds,
      logSyncs: host.logSyncs,
      logSyncMs: host.logSyncs === 0 ? Number.NaN : host.logSyncMs / host.logSyncs,
      indexSyncs: host.indexSyncs,
      bytesPerAppend: (sizeAfter - sizeBefore) / options.appends,
    };
    const loaded = await store.load(id);
    if (loaded?.records.length !== warmups + options.appends) {
      throw new Error(`${dataDir}: ${loaded?.records.length} records after the appends`);
    }
    return result;
  } finally {
    await lease.release();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
}

/**
 * How long `setTimeout(ms)` really takes in this process (mean of `samples`): the group-commit
 * window of an awaited commit point is such a timer.
 */
export async function timerDelayMs(ms: number, samples: number): Promise<number> {
  const startedAt = performance.now();
  for (let i = 0; i < samples; i++) await new Promise((resolve) => setTimeout(resolve, ms));
  return (performance.now() - startedAt) / samples;
}
