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
 * The phases live in ./http/.
 *
 * @module
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Scenario, ScenarioContext } from "../context.ts";
import { random, writeScript } from "../driver.ts";
import { target as targetOf } from "../http_client.ts";
import { httpLimits } from "./http_limits.ts";
import { type Env, HEADER_S, IDLE_S, LIMIT, randomWord, type Rng, TURN } from "./http/_shared.ts";
import { auth } from "./http/auth.ts";
import { crowd, ending, flood, sockets, stop } from "./http/crowd.ts";
import { drops } from "./http/drops.ts";
import { hostile } from "./http/hostile.ts";
import { isolation } from "./http/isolation.ts";

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
