/**
 * Phase 5 of the `http` scenario: the flood, the crowd, and the end (every connection closed,
 * nothing left running, SIGTERM).
 *
 * @module
 */
import { pollUntil } from "../../../tests/_helpers/wait.ts";
import { hunt, killAll } from "../../../tests/_helpers/marked_processes.ts";
import { random } from "../../driver.ts";
import { bearer, INITIALIZE, PROFILES, within } from "../../http_client.ts";
import { WebSocket as NodeWebSocket } from "ws";
import { MAX_FLOOD_GROWTH_KB, watchMemory } from "../frames.ts";
import { sockets as socketsPhase } from "../http_sockets.ts";
import {
  alive,
  choose,
  client,
  closeClient,
  connected,
  type Env,
  HEADER_S,
  IDLE_S,
  type Rng,
  stopReason,
  SUPERVISOR,
  wholePrompt,
  workspace,
} from "./_shared.ts";

/**
 * A flood of `session/list` over one WebSocket, every frame sent at once (200,000 full): the
 * server lives, its peak RSS stays within 200 MB of its start (`unbounded-memory`), the flooding
 * socket is answered in full or closed by the inbound limit, and a client with a session open
 * meanwhile still runs a whole prompt (`interference`).
 */
export async function flood(env: Env): Promise<void> {
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

export async function crowd(env: Env): Promise<void> {
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

export async function ending(env: Env): Promise<void> {
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
export async function stop(env: Env): Promise<void> {
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
export async function sockets(env: Env): Promise<void> {
  await socketsPhase(env, {
    alive: (where) => alive(env, where),
    client: () => client(env, "keyed"),
    workspace: (name) => workspace(env, name),
    headerTimeoutMs: HEADER_S * 1000,
  });
}
