/**
 * Compaction races: every prompt after the first compacts the conversation first (the scripted
 * model reports a context near its small window), and `session/cancel` lands at random points:
 * with the prompt, after k updates (during the summary or the turn), after random round trips.
 * Each prompt must end, every compaction the client sees must reach exactly one end, nothing of a
 * turn may follow its answer, the session must go on, and after a restart `session/load` must
 * show every compaction the client saw completed and none that it saw cancelled.
 *
 * @module
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Scenario, ScenarioContext } from "../context.ts";
import { random, writeScript } from "../driver.ts";
import { checkNothingAfter, raceAnswer, sendRacing } from "./cancel.ts";
import { load } from "./kill.ts";

type Update = Record<string, unknown>;

/** The end statuses of a compaction. */
const ENDS = new Set(["completed", "cancelled", "failed"]);

/** See the module doc. */
export const compaction: Scenario = {
  name: "compaction",
  description: "session/cancel at random points of turns that compact first; restart and load",
  async run(context: ScenarioContext): Promise<void> {
    const races = context.pick(60, 12, 4);
    const next = random(context.seed + 7);
    // Every step may answer a turn or write a summary: the scripted model answers in order.
    const step = {
      text: ["Done ", "with ", "that."],
      chunkDelayMs: 1,
      usage: { input: 3_500, output: 10 },
    };
    const script = await writeScript(
      context.base,
      "script.json",
      Array.from({ length: races * 12 + 40 }, () => step),
    );
    const config = join(context.base, "config.json");
    await writeFile(config, JSON.stringify({ models: { scripted: { contextWindow: 4_000 } } }));
    const dataDir = join(context.base, "data");
    const args = ["--config", config, "--mode", "auto", "--model", "scripted", "--script", script];
    const server = context.start({ dataDir, cwd: context.base, args });
    await server.initialize({ session: { compaction: {} } });
    const sessions: Array<
      { sessionId: string; cwd: string; completed: string[]; cancelled: string[] }
    > = [];
    for (let n = 0; n < races; n++) {
      const cwd = join(context.base, "ws", String(n));
      await mkdir(cwd, { recursive: true });
      const sessionId = await server.newSession(cwd);
      const from = server.frames.length;
      context.run();
      // The first prompt fills the context; the second compacts first, and is cancelled.
      if (!(await ended(context, server, sessionId, `race ${n} first`))) continue;
      const prompt = server.promptRequest(sessionId, `race ${n}`);
      const cancel = server.notification("session/cancel", { sessionId });
      const variant = n % 3;
      await sendRacing(server, sessionId, prompt.frame, cancel, {
        when: variant === 0 ? "with" : variant === 1 ? "updates" : "trips",
        updates: 6,
        next,
      });
      const answer = await raceAnswer(context, server, prompt.id, `race ${n}`);
      if (answer === "dead") return;
      if (answer === "hang") continue;
      await checkNothingAfter(context, server, sessionId, prompt.id, `race ${n}`);
      // The session goes on (and compacts again).
      if (!(await ended(context, server, sessionId, `race ${n} after`))) continue;
      const outcome = compactions(server.updates(sessionId, from));
      for (const problem of outcome.problems) {
        context.fail("other", "compaction-lifecycle", `race ${n}: ${problem}`);
      }
      sessions.push({ sessionId, cwd, completed: outcome.completed, cancelled: outcome.cancelled });
    }
    // Not vacuous: the races did compact (a full run also cancels about a third of them).
    const completed = sessions.reduce((sum, session) => sum + session.completed.length, 0);
    if (completed === 0) context.fail("other", "no-compaction", "no compaction completed");
    await server.stop();
    const second = context.start({ dataDir, cwd: context.base, args });
    await second.initialize({ session: { compaction: {} } });
    for (const { sessionId, cwd, completed, cancelled } of sessions) {
      const replayed = await load(second, sessionId, cwd);
      if (replayed === undefined) {
        context.fail("other", "load-failed", `session/load of ${sessionId} failed`);
        continue;
      }
      const shown = new Set(
        replayed.filter((update) =>
          update.sessionUpdate === "compaction_update" && update.status === "completed"
        ).map((update) => String(update.compactionId)),
      );
      const lost = completed.filter((id) => !shown.has(id));
      if (lost.length > 0) context.fail("lost", "compaction", lost.join(", "), lost.length);
      const revived = cancelled.filter((id) => shown.has(id));
      if (revived.length > 0) {
        context.fail("other", "cancelled-compaction-replayed", revived.join(", "), revived.length);
      }
      // The restored history goes on.
      await ended(context, second, sessionId, `${sessionId} after restart`);
    }
    await second.stop();
  },
};

/** Sends a prompt and checks that it ends `end_turn`; false (with a failure) when it does not. */
async function ended(
  context: ScenarioContext,
  server: ReturnType<ScenarioContext["start"]>,
  sessionId: string,
  what: string,
): Promise<boolean> {
  const prompt = server.promptRequest(sessionId, `${what}: go on`);
  await server.write(prompt.frame);
  const response = await server.response(prompt.id, 10_000);
  const stopReason = (response?.result as { stopReason?: string } | undefined)?.stopReason;
  if (stopReason === "end_turn") return true;
  context.fail("other", "prompt-failed", `${what}: ${JSON.stringify(response) ?? "no answer"}`);
  return false;
}

/**
 * The compactions a client saw, by id: which completed and which were cancelled, and what broke
 * the lifecycle (no end, two ends, an update after the end).
 */
function compactions(updates: readonly Update[]): {
  completed: string[];
  cancelled: string[];
  problems: string[];
} {
  const statuses = new Map<string, string[]>();
  for (const update of updates) {
    if (update.sessionUpdate !== "compaction_update") continue;
    const id = String(update.compactionId);
    const seen = statuses.get(id) ?? [];
    seen.push(String(update.status));
    statuses.set(id, seen);
  }
  const completed: string[] = [];
  const cancelled: string[] = [];
  const problems: string[] = [];
  for (const [id, seen] of statuses) {
    const ends = seen.filter((status) => ENDS.has(status));
    if (ends.length !== 1 || !ENDS.has(seen.at(-1) as string)) {
      problems.push(`compaction ${id}: ${seen.join(" → ")}`);
      continue;
    }
    if (ends[0] === "completed") completed.push(id);
    if (ends[0] === "cancelled") cancelled.push(id);
  }
  return { completed, cancelled, problems };
}
