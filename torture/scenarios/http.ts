/**
 * `serve --http` against a hostile client: one server per runtime (a token, the scripted model in
 * `--mode auto`, each turn running `sleep` through `run_command`), then five phases (and,
 * before the crowd, the sockets phase of ./http_sockets.ts):
 *
 * 1. hostile traffic: bad and random bodies, wrong content types, lying `Content-Length`s, bodies
 *    over the limit, batches, bad `Acp-Connection-Id`/`Acp-Session-Id`, header injection, every
 *    verb, random paths, `GET`s without `Accept`, malformed WebSocket handshakes and frames,
 *    clients that hang up mid-request and mid-stream, and seeded random requests and frame
 *    sequences; after every batch `/health` and two live connections must answer, and at the end
 *    whole prompts must still run;
 * 2. auth: no token, a wrong one and near misses (prefix, suffix, case, white space, `Basic`, …)
 *    on every route and the WebSocket upgrade: always `401`, and a `session/new` so sent never
 *    creates a session;
 * 3. isolation: connection B sends `session/prompt`, `cancel`, `close`, `set_mode`, `load`, … for
 *    connection A's session while A's turn runs, on every pair of profiles (`/acp`, `/v1/acp/:id`,
 *    WebSocket): A's turn ends `end_turn` with all its updates, B sees nothing of A's;
 * 4. drops: a client vanishes while its turn runs a command: the command is gone (on WebSocket at
 *    once, the turn cancelled; over HTTP the server cannot tell, the turn ends by itself and the
 *    idle limit closes the connection), the session loads on a new connection with nothing
 *    acknowledged lost, and goes on; and a connection whose turn outlasted the idle limit is still
 *    served well within the limit after it;
 * 5. a crowd: many clients open and close connections at random while others prompt; then every
 *    connection is closed (the server's log), nothing is left running, `/health` answers `ok`, and
 *    SIGTERM ends the server with exit code 0.
 *
 * The connection id of `/acp` and the URL key of `/v1/acp/:id` are the connection's capability
 * (with the token): whoever has them is that connection. So B never uses A's; it uses near misses.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pollUntil } from "../../tests/_helpers/wait.ts";
import type { Scenario, ScenarioContext } from "../context.ts";
import {
  findMarked,
  hunt,
  killAll,
  type MarkedProcess,
  waitForProcess,
} from "../../tests/_helpers/marked_processes.ts";
import { random, type Server, writeScript } from "../driver.ts";
import {
  type AcpClient,
  type Answer,
  bearer,
  type HandshakeOptions,
  INITIALIZE,
  KeyedClient,
  OPCODE,
  type Profile,
  PROFILES,
  rawHttp,
  type RawOptions,
  rawRequest,
  RawWebSocket,
  request,
  RfdClient,
  statusOf,
  type Target,
  target as targetOf,
  within,
  withTimeout,
  WsClient,
} from "../http_client.ts";
import { WebSocket as NodeWebSocket } from "ws";
import { MAX_FLOOD_GROWTH_KB, watchMemory } from "./frames.ts";
import { httpLimits } from "./http_limits.ts";
import { missing } from "./kill.ts";
import { sockets as socketsPhase } from "./http_sockets.ts";

/** `--max-message-bytes`: small, so that bodies over it are cheap. */
const LIMIT = 1024 * 1024;
/** `--header-timeout` (s): how long a silent or slowloris socket is kept (./http_sockets.ts). */
const HEADER_S = 2;
/** `--idle-timeout` (s): how soon a vanished HTTP client's connection is closed. */
const IDLE_S = 5;
/** How long the idle check waits after a long turn before its next request (< IDLE_S). */
const PACE_S = 2;
/** The server's process supervisor (src/host/process_guard.ts), by its command line. */
const SUPERVISOR = /acp-harness-supervisor/;
/** Sleeps for what `.delay` in the session's directory says (0.2 s without one). */
const COMMAND = 'sleep "$(cat .delay 2>/dev/null || echo 0.2)"; echo slept';
/** One turn: a thought, text, the command, then text. */
const TURN = [
  {
    thought: "Thinking.",
    text: ["Running ", "it."],
    toolCalls: [{ name: "run_command", arguments: { command: COMMAND } }],
  },
  { text: "Done." },
];

type Rng = () => number;

/** What the phases share. */
interface Env {
  readonly context: ScenarioContext;
  readonly server: Server;
  readonly target: Target;
  /** Where the sessions' directories go. */
  readonly root: string;
  readonly clients: AcpClient[];
  readonly sockets: RawWebSocket[];
  nextBase: number;
  nextKey: number;
  /** Set once the server is gone or wedged: the phases left are skipped. */
  broken: boolean;
}

function choose<T>(rng: Rng, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length)] as T;
}

/** Random latin1 text (any byte). */
function randomBytes(rng: Rng, length: number): string {
  let text = "";
  for (let index = 0; index < length; index++) {
    text += String.fromCharCode(Math.floor(rng() * 256));
  }
  return text;
}

/** Text a header value may carry: control characters replaced. */
function headerSafe(text: string): string {
  return [...text].map((char) => {
    const code = char.charCodeAt(0);
    return code < 0x20 || code === 0x7f ? "x" : char;
  }).join("");
}

/** Random letters and digits. */
function randomWord(rng: Rng, length: number): string {
  const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let word = "";
  for (let index = 0; index < length; index++) word += choose(rng, [...letters]);
  return word;
}

/** A random UUID-shaped id. */
function fakeUuid(rng: Rng): string {
  const hex = (length: number): string =>
    Array.from({ length }, () => Math.floor(rng() * 16).toString(16)).join("");
  return `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`;
}

/** A new client of a profile, with ids of its own. */
function client(env: Env, profile: Profile, key?: string): AcpClient {
  const idBase = env.nextBase;
  env.nextBase += 1_000_000;
  const made = profile === "acp"
    ? new RfdClient(env.target, idBase)
    : profile === "keyed"
    ? new KeyedClient(env.target, idBase, key ?? `k${env.nextKey++}-${env.context.seed}`)
    : new WsClient(env.target, idBase);
  env.clients.push(made);
  return made;
}

/** A session directory; `.delay` sets how long its turns' command sleeps. */
async function workspace(env: Env, name: string, delay?: string): Promise<string> {
  const dir = join(env.root, name);
  await mkdir(dir, { recursive: true });
  if (delay !== undefined) await writeFile(join(dir, ".delay"), delay);
  return dir;
}

/** `/health` answers `ok` within 10 s; otherwise a crash is counted and the server is broken. */
async function alive(env: Env, where: string): Promise<boolean> {
  const health = await request(env.target, `${env.target.url}/health`, {}, 10_000);
  if (health.status === 200 && health.text === "ok") return true;
  env.broken = true;
  if (!env.context.checkCrash(env.server, where)) {
    env.context.fail(
      "crashes",
      where,
      `/health answered ${health.status} "${health.text.slice(0, 80)}" ${health.error ?? ""}: ${
        env.server.stderr.slice(-300)
      }`,
    );
  }
  return false;
}

/** Counts a 5xx (but 501, 503, 505) as `server-error`, and a status not in `expect` as `wrong-status`. */
function checkStatus(
  env: Env,
  label: string,
  status: number,
  expect?: readonly number[],
): void {
  // 501 (method) and 505 (version) are answers to a request a server may not serve; 503 is busy.
  if (status >= 500 && ![501, 503, 505].includes(status)) {
    env.context.fail("other", "server-error", `${label}: ${status}`);
    return;
  }
  if (expect !== undefined && !expect.includes(status)) {
    env.context.fail(
      "other",
      "wrong-status",
      `${label}: ${status === 0 ? "no answer" : status} (expected ${expect.join(" or ")})`,
    );
  }
}

/** The stop reason of a prompt's answer. */
function stopReason(answer: Answer): string | undefined {
  return (answer.frame?.result as { stopReason?: string } | undefined)?.stopReason;
}

/** What a whole turn of the script shows; the parts missing. */
function turnGaps(updates: ReadonlyArray<Record<string, unknown>>): string[] {
  const text = (kind: string): string =>
    updates.filter((update) => update.sessionUpdate === kind)
      .map((update) => (update.content as { text?: string } | undefined)?.text ?? "").join("");
  const gaps: string[] = [];
  if (!text("agent_thought_chunk").includes("Thinking.")) gaps.push("thought");
  if (!text("agent_message_chunk").includes("Running it.")) gaps.push('"Running it."');
  if (!text("agent_message_chunk").includes("Done.")) gaps.push('"Done."');
  if (!updates.some((update) => update.sessionUpdate === "tool_call")) gaps.push("tool_call");
  if (
    !updates.some((update) =>
      update.sessionUpdate === "tool_call_update" && update.status === "completed"
    )
  ) gaps.push("completed command");
  return gaps;
}

/**
 * Runs a whole prompt on a new session of `client`; counts a failure and returns false unless it
 * ends `end_turn` with every update of the turn.
 */
async function wholePrompt(
  env: Env,
  what: string,
  client: AcpClient,
  cwd: string,
): Promise<boolean> {
  const sessionId = await client.newSession(cwd);
  if (sessionId === undefined) {
    env.context.fail("other", "wedged", `${what}: session/new got no session`);
    return false;
  }
  const from = client.frames.length;
  const answer = await client.prompt(sessionId, `${what} prompt`);
  if (stopReason(answer) !== "end_turn") {
    env.context.fail(
      "other",
      answer.frame ? "bad-answer" : "hang",
      `${what}: prompt answered ${JSON.stringify(answer).slice(0, 300)}`,
    );
    return false;
  }
  const gaps = turnGaps(client.updates(sessionId, from));
  if (gaps.length > 0) {
    env.context.fail("other", "missing-update", `${what}: the turn lacked ${gaps.join(", ")}`);
    return false;
  }
  return true;
}

/** The marked processes whose command line matches, once gone or after `ms`. */
async function goneWithin(env: Env, pattern: RegExp, ms: number): Promise<MarkedProcess[]> {
  let left: MarkedProcess[] = [];
  // Processes that are not our children end by no event we can wait on: only /proc tells.
  await pollUntil(async () => {
    left = (await findMarked(env.context.marker)).filter(({ command }) => pattern.test(command));
    return left.length === 0;
  }, { what: `no process running ${pattern}`, timeoutMs: ms, intervalMs: 50 }).catch(() => {});
  return left;
}

/**
 * Waits for `work` while `clients` keep talking (a request a second): a slow stretch of the
 * scenario must not leave them idle long enough for the idle limit.
 */
async function keepingAlive(work: Promise<unknown>, clients: readonly AcpClient[]): Promise<void> {
  const beat = async (live: AcpClient): Promise<void> => {
    while (!(await within(work, 1_000))) await live.call("session/list", {}, 10_000);
  };
  await Promise.all([work, ...clients.map(beat)]);
}

/** Connects a client; counts `connect-failed` and returns false when it could not. */
async function connected(env: Env, what: string, client: AcpClient): Promise<boolean> {
  const problem = await client.connect();
  if (problem === undefined) return true;
  env.context.fail("other", "connect-failed", `${what} (${client.profile}): ${problem}`);
  client.vanish();
  return false;
}

/** Closes a client politely; counts `wrong-status` for a refused DELETE. */
async function closeClient(env: Env, what: string, client: AcpClient): Promise<void> {
  if (!client.opened || client.ended) {
    client.vanish();
    return await client.settled();
  }
  const status = await client.close();
  if (client.profile === "acp") checkStatus(env, `${what}: DELETE`, status, [202]);
  if (client.profile === "keyed") checkStatus(env, `${what}: DELETE`, status, [204]);
  await client.settled();
}

// ---------------------------------------------------------------------------------------------
// 1. Hostile traffic

interface FetchProbe {
  readonly kind: "fetch";
  readonly label: string;
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: string | Uint8Array | ReadableStream<Uint8Array>;
  readonly expect?: readonly number[];
}

interface RawProbe {
  readonly kind: "raw";
  readonly label: string;
  readonly pieces: ReadonlyArray<string | Uint8Array>;
  readonly options?: RawOptions;
  readonly expect?: readonly number[];
  /** The response must not be a 2xx. */
  readonly no2xx?: boolean;
  /** The request tried to inject `X-Injected`: the response must not carry it. */
  readonly injected?: boolean;
}

