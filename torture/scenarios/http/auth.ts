/**
 * Phase 2 of the `http` scenario: near misses of the token on every route: always 401.
 *
 * @module
 */
import { random } from "../../driver.ts";
import {
  INITIALIZE,
  type KeyedClient,
  rawHttp,
  rawRequest,
  RawWebSocket,
  type RfdClient,
  statusOf,
} from "../../http_client.ts";
import {
  alive,
  checkStatus,
  client,
  closeClient,
  connected,
  type Env,
  headerSafe,
  keepingAlive,
  randomBytes,
  randomWord,
  type Rng,
  wholePrompt,
  workspace,
} from "./_shared.ts";

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

/** A route the near misses are tried on. */
interface AuthRoute {
  readonly label: string;
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: () => string;
}

/** The routes, live connections' included, that must answer 401 to every near miss. */
function authRoutes(
  bodies: { readonly sessionNew: () => string; readonly initialize: () => string },
  good: RfdClient,
  keyed: KeyedClient,
): AuthRoute[] {
  const { sessionNew, initialize } = bodies;
  const json = { "content-type": "application/json" };
  const sse = { accept: "text/event-stream" };
  const conn = { "acp-connection-id": good.connectionId ?? "" };
  return [
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
}

/** Near misses only a raw request can send; the server's parser may refuse them with 400 first. */
function rawMisses(token: string, rng: Rng): Array<[string, string[]]> {
  return [
    ["a NUL after the token", [`Authorization: Bearer ${token}\0`]],
    ["two wrong Authorization headers", [
      "Authorization: Bearer x",
      `Authorization: Basic ${btoa(token)}`,
    ]],
    ["a full-width letter", [
      `Authorization: Bearer ${token.slice(0, -1)}\u00ef\u00bc\u00a1`,
    ]],
    ["a token of high bytes", [
      `Authorization: Bearer ${headerSafe(randomBytes(rng, 20))}`,
    ]],
    ["a 100 KB token", [`Authorization: Bearer ${token}${"t".repeat(100_000)}`]],
  ];
}

/** Nothing of the near misses reached ACP: no session in that directory, no answer to them. */
async function nothingReached(
  env: Env,
  live: RfdClient | KeyedClient,
  unauthCwd: string,
): Promise<void> {
  const { context } = env;
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

export async function auth(env: Env): Promise<void> {
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
  const routes = authRoutes({ sessionNew, initialize }, good, keyed);
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
  for (const [what, headers] of rawMisses(target.token, rng)) {
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
  for (const live of [good, keyed]) await nothingReached(env, live, unauthCwd);
}
