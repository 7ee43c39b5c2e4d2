/**
 * Cancel races: `session/cancel` or `$/cancel_request` at random points of a turn (in the same
 * write as the prompt, after k updates, after a random delay). The prompt must end (`cancelled`,
 * or `end_turn` when the turn had already finished), nothing of the turn may follow its answer,
 * and a restart must replay every acknowledged event.
 *
 * @module
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Scenario, ScenarioContext } from "../context.ts";
import { type Frame, random, type Server, writeScript } from "../driver.ts";
import { load, missing } from "./kill.ts";

/** See the module doc. */
export const cancelRaces: Scenario = {
  name: "cancel",
  description: "cancel / $/cancel_request at random points of a turn with tools and delays",
  async run(context: ScenarioContext): Promise<void> {
    const races = context.pick(200, 30, 6);
    const next = random(context.seed + 1);
    const script = await writeScript(context.base, "script.json", [
      {
        thought: "Go.",
        text: ["Working ", "on it."],
        chunkDelayMs: 2,
        toolCalls: [
          { name: "list_directory", arguments: { path: "." } },
          { name: "run_command", arguments: { command: "sleep 0.02" } },
        ],
      },
      {
        delayMs: 10,
        text: "Done.",
        toolCalls: [{ name: "write_file", arguments: { path: "a.txt", content: "a" } }],
      },
      { text: "Finished." },
    ]);
    const dataDir = join(context.base, "data");
    const args = ["--mode", "auto", "--model", "scripted", "--script", script];
    const server = context.start({ dataDir, cwd: context.base, args });
    await server.initialize();
    const sessions: Array<{ sessionId: string; cwd: string; answered: string[] }> = [];
    for (let n = 0; n < races; n++) {
      const cwd = join(context.base, "ws", String(n));
      await mkdir(cwd, { recursive: true });
      const sessionId = await server.newSession(cwd);
      const text = `race ${n}`;
      const prompt = server.promptRequest(sessionId, text);
      const variant = n % 4;
      const cancel = variant === 3
        ? server.notification("$/cancel_request", { requestId: prompt.id })
        : server.notification("session/cancel", { sessionId });
      const before = server.frames.length;
      context.run();
      await sendRacing(server, sessionId, prompt.frame, cancel, {
        when: variant === 0 ? "with" : variant === 1 ? "updates" : "trips",
        updates: 8,
        next,
      });
      const answer = await raceAnswer(context, server, prompt.id, `race ${n}`);
      if (answer === "dead") return;
      if (answer === "hang") continue;
      const { stopReason } = answer;
      if (variant === 0 && stopReason !== "cancelled") {
        context.fail(
          "other",
          "cancel-ignored",
          `race ${n}: a cancel right behind the prompt gave ${stopReason}`,
        );
      }
      // The prompt counts as acknowledged once it ended normally or showed any of its turn (the
      // session's slash commands, which follow the session/new answer, are not of the turn).
      const shown = server.updates(sessionId, before)
        .some((update) => update.sessionUpdate !== "available_commands_update");
      sessions.push({ sessionId, cwd, answered: stopReason === "end_turn" || shown ? [text] : [] });
      await checkNothingAfter(context, server, sessionId, prompt.id, `race ${n}`);
    }
    // Reload every session in a new process: what the client saw is all there.
    const live = new Map(sessions.map(({ sessionId }) => [sessionId, server.updates(sessionId)]));
    await server.stop();
    const second = context.start({ dataDir, cwd: context.base, args });
    await second.initialize();
    for (const { sessionId, cwd, answered } of sessions) {
      const replayed = await load(second, sessionId, cwd);
      if (replayed === undefined) {
        context.fail("other", "load-failed", `session/load of ${sessionId} failed`);
        continue;
      }
      const lost = missing(live.get(sessionId) ?? [], answered, replayed);
      if (lost.length > 0) context.fail("lost", "after-cancel", lost.join(", "), lost.length);
    }
    await second.stop();
  },
};

/** When a race's cancel is sent, and the randomness that picks how far the turn got. */
export interface RaceTiming {
  /** In the prompt's write; after 0 to `updates` − 1 of the session's updates; or after 0–5 round trips. */
  readonly when: "with" | "updates" | "trips";
  readonly updates: number;
  readonly next: () => number;
}

/**
 * Waits for a raced prompt's answer: `dead` when the server stopped answering altogether (the
 * scenario ends: a crash is reported), `hang` when only this prompt is unanswered after 10 s
 * (reported), else its stop reason, which must be `cancelled` or `end_turn` (reported if not).
 */
export async function raceAnswer(
  context: ScenarioContext,
  server: Server,
  promptId: number,
  label: string,
): Promise<{ readonly stopReason: string | undefined } | "hang" | "dead"> {
  const response = await server.response(promptId, 10_000);
  if (response === undefined) {
    if (!(await context.checkAnswers(server, label))) return "dead";
    context.fail("other", "hang", `${label}: no answer within 10 s of the cancel`);
    return "hang";
  }
  const stopReason = (response.result as { stopReason?: string } | undefined)?.stopReason;
  if (stopReason !== "cancelled" && stopReason !== "end_turn") {
    context.fail("other", "bad-answer", `${label}: ${JSON.stringify(response)}`);
  }
  return { stopReason };
}

/**
 * Checks that nothing of a session's turn follows the prompt's answer: stragglers would arrive
 * before the answer to a `session/list` sent after it.
 */
export async function checkNothingAfter(
  context: ScenarioContext,
  server: Server,
  sessionId: string,
  promptId: number,
  label: string,
): Promise<void> {
  const list = server.request("session/list", {});
  await server.write(list.frame);
  await server.response(list.id, 10_000);
  const late = server.frames.slice(
    server.responseIndex(promptId) + 1,
    server.responseIndex(list.id),
  )
    .filter((frame) =>
      frame.method === "session/update" &&
      (frame.params as { sessionId?: string }).sessionId === sessionId
    );
  if (late.length > 0) {
    context.fail(
      "other",
      "update-after-answer",
      `${label}: ${JSON.stringify(late[0]).slice(0, 200)}`,
      late.length,
    );
  }
}

/**
 * Writes a prompt and its cancel with the turn at a random point in between, waiting for events
 * (updates, answers to round trips), never for time.
 */
export async function sendRacing(
  server: Server,
  sessionId: string,
  prompt: Frame,
  cancel: Frame,
  timing: RaceTiming,
): Promise<void> {
  if (timing.when === "with") return await server.write(prompt, cancel);
  const before = server.frames.length;
  await server.write(prompt);
  if (timing.when === "updates") {
    const k = Math.floor(timing.next() * timing.updates);
    await server.waitFor(() => server.updates(sessionId, before).length >= k, 2_000);
  } else {
    // A random number of round trips to the server: the turn moves on meanwhile, by events.
    const trips = Math.floor(timing.next() * 6);
    for (let trip = 0; trip < trips; trip++) await server.call("torture/ping", {}, 2_000);
  }
  await server.write(cancel);
}