interface CustomProbe {
  readonly kind: "custom";
  readonly label: string;
  run(env: Env): Promise<void>;
}

type Probe = FetchProbe | RawProbe | CustomProbe;

/** A value, or how to make it when the probe runs (the victims may have been replaced). */
type Lazy<T> = T | (() => T);

function made<T>(value: Lazy<T>): T {
  return typeof value === "function" ? (value as () => T)() : value;
}

/** The live connections the hostile traffic is aimed at (replaced when one is lost). */
interface Victims {
  acp: RfdClient;
  keyed: KeyedClient;
  /** A session of `acp`. */
  session: string;
  readonly cwd: string;
}

async function runProbe(env: Env, probe: Probe): Promise<void> {
  if (probe.kind === "custom") return await probe.run(env);
  if (probe.kind === "raw") {
    const result = await rawHttp(env.target, probe.pieces, probe.options);
    const status = result.status ?? 0;
    checkStatus(env, probe.label, status, probe.expect);
    if (probe.no2xx && status >= 200 && status < 300) {
      env.context.fail("other", "wrong-status", `${probe.label}: ${status}`);
    }
    if (probe.injected && /^x-injected:/im.test(result.head)) {
      env.context.fail("other", "header-injection", `${probe.label}: ${result.head.slice(0, 300)}`);
    }
    return;
  }
  let status = 0;
  let timedOut = false;
  try {
    status = await withTimeout(10_000, async (signal) => {
      const body = probe.body;
      const response = await env.target.fetch(`${env.target.url}${probe.path}`, {
        method: probe.method,
        headers: probe.headers,
        ...(body === undefined ? {} : { body }),
        ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
        signal,
      } as RequestInit);
      await response.body?.cancel().catch(() => {});
      return response.status;
    });
  } catch (error) {
    timedOut = /timed out/.test(String((error as Error)?.message ?? error)) ||
      /timed out/.test(String((error as { cause?: unknown })?.cause ?? ""));
  }
  if (timedOut) {
    env.context.fail("other", "hang", `${probe.label}: no answer within 10 s`);
    return;
  }
  checkStatus(env, probe.label, status, probe.expect);
}

const METHODS = [
  "initialize",
  "session/new",
  "session/load",
  "session/resume",
  "session/list",
  "session/prompt",
  "session/cancel",
  "session/close",
  "session/delete",
  "session/set_mode",
  "session/set_config_option",
  "$/cancel_request",
  "authenticate",
  "torture/unknown",
];

/** A random JSON value, nested up to `depth`. */
function randomValue(rng: Rng, depth: number, sessionId?: string): unknown {
  const roll = rng();
  if (depth <= 0 || roll < 0.3) {
    return choose<unknown>(rng, [
      null,
      true,
      0,
      -1,
      1e308,
      2 ** 53 + 1,
      "",
      "x".repeat(Math.floor(rng() * 3000)),
      "\u0000\ud800\u202e",
      "../../etc/passwd",
      sessionId ?? "s",
    ]);
  }
  if (roll < 0.55) {
    return Array.from(
      { length: Math.floor(rng() * 4) },
      () => randomValue(rng, depth - 1, sessionId),
    );
  }
  const keys = ["sessionId", "cwd", "prompt", "modeId", "mcpServers", "configId", "value", "x"];
  const value: Record<string, unknown> = {};
  for (let index = Math.floor(rng() * 5); index > 0; index--) {
    value[choose(rng, keys)] = randomValue(rng, depth - 1, sessionId);
  }
  return value;
}

/** A random body: JSON-RPC-shaped junk, a mutated message, random bytes or deep nesting. */
function randomBody(rng: Rng, n: number, sessionId?: string): string {
  const roll = rng();
  if (roll < 0.5) {
    return JSON.stringify({
      jsonrpc: choose<unknown>(rng, ["2.0", "2.0", "2.0", "1.0", 2, null]),
      id: choose<unknown>(rng, [`fz-${n}`, -n, n + 0.5, null, {}, [], true, `fz-${n}`]),
      method: choose(rng, METHODS),
      params: randomValue(rng, 3, sessionId),
    });
  }
  if (roll < 0.75) {
    const base = [...JSON.stringify({
      jsonrpc: "2.0",
      id: `fz-${n}`,
      method: choose(rng, METHODS),
      params: { sessionId: sessionId ?? "s", cwd: "/tmp", prompt: [{ type: "text", text: "hi" }] },
    })];
    for (let edits = 1 + Math.floor(rng() * 4); edits > 0; edits--) {
      const at = Math.floor(rng() * base.length);
      if (rng() < 0.5) base.splice(at, 1);
      else base.splice(at, 0, choose(rng, [...'{}[]",:\\0']));
    }
    return base.join("");
  }
  if (roll < 0.9) return randomBytes(rng, Math.floor(rng() * 4000));
  const depth = Math.floor(rng() * 100_000);
  return rng() < 0.5 ? "[".repeat(depth) : '{"a":'.repeat(depth) + "1" + "}".repeat(depth);
}

/** A random request: method, path, headers and body from the hostile repertoire. */
function fuzzProbe(
  env: Env,
  rng: Rng,
  n: number,
  victims: Victims,
): FetchProbe {
  const { acp: victim, keyed, session: victimSession } = victims;
  const method = choose(rng, ["POST", "POST", "POST", "POST", "GET", "DELETE", "PUT", "HEAD"]);
  const paths = [
    "/acp",
    "/acp",
    "/acp",
    `/v1/acp/fz-${n}`,
    "/v1/rpc",
    "/",
    "/health",
    `/v1/acp/${randomWord(rng, 1 + Math.floor(rng() * 140))}`,
    `/acp/${randomWord(rng, 5)}`,
    `/${encodeURIComponent(randomBytes(rng, 12))}`,
  ];
  // The keyed victim only gets POSTs: a GET would take its stream over, a DELETE would end it.
  if (method === "POST") paths.push(`/v1/acp/${keyed.key}`, `/v1/acp/${keyed.key}`);
  const path = choose(rng, paths);
  const headers: Record<string, string> = { ...bearer(env.target) };
  if (rng() < 0.85) {
    headers["content-type"] = choose(rng, [
      "application/json",
      "application/json",
      "application/json; charset=utf-8",
      "text/plain",
      "application/x-ndjson",
      "multipart/form-data; boundary=x",
    ]);
  }
  const connection = choose<string | undefined>(rng, [
    undefined,
    undefined,
    method === "DELETE" ? undefined : victim.connectionId,
    method === "DELETE" ? undefined : victim.connectionId,
    fakeUuid(rng),
    "c".repeat(1000 + Math.floor(rng() * 2000)),
    "",
    headerSafe(randomBytes(rng, 20)),
  ]);
  if (connection !== undefined) headers["acp-connection-id"] = connection;
  const session = choose<string | undefined>(rng, [
    undefined,
    undefined,
    victimSession,
    `s-${n % 5}`,
    "s".repeat(1100),
  ]);
  if (session !== undefined) headers["acp-session-id"] = session;
  const accept = choose<string | undefined>(rng, [
    undefined,
    "text/event-stream",
    "*/*",
    "application/json",
  ]);
  if (accept !== undefined) headers["accept"] = accept;
  const body = method === "POST" || rng() < 0.1 ? randomBody(rng, n, victimSession) : undefined;
  return {
    kind: "fetch",
    label: `fuzz ${n}: ${method} ${path.slice(0, 60)}`,
    method,
    path,
    headers,
    ...(body === undefined || method === "GET" || method === "HEAD" ? {} : { body }),
  };
}

