/**
 * The hostile requests of the `http` scenario as data: a probe is a record (a fetch, raw bytes,
 * or a custom exchange) with what must come back, and {@link runProbe} is the one function that
 * runs any of them; seeded random ones come from {@link fuzzProbe}.
 *
 * @module
 */
import {
  bearer,
  type KeyedClient,
  rawHttp,
  type RawOptions,
  type RfdClient,
  withTimeout,
} from "../../http_client.ts";
import {
  checkStatus,
  choose,
  type Env,
  fakeUuid,
  headerSafe,
  randomBytes,
  randomWord,
  type Rng,
} from "./_shared.ts";

export interface FetchProbe {
  readonly kind: "fetch";
  readonly label: string;
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: string | Uint8Array | ReadableStream<Uint8Array>;
  readonly expect?: readonly number[];
}

export interface RawProbe {
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

export interface CustomProbe {
  readonly kind: "custom";
  readonly label: string;
  run(env: Env): Promise<void>;
}

export type Probe = FetchProbe | RawProbe | CustomProbe;

/** A value, or how to make it when the probe runs (the victims may have been replaced). */
export type Lazy<T> = T | (() => T);

export function made<T>(value: Lazy<T>): T {
  return typeof value === "function" ? (value as () => T)() : value;
}

/** The live connections the hostile traffic is aimed at (replaced when one is lost). */
export interface Victims {
  acp: RfdClient;
  keyed: KeyedClient;
  /** A session of `acp`. */
  session: string;
  readonly cwd: string;
}

export async function runProbe(env: Env, probe: Probe): Promise<void> {
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

/** A request whose params nest 50,000 deep. */
export const deepParams = `{"jsonrpc":"2.0","id":"fz-deep","method":"session/list","params":${
  '{"a":'.repeat(50_000)
}1${"}".repeat(50_000)}}`;

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
export function randomBody(rng: Rng, n: number, sessionId?: string): string {
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
export function fuzzProbe(
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
