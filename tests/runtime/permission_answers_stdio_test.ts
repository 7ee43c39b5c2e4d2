/**
 * Permission answers that arrive for the question's id but cannot be used (issue 27, defect 11),
 * over real stdio on Deno, Node.js and Bun: each is a refusal at once, logged and recorded in the
 * session's log, not an open question until `--permission-timeout` (here 600 s).
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { exitWithin, spawnAgent } from "../_helpers/acp_client.ts";
import { RUNTIMES } from "../_helpers/runtimes.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";

/** Answers for the question's id that are not answers, as raw lines. */
const UNUSABLE: ReadonlyArray<readonly [string, (id: unknown) => string]> = [
  [
    "an answer that is not JSON",
    (id) =>
      `{"jsonrpc":"2.0","id":${
        JSON.stringify(id)
      },"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}\n`,
  ],
  [
    "an answer with neither result nor error",
    (id) => JSON.stringify({ jsonrpc: "2.0", id }) + "\n",
  ],
  [
    "an answer without jsonrpc",
    (id) =>
      JSON.stringify({ id, result: { outcome: { outcome: "selected", optionId: "allow_once" } } }) +
      "\n",
  ],
];

/** How long a refusal may take at most here: a bound on a hang, far below the 600 s timeout. */
const BOUND_MS = 30_000;

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: an unusable permission answer for the question's id is a refusal at once`, async () => {
    await using dirs = new TempDirs("acp-harness-permission-stdio-");
    const data = await dirs.make();
    const script = join(data, "script.json");
    const steps = UNUSABLE.flatMap(() => [
      { toolCalls: [{ name: "run_command", arguments: { command: "touch ran.txt" } }] },
      { text: "refused" },
    ]);
    await writeFile(script, JSON.stringify(steps));
    const agent = spawnAgent(runtime.command, [
      ...runtime.args,
      "--data-dir",
      data,
      "--mode",
      "ask",
      "--model",
      "scripted",
      "--script",
      script,
      "--permission-timeout",
      "600",
    ]);
    const { client } = agent;
    // The question is answered by hand below.
    client.handlers.set("session/request_permission", () => new Promise(() => {}));
    try {
      await client.initialize();
      for (const [label, answer] of UNUSABLE) {
        const cwd = await dirs.make();
        const sessionId = await client.newSession(cwd);
        const asked = client.frames.length;
        const prompt = client.prompt(sessionId, "run it");
        await client.waitFor(
          (frames) =>
            frames.slice(asked).some((frame) => frame.method === "session/request_permission"),
          BOUND_MS,
        );
        const question = client.frames.slice(asked).find((frame) =>
          frame.method === "session/request_permission"
        )!;
        await agent.writeRaw(answer(question.id));
        let timer: ReturnType<typeof setTimeout> | undefined;
        const stopReason = await Promise.race([
          prompt,
          new Promise<string>((resolve) =>
            timer = setTimeout(() => resolve("still open"), BOUND_MS)
          ),
        ]).finally(() => clearTimeout(timer));
        assert.equal(stopReason, "end_turn", label);
        assert.equal(existsSync(join(cwd, "ran.txt")), false, `${label}: the command ran`);
        // Recorded like any other refusal.
        const log = await sessionLog(data, sessionId);
        assert.match(log, /"type":"permission"[^\n]*"answer":"reject_once"/, label);
      }
      assert.match(agent.stderr(), /permission request failed; refusing/);
      assert.deepEqual(agent.impure, []);
    } finally {
      agent.end();
      await exitWithin(agent, 10_000);
    }
  });
}

/** The text of a session's JSONL log under a data directory. */
async function sessionLog(data: string, sessionId: string): Promise<string> {
  const found: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.name.includes(sessionId)) found.push(path);
    }
  };
  await walk(data);
  const texts = await Promise.all(found.map((path) => readFile(path, "utf8")));
  return texts.join("\n");
}