/** The fixed hostile requests (fetch and raw). */
function fixedProbes(env: Env, victims: Victims, rng: Rng): Array<() => Probe> {
  const target = env.target;
  const auth = bearer(target);
  const json = { ...auth, "content-type": "application/json" };
  const keyed = victims.keyed;
  const victimHeaders = (): Record<string, string> => victims.acp.headers();
  const victimJson = (): Record<string, string> => ({
    ...victims.acp.headers(),
    "content-type": "application/json",
  });
  const init = JSON.stringify({
    jsonrpc: "2.0",
    id: "fz-init",
    method: "initialize",
    params: INITIALIZE,
  });
  const list = JSON.stringify({
    jsonrpc: "2.0",
    id: "fz-list",
    method: "session/list",
    params: {},
  });
  const big = JSON.stringify({
    jsonrpc: "2.0",
    id: "fz-big",
    method: "session/list",
    params: { cwd: "x".repeat(LIMIT + 1000) },
  });
  const probes: Array<() => Probe> = [];
  const fetchProbe = (
    label: string,
    method: string,
    path: string,
    headers: Lazy<Record<string, string>>,
    body?: Lazy<NonNullable<FetchProbe["body"]>>,
    expect?: readonly number[],
  ): void => {
    probes.push(() => ({
      kind: "fetch",
      label,
      method,
      path,
      headers: made(headers),
      ...(body === undefined ? {} : { body: made(body) }),
      ...(expect === undefined ? {} : { expect }),
    }));
  };

  // Bodies, on /acp without a connection, on the victim's connection, and on a URL key.
  const bodies: Array<[string, string, readonly number[] | undefined]> = [
    ["an empty body", "", [400]],
    ["truncated JSON", init.slice(0, 30), [400]],
    ["not JSON", "hello", [400]],
    ["a number", "1", [400]],
    ["a string", '"x"', [400]],
    ["null", "null", [400]],
    ["an empty batch", "[]", [400]],
    ["a batch", `[${list},${list}]`, [400]],
    ["a 200,000-deep array", "[".repeat(200_000), [400]],
    ["a 200,000-deep closed array", "[".repeat(200_000) + "]".repeat(200_000), [400]],
    ["a 50,000-deep object", '{"a":'.repeat(50_000) + "1" + "}".repeat(50_000), undefined],
    ["50,000-deep params", deepParams, undefined],
    ["__proto__ keys", '{"__proto__":{"jsonrpc":"2.0"},"constructor":{"prototype":{}}}', undefined],
    ["jsonrpc 1.0", '{"jsonrpc":"1.0","id":"fz-1","method":"session/list","params":{}}', undefined],
    ["an object id", '{"jsonrpc":"2.0","id":{},"method":"session/list","params":{}}', undefined],
    ["a numeric method", '{"jsonrpc":"2.0","id":"fz-2","method":7}', undefined],
    [
      "string params",
      '{"jsonrpc":"2.0","id":"fz-3","method":"session/new","params":"x"}',
      undefined,
    ],
    ["a stray response", '{"jsonrpc":"2.0","id":"fz-4","result":{}}', undefined],
    ["random bytes", randomBytes(rng, 2000), [400]],
    ["NUL bytes", "\0".repeat(100), [400]],
    ["a BOM then JSON", `\ufeff${list}`, undefined],
    [
      "a lone surrogate",
      '{"jsonrpc":"2.0","id":"fz-6","method":"session/list","params":{"cwd":"\\ud800"}}',
      undefined,
    ],
    [
      "a body just under the limit",
      JSON.stringify({
        jsonrpc: "2.0",
        id: "fz-7",
        method: "session/list",
        params: { cwd: "x".repeat(LIMIT - 200) },
      }),
      undefined,
    ],
  ];
  for (const [what, body, expect] of bodies) {
    fetchProbe(`POST /acp, no connection: ${what}`, "POST", "/acp", json, body, expect);
    fetchProbe(`POST /acp, victim connection: ${what}`, "POST", "/acp", victimJson, body, expect);
    fetchProbe(
      `POST /v1/acp/<victim>: ${what}`,
      "POST",
      `/v1/acp/${keyed.key}`,
      json,
      body,
      expect,
    );
  }

  // Content types.
  const types: Array<[string, Record<string, string>, readonly number[] | undefined]> = [
    ["text/plain", { "content-type": "text/plain" }, [415]],
    ["form", { "content-type": "application/x-www-form-urlencoded" }, [415]],
    ["multipart", { "content-type": "multipart/form-data; boundary=x" }, [415]],
    ["application/jsonl", { "content-type": "application/jsonl" }, [415]],
    ["application/json-seq", { "content-type": "application/json-seq" }, [415]],
    ["problem+json", { "content-type": "application/problem+json" }, [415]],
    ["upper case JSON", { "content-type": "APPLICATION/JSON; CHARSET=UTF-8" }, undefined],
    ["JSON as UTF-16", { "content-type": "application/json; charset=utf-16" }, undefined],
    ["two types", { "content-type": "application/json, text/plain" }, undefined],
  ];
  for (const [what, type, expect] of types) {
    fetchProbe(`POST /acp as ${what}`, "POST", "/acp", { ...auth, ...type }, init, expect);
    fetchProbe(
      `POST /v1/acp as ${what}`,
      "POST",
      `/v1/acp/${keyed.key}`,
      { ...auth, ...type },
      list,
      expect,
    );
  }
  // No Content-Type at all (a byte body gets none from fetch).
  const bytes = new TextEncoder().encode(init);
  fetchProbe("POST /acp without a Content-Type", "POST", "/acp", auth, bytes, [415]);
  fetchProbe("POST /v1/acp without a Content-Type", "POST", `/v1/acp/${keyed.key}`, auth, bytes, [
    415,
  ]);

  // Bodies over the limit: declared, and streamed without a length.
  const streamed = (): ReadableStream<Uint8Array> => {
    let sent = 0;
    const chunk = new Uint8Array(64 * 1024).fill(0x61);
    return new ReadableStream({
      pull(controller) {
        if (sent > LIMIT + 128 * 1024) return controller.close();
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
  };
  fetchProbe("POST /acp over the limit", "POST", "/acp", json, big, [413, 0]);
  fetchProbe("POST /acp over the limit, victim connection", "POST", "/acp", victimJson, big, [
    413,
    0,
  ]);
  fetchProbe("POST /v1/acp over the limit", "POST", `/v1/acp/${keyed.key}`, json, big, [413, 0]);
  fetchProbe("POST /acp streamed over the limit", "POST", "/acp", json, streamed, [413, 0]);
  fetchProbe(
    "POST /v1/acp streamed over the limit",
    "POST",
    `/v1/acp/${keyed.key}`,
    json,
    streamed,
    [413, 0],
  );

  // Connection and session ids.
  const prompt = (sessionId: string): string =>
    JSON.stringify({
      jsonrpc: "2.0",
      id: "fz-p",
      method: "session/prompt",
      params: { sessionId, prompt: [{ type: "text", text: "x" }] },
    });
  const ids: Array<[string, string, readonly number[]]> = [
    ["an unknown connection id", fakeUuid(rng), [404]],
    ["a 2,000-character connection id", "c".repeat(2000), [400, 404]],
    ["an empty connection id", "", [400]],
    ["a path as connection id", "../../etc/passwd", [404]],
    ["a latin1 connection id", "\u00e9\u00ff\u00a0x", [404]],
  ];
  for (const [what, id, expect] of ids) {
    fetchProbe(
      `POST /acp with ${what}`,
      "POST",
      "/acp",
      { ...json, "acp-connection-id": id },
      list,
      expect,
    );
    fetchProbe(
      `GET /acp with ${what}`,
      "GET",
      "/acp",
      {
        ...auth,
        "acp-connection-id": id,
        accept: "text/event-stream",
      },
      undefined,
      [...expect, 400, 404],
    );
    fetchProbe(
      `DELETE /acp with ${what}`,
      "DELETE",
      "/acp",
      { ...auth, "acp-connection-id": id },
      undefined,
      [...expect, 400, 404],
    );
  }
  fetchProbe(
    "POST /acp, session header not the params' session",
    "POST",
    "/acp",
    () => ({ ...victimJson(), "acp-session-id": "other" }),
    () => prompt(victims.session),
    [400],
  );
  fetchProbe(
    "POST /acp, a 2,000-character session id",
    "POST",
    "/acp",
    () => ({ ...victimJson(), "acp-session-id": "s".repeat(2000) }),
    prompt("s".repeat(2000)),
    [400],
  );
  fetchProbe(
    "POST /acp, an unknown session",
    "POST",
    "/acp",
    () => ({ ...victimJson(), "acp-session-id": "unknown-session" }),
    prompt("unknown-session"),
    [202],
  );
  fetchProbe(
    "POST /acp, session/prompt without a session header",
    "POST",
    "/acp",
    victimJson,
    () => prompt(victims.session),
    [400],
  );
  fetchProbe("POST /acp, initialize on an open connection", "POST", "/acp", victimJson, init, [
    400,
  ]);

  // GETs without (the right) Accept, second readers, DELETEs of nothing.
  fetchProbe("GET /acp, victim, Accept */*", "GET", "/acp", victimHeaders, undefined, [406]);
  fetchProbe(
    "GET /acp, victim, Accept text/html",
    "GET",
    "/acp",
    () => ({ ...victimHeaders(), accept: "text/html" }),
    undefined,
    [406],
  );
  fetchProbe(
    "GET /acp, no connection",
    "GET",
    "/acp",
    { ...auth, accept: "text/event-stream" },
    undefined,
    [400],
  );
  fetchProbe(
    "GET /acp, victim, a second reader",
    "GET",
    "/acp",
    () => ({ ...victimHeaders(), accept: "text/event-stream" }),
    undefined,
    [409],
  );
  fetchProbe("GET /v1/acp, Accept */*", "GET", "/v1/acp/fz-accept", auth, undefined, [406]);
  fetchProbe(
    "GET /v1/acp, Accept application/json",
    "GET",
    "/v1/acp/fz-accept",
    { ...auth, accept: "application/json" },
    undefined,
    [406],
  );
  fetchProbe(
    "GET /v1/acp, garbage Last-Event-ID",
    "GET",
    "/v1/acp/fz-last",
    {
      ...auth,
      accept: "text/event-stream",
      "last-event-id": "-1e999 \u00ff",
    },
    undefined,
    [200],
  );
  fetchProbe("DELETE /acp, no connection", "DELETE", "/acp", auth, undefined, [400]);
  fetchProbe("DELETE /v1/acp, never opened", "DELETE", "/v1/acp/fz-never", auth, undefined, [404]);

  // Verbs and paths.
  for (const method of ["PUT", "PATCH", "PROPFIND", "FOO", "MKCOL"]) {
    // Parsers may refuse a method they do not know: Node.js with 400, Bun by closing.
    const expect = method === "FOO" ? [405, 400, 501, 0] : [405];
    fetchProbe(`${method} /acp`, method, "/acp", json, list, expect);
    fetchProbe(`${method} /v1/acp`, method, "/v1/acp/fz-verbs", json, list, expect);
    fetchProbe(`${method} /v1/rpc`, method, "/v1/rpc", json, list, expect);
  }
  for (const method of ["HEAD", "OPTIONS"]) {
    for (const path of ["/acp", "/v1/acp/fz-verbs", "/health", "/nowhere"]) {
      fetchProbe(`${method} ${path}`, method, path, auth);
    }
  }
  const paths: Array<[string, readonly number[] | undefined]> = [
    ["/", [404]],
    ["/acp/", undefined],
    ["/ACP", undefined],
    ["/v1/acp", undefined],
    ["/v1/acp/", undefined],
    ["/v1/acp/a/b", [404]],
    [`/v1/acp/${"k".repeat(129)}`, [400]],
    ["/v1/acp/%00", [400]],
    ["/v1/acp/k%20k", [400]],
    ["/v1/acp/%2e%2e", undefined],
    ["/v1/acp/..%2f..%2fhealth", undefined],
    ["/health/", undefined],
    ["/health?x=1", undefined],
    ["/%ff", undefined],
    ["/v1/rpc/x", [404]],
    ["/acp?x=1", undefined],
    [`/${"a".repeat(8000)}`, undefined],
  ];
  for (const [path, expect] of paths) {
    fetchProbe(`GET ${path.slice(0, 40)}`, "GET", path, auth, undefined, expect);
    fetchProbe(`POST ${path.slice(0, 40)}`, "POST", path, json, init, expect);
  }

  // Raw requests: lies about lengths, broken framing, injections, huge heads.
  const A = `Authorization: Bearer ${target.token}`;
  const J = "Content-Type: application/json";
  const C = (): string => `Acp-Connection-Id: ${victims.acp.connectionId}`;
  const raw = (
    label: string,
    pieces: Lazy<ReadonlyArray<string | Uint8Array>>,
    extra: Omit<RawProbe, "kind" | "label" | "pieces"> = {},
  ): void => {
    probes.push(() => ({
      kind: "raw",
      label,
      pieces: made(pieces),
      ...extra,
      // Loose probes may get no answer at all: a short wait; an expected answer gets 10 s.
      options: { waitMs: extra.expect ? 10_000 : 3_000, ...extra.options },
    }));
  };
  const post = (headers: readonly string[], body?: string, length = true): string =>
    rawRequest(target, "POST /acp HTTP/1.1", [A, J, ...headers], body, { length });
  // Once answered 500 by the SDK (seed 454368, fuzz 168): an initialize with an array id.
  raw("initialize whose id is an array, empty Acp-Connection-Id", [
    post(["Acp-Connection-Id: "], init.replace('"id":"fz-init"', '"id":[]')),
  ], { expect: [400] });
  raw("Content-Length 10^15, a small body", [
    post(["Content-Length: 1000000000000000"], list, false),
  ], {
    expect: [413, 400],
  });
  raw("Content-Length beyond 2^64", [
    post(["Content-Length: 99999999999999999999999"], list, false),
  ]);
  raw("Content-Length -1", [post(["Content-Length: -1"], list, false)]);
  raw("Content-Length not a number", [post(["Content-Length: abc"], list, false)]);
  raw("two Content-Lengths", [
    post(["Content-Length: 5", `Content-Length: ${list.length}`], list, false),
  ]);
  raw("Content-Length and chunked", [
    post(
      ["Content-Length: 5", "Transfer-Encoding: chunked"],
      `${list.length.toString(16)}\r\n${list}\r\n0\r\n\r\n`,
      false,
    ),
  ]);
  raw("Content-Length 100, 10 bytes, half-close", [
    post(["Content-Length: 100"], list.slice(0, 10), false),
  ], {
    options: { hangUp: "end" },
  });
  raw("Content-Length 100, 10 bytes, then gone", [
    post(["Content-Length: 100"], list.slice(0, 10), false),
  ], {
    options: { hangUp: "destroy", hangUpAfterMs: 200 },
  });
  raw("Content-Length 5, a longer body", [post(["Content-Length: 5"], list, false)]);
  raw("chunked, a bad chunk size", [
    post(["Transfer-Encoding: chunked"], "zz\r\nabc\r\n0\r\n\r\n", false),
  ]);
  raw("chunked, a 2^64-1 chunk, then gone", [
    post(["Transfer-Encoding: chunked"], "ffffffffffffffff\r\nabc", false),
  ], {
    options: { hangUp: "destroy", hangUpAfterMs: 300 },
  });
  const chunk = "a".repeat(65536);
  raw("chunked over the limit", [
    post(["Transfer-Encoding: chunked"], `${`10000\r\n${chunk}\r\n`.repeat(20)}0\r\n\r\n`, false),
  ], {
    expect: [413, 0],
    options: { waitMs: 10_000 },
  });
  raw("Content-Length over the limit", [post([], big)], {
    expect: [413, 0],
    options: { waitMs: 10_000 },
  });
  raw(
    "a bare LF in a header value",
    () => [post([C(), "Acp-Session-Id: s\nX-Injected: 1"], list)],
    {
      injected: true,
    },
  );
  raw(
    "a bare CR in a header value",
    () => [post([C(), "Acp-Session-Id: s\rX-Injected: 1"], list)],
    {
      injected: true,
    },
  );
  raw("an obs-fold header", () => [post([C(), "Acp-Session-Id: s", " X-Injected: 1"], list)], {
    injected: true,
  });
  raw("CRLF in the request target", [
    `GET /health%0d%0aX-Injected:%201 HTTP/1.1\r\nHost: ${target.host}:${target.port}\r\nConnection: close\r\n\r\n`,
  ], { injected: true });
  raw("a NUL in a header value", () => [post([C(), "Acp-Session-Id: s\0s"], list)]);
  raw("DEL and high bytes in a header value", [post([`Acp-Connection-Id: \x7f\x80\xff`], list)]);
  raw("a header without a colon", [post(["Acp-Connection-Id"], list)]);
  raw("a header name with a space", [post(["Bad Name: x"], list)]);
  raw("a 200 KB header", [post([`X-Big: ${"b".repeat(200_000)}`], list)]);
  raw("5,000 headers", [
    post(Array.from({ length: 5000 }, (_, index) => `X-H${index}: ${index}`), list),
  ]);
  raw("a garbage request line", ["GARBAGE\r\n\r\n"]);
  raw("no HTTP version", ["GET /health\r\n\r\n"]);
  raw("HTTP/9.9", [`GET /health HTTP/9.9\r\nHost: ${target.host}:${target.port}\r\n\r\n`]);
  raw("the HTTP/2 preface", ["PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"]);
  raw("HTTP/1.0 without Host", ["GET /acp HTTP/1.0\r\n\r\n"]);
  raw("no Host", [rawRequest(target, "POST /acp HTTP/1.1", [A, J], list, { host: false })], {
    expect: [400, 403],
  });
  raw("Host evil.example", [
    rawRequest(target, "POST /acp HTTP/1.1", ["Host: evil.example", A, J], list, { host: false }),
  ], { expect: [403] });
  raw("Host 127.0.0.1.evil.example", [
    rawRequest(target, "POST /acp HTTP/1.1", ["Host: 127.0.0.1.evil.example", A, J], list, {
      host: false,
    }),
  ], { expect: [403] });
  raw("two Hosts", [post(["Host: evil.example"], list)], { no2xx: true });
  raw("an absolute URI of another host", [
    rawRequest(target, "POST http://evil.example/acp HTTP/1.1", [A, J], list),
  ]);
  raw("a 100 KB path", [rawRequest(target, `GET /${"p".repeat(100_000)} HTTP/1.1`, [A])]);
  raw("a lower-case method", [rawRequest(target, "get /health HTTP/1.1", [A])]);
  raw("TRACE", () => [rawRequest(target, "TRACE /acp HTTP/1.1", [A, C()])], { no2xx: true });
  raw("CONNECT", [rawRequest(target, `CONNECT ${target.host}:22 HTTP/1.1`, [A])], { no2xx: true });
  raw("pipelined: /health, then garbage", [
    `${
      rawRequest(target, "GET /health HTTP/1.1", [], undefined, { close: false })
    }GARBAGE /\r\n\r\n`,
  ]);
  const slow = post([], list);
  raw("slowloris: a byte at a time, then gone", [...slow.slice(0, 60)], {
    options: { pauseMs: 10, hangUp: "destroy", hangUpAfterMs: 100 },
  });
  raw("Expect: 100-continue, then no body", [
    post(["Expect: 100-continue", "Content-Length: 100"], "", false),
  ]);
  raw("Upgrade: h2c", [post(["Upgrade: h2c", "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA"], list)]);
  raw("Transfer-Encoding: gzip", [post(["Transfer-Encoding: gzip"], list)]);
  raw("Content-Encoding: gzip, a plain body", () => [post([C(), "Content-Encoding: gzip"], list)]);
  raw("GET /acp without Accept", () => [rawRequest(target, "GET /acp HTTP/1.1", [A, C()])], {
    expect: [406],
  });
  raw("GET /v1/acp without Accept", [rawRequest(target, "GET /v1/acp/fz-raw HTTP/1.1", [A])], {
    expect: [406],
  });
  raw("headers, then gone", [post(["Content-Length: 50"], undefined, false)], {
    options: { hangUp: "destroy", hangUpAfterMs: 100 },
  });
  raw("UTF-8 in the request target", [
    Buffer.concat([
      Buffer.from("GET /v1/acp/"),
      Buffer.from("\u00e9\u6f22", "utf8"),
      Buffer.from(
        ` HTTP/1.1\r\nHost: ${target.host}:${target.port}\r\n${A}\r\nConnection: close\r\n\r\n`,
      ),
    ]),
  ]);
  return probes;
}

/** A WebSocket case: a handshake, something done on the socket, and what must follow. */
interface WsCase {
  readonly label: string;
  readonly handshake?: HandshakeOptions;
  /** The handshake must get one of these (101 for a socket; `any`: any but a 5xx). */
  readonly expectStatus?: readonly number[] | "any";
  /** Send `initialize` first (and wait for its answer). */
  readonly initialize?: boolean;
  readonly act?: (socket: RawWebSocket) => void | Promise<void>;
  /** A request sent afterwards must be answered. */
  readonly answers?: boolean;
  /** The server must close with this code. */
  readonly closes?: number;
}

function wsProbe(spec: WsCase): CustomProbe {
  return {
    kind: "custom",
    label: spec.label,
    async run(env: Env): Promise<void> {
      const handshake = await RawWebSocket.open(env.target, {
        headers: [`Authorization: Bearer ${env.target.token}`],
        ...spec.handshake,
      });
      const status = handshake.status ?? 0;
      const expect = spec.expectStatus ?? [101];
      checkStatus(env, spec.label, status, expect === "any" ? undefined : expect);
      const socket = handshake.socket;
      if (!socket) return;
      env.sockets.push(socket);
      try {
        const ask = (id: string, method: string, params: unknown): Promise<boolean> => {
          socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
          return socket.waitForMessage((text) => text.includes(`"id":"${id}"`), 10_000);
        };
        if (spec.initialize) await ask("ws-init", "initialize", INITIALIZE);
        await spec.act?.(socket);
        if (spec.answers) {
          const answered = spec.initialize
            ? await ask("ws-after", "session/list", {})
            : await ask("ws-after", "initialize", INITIALIZE);
          if (!answered && socket.isClosed) {
            env.context.fail(
              "other",
              "connection-lost",
              `${spec.label}: the server closed the socket (${
                socket.closeCode ?? "no close frame"
              })`,
            );
          } else if (!answered) {
            env.context.fail("other", "hang", `${spec.label}: a request after it got no answer`);
          }
        }
        if (spec.closes !== undefined) {
          await within(socket.closed, 10_000);
          if (socket.closeCode !== spec.closes) {
            env.context.fail(
              "other",
              "wrong-close",
              `${spec.label}: closed with ${
                socket.closeCode ?? "no close frame"
              } (expected ${spec.closes})`,
            );
          }
        }
      } finally {
        socket.destroy();
        await socket.closed;
      }
    },
  };
}

/** A request whose params nest 50,000 deep. */
const deepParams = `{"jsonrpc":"2.0","id":"fz-deep","method":"session/list","params":${
  '{"a":'.repeat(50_000)
}1${"}".repeat(50_000)}}`;

function wsProbes(rng: Rng): Probe[] {
  const text = (value: string): Uint8Array => new TextEncoder().encode(value);
  const bytes = (length: number): Uint8Array =>
    Uint8Array.from({ length }, () => Math.floor(rng() * 256));
  const init = JSON.stringify({
    jsonrpc: "2.0",
    id: "ws-frag",
    method: "initialize",
    params: INITIALIZE,
  });
  const fail = [400, 401, 403, 404, 405, 406, 426, 0];
  return [
    wsProbe({
      label: "WebSocket without Sec-WebSocket-Key",
      handshake: { key: null },
      expectStatus: fail,
    }),
    // Deno's upgrade does not check the version or the key's form: lenient, not wrong.
    wsProbe({ label: "WebSocket version 99", handshake: { version: "99" }, expectStatus: "any" }),
    wsProbe({
      label: "WebSocket with a short key",
      handshake: { key: "short" },
      expectStatus: "any",
    }),
    wsProbe({
      label: "WebSocket on /v1/acp/x",
      handshake: { path: "/v1/acp/x" },
      expectStatus: [404],
    }),
    wsProbe({
      label: "WebSocket on /health",
      handshake: { path: "/health" },
      expectStatus: fail.concat(200),
    }),
    wsProbe({
      label: "WebSocket by POST",
      handshake: { method: "POST" },
      expectStatus: fail.concat(415, 101),
    }),
    wsProbe({
      label: "binary frame, then a request",
      act: (socket) => socket.sendFrame({ opcode: OPCODE.binary, payload: bytes(1024) }),
      answers: true,
    }),
    wsProbe({
      label: "text that is not JSON",
      act: (socket) => socket.send("{oops"),
    }),
    wsProbe({
      label: "text that is not UTF-8",
      initialize: true,
      act: (socket) =>
        socket.sendFrame({ opcode: OPCODE.text, payload: new Uint8Array([0xff, 0xfe, 0x80]) }),
    }),
    wsProbe({
      label: "an unmasked frame",
      act: (socket) => socket.sendFrame({ opcode: OPCODE.text, payload: text(init), mask: false }),
    }),
    wsProbe({
      label: "opcode 3",
      initialize: true,
      act: (socket) => socket.sendFrame({ opcode: 3, payload: bytes(10) }),
    }),
    wsProbe({
      label: "RSV1 set",
      act: (socket) => socket.sendFrame({ opcode: OPCODE.text, payload: text(init), rsv: 4 }),
    }),
    wsProbe({
      label: "a 126-byte ping",
      act: (socket) => socket.sendFrame({ opcode: OPCODE.ping, payload: bytes(126) }),
    }),
    wsProbe({
      label: "initialize in three fragments with a ping between",
      act: (socket) => {
        const third = Math.floor(init.length / 3);
        socket.sendFrame({ opcode: OPCODE.text, payload: text(init.slice(0, third)), fin: false });
        socket.sendFrame({ opcode: OPCODE.ping, payload: text("p") });
        socket.sendFrame({
          opcode: OPCODE.continuation,
          payload: text(init.slice(third, 2 * third)),
          fin: false,
        });
        socket.sendFrame({ opcode: OPCODE.continuation, payload: text(init.slice(2 * third)) });
      },
      answers: true,
    }),
    wsProbe({
      label: "a continuation first",
      act: (socket) => socket.sendFrame({ opcode: OPCODE.continuation, payload: text(init) }),
    }),
    wsProbe({
      label: "a frame declaring 2^62 bytes, then gone",
      initialize: true,
      act: (socket) => {
        socket.sendFrame({ opcode: OPCODE.text, payload: bytes(1024), length: 2n ** 62n });
        socket.destroy();
      },
    }),
    wsProbe({
      label: "a text message over the limit",
      initialize: true,
      act: (socket) =>
        socket.send(
          JSON.stringify({ jsonrpc: "2.0", id: 1, method: "x", params: "y".repeat(LIMIT + 1000) }),
        ),
      closes: 1009,
    }),
    wsProbe({
      label: "a binary message over the limit",
      initialize: true,
      act: (socket) =>
        socket.sendFrame({ opcode: OPCODE.binary, payload: new Uint8Array(LIMIT + 1000) }),
      closes: 1009,
    }),
    wsProbe({
      label: "30 pings, then a request",
      initialize: true,
      act: (socket) => {
        for (let index = 0; index < 30; index++) {
          socket.sendFrame({ opcode: OPCODE.ping, payload: text(String(index)) });
        }
      },
      answers: true,
    }),
    // Node.js's `ws` drops a client with more than 60 pings not yet answered (a flood guard).
    wsProbe({
      label: "1,000 pings",
      initialize: true,
      act: (socket) => {
        for (let index = 0; index < 1000; index++) {
          socket.sendFrame({ opcode: OPCODE.ping, payload: text(String(index)) });
        }
      },
    }),
    wsProbe({
      label: "a close frame with code 999",
      act: (socket) =>
        socket.sendFrame({ opcode: OPCODE.close, payload: new Uint8Array([0x03, 0xe7]) }),
    }),
    wsProbe({
      label: "a close frame with a 1-byte payload",
      initialize: true,
      act: (socket) => socket.sendFrame({ opcode: OPCODE.close, payload: new Uint8Array([1]) }),
    }),
    wsProbe({
      label: "half a 64 KB frame, then gone",
      initialize: true,
      act: (socket) => {
        socket.sendFrame({ opcode: OPCODE.text, payload: bytes(32 * 1024), length: 64n * 1024n });
        socket.destroy();
      },
    }),
    wsProbe({
      label: "2,000 junk requests unread, then gone",
      initialize: true,
      act: (socket) => {
        for (let index = 0; index < 2000; index++) {
          socket.send(
            JSON.stringify({
              jsonrpc: "2.0",
              id: `j${index}`,
              method: "session/list",
              params: { x: index },
            }),
          );
        }
        socket.destroy();
      },
    }),
    wsProbe({
      label: "session/new before initialize",
      act: (socket) =>
        socket.send(
          JSON.stringify({
            jsonrpc: "2.0",
            id: "early",
            method: "session/new",
            params: { cwd: "/", mcpServers: [] },
          }),
        ),
    }),
    wsProbe({
      label: "2 MB of random bytes",
      act: (socket) => socket.sendRaw(bytes(2 * 1024 * 1024)),
    }),
    wsProbe({
      label: "a 50,000-deep object, then a request",
      initialize: true,
      act: (socket) => socket.send('{"a":'.repeat(50_000) + "1" + "}".repeat(50_000)),
      answers: true,
    }),
    wsProbe({
      label: "50,000-deep params, then a request",
      initialize: true,
      act: (socket) => socket.send(deepParams),
      answers: true,
    }),
  ];
}

/** A random sequence of WebSocket frames, ended at random. */
function wsFuzz(rng: Rng, n: number): Probe {
  const text = (value: string): Uint8Array => new TextEncoder().encode(value);
  const bytes = (length: number): Uint8Array =>
    Uint8Array.from({ length }, () => Math.floor(rng() * 256));
  const steps: Array<(socket: RawWebSocket) => void> = [];
  for (let count = 1 + Math.floor(rng() * 6); count > 0; count--) {
    const roll = Math.floor(rng() * 10);
    const body = randomBody(rng, n);
    const fin = rng() < 0.8;
    const mask = rng() < 0.9;
    const opcode = Math.floor(rng() * 16);
    const payload = bytes(Math.floor(rng() * 200));
    const code = Math.floor(rng() * 65536);
    steps.push((socket) => {
      if (roll < 4) socket.sendFrame({ opcode: OPCODE.text, payload: text(body), fin, mask });
      else if (roll < 5) socket.sendFrame({ opcode: OPCODE.binary, payload });
      else if (roll < 6) {
        socket.sendFrame({ opcode: OPCODE.ping, payload: payload.subarray(0, 125) });
      } else if (roll < 7) socket.sendFrame({ opcode, payload, fin, mask });
      else if (roll < 8) socket.sendFrame({ opcode: OPCODE.continuation, payload, fin });
      else if (roll < 9) {
        socket.sendFrame({
          opcode: OPCODE.close,
          payload: new Uint8Array([code >> 8, code & 0xff]),
        });
      } else socket.sendRaw(payload);
    });
  }
  const ending = Math.floor(rng() * 3);
  const initialize = rng() < 0.5;
  return wsProbe({
    label: `WebSocket fuzz ${n}`,
    initialize,
    act: async (socket) => {
      for (const step of steps) step(socket);
      if (ending === 0) socket.destroy();
      else if (ending === 1) socket.end();
      else await socket.close(1000, 2_000);
    },
  });
}

/** Clients that hang up mid-stream: the stream can be read again afterwards. */
function disconnectProbes(): Probe[] {
  const reattach = async (
    env: Env,
    label: string,
    status: () => Promise<number>,
  ): Promise<void> => {
    let last = 0;
    // A released stream announces itself by no event: ask again until it is free.
    await pollUntil(async () => (last = await status()) === 200, {
      what: `${label}: the stream attachable again`,
      timeoutMs: 10_000,
      intervalMs: 50,
    }).catch(() => {});
    if (last !== 200) {
      env.context.fail("other", "stream-stuck", `${label}: a new reader got ${last}`);
    }
  };
  /** Opens a stream, reads its head, drops it; resolves with the status. */
  const touch = async (env: Env, url: string, headers: Record<string, string>): Promise<number> => {
    const controller = new AbortController();
    try {
      const response = await env.target.fetch(url, {
        headers: { ...headers, accept: "text/event-stream" },
        signal: controller.signal,
      });
      const status = response.status;
      controller.abort();
      await response.body?.cancel().catch(() => {});
      return status;
    } catch {
      return 0;
    }
  };
  return [
    {
      kind: "custom",
      label: "/acp: connection stream dropped, then read again",
      async run(env: Env): Promise<void> {
        const label = this.label;
        const dropper = client(env, "acp") as RfdClient;
        if (!(await connected(env, label, dropper))) return;
        // Its own reader goes; a raw reader takes the stream and vanishes mid-stream.
        dropper.vanish();
        await dropper.settled();
        const url = `${env.target.url}/acp`;
        const headers = { ...bearer(env.target), "acp-connection-id": dropper.connectionId ?? "" };
        await reattach(env, label, () => touch(env, url, headers));
        await rawHttp(env.target, [rawRequest(env.target, "GET /acp HTTP/1.1", [
          `Authorization: Bearer ${env.target.token}`,
          `Acp-Connection-Id: ${dropper.connectionId}`,
          "Accept: text/event-stream",
        ])], { waitMs: 500, hangUp: "destroy", hangUpAfterMs: 100 });
        await reattach(env, `${label} (raw)`, () => touch(env, url, headers));
        const answer = await request(env.target, url, { method: "DELETE", headers });
        checkStatus(env, `${label}: DELETE`, answer.status, [202]);
      },
    },
    {
      kind: "custom",
      label: "/v1/acp: event stream dropped, then read again",
      async run(env: Env): Promise<void> {
        const label = this.label;
        const dropper = client(env, "keyed") as KeyedClient;
        if (!(await connected(env, label, dropper))) return;
        const headers = bearer(env.target);
        await rawHttp(env.target, [rawRequest(env.target, `GET /v1/acp/${dropper.key} HTTP/1.1`, [
          `Authorization: Bearer ${env.target.token}`,
          "Accept: text/event-stream",
        ])], { waitMs: 500, hangUp: "destroy", hangUpAfterMs: 100 });
        await reattach(env, label, () => touch(env, dropper.url, headers));
        await closeClient(env, label, dropper);
      },
    },
    {
      kind: "custom",
      label: "/v1/acp: a prompt's POST dropped mid-request",
      async run(env: Env): Promise<void> {
        const label = this.label;
        const dropper = client(env, "keyed") as KeyedClient;
        if (!(await connected(env, label, dropper))) return;
        const cwd = await workspace(env, "dropped-post");
        const sessionId = await dropper.newSession(cwd);
        if (sessionId === undefined) {
          env.context.fail("other", "wedged", `${label}: no session`);
          return await closeClient(env, label, dropper);
        }
        const { id, message } = dropper.message("session/prompt", {
          sessionId,
          prompt: [{ type: "text", text: "dropped" }],
        });
        const body = JSON.stringify(message);
        await rawHttp(env.target, [rawRequest(env.target, `POST /v1/acp/${dropper.key} HTTP/1.1`, [
          `Authorization: Bearer ${env.target.token}`,
          "Content-Type: application/json",
        ], body)], { waitMs: 1_000, hangUp: "destroy", hangUpAfterMs: 20 });
        // The answer still goes out on the event stream, which is attached.
        if (!(await dropper.waitFor(() => dropper.responseOf(id) !== undefined, 15_000))) {
          env.context.fail(
            "other",
            "hang",
            `${label}: the prompt's answer never came on the stream`,
          );
        }
        await closeClient(env, label, dropper);
      },
    },
    {
      kind: "custom",
      label: "/acp: a POST body cut short, then gone",
      async run(env: Env): Promise<void> {
        const label = this.label;
        const dropper = client(env, "acp") as RfdClient;
        if (!(await connected(env, label, dropper))) return;
        await rawHttp(env.target, [rawRequest(
          env.target,
          "POST /acp HTTP/1.1",
          [
            `Authorization: Bearer ${env.target.token}`,
            "Content-Type: application/json",
            `Acp-Connection-Id: ${dropper.connectionId}`,
            "Content-Length: 500",
          ],
          '{"jsonrpc":"2.0","id":1,"method":"session/li',
          { length: false },
        )], {
          waitMs: 500,
          hangUp: "destroy",
          hangUpAfterMs: 50,
        });
        const answer = await dropper.call("session/list", {}, 10_000);
        if (answer.frame === undefined) {
          env.context.fail(
            "other",
            "wedged",
            `${label}: session/list afterwards: ${answer.status}`,
          );
        }
        await closeClient(env, label, dropper);
      },
    },
  ];
}

/** Connects the victims (again, when one was lost); false when the server refuses. */
async function connectVictims(
  env: Env,
  victims: Partial<Victims> & { cwd: string },
): Promise<boolean> {
  if (victims.acp === undefined || victims.acp.ended) {
    const acp = client(env, "acp") as RfdClient;
    if (!(await connected(env, "hostile: the /acp victim", acp))) return false;
    const session = await acp.newSession(victims.cwd);
    if (session === undefined) return false;
    victims.acp = acp;
    victims.session = session;
  }
  if (victims.keyed === undefined || victims.keyed.ended) {
    // The same URL key: the probes aim at it.
    const keyed = client(env, "keyed", victims.keyed?.key) as KeyedClient;
    if (!(await connected(env, "hostile: the /v1/acp victim", keyed))) return false;
    victims.keyed = keyed;
  }
  return true;
}

async function hostile(env: Env): Promise<void> {
  const { context } = env;
  const rng = random(context.seed + 21);
  const partial: Partial<Victims> & { cwd: string } = { cwd: await workspace(env, "victim") };
  if (!(await connectVictims(env, partial))) throw new Error("Cannot connect the victims");
  const victims = partial as Victims;
  let probes: Array<() => Probe> = [
    ...fixedProbes(env, victims, rng),
    ...[...wsProbes(rng), ...disconnectProbes()].map((probe) => () => probe),
  ];
  if (context.size === "test") probes = probes.filter((_, index) => index % 4 === 0);
  const fuzz = context.pick(300, 80, 24);
  for (let n = 0; n < fuzz; n++) probes.push(() => fuzzProbe(env, rng, n, victims));
  const frames = context.pick(40, 12, 4);
  for (let n = 0; n < frames; n++) {
    const probe = wsFuzz(rng, n);
    probes.push(() => probe);
  }
  const batch = 12;
  for (let start = 0; start < probes.length; start += batch) {
    // Made one after another, so that the random choices do not depend on timing.
    const slice = probes.slice(start, start + batch).map((make) => make());
    await keepingAlive(
      Promise.all(slice.map((probe) => runProbe(env, probe))),
      [victims.acp, victims.keyed],
    );
    context.run(slice.length);
    const where = `hostile: after "${slice[0]?.label}" and ${slice.length - 1} more`;
    if (!(await alive(env, where))) return;
    // The live connections still answer. (A URL key whose connection is gone gets a new one,
    // which answers "not initialized".)
    for (const live of [victims.acp, victims.keyed]) {
      const answer = await live.call("session/list", { cwd: victims.cwd }, 10_000);
      if (answer.frame !== undefined && "result" in answer.frame) continue;
      const lost = answer.status === 404 ||
        JSON.stringify(answer.frame ?? "").includes("must be initialized");
      context.fail(
        "other",
        lost ? "connection-lost" : "wedged",
        `${where}: the ${live.profile} victim's session/list: ${
          JSON.stringify(answer).slice(0, 200)
        }; ${lastLines(env.server.stderr, /router stopped|failed|Error|idle/)}`,
      );
      live.vanish();
      await live.settled();
    }
    if (!(await connectVictims(env, victims))) {
      env.broken = true;
      context.fail("other", "wedged", `${where}: new victims cannot connect`);
      return;
    }
  }
  // Clean clients can still run whole prompts (both at once: neither sits idle meanwhile).
  await Promise.all([victims.acp, victims.keyed].map(async (live) => {
    context.run();
    const what = `hostile: the ${live.profile} victim`;
    await wholePrompt(env, what, live, await workspace(env, `victim-${live.profile}`));
    await closeClient(env, what, live);
  }));
}

/** The last line of `text` matching `pattern` (for a failure's example). */
function lastLines(text: string, pattern: RegExp): string {
  return text.split("\n").filter((line) => pattern.test(line)).slice(-1).join(" ").slice(0, 300);
}

// ---------------------------------------------------------------------------------------------
// 2. Auth

/** Ways to almost have the token: `[label, headers]`, all of which must get 401. */
function nearMisses(token: string, rng: Rng): Array<[string, Record<string, string>]> {
  const swap = (text: string, at: number): string => {
    const char = text[at] ?? "";
    const other = char === char.toUpperCase() ? char.toLowerCase() : char.toUpperCase();
    return text.slice(0, at) + other + text.slice(at + 1);
  };
  const letter = [...token].findIndex((char) => /[a-zA-Z]/.test(char));
  const wrong = randomWord(rng, token.length);
  const auth = (value: string): Record<string, string> => ({ authorization: value });
  return [
    ["no token", {}],
    ["Bearer alone", auth("Bearer")],
    ["Bearer and spaces", auth("Bearer    ")],
    ["a wrong token", auth(`Bearer ${wrong}`)],
    ["the token but its last character", auth(`Bearer ${token.slice(0, -1)}`)],
    ["the token but its first character", auth(`Bearer ${token.slice(1)}`)],
    ["the token and one more", auth(`Bearer ${token}x`)],
    ["the token twice", auth(`Bearer ${token}${token}`)],
    ["the token, a space, the token", auth(`Bearer ${token} ${token}`)],
    ["the token in upper case", auth(`Bearer ${token.toUpperCase()}`)],
    ["the token in lower case", auth(`Bearer ${token.toLowerCase()}`)],
    ["one letter's case swapped", auth(`Bearer ${swap(token, letter)}`)],
    ["a space inside", auth(`Bearer ${token.slice(0, 8)} ${token.slice(8)}`)],
    ["a tab inside", auth(`Bearer ${token.slice(0, 8)}\t${token.slice(8)}`)],
    ["quoted", auth(`Bearer "${token}"`)],
    ["base64", auth(`Bearer ${btoa(token)}`)],
    ["Basic user:token", auth(`Basic ${btoa(`user:${token}`)}`)],
    ["Basic token:", auth(`Basic ${btoa(`${token}:`)}`)],
    ["Basic and the raw token", auth(`Basic ${token}`)],
    ["no scheme", auth(token)],
    ["Token scheme", auth(`Token ${token}`)],
    ["Bearer: with a colon", auth(`Bearer:${token}`)],
    ["Bearer= with an equals sign", auth(`Bearer=${token}`)],
    ["BearerX", auth(`BearerX ${token}`)],
    ["Digest", auth(`Digest username="u", response="${token}"`)],
    ["a cookie", { cookie: `token=${token}; acp_token=${token}` }],
    ["X-Api-Key", { "x-api-key": token }],
    ["Proxy-Authorization", { "proxy-authorization": `Bearer ${token}` }],
    ["X-Authorization", { "x-authorization": `Bearer ${token}` }],
    ["X-Forwarded-Authorization", { "x-forwarded-authorization": `Bearer ${token}` }],
  ];
}

async function auth(env: Env): Promise<void> {
  const { context, target } = env;
  const rng = random(context.seed + 22);
  const good = client(env, "acp") as RfdClient;
  const keyed = client(env, "keyed") as KeyedClient;
  for (const live of [good, keyed]) {
    if (!(await connected(env, "auth: a good client", live))) {
      throw new Error("Cannot connect a good client");
    }
  }
  const unauthCwd = await workspace(env, "unauthorized");
  let sent = 0;
  const sessionNew = (): string =>
    JSON.stringify({
      jsonrpc: "2.0",
      id: `unauth-${sent++}`,
      method: "session/new",
      params: { cwd: unauthCwd, mcpServers: [] },
    });
  const initialize = (): string =>
    JSON.stringify({
      jsonrpc: "2.0",
      id: `unauth-${sent++}`,
      method: "initialize",
      params: INITIALIZE,
    });
  const json = { "content-type": "application/json" };
  const sse = { accept: "text/event-stream" };
  const conn = { "acp-connection-id": good.connectionId ?? "" };
  const routes: Array<
    {
      label: string;
      method: string;
      path: string;
      headers: Record<string, string>;
      body?: () => string;
    }
  > = [
    {
      label: "POST /acp initialize",
      method: "POST",
      path: "/acp",
      headers: json,
      body: initialize,
    },
    {
      label: "POST /acp session/new on a live connection",
      method: "POST",
      path: "/acp",
      headers: { ...json, ...conn },
      body: sessionNew,
    },
    {
      label: "GET /acp, a live connection's stream",
      method: "GET",
      path: "/acp",
      headers: { ...sse, ...conn },
    },
    { label: "DELETE /acp, a live connection", method: "DELETE", path: "/acp", headers: conn },
    {
      label: "POST /v1/acp/<live> session/new",
      method: "POST",
      path: `/v1/acp/${keyed.key}`,
      headers: json,
      body: sessionNew,
    },
    { label: "GET /v1/acp/<live>", method: "GET", path: `/v1/acp/${keyed.key}`, headers: sse },
    { label: "DELETE /v1/acp/<live>", method: "DELETE", path: `/v1/acp/${keyed.key}`, headers: {} },
    {
      label: "POST /v1/acp/<new> initialize",
      method: "POST",
      path: "/v1/acp/unauth-new",
      headers: json,
      body: initialize,
    },
    {
      label: "POST /v1/rpc session/new",
      method: "POST",
      path: "/v1/rpc",
      headers: json,
      body: sessionNew,
    },
    { label: "GET /nowhere", method: "GET", path: "/nowhere", headers: {} },
  ];
  let misses = nearMisses(target.token, rng);
  if (context.size === "test") misses = misses.filter((_, index) => index % 3 === 0);
  const verdict = (label: string, status: number, allowed: readonly number[]): void => {
    context.run();
    if (status === 101 || (status >= 200 && status < 300)) {
      context.fail("escapes", "auth-bypass", `${label}: ${status}`);
    } else if (!allowed.includes(status)) {
      checkStatus(env, label, status, allowed);
    }
  };
  const checks: Array<() => Promise<void>> = [];
  for (const [what, headers] of misses) {
    for (const route of routes) {
      checks.push(async () => {
        const status = await statusOf(target, `${target.url}${route.path}`, {
          method: route.method,
          headers: { ...route.headers, ...headers },
          ...(route.body ? { body: route.body() } : {}),
        });
        verdict(`${route.label} with ${what}`, status, [401]);
      });
    }
    for (const [suffix, name] of [["?token=", "token"], ["?access_token=", "access_token"]]) {
      checks.push(async () => {
        const status = await statusOf(target, `${target.url}/acp${suffix}${target.token}`, {
          method: "POST",
          headers: { ...json, ...headers },
          body: initialize(),
        });
        verdict(`POST /acp?${name}=<token> with ${what}`, status, [401]);
      });
    }
    checks.push(async () => {
      const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
      const handshake = await RawWebSocket.open(target, { headers: lines });
      handshake.socket?.destroy();
      await handshake.socket?.closed;
      verdict(`WebSocket upgrade with ${what}`, handshake.status ?? 0, [401]);
    });
  }
  // Only a raw request can send these; the server's parser may refuse them with 400 first.
  const rawMisses: Array<[string, string[]]> = [
    ["a NUL after the token", [`Authorization: Bearer ${target.token}\0`]],
    ["two wrong Authorization headers", [
      "Authorization: Bearer x",
      `Authorization: Basic ${btoa(target.token)}`,
    ]],
    ["a full-width letter", [
      `Authorization: Bearer ${target.token.slice(0, -1)}\u00ef\u00bc\u00a1`,
    ]],
    ["a token of high bytes", [
      `Authorization: Bearer ${headerSafe(randomBytes(rng, 20))}`,
    ]],
    ["a 100 KB token", [`Authorization: Bearer ${target.token}${"t".repeat(100_000)}`]],
  ];
  for (const [what, headers] of rawMisses) {
    checks.push(async () => {
      const result = await rawHttp(target, [rawRequest(target, "POST /acp HTTP/1.1", [
        ...headers,
        "Content-Type: application/json",
        `Acp-Connection-Id: ${good.connectionId}`,
      ], sessionNew())]);
      verdict(`POST /acp session/new with ${what}`, result.status ?? 0, [401, 400, 431, 0]);
    });
  }
  await keepingAlive(
    (async () => {
      for (let start = 0; start < checks.length; start += 16) {
        await Promise.all(checks.slice(start, start + 16).map((check) => check()));
      }
    })(),
    [good, keyed],
  );
  if (!(await alive(env, "auth"))) return;
  // Nothing of it reached ACP: no session in that directory, no answer to those requests.
  for (const live of [good, keyed]) {
    const answer = await live.call("session/list", { cwd: unauthCwd }, 10_000);
    const sessions = (answer.frame?.result as { sessions?: unknown[] } | undefined)?.sessions;
    if (sessions === undefined) {
      context.fail(
        "other",
        "wedged",
        `auth: the ${live.profile} client's session/list: ${JSON.stringify(answer)}`,
      );
    } else if (sessions.length > 0) {
      context.fail(
        "escapes",
        "auth-bypass",
        `auth: a session was made without the token: ${JSON.stringify(sessions[0])}`,
        sessions.length,
      );
    }
    const leaked = live.frames.filter((frame) => String(frame.id ?? "").startsWith("unauth-"));
    if (leaked.length > 0) {
      context.fail(
        "escapes",
        "auth-bypass",
        `auth: an unauthorized request was answered: ${JSON.stringify(leaked[0]).slice(0, 200)}`,
        leaked.length,
      );
    }
    // The DELETEs and GETs without the token ended or stole nothing.
    await wholePrompt(
      env,
      `auth: the ${live.profile} client afterwards`,
      live,
      await workspace(env, `auth-${live.profile}`),
    );
    await closeClient(env, `auth: the ${live.profile} client`, live);
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Isolation

/** Near misses of an id: what a guessing client would try. */
function nearIds(id: string): string[] {
  const last = id.at(-1) ?? "x";
  const other = last === "0" ? "1" : "0";
  return [
    `${id.slice(0, -1)}${other}`,
    id.toUpperCase() === id ? id.toLowerCase() : id.toUpperCase(),
    `${id}x`,
    id.slice(0, -1),
  ];
}

async function isolation(env: Env): Promise<void> {
  const { context } = env;
  const pairs: Array<[Profile, Profile]> = [];
  for (const a of PROFILES) for (const b of PROFILES) pairs.push([a, b]);
  const chosen = context.size === "test" ? pairs.filter((_, index) => index % 4 === 0) : pairs;
  const rounds = context.pick(2, 1, 1);
  const cases: Array<[Profile, Profile, number]> = [];
  for (let round = 0; round < rounds; round++) {
    for (const [a, b] of chosen) cases.push([a, b, cases.length]);
  }
  // A round of all pairs at once: every connection's traffic mixed with the others'.
  for (let start = 0; start < cases.length; start += chosen.length) {
    await Promise.all(
      cases.slice(start, start + chosen.length).map(([a, b, n]) => isolationRound(env, a, b, n)),
    );
    if (!(await alive(env, "isolation"))) return;
  }
}

async function isolationRound(env: Env, a: Profile, b: Profile, n: number): Promise<void> {
  const { context, target } = env;
  const label = `isolation ${n} (A ${a}, B ${b})`;
  const owner = client(env, a);
  // A guessing B on the URL-keyed profile uses a near miss of A's key.
  const nearKey = owner instanceof KeyedClient ? nearIds(owner.key)[n % 4] : undefined;
  const other = client(env, b, b === "keyed" ? nearKey : undefined);
  try {
    if (!(await connected(env, label, owner)) || !(await connected(env, label, other))) return;
    const cwdA = await workspace(env, `iso-${n}-a`, "2.5");
    const sessionId = await owner.newSession(cwdA);
    const mine = await other.newSession(await workspace(env, `iso-${n}-b`));
    if (sessionId === undefined || mine === undefined) {
      context.fail("other", "wedged", `${label}: session/new failed`);
      return;
    }
    const secret = `isolation ${n} secret ${context.seed}`;
    const from = owner.frames.length;
    const { id: promptId, message } = owner.message("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: secret }],
    });
    const turn = owner.callWith(promptId, message, 30_000);
    const running = await owner.waitFor(
      () => owner.updates(sessionId, from).some((update) => update.sessionUpdate === "tool_call"),
      10_000,
    );
    if (!running) context.fail("other", "hang", `${label}: A's command did not start`);
    // B listens where answers about A's session would come to it.
    await other.watch(sessionId);
    // B guesses A's connection id (near misses): unknown connections.
    const ownerId = owner instanceof RfdClient || owner instanceof WsClient
      ? owner.connectionId
      : undefined;
    for (
      const guess of ownerId === undefined ? [] : nearIds(ownerId).slice(0, context.pick(4, 3, 2))
    ) {
      const headers = { ...bearer(target), "acp-connection-id": guess };
      const attempts: Array<[string, RequestInit]> = [
        ["POST session/cancel", {
          method: "POST",
          headers: { ...headers, "content-type": "application/json", "acp-session-id": sessionId },
          body: JSON.stringify({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId } }),
        }],
        ["GET the connection stream", {
          method: "GET",
          headers: { ...headers, accept: "text/event-stream" },
        }],
        ["GET the session stream", {
          method: "GET",
          headers: { ...headers, accept: "text/event-stream", "acp-session-id": sessionId },
        }],
        ["DELETE", { method: "DELETE", headers }],
      ];
      for (const [what, init] of attempts) {
        context.run();
        const status = await statusOf(target, `${target.url}/acp`, init);
        if (status >= 200 && status < 300) {
          context.fail(
            "escapes",
            "cross-connection",
            `${label}: ${what} with a near miss of A's connection id (${guess}): ${status}`,
          );
        } else {
          checkStatus(env, `${label}: ${what} with a guessed connection id`, status, [
            400,
            404,
          ]);
        }
      }
    }
    // B's attacks on A's session, while A's turn runs: notifications first, then requests.
    context.run(2);
    const cancelStatus = await other.notify("session/cancel", { sessionId }, sessionId);
    const cancelRequestStatus = await other.notify(
      "$/cancel_request",
      { requestId: promptId },
      sessionId,
    );
    for (const status of [cancelStatus, cancelRequestStatus]) {
      if (status > 0) checkStatus(env, `${label}: B's notification`, status, [202, 400]);
    }
    const attacks: Array<[string, Record<string, unknown>]> = [
      ["session/prompt", { sessionId, prompt: [{ type: "text", text: "hijack" }] }],
      ["session/set_mode", { sessionId, modeId: "read-only" }],
      ["session/set_config_option", { sessionId, configId: "mode", value: "read-only" }],
      ["session/close", { sessionId }],
      ["session/load", { sessionId, cwd: cwdA, mcpServers: [] }],
      ["session/resume", { sessionId, cwd: cwdA, mcpServers: [] }],
      ["session/delete", { sessionId }],
    ];
    for (const [method, params] of attacks) {
      context.run();
      const answer = await other.call(method, params, 10_000, sessionId);
      if (answer.status >= 400) continue; // refused at the HTTP level
      if (answer.frame === undefined) {
        context.fail("other", "hang", `${label}: B's ${method} got no answer (${answer.status})`);
      } else if ("result" in answer.frame && method !== "session/close") {
        // Closing a session that is not open on the connection is a no-op (by design): only
        // its effect on A counts, below.
        context.fail(
          "other",
          "interference",
          `${label}: B's ${method} of A's session succeeded: ${
            JSON.stringify(answer.frame).slice(0, 200)
          }`,
        );
      }
    }
    // A's turn ends as if B were not there.
    const answer = await turn;
    context.run();
    if (answer.frame === undefined) {
      context.fail("other", "hang", `${label}: A's prompt got no answer`);
    } else if (stopReason(answer) !== "end_turn") {
      context.fail(
        "other",
        "interference",
        `${label}: A's turn ended ${JSON.stringify(answer.frame).slice(0, 200)}`,
      );
    }
    const updates = owner.updates(sessionId, from);
    const gaps = turnGaps(updates);
    if (gaps.length > 0) {
      context.fail("other", "interference", `${label}: A's turn lacked ${gaps.join(", ")}`);
    }
    const modes = updates.filter((update) => update.sessionUpdate === "current_mode_update");
    if (modes.length > 0) {
      context.fail(
        "other",
        "interference",
        `${label}: A's mode changed: ${JSON.stringify(modes[0])}`,
      );
    }
    // A still owns its session: a second turn runs.
    await rm(join(cwdA, ".delay"), { force: true });
    const again = owner.frames.length;
    const second = await owner.prompt(sessionId, `${secret} again`);
    context.run();
    const secondGaps = turnGaps(owner.updates(sessionId, again));
    if (stopReason(second) !== "end_turn" || secondGaps.length > 0) {
      context.fail(
        "other",
        "interference",
        `${label}: A's second prompt: ${JSON.stringify(second).slice(0, 200)}; lacking ${
          secondGaps.join(", ") || "nothing"
        }`,
      );
    }
    // Nothing of A's reached B, nothing of B's reached A.
    const leaked = other.frames.filter((frame) =>
      ((frame.params as { sessionId?: string } | undefined)?.sessionId === sessionId &&
        frame.method === "session/update") ||
      owner.ownsId(frame.id) || JSON.stringify(frame).includes("isolation " + n + " secret")
    );
    if (leaked.length > 0) {
      context.fail(
        "escapes",
        "cross-connection",
        `${label}: B received ${JSON.stringify(leaked[0]).slice(0, 200)}`,
        leaked.length,
      );
    }
    const strays = owner.frames.filter((frame) => other.ownsId(frame.id));
    if (strays.length > 0) {
      context.fail(
        "escapes",
        "cross-connection",
        `${label}: A received B's ${JSON.stringify(strays[0]).slice(0, 200)}`,
        strays.length,
      );
    }
    // Once A is gone, its session is free: B may load it.
    await closeClient(env, `${label}: A`, owner);
    let loaded = false;
    let last: Answer | undefined;
    // The release follows the connection's end by no event B can see: ask until it is free.
    await pollUntil(async () => {
      last = await other.call(
        "session/load",
        { sessionId, cwd: cwdA, mcpServers: [] },
        10_000,
        sessionId,
      );
      loaded = last.frame !== undefined && "result" in last.frame;
      return loaded;
    }, { what: "A's session released", timeoutMs: 10_000, intervalMs: 200 }).catch(() => {});
    context.run();
    if (!loaded) {
      context.fail(
        "other",
        "not-released",
        `${label}: B's session/load after A's close: ${JSON.stringify(last).slice(0, 200)}`,
      );
    }
  } finally {
    for (const party of [owner, other]) {
      if (!party.ended) await closeClient(env, `${label}: ${party === owner ? "A" : "B"}`, party);
      await party.settled();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 4. Drops

const VANISH: Record<Profile, readonly string[]> = {
  acp: ["every request and stream dropped"],
  keyed: ["the prompt's POST and the stream dropped"],
  ws: ["TCP closed without a close frame", "half-closed (FIN)", "a close frame, then gone"],
};

async function drops(env: Env): Promise<void> {
  const { context } = env;
  const perProfile = context.pick(3, 1, 1);
  const cases: Array<[Profile, number]> = [];
  for (let round = 0; round < perProfile; round++) {
    for (const profile of PROFILES) cases.push([profile, cases.length]);
  }
  await Promise.all([
    ...cases.map(([profile, n]) => dropCase(env, profile, n)),
    ...PROFILES.map((profile, n) => outlivesTurn(env, profile, n)),
  ]);
  await alive(env, "drops");
}

/**
 * The idle limit counts from the end of the last request handled: after a turn longer than the
 * limit, a request sent well within the limit is still served on the same connection.
 */
async function outlivesTurn(env: Env, profile: Profile, n: number): Promise<void> {
  const { context } = env;
  const label = `idle ${n} (${profile})`;
  const long = client(env, profile);
  // A second connection whose turn runs PACE_S seconds: its answer marks that time passed.
  const pacer = client(env, profile);
  let idleClosed = false;
  try {
    context.run();
    if (!(await connected(env, label, long))) return;
    const cwd = await workspace(env, `idle-${n}`, String(IDLE_S + 1));
    const pacerCwd = await workspace(env, `idle-pacer-${n}`, String(PACE_S));
    const sessionId = await long.newSession(cwd);
    if (sessionId === undefined) {
      context.fail("other", "wedged", `${label}: session/new failed`);
      return;
    }
    const answer = await long.prompt(sessionId, label, (IDLE_S + 20) * 1000);
    const answeredAt = Date.now();
    if (stopReason(answer) !== "end_turn") {
      context.fail(
        "other",
        answer.frame ? "bad-answer" : "hang",
        `${label}: ${JSON.stringify(answer).slice(0, 200)}`,
      );
      return;
    }
    // Time is what is tested: well over a third of the idle limit passes (the sweep runs every
    // limit/4), marked by the answer to a turn on a second connection opened now (opened earlier,
    // it would itself go idle during the long turn).
    if (!(await connected(env, label, pacer))) return;
    const pacerSession = await pacer.newSession(pacerCwd);
    if (pacerSession === undefined) {
      context.fail("other", "wedged", `${label}: pacer session/new failed`);
      return;
    }
    await pacer.prompt(pacerSession, `${label} pacer`, (IDLE_S + 20) * 1000);
    const sentAfterMs = Date.now() - answeredAt;
    const list = await long.call("session/list", { cwd }, 10_000);
    if (list.frame === undefined || "error" in list.frame) {
      idleClosed = true;
      // On a loaded machine the pacer can take longer than the idle limit: a connection closed
      // then was idle for as long as the limit, which is right. Only a sooner close counts.
      if (sentAfterMs < IDLE_S * 1000) {
        context.fail(
          "other",
          "idle-too-soon",
          `${label}: ${(sentAfterMs / 1000).toFixed(1)} s after a ${
            IDLE_S + 1
          } s turn (idle limit ${IDLE_S} s): ${JSON.stringify(list).slice(0, 200)}`,
        );
      }
    }
  } finally {
    if (idleClosed) long.vanish();
    await closeClient(env, label, long);
    await closeClient(env, label, pacer);
  }
}

async function dropCase(env: Env, profile: Profile, n: number): Promise<void> {
  const { context } = env;
  const variants = VANISH[profile];
  const variant = variants[Math.floor(n / PROFILES.length) % variants.length] as string;
  const label = `drop ${n} (${profile}: ${variant})`;
  // Each case's command sleeps a time of its own, so that its process is known by its command line.
  const delay = `${profile === "ws" ? 30 : 2}.${1000 + n}`;
  const pattern = new RegExp(`^sleep ${delay.replace(".", "\\.")}$`);
  const cwd = await workspace(env, `drop-${n}`, delay);
  const owner = client(env, profile);
  const next = client(env, PROFILES[(n + 1) % PROFILES.length] as Profile);
  try {
    context.run();
    if (!(await connected(env, label, owner))) return;
    const sessionId = await owner.newSession(cwd);
    if (sessionId === undefined) {
      context.fail("other", "wedged", `${label}: session/new failed`);
      return;
    }
    const text = `drop ${n}`;
    const turn = owner.prompt(sessionId, text, 60_000);
    const started = await owner.waitFor(
      () => owner.updates(sessionId).some((update) => update.sessionUpdate === "tool_call"),
      10_000,
    );
    // The 30 s command must be seen running; the short one may be over by the time /proc tells.
    const running = started &&
      (await waitForProcess(context.marker, pattern, profile === "ws" ? 10_000 : 2_000) !==
          undefined || profile !== "ws");
    if (!running) {
      context.fail("other", "hang", `${label}: the command did not start`);
      owner.vanish();
      await turn;
      return;
    }
    const live = owner.updates(sessionId);
    const shown = live.length > 0;
    if (owner instanceof WsClient && variant.startsWith("half")) owner.hangUp();
    else if (owner instanceof WsClient && variant.startsWith("a close frame")) {
      owner.socket?.sendFrame({ opcode: OPCODE.close, payload: new Uint8Array([0x03, 0xe8]) });
      owner.vanish();
    } else owner.vanish();
    await turn;
    // On WebSocket the server sees the end at once: the turn is cancelled and the 30 s command
    // killed. Over HTTP it cannot tell (see TORTURE.md): the 2 s command ends by itself.
    const left = await goneWithin(env, pattern, 10_000);
    if (left.length > 0) {
      context.fail(
        "leftovers",
        "after-drop",
        `${label}: ${left.map(({ command }) => command).join("; ")}`,
        left.length,
      );
      killAll(left);
    }
    // The session is released (over HTTP once the idle limit closed the connection): it loads.
    await rm(join(cwd, ".delay"), { force: true });
    if (!(await connected(env, `${label}: the next client`, next))) return;
    await next.watch(sessionId);
    const from = next.frames.length;
    let loaded = false;
    let last: Answer | undefined;
    // The release follows the drop by no event the next client sees: ask until it is free.
    await pollUntil(async () => {
      last = await next.call("session/load", { sessionId, cwd, mcpServers: [] }, 10_000, sessionId);
      loaded = last.frame !== undefined && "result" in last.frame;
      return loaded;
    }, {
      what: "the dropped session released",
      timeoutMs: profile === "ws" ? 10_000 : (IDLE_S + 15) * 1000,
      intervalMs: 200,
    }).catch(() => {});
    if (!loaded) {
      context.fail(
        "other",
        "not-released",
        `${label}: session/load: ${JSON.stringify(last).slice(0, 300)}`,
      );
      return;
    }
    // On /acp the replay may trail the answer: wait (bounded) until nothing acknowledged is missing.
    const acknowledged = shown ? [text] : [];
    await next.waitFor(
      () => missing(live, acknowledged, next.updates(sessionId, from)).length === 0,
      10_000,
    );
    const lost = missing(live, acknowledged, next.updates(sessionId, from));
    if (lost.length > 0) {
      context.fail("lost", "after-drop", `${label}: ${lost.join(", ")}`, lost.length);
    }
    // The session goes on.
    const again = await next.prompt(sessionId, `after ${text}`);
    if (stopReason(again) !== "end_turn") {
      context.fail(
        "other",
        again.frame ? "bad-answer" : "hang",
        `${label}: the prompt after the drop: ${JSON.stringify(again).slice(0, 200)}`,
      );
    }
  } finally {
    for (const party of [owner, next]) {
      if (!party.ended) await closeClient(env, label, party);
      await party.settled();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 5. The crowd, and the end

/**
 * A flood of `session/list` over one WebSocket, every frame sent at once (200,000 full): the
 * server lives, its peak RSS stays within 200 MB of its start (`unbounded-memory`), the flooding
 * socket is answered in full or closed by the inbound limit, and a client with a session open
 * meanwhile still runs a whole prompt (`interference`).
 */
async function flood(env: Env): Promise<void> {
  const { context } = env;
  const count = context.pick(200_000, 50_000, 2_000);
  const victim = client(env, "ws");
  if (!(await connected(env, "flood: the victim", victim))) return;
  const cwd = await workspace(env, "flood-victim");
  const growth = watchMemory(env.server.pid);
  context.run();
  const flooding = floodSocket(env, count);
  const ended = await within(flooding.done, 120_000);
  const outcome = ended ? await flooding.done : undefined;
  if (!ended) {
    flooding.socket.terminate();
    context.fail("other", "hang", `flood: ${count} session/list neither answered nor closed`);
  }
  if (!(await alive(env, "flood"))) return;
  const grew = growth();
  if (grew !== undefined && grew > MAX_FLOOD_GROWTH_KB) {
    context.fail(
      "other",
      "unbounded-memory",
      `flood: ${count} session/list over one WebSocket grew the server by ${
        Math.round(grew / 1024)
      } MB (${JSON.stringify(outcome)})`,
    );
  }
  context.run();
  if (!(await wholePrompt(env, "flood: the victim", victim, cwd))) {
    context.fail("other", "interference", "flood: the victim's prompt failed after the flood");
  }
  await closeClient(env, "flood: the victim", victim);
}

/** Floods one WebSocket; `done` resolves with how many were answered and how it closed. */
function floodSocket(
  env: Env,
  count: number,
): { socket: NodeWebSocket; done: Promise<{ answers: number; code: number }> } {
  const socket = new NodeWebSocket(`${env.target.url.replace("http", "ws")}/acp`, {
    headers: bearer(env.target),
  });
  const done = new Promise<{ answers: number; code: number }>((resolve) => {
    let answers = 0;
    let initialized = false;
    socket.on("error", () => {});
    socket.on("close", (code: number) => resolve({ answers, code }));
    socket.on(
      "open",
      () =>
        socket.send(
          JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: INITIALIZE }),
        ),
    );
    socket.on("message", () => {
      if (!initialized) {
        initialized = true;
        for (let id = 0; id < count; id++) {
          socket.send(`{"jsonrpc":"2.0","id":${id},"method":"session/list","params":{}}`);
        }
        return;
      }
      if (++answers === count) socket.close(1000);
    });
  });
  return { socket, done };
}

async function crowd(env: Env): Promise<void> {
  const { context } = env;
  const clients = context.pick(100, 40, 12);
  await Promise.all(
    Array.from(
      { length: clients },
      (_, index) => crowdMember(env, index, random(context.seed + 1000 + index)),
    ),
  );
  await alive(env, "crowd");
}

async function crowdMember(env: Env, index: number, rng: Rng): Promise<void> {
  const { context } = env;
  const cwd = await workspace(env, `crowd-${index}`);
  for (let round = 1 + Math.floor(rng() * 3); round > 0; round--) {
    const member = client(env, choose(rng, PROFILES));
    const label = `crowd ${index} (${member.profile})`;
    const roll = rng();
    context.run();
    try {
      if (!(await connected(env, label, member))) continue;
      if (roll < 0.3) continue; // open and close
      if (roll < 0.85) {
        const sessionId = await member.newSession(cwd);
        if (sessionId === undefined) {
          context.fail("other", "wedged", `${label}: session/new failed`);
          continue;
        }
        const turn = member.prompt(sessionId, `crowd ${index}`);
        if (roll < 0.7) {
          const answer = await turn;
          if (stopReason(answer) !== "end_turn") {
            context.fail(
              "other",
              answer.frame ? "bad-answer" : "hang",
              `${label}: ${JSON.stringify(answer).slice(0, 200)}`,
            );
          }
        } else {
          // Gone while the turn runs: once its first update has arrived.
          await member.waitFor(() => member.updates(sessionId).length > 0, 10_000);
          await closeClient(env, label, member);
          await turn;
        }
        continue;
      }
      const answer = await member.call("session/list", { cwd });
      if (answer.frame === undefined || "error" in answer.frame) {
        context.fail(
          "other",
          "wedged",
          `${label}: session/list: ${JSON.stringify(answer).slice(0, 200)}`,
        );
      }
    } finally {
      if (!member.ended) await closeClient(env, label, member);
      await member.settled();
    }
  }
}

/** Connections the server's log shows opened and not closed. */
function openConnections(stderr: string): string[] {
  const open = new Map<string, string>();
  for (
    const match of stderr.matchAll(
      /^(?:\S+ )?acp-harness info: connection (opened|closed) (\{.*\})$/gm,
    )
  ) {
    try {
      const fields = JSON.parse(match[2] as string) as {
        connectionId?: string;
        transport?: string;
      };
      if (match[1] === "opened") open.set(String(fields.connectionId), String(fields.transport));
      else open.delete(String(fields.connectionId));
    } catch {
      // Not ours.
    }
  }
  return [...open].map(([id, transport]) => `${id} (${transport})`);
}

async function ending(env: Env): Promise<void> {
  const { context, server } = env;
  // Whole prompts on every profile still run.
  await Promise.all(PROFILES.map(async (profile) => {
    const last = client(env, profile);
    const what = `the end (${profile})`;
    context.run();
    if (!(await connected(env, what, last))) return;
    await wholePrompt(env, what, last, await workspace(env, `end-${profile}`));
    await closeClient(env, what, last);
  }));
  // Every connection is closed: by its client, or (vanished, never initialized) by the idle limit.
  let open: string[] = [];
  // The server announces it only in its log: poll it.
  await pollUntil(() => (open = openConnections(server.stderr)).length === 0, {
    what: "every connection closed",
    timeoutMs: (IDLE_S + 12) * 1000,
    intervalMs: 100,
  }).catch(() => {});
  context.run();
  if (open.length > 0) {
    context.fail(
      "other",
      "connection-leak",
      `${open.length} still open: ${open.slice(0, 5).join(", ")}`,
      open.length,
    );
  }
  const left = await hunt(context.marker, 5_000, [server.pid], SUPERVISOR);
  if (left.length > 0) {
    context.fail(
      "leftovers",
      "after-all",
      left.map(({ command }) => command).join("; "),
      left.length,
    );
    killAll(left);
  }
  if (!(await alive(env, "the end"))) return;
  if (server.stderr.includes(env.target.token)) {
    context.fail("escapes", "token-logged", "the token is in the server's log");
  }
}

/** SIGTERM: the server must exit 0 within 10 s. */
async function stop(env: Env): Promise<void> {
  const { server, context } = env;
  if (server.exit) return;
  server.kill("SIGTERM");
  if (!(await server.exitWithin(10_000))) {
    context.fail(
      "other",
      "slow-exit",
      `did not exit within 10 s of SIGTERM: ${server.stderr.slice(-300)}`,
    );
    server.kill("SIGKILL");
    await server.exited;
  }
  context.checkCrash(server, "SIGTERM");
}

/** Silent sockets, slowloris and absolute-form requests: see ./http_sockets.ts. */
async function sockets(env: Env): Promise<void> {
  await socketsPhase(env, {
    alive: (where) => alive(env, where),
    client: () => client(env, "keyed"),
    workspace: (name) => workspace(env, name),
    headerTimeoutMs: HEADER_S * 1000,
  });
}

/** A token with letters of both cases and digits. */
function makeToken(rng: Rng): string {
  return `Tk${randomWord(rng, 30)}aZ9`;
}

/** See the module doc. */
export const http: Scenario = {
  name: "http",
  description:
    "serve --http: hostile requests and frames, near-miss tokens, cross-connection attacks, drops, a crowd",
  async run(context: ScenarioContext): Promise<void> {
    const token = makeToken(random(context.seed + 20));
    const script = await writeScript(
      context.base,
      "script.json",
      Array.from({ length: 40 }, () => TURN).flat(),
    );
    const root = join(context.base, "ws");
    await mkdir(root, { recursive: true });
    const server = context.start({
      dataDir: join(context.base, "data"),
      cwd: context.base,
      command: ["serve"],
      args: [
        "--http",
        "--port",
        "0",
        "--token",
        token,
        "--mode",
        "auto",
        "--model",
        "scripted",
        "--script",
        script,
        "--idle-timeout",
        String(IDLE_S),
        "--header-timeout",
        String(HEADER_S),
        "--stall-timeout",
        "2",
        "--max-message-bytes",
        String(LIMIT),
        // Every client is on 127.0.0.1; the per-address cap has a phase of its own (http_limits.ts).
        "--max-connections-per-address",
        "1000",
        "--log-level",
        "info",
      ],
      stderrLimit: 64_000_000,
    });
    const url = await server.listening(30_000);
    if (url === undefined) {
      context.fail("crashes", "start", `no "listening on" line: ${server.stderr.slice(-400)}`);
      server.kill("SIGKILL");
      await server.exited;
      return;
    }
    // A new TCP connection per request: no pooled connection the server may close under us.
    const httpClient = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
    const fetcher: typeof fetch = (input, init) => fetch(input, { ...init, client: httpClient });
    const env: Env = {
      context,
      server,
      target: targetOf(url, token, fetcher),
      root,
      clients: [],
      sockets: [],
      nextBase: 1_000_000,
      nextKey: 0,
      broken: false,
    };
    try {
      for (const phase of [hostile, auth, isolation, drops, flood, sockets, crowd, ending]) {
        if (env.broken) break;
        await phase(env);
        context.checkCrash(server, phase.name);
      }
    } finally {
      for (const each of env.clients) if (!each.ended) each.vanish();
      for (const socket of env.sockets) socket.destroy();
      await Promise.all(env.clients.map((each) => each.settled()));
      await Promise.all(env.sockets.map((socket) => socket.closed));
      await stop(env);
      httpClient.close();
      // For a failure's post-mortem: the server's log (its connection ids, idle closes, errors).
      const log = Deno.env.get("TORTURE_HTTP_LOG");
      if (log) await Deno.writeTextFile(`${log}-${context.runtime.name}.log`, server.stderr);
    }
    // Body drips and stalls, idle connections, the per-address cap, exact ids: servers of its own.
    await httpLimits(context);
  },
};
