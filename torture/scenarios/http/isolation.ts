/**
 * Phase 3 of the `http` scenario: connection B aims at connection A's running session.
 *
 * @module
 */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { pollUntil } from "../../../tests/_helpers/wait.ts";
import {
  type AcpClient,
  type Answer,
  bearer,
  KeyedClient,
  type Profile,
  PROFILES,
  RfdClient,
  statusOf,
  WsClient,
} from "../../http_client.ts";
import {
  alive,
  checkStatus,
  client,
  closeClient,
  connected,
  type Env,
  keepingAlive,
  stopReason,
  turnGaps,
  workspace,
} from "./_shared.ts";

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

export async function isolation(env: Env): Promise<void> {
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

/** One isolation round: A's running session and B, the other connection. */
interface Round {
  readonly env: Env;
  readonly label: string;
  readonly n: number;
  readonly owner: AcpClient;
  readonly other: AcpClient;
  readonly sessionId: string;
  readonly cwdA: string;
  readonly promptId: string | number;
  /** The index of A's first frame of the round. */
  readonly from: number;
  readonly secret: string;
}

async function isolationRound(env: Env, a: Profile, b: Profile, n: number): Promise<void> {
  const { context } = env;
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
    const round: Round = { env, label, n, owner, other, sessionId, cwdA, promptId, from, secret };
    await guessConnections(round);
    await attackSession(round);
    // B waits through A's turns (a checkpoint each, slow on a loaded machine) without going idle
    // past the limit; its beat is a method nobody has, so it learns nothing of A's sessions.
    await keepingAlive((async () => checkTurns(round, await turn))(), [other], "torture/ping");
    checkLeaks(round);
    await loadOnceFree(round);
  } finally {
    for (const party of [owner, other]) {
      if (!party.ended) await closeClient(env, `${label}: ${party === owner ? "A" : "B"}`, party);
      await party.settled();
    }
  }
}

/** B guesses A's connection id (near misses): unknown connections, whatever it sends. */
async function guessConnections(round: Round): Promise<void> {
  const { env, label, owner, sessionId } = round;
  const { context, target } = env;
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
}

/** B's attacks on A's session while A's turn runs: notifications first, then requests. */
async function attackSession(round: Round): Promise<void> {
  const { env, label, other, sessionId, cwdA, promptId } = round;
  const { context } = env;
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
}

/** A's turn ends as if B were not there, and A still owns its session: a second turn runs. */
async function checkTurns(round: Round, answer: Answer): Promise<void> {
  const { env, label, owner, sessionId, cwdA, from, secret } = round;
  const { context } = env;
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
}

/** Nothing of A's reached B, nothing of B's reached A. */
function checkLeaks(round: Round): void {
  const { env, label, n, owner, other, sessionId } = round;
  const { context } = env;
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
}

/** Once A is gone, its session is free: B may load it. */
async function loadOnceFree(round: Round): Promise<void> {
  const { env, label, owner, other, sessionId, cwdA } = round;
  const { context } = env;
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
}
