/**
 * Phase 4 of the `http` scenario: clients that vanish mid-turn, and a turn longer than the idle
 * limit.
 *
 * @module
 */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { pollUntil } from "../../../tests/_helpers/wait.ts";
import { killAll, waitForProcess } from "../../../tests/_helpers/marked_processes.ts";
import { type Answer, OPCODE, type Profile, PROFILES, WsClient } from "../../http_client.ts";
import { missing } from "../kill.ts";
import {
  alive,
  client,
  closeClient,
  connected,
  type Env,
  goneWithin,
  IDLE_S,
  PACE_S,
  stopReason,
  workspace,
} from "./_shared.ts";

const VANISH: Record<Profile, readonly string[]> = {
  acp: ["every request and stream dropped"],
  keyed: ["the prompt's POST and the stream dropped"],
  ws: ["TCP closed without a close frame", "half-closed (FIN)", "a close frame, then gone"],
};

export async function drops(env: Env): Promise<void> {
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
