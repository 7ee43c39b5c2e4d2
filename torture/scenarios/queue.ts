/**
 * Queue races: prompts, `session/cancel`, `$/cancel_request`, mode changes, steered messages and
 * a close, interleaved at random on one session (in one write or across several) while its turns
 * run. Every request must be answered; a prompt sent before a cancel ends `cancelled` or
 * `end_turn` (never an error); one sent after the session's last cancel and before its close
 * ends `end_turn`; one sent after the close gets an error; the `end_turn` answers come in the
 * order the prompts were sent; and the log replays, as user messages, only what was sent, with
 * every prompt that ended `end_turn`, in the order sent. (A prompt past the queue's limit gets
 * -32602, which is allowed.)
 *
 * @module
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Scenario, ScenarioContext } from "../context.ts";
import { type Frame, random, type Server, writeScript } from "../driver.ts";

/** What one race sends, in order. */
type Action =
  | { readonly kind: "prompt"; readonly text: string }
  | { readonly kind: "steer"; readonly text: string }
  | { readonly kind: "cancel" }
  | { readonly kind: "cancel-request" }
  | { readonly kind: "mode" }
  | { readonly kind: "close" };

interface Sent {
  readonly action: Action;
  readonly id?: number;
  /** For a `cancel-request`: the prompt it names. */
  readonly target?: number;
}

/** See the module doc. */
export const queue: Scenario = {
  name: "queue",
  description: "prompt / cancel / $/cancel_request / set_mode / steering / close interleaved",
  async run(context: ScenarioContext): Promise<void> {
    const races = context.pick(60, 15, 4);
    const next = random(context.seed + 7);
    // Every turn takes a few ms, so prompts sent together queue behind each other.
    const steps = Array.from({ length: 4_000 }, () => ({ delayMs: 2, text: "ok" }));
    const script = await writeScript(context.base, "queue-script.json", steps);
    const server = context.start({
      dataDir: join(context.base, "data"),
      cwd: context.base,
      args: ["--mode", "auto", "--model", "scripted", "--script", script, "--prompt-queue", "4"],
    });
    await server.initialize();
    for (let n = 0; n < races; n++) {
      const cwd = join(context.base, "ws", String(n));
      await mkdir(cwd, { recursive: true });
      const sessionId = await server.newSession(cwd);
      context.run();
      const sent = await sendRace(server, sessionId, n, next);
      if (!await checkRace(context, server, sessionId, cwd, sent, n)) return;
    }
    await context.checkAnswers(server, "end");
  },
};

/** Sends 3 to 8 actions, in one to three writes; returns what was sent. */
async function sendRace(
  server: Server,
  sessionId: string,
  race: number,
  next: () => number,
): Promise<Sent[]> {
  const count = 3 + Math.floor(next() * 6);
  const actions: Action[] = [];
  for (let i = 0; i < count; i++) {
    const roll = next();
    const text = `r${race}-${i}`;
    if (roll < 0.45) actions.push({ kind: "prompt", text });
    else if (roll < 0.6) actions.push({ kind: "steer", text });
    else if (roll < 0.72) actions.push({ kind: "cancel" });
    else if (roll < 0.82) actions.push({ kind: "cancel-request" });
    else if (roll < 0.94) actions.push({ kind: "mode" });
    else actions.push({ kind: "close" });
  }
  const sent: Sent[] = [];
  const frames: Frame[] = [];
  let lastPrompt: number | undefined;
  for (const action of actions) {
    switch (action.kind) {
      case "prompt": {
        const { id, frame } = server.promptRequest(sessionId, action.text);
        lastPrompt = id;
        sent.push({ action, id });
        frames.push(frame);
        break;
      }
      case "steer": {
        const { id, frame } = server.request("_session/steering", {
          sessionId,
          prompt: [{ type: "text", text: action.text }],
        });
        sent.push({ action, id });
        frames.push(frame);
        break;
      }
      case "cancel":
        sent.push({ action });
        frames.push(server.notification("session/cancel", { sessionId }));
        break;
      case "cancel-request":
        sent.push({ action, ...(lastPrompt === undefined ? {} : { target: lastPrompt }) });
        frames.push(server.notification("$/cancel_request", { requestId: lastPrompt ?? -1 }));
        break;
      case "mode": {
        const { id, frame } = server.request("session/set_mode", {
          sessionId,
          modeId: next() < 0.5 ? "read-only" : "auto",
        });
        sent.push({ action, id });
        frames.push(frame);
        break;
      }
      case "close": {
        const { id, frame } = server.request("session/close", { sessionId });
        sent.push({ action, id });
        frames.push(frame);
        break;
      }
    }
  }
  // One to three writes, split at random points.
  const cuts = new Set([0, frames.length]);
  for (let i = Math.floor(next() * 3); i > 0; i--) cuts.add(Math.floor(next() * frames.length));
  const points = [...cuts].sort((a, b) => a - b);
  for (let i = 0; i + 1 < points.length; i++) {
    const part = frames.slice(points[i], points[i + 1]);
    if (part.length > 0) await server.write(...part);
  }
  return sent;
}

