/**
 * Permission answers, well-formed and malformed: only a well-formed `selected` answer with an
 * offered allow option may run the tool; an answer the server cannot use must end the turn within
 * a bound (or at least let a cancel end it) and never run the tool.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Scenario, ScenarioContext } from "../context.ts";
import { type Frame, writeScript } from "../driver.ts";

type Answer = { result: unknown } | { raw: (frame: Frame) => string };

const selected = (optionId: unknown): unknown => ({ outcome: { outcome: "selected", optionId } });
const raw = (build: (frame: Frame) => string): Answer => ({ raw: build });
const line = (message: unknown): string => JSON.stringify(message) + "\n";

/** Answers that must run the tool. */
const ALLOWING: ReadonlyArray<[string, Answer]> = [
  ["selected allow_once", { result: selected("allow_once") }],
  ["selected allow_always", { result: selected("allow_always") }],
];

/** Answers that must not run the tool, and end the turn by themselves. */
const REFUSING: ReadonlyArray<[string, Answer]> = [
  ["selected reject_once", { result: selected("reject_once") }],
  ["selected reject_always", { result: selected("reject_always") }],
  ["cancelled", { result: { outcome: { outcome: "cancelled" } } }],
  ["rejected + allow_once", {
    result: { outcome: { outcome: "rejected", optionId: "allow_once" } },
  }],
  ['outcome "allowed"', { result: { outcome: "allowed" } }],
  ["allowed + allow_once", { result: { outcome: { outcome: "allowed", optionId: "allow_once" } } }],
  ["no inner outcome + allow_once", { result: { outcome: { optionId: "allow_once" } } }],
  ["null inner outcome + allow_once", {
    result: { outcome: { outcome: null, optionId: "allow_once" } },
  }],
  ['outcome "selected" string', { result: { outcome: "selected", optionId: "allow_once" } }],
  ["missing outcome", { result: { optionId: "allow_once" } }],
  ["null outcome", { result: { outcome: null, optionId: "allow_once" } }],
  ["empty result", { result: {} }],
  ["null result", { result: null }],
  ["string result", { result: "allow_once" }],
  ["true result", { result: true }],
  ["array result", { result: [selected("allow_once")] }],
  ["selected without optionId", { result: { outcome: { outcome: "selected" } } }],
  ["unknown optionId", { result: selected("yes") }],
  ["upper-case optionId", { result: selected("ALLOW_ONCE") }],
  ["optionId with space", { result: selected("allow_once ") }],
  ["numeric optionId", { result: selected(0) }],
  ["array optionId", { result: selected(["allow_once"]) }],
  ["object optionId", { result: selected({ id: "allow_once" }) }],
  ["upper-case SELECTED", {
    result: { outcome: { outcome: "SELECTED", optionId: "allow_once" } },
  }],
  ["outcome array", { result: { outcome: [{ outcome: "selected", optionId: "allow_once" }] } }],
  [
    "error answer",
    raw((frame) => line({ jsonrpc: "2.0", id: frame.id, error: { code: -32603, message: "no" } })),
  ],
  [
    "error and result",
    raw((frame) =>
      line({
        jsonrpc: "2.0",
        id: frame.id,
        error: { code: -32603, message: "no" },
        result: selected("allow_once"),
      })
    ),
  ],
  [
    "reject then allow",
    raw((frame) =>
      line({ jsonrpc: "2.0", id: frame.id, result: selected("reject_once") }) +
      line({ jsonrpc: "2.0", id: frame.id, result: selected("allow_once") })
    ),
  ],
];

/**
 * Answers for the question's id that are not valid answers: refused at once (the turn ends by
 * itself, never by `--permission-timeout`) and nothing may run.
 */
const MALFORMED_FOR_ID: ReadonlyArray<[string, Answer]> = [
  [
    "unparseable answer",
    raw((frame) =>
      `{"jsonrpc":"2.0","id":${
        JSON.stringify(frame.id)
      },"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}\n`
    ),
  ],
  ["neither result nor error", raw((frame) => line({ jsonrpc: "2.0", id: frame.id }))],
  [
    "no jsonrpc",
    raw((frame) => line({ id: frame.id, result: selected("allow_once") })),
  ],
  [
    'jsonrpc "1.0"',
    raw((frame) => line({ jsonrpc: "1.0", id: frame.id, result: selected("allow_once") })),
  ],
];

/** Answers the server cannot attribute: the turn must still end (bounded) and nothing may run. */
const UNUSABLE: ReadonlyArray<[string, Answer]> = [
  [
    "string id for a numeric id",
    raw((frame) => line({ jsonrpc: "2.0", id: String(frame.id), result: selected("allow_once") })),
  ],
  [
    "wrong id",
    raw((frame) =>
      line({ jsonrpc: "2.0", id: Number(frame.id) + 100_000, result: selected("allow_once") })
    ),
  ],
];

