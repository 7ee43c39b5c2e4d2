/**
 * The `sockets` phase of the `http` scenario: sockets that never send a request, from one address
 * and from several, more than the server's caps; slowloris sockets (request headers one byte at a
 * time, never finishing); and absolute-form request lines naming another host. While the silent
 * sockets are open, `/health` answers `ok` and a session opened before them prompts to the end;
 * every silent and slowloris socket is closed (refused at a cap at once, or after
 * `--header-timeout`); an absolute-form request for another host is refused `403` (on Bun, which
 * builds the request's URL from `Host`, it is the request `Host` names).
 *
 * @module
 */
import { connect, type Socket } from "node:net";
import type { ScenarioContext } from "../context.ts";
import type { Server } from "../driver.ts";
import {
  type AcpClient,
  type Answer,
  bearer,
  INITIALIZE,
  rawHttp,
  rawRequest,
  type Target,
} from "../http_client.ts";

/** What the phase needs from the scenario. */
export interface SocketsEnv {
  readonly context: ScenarioContext;
  readonly server: Server;
  readonly target: Target;
  /** Set once the server is gone or wedged. */
  broken: boolean;
}

/** What the scenario lends the phase. */
export interface SocketsHooks {
  /** `/health` answers `ok` (else a crash is counted and the server marked broken). */
  alive(where: string): Promise<boolean>;
  /** A new client of the scenario (closed by the scenario at the end). */
  client(): AcpClient;
  /** A session directory. */
  workspace(name: string): Promise<string>;
  /** The server's `--header-timeout`, in milliseconds. */
  readonly headerTimeoutMs: number;
}

/** Opens silent sockets; resolves once all are closed, or with how many are still open after `ms`. */
async function silentFlood(
  target: Target,
  perAddress: ReadonlyArray<readonly [string, number]>,
  ms: number,
): Promise<{ sockets: Socket[]; stillOpen: () => Promise<number> }> {
  const sockets: Socket[] = [];
  let open = 0;
  let wake = (): void => {};
  for (const [localAddress, count] of perAddress) {
    for (let at = 0; at < count; at++) {
      const socket = connect({ host: target.host, port: target.port, localAddress });
      open++;
      socket.on("error", () => {});
      socket.once("close", () => {
        open--;
        wake();
      });
      sockets.push(socket);
    }
  }
  await Promise.resolve();
  const stillOpen = async (): Promise<number> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await new Promise<void>((resolve) => {
      wake = () => open === 0 && resolve();
      timer = setTimeout(resolve, ms);
      wake();
    });
    clearTimeout(timer);
    return open;
  };
  return { sockets, stillOpen };
}

/** A slowloris socket; resolves with whether the server closed it within `ms`. */
function slowloris(target: Target, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: target.host, port: target.port });
    socket.on("error", () => {});
    const text = `POST /acp HTTP/1.1\r\nHost: ${target.host}:${target.port}\r\nX-Slow: `;
    let at = 0;
    let drip: ReturnType<typeof setTimeout> | undefined;
    const next = (): void => {
      if (socket.destroyed) return;
      socket.write(at < text.length ? text[at++]! : "a");
      drip = setTimeout(next, 100);
    };
    socket.once("connect", next);
    const limit = setTimeout(() => {
      socket.removeAllListeners("close");
      clearTimeout(drip);
      socket.destroy();
      resolve(false);
    }, ms);
    socket.once("close", () => {
      clearTimeout(limit);
      clearTimeout(drip);
      resolve(true);
    });
  });
}

function stopReason(answer: Answer): string | undefined {
  return (answer.frame?.result as { stopReason?: string } | undefined)?.stopReason;
}

/** Absolute-form request lines: another host is refused, this one's is served. */
async function absoluteForm(env: SocketsEnv): Promise<void> {
  const { context, target } = env;
  const own = `${target.host}:${target.port}`;
  const auth = `Authorization: ${bearer(target).authorization}`;
  const cases: Array<[string, number]> = [
    [`http://evil.example/v1/acp/abs-${context.seed}`, 403],
    [`http://evil.example:${target.port}/acp`, 403],
    [`http://EVIL.example/v1/rpc`, 403],
    [`http://${own}/v1/acp/abs-own-${context.seed}`, 200],
  ];
  for (const [url, expected] of cases) {
    context.run();
    const wanted = context.runtime.name === "bun" ? 200 : expected;
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: INITIALIZE,
    });
    const raw = rawRequest(target, `POST ${url} HTTP/1.1`, [
      auth,
      "Content-Type: application/json",
    ], body);
    const { status } = await rawHttp(target, [raw]);
    if (status !== wanted) {
      context.fail(
        "other",
        "absolute-form",
        `POST ${url} with Host ${own}: ${status ?? "no answer"} (expected ${wanted})`,
      );
    }
  }
}

/** See the module doc. */
export async function sockets(env: SocketsEnv, hooks: SocketsHooks): Promise<void> {
  const { context } = env;
  const bound = hooks.headerTimeoutMs + 10_000;
  const live = hooks.client();
  const problem = await live.connect();
  const sessionId = problem === undefined
    ? await live.newSession(await hooks.workspace("sockets"))
    : undefined;
  if (sessionId === undefined) {
    context.fail(
      "other",
      "connect-failed",
      `sockets: the live session: ${problem ?? "no session"}`,
    );
  }
  const rounds = context.pick(3, 2, 1);
  for (let round = 0; round < rounds && !env.broken; round++) {
    const each = context.pick(60, 40, 20);
    // Not from 127.0.0.1, where the scenario's clients are: a socket over an address's cap is
    // refused, whoever opens it.
    const flood = await silentFlood(env.target, [
      ["127.0.0.2", context.pick(400, 300, 300)],
      ["127.0.0.3", each],
      ["127.0.0.4", each],
      ["127.0.0.5", each],
      ["127.0.0.6", each],
    ], bound);
    context.run(flood.sockets.length);
    const loris = Array.from({ length: context.pick(8, 4, 2) }, () => slowloris(env.target, bound));
    context.run(loris.length);
    if (!(await hooks.alive(`sockets round ${round}: /health during the flood`))) return;
    if (sessionId !== undefined) {
      context.run();
      const answer = await live.prompt(sessionId, `sockets round ${round}`);
      if (stopReason(answer) !== "end_turn") {
        context.fail(
          "other",
          "wedged",
          `sockets round ${round}: the open session's prompt answered ${
            JSON.stringify(answer).slice(0, 200)
          }`,
        );
      }
    }
    const open = await flood.stillOpen();
    context.fail(
      "other",
      "socket-kept",
      `sockets round ${round}: ${open} silent sockets still open ${bound} ms after they connected`,
      open,
    );
    const kept = (await Promise.all(loris)).filter((closed) => !closed).length;
    context.fail(
      "other",
      "socket-kept",
      `sockets round ${round}: ${kept} slowloris sockets still open after ${bound} ms`,
      kept,
    );
    for (const socket of flood.sockets) socket.destroy();
  }
  if (!env.broken) await absoluteForm(env);
  if (!env.broken) await hooks.alive("sockets: /health after the floods");
}