/** Checks one race's answers and log; false when the server stopped answering. */
async function checkRace(
  context: ScenarioContext,
  server: Server,
  sessionId: string,
  cwd: string,
  sent: readonly Sent[],
  race: number,
): Promise<boolean> {
  const answers = new Map<number, Frame>();
  for (const { id } of sent) {
    if (id === undefined) continue;
    const answer = await server.response(id, 20_000);
    if (answer === undefined) {
      if (!(await context.checkAnswers(server, "queue"))) return false;
      context.fail("other", "hang", `race ${race}: request ${id} got no answer within 20 s`);
      return true;
    }
    answers.set(id, answer);
  }
  const closeAt = sent.findIndex(({ action }) => action.kind === "close");
  const ended: number[] = [];
  for (const [index, { action, id }] of sent.entries()) {
    if (action.kind !== "prompt" || id === undefined) continue;
    const answer = answers.get(id) as Frame;
    const stopReason = (answer.result as { stopReason?: string } | undefined)?.stopReason;
    const afterClose = closeAt !== -1 && index > closeAt;
    if (afterClose) {
      if (!("error" in answer)) {
        context.fail("other", "queue-after-close", `race ${race}: a prompt after close ran`);
      }
      continue;
    }
    // A cancel_request names only its prompt: later ones are not cancelled by it.
    const cancelledBefore = sent.slice(index + 1).some(({ action: later, target }, at) =>
      (closeAt === -1 || index + 1 + at < closeAt) &&
      (later.kind === "cancel" || (later.kind === "cancel-request" && target === id))
    ) || (closeAt !== -1 && index < closeAt);
    const full = /--prompt-queue/.test(JSON.stringify(answer.error ?? ""));
    if ("error" in answer && full) {
      continue;
    }
    if ("error" in answer) {
      context.fail(
        "other",
        "queue-error",
        `race ${race}: prompt ${id} failed: ${JSON.stringify(answer.error).slice(0, 200)}`,
      );
    } else if (stopReason === "end_turn") {
      ended.push(id);
    } else if (stopReason !== "cancelled" || !cancelledBefore) {
      context.fail(
        "other",
        "queue-stop-reason",
        `race ${race}: prompt ${id} ended ${stopReason} (${describe(sent)})`,
      );
    }
  }
  const order = ended.map((id) => server.responseIndex(id));
  if (order.some((at, i) => i > 0 && at < (order[i - 1] as number))) {
    context.fail("other", "queue-order", `race ${race}: end_turn answers out of order`);
  }
  return await checkLog(context, server, sessionId, cwd, sent, ended, race);
}

/** Loads the session again and checks its user messages against what was sent. */
async function checkLog(
  context: ScenarioContext,
  server: Server,
  sessionId: string,
  cwd: string,
  sent: readonly Sent[],
  ended: readonly number[],
  race: number,
): Promise<boolean> {
  if (!sent.some(({ action }) => action.kind === "close")) {
    await server.call("session/close", { sessionId });
  }
  const from = server.updates(sessionId).length;
  const loaded = await server.call("session/load", { sessionId, cwd, mcpServers: [] }, 20_000);
  if (loaded === undefined) return await context.checkAnswers(server, "queue-load");
  const users = server.updates(sessionId, from)
    .filter((update) => update.sessionUpdate === "user_message_chunk")
    .map((update) => (update.content as { text?: string }).text ?? "");
  const texts = new Map<string, Action>();
  for (const { action } of sent) {
    if (action.kind === "prompt" || action.kind === "steer") texts.set(action.text, action);
  }
  const strange = users.filter((text) => !texts.has(text));
  if (strange.length > 0) {
    context.fail("other", "queue-log-unsent", `race ${race}: replayed ${strange.join(", ")}`);
  }
  const prompts = users.filter((text) => texts.get(text)?.kind === "prompt");
  const sentOrder = sent.flatMap(({ action }) => action.kind === "prompt" ? [action.text] : []);
  let cursor = 0;
  for (const text of prompts) {
    const at = sentOrder.indexOf(text, cursor);
    if (at === -1) {
      context.fail("other", "queue-log-order", `race ${race}: ${text} replayed out of order`);
      break;
    }
    cursor = at + 1;
  }
  for (const id of ended) {
    const index = sent.findIndex((entry) => entry.id === id);
    const text = (sent[index]?.action as { text: string }).text;
    if (!prompts.includes(text)) {
      context.fail("other", "queue-log-lost", `race ${race}: ${text} ended end_turn, not in log`);
    }
  }
  await server.call("session/close", { sessionId });
  return true;
}

function describe(sent: readonly Sent[]): string {
  return sent.map(({ action, id }) => `${action.kind}${id === undefined ? "" : `#${id}`}`).join(
    " ",
  );
}