/** How long a turn may wait for an answer it cannot use (`TORTURE_PERMISSION_WAIT_MS`). */
function unusableWaitMs(context: ScenarioContext): number {
  const fromEnv = Number(Deno.env.get("TORTURE_PERMISSION_WAIT_MS"));
  return Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : context.pick(60_000, 30_000, 10_000);
}

/** Whether the server's log says a permission question of a session timed out. */
function timedOut(stderr: string, sessionId: string): boolean {
  return stderr.split("\n").some((entry) =>
    entry.includes("permission request timed out") && entry.includes(sessionId)
  );
}

/** See the module doc. */
export const permission: Scenario = {
  name: "permission",
  description: "36 kinds of permission answer in --mode ask to run_command and write_file",
  async run(context: ScenarioContext): Promise<void> {
    const rounds = context.pick(2, 1, 1);
    const script = await writeScript(context.base, "script.json", [
      { toolCalls: [{ name: "run_command", arguments: { command: "touch ran.txt" } }] },
      { toolCalls: [{ name: "write_file", arguments: { path: "written.txt", content: "x" } }] },
      { text: "done" },
    ]);
    const server = context.start({
      dataDir: join(context.base, "data"),
      cwd: context.base,
      // The bound the server documents for answers it cannot use: --permission-timeout.
      args: [
        "--mode",
        "ask",
        "--model",
        "scripted",
        "--script",
        script,
        "--permission-timeout",
        String(context.pick(5, 2, 1)),
      ],
    });
    await server.initialize();
    const answers = new Map<string, Answer>();
    server.answer = (frame) => {
      if (frame.method !== "session/request_permission") return undefined;
      const answer = answers.get((frame.params as { sessionId: string }).sessionId);
      if (answer === undefined) return { result: { outcome: { outcome: "cancelled" } } };
      return "raw" in answer ? { raw: answer.raw(frame) } : { result: answer.result };
    };
    const cases = [
      ...ALLOWING.map(([name, answer]) => ({ name, answer, allows: true, unusable: false })),
      ...REFUSING.map(([name, answer]) => ({ name, answer, allows: false, unusable: false })),
      ...MALFORMED_FOR_ID.map(([name, answer]) => ({
        name,
        answer,
        allows: false,
        unusable: false,
        atOnce: true,
      })),
      ...UNUSABLE.map(([name, answer]) => ({ name, answer, allows: false, unusable: true })),
    ];
    const wait = unusableWaitMs(context);
    // Every case of every round at once, each in its own session and directory: the waits overlap.
    const all = Array.from({ length: rounds }, (_, round) => cases.map((item) => ({ item, round })))
      .flat();
    {
      await Promise.all(all.map(async ({ item, round }, index) => {
        const cwd = join(context.base, "ws", `${round}-${index}`);
        await mkdir(cwd, { recursive: true });
        const sessionId = await server.newSession(cwd);
        answers.set(sessionId, item.answer);
        const prompt = server.promptRequest(sessionId, "run it");
        await server.write(prompt.frame);
        context.run();
        let response = await server.response(prompt.id, item.unusable ? wait : 20_000);
        if (response === undefined) {
          if (server.exit) return;
          context.fail(
            "other",
            item.unusable ? "unbounded-wait" : "hang",
            `${item.name}: the turn did not end within ${
              item.unusable ? wait : 20_000
            } ms of the answer`,
          );
          await server.write(server.notification("session/cancel", { sessionId }));
          response = await server.response(prompt.id, 10_000);
          if (response === undefined) {
            context.fail("other", "cancel-ignored", `${item.name}: a cancel did not end the turn`);
          }
        }
        // An answer for the question's id is refused at once, not when the question times out.
        if ("atOnce" in item && timedOut(server.stderr, sessionId)) {
          context.fail(
            "other",
            "unbounded-wait",
            `${item.name}: refused by --permission-timeout, not at once`,
          );
        }
        const ran = existsSync(join(cwd, "ran.txt"));
        const written = existsSync(join(cwd, "written.txt"));
        if (item.allows && !(ran && written)) {
          context.fail(
            "other",
            "consent-ignored",
            `${item.name}: an allowing answer did not run the tool (${JSON.stringify(response)})`,
          );
        }
        if (!item.allows && (ran || written)) {
          context.fail(
            "unconsented",
            item.name,
            `${item.name}: ${
              [ran ? "run_command" : "", written ? "write_file" : ""].join(" ").trim()
            } ran`,
            Number(ran) + Number(written),
          );
        }
      }));
    }
    await context.checkAnswers(server, "end");
  },
};
