/**
 * A runaway agent against its budget: a script of 48 file writes (six steps of eight) in `auto`
 * mode, run by several sessions at once, each with its own `--max-tool-calls` below the server's
 * (`_meta["acp-harness"].budgets.maxToolCalls`, 1 to 48). Exactly that many calls may run: the
 * files written must number the limit, the turn must end `max_turn_requests` (`end_turn` at 48,
 * where every call fits) after a message naming the limit. More files is a budget escape.
 *
 * @module
 */
import { mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import type { Scenario, ScenarioContext } from "../context.ts";
import type { Server } from "../driver.ts";
import { writeScript } from "../driver.ts";

const STEPS = 6;
const PER_STEP = 8;
const CALLS = STEPS * PER_STEP;

/** A limit from 1 to {@link CALLS}, the same for a seed and a session. */
function limitOf(seed: number, index: number): number {
  const mixed = Math.imul(seed ^ (index + 1) * 0x9e3779b1, 0x85ebca6b) >>> 0;
  return 1 + (mixed % CALLS);
}

async function oneSession(
  context: ScenarioContext,
  server: Server,
  cwd: string,
  limit: number,
): Promise<void> {
  await mkdir(cwd, { recursive: true });
  const sessionId = await server.newSession(cwd, {
    _meta: { "acp-harness": { budgets: { maxToolCalls: limit } } },
  });
  const from = server.frames.length;
  const prompt = server.promptRequest(sessionId, "write everything");
  await server.write(prompt.frame);
  const response = await server.response(prompt.id, 120_000);
  context.run();
  const label = `limit ${limit}`;
  if (response === undefined) {
    if (!(await context.checkAnswers(server, label))) return;
    context.fail("other", "hang", `${label}: the turn did not end in 120 s`);
    return;
  }
  const expected = limit < CALLS ? "max_turn_requests" : "end_turn";
  const stopReason = (response.result as { stopReason?: string } | undefined)?.stopReason;
  if (stopReason !== expected) {
    context.fail("other", "stop reason", `${label}: ${JSON.stringify(response)}`);
  }
  const written = (await readdir(cwd)).filter((name) => name.startsWith("ran-")).length;
  if (written > limit) {
    context.fail("escapes", "budget", `${label}: ${written} calls ran`, written - limit);
  } else if (written < limit) {
    context.fail("other", "too few", `${label}: only ${written} calls ran`);
  }
  if (expected === "max_turn_requests") {
    const said = server.updates(sessionId, from)
      .filter((update) => update.sessionUpdate === "agent_message_chunk")
      .map((update) => (update.content as { text?: string }).text ?? "");
    if (!/Budget reached: maxToolCalls/.test(said.at(-1) ?? "")) {
      context.fail("other", "no message", `${label}: ${JSON.stringify(said.at(-1))}`);
    }
  }
}

/** See the module doc. */
export const budgets: Scenario = {
  name: "budgets",
  description: "a runaway agent's tool calls against per-session limits, several sessions at once",
  async run(context: ScenarioContext): Promise<void> {
    const steps = [];
    for (let step = 0; step < STEPS; step++) {
      steps.push({
        toolCalls: Array.from({ length: PER_STEP }, (_, at) => ({
          id: `w${step}-${at}`,
          name: "write_file",
          arguments: { path: `ran-${step}-${at}.txt`, content: "x" },
        })),
      });
    }
    steps.push({ text: "done" });
    const script = await writeScript(context.base, "script.json", steps);
    const server = context.start({
      dataDir: join(context.base, "data"),
      cwd: context.base,
      args: [
        ...["--model", "scripted", "--script", script, "--mode", "auto"],
        ...["--max-tool-calls", String(CALLS), "--max-steps", "100"],
      ],
    });
    await server.initialize();
    const rounds = context.pick(4, 2, 1);
    const together = context.pick(8, 4, 3);
    for (let round = 0; round < rounds; round++) {
      const sessions = Array.from({ length: together }, (_, at) => {
        const index = round * together + at;
        // The boundaries every run: one call, and every call.
        const limit = index === 0 ? 1 : index === 1 ? CALLS : limitOf(context.seed, index);
        return oneSession(context, server, join(context.base, `ws-${index}`), limit);
      });
      await Promise.all(sessions);
      if (context.checkCrash(server, `round ${round}`)) return;
    }
    await server.stop();
  },
};
