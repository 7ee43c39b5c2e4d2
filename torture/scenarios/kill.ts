/**
 * SIGKILL during turns, then a restart on the same data directory and `session/load`: every
 * event acknowledged to the client before the kill (an answered prompt, a message, a thought, a
 * tool call, a finished tool call, the title) must be replayed.
 *
 * @module
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Scenario, ScenarioContext } from "../context.ts";
import { random, type Server, writeScript } from "../driver.ts";

type Update = Record<string, unknown>;

/** What the client was told: keys of acknowledged events. */
export function acknowledged(updates: readonly Update[], prompts: readonly string[]): Set<string> {
  const keys = new Set<string>();
  const texts = new Map<string, string>();
  for (const update of updates) {
    const kind = update.sessionUpdate;
    const text = (update.content as { text?: string } | undefined)?.text;
    if ((kind === "agent_message_chunk" || kind === "agent_thought_chunk") && text !== undefined) {
      const key = `${kind}:${String(update.messageId ?? "")}`;
      texts.set(key, (texts.get(key) ?? "") + text);
    } else if (kind === "user_message_chunk" && text !== undefined) {
      keys.add(`user:${text}`);
    } else if (kind === "tool_call") {
      keys.add(`tool_call:${String(update.toolCallId)}`);
    } else if (
      kind === "tool_call_update" && (update.status === "completed" || update.status === "failed")
    ) {
      keys.add(`tool_done:${String(update.toolCallId)}:${String(update.status)}`);
    } else if (kind === "session_info_update" && typeof update.title === "string") {
      keys.add(`title:${update.title}`);
    }
  }
  for (const [key, text] of texts) keys.add(`${key}:${text}`);
  for (const prompt of prompts) keys.add(`user:${prompt}`);
  return keys;
}

/** The acknowledged events of `live` that `replayed` lacks. */
export function missing(
  live: readonly Update[],
  answeredPrompts: readonly string[],
  replayed: readonly Update[],
): string[] {
  const have = acknowledged(replayed, []);
  return [...acknowledged(live, answeredPrompts)].filter((key) => !have.has(key));
}

/** Loads `sessionId` in `server` and returns the replayed updates (undefined on failure). */
export async function load(
  server: Server,
  sessionId: string,
  cwd: string,
): Promise<Update[] | undefined> {
  const from = server.frames.length;
  const answer = await server.call("session/load", { sessionId, cwd, mcpServers: [] }, 30_000);
  if (answer === undefined || "error" in answer) return undefined;
  return server.updates(sessionId, from);
}

/** See the module doc. */
export const kill: Scenario = {
  name: "kill",
  description:
    "SIGKILL at a random point of a turn, restart, session/load: nothing acknowledged lost",
  async run(context: ScenarioContext): Promise<void> {
    const kills = context.pick(20, 5, 2);
    const next = random(context.seed);
    const script = await writeScript(context.base, "script.json", [
      { thought: "Thinking first.", text: "First answer." },
      {
        thought: "Let me look.",
        text: "Reading and writing.",
        toolCalls: [
          { name: "read_file", arguments: { path: "notes.txt" } },
          { name: "write_file", arguments: { path: "out.txt", content: "out" } },
          { name: "run_command", arguments: { command: "sleep 0.05; echo ran" } },
        ],
      },
      {
        text: ["More ", "text."],
        toolCalls: [{ name: "list_directory", arguments: { path: "." } }],
        chunkDelayMs: 10,
      },
      {
        text: "Searching.",
        toolCalls: [{ name: "search_text", arguments: { pattern: "remember" } }],
      },
      { delayMs: 60_000, text: "never committed" },
    ]);
    const args = ["--mode", "auto", "--model", "scripted", "--script", script];
    const after = await writeScript(
      context.base,
      "after.json",
      Array.from({ length: 12 }, () => ({ text: "Continuing." })),
    );
    const afterArgs = ["--mode", "auto", "--model", "scripted", "--script", after];
    for (let n = 0; n < kills; n++) {
      const dir = join(context.base, `kill-${n}`);
      const cwd = join(dir, "ws");
      const dataDir = join(dir, "data");
      await mkdir(cwd, { recursive: true });
      await writeFile(join(cwd, "notes.txt"), "remember me\n");
      const first = context.start({ dataDir, cwd: dir, args });
      await first.initialize();
      const sessionId = await first.newSession(cwd);
      const answered: string[] = [];
      const one = first.promptRequest(sessionId, `first prompt ${n}`);
      await first.write(one.frame);
      if ((await first.response(one.id, 20_000)) === undefined) {
        context.fail("other", "hang", "the first prompt got no answer");
        continue;
      }
      answered.push(`first prompt ${n}`);
      const before = first.updates(sessionId).length;
      const two = first.promptRequest(sessionId, `second prompt ${n}`);
      await first.write(two.frame);
      // Kill after a random number of the second turn's updates (up to all of them).
      const target = Math.floor(next() * 14);
      await first.waitFor(() => first.updates(sessionId).length - before >= target, 3_000);
      first.kill("SIGKILL");
      await first.exited;
      context.run();
      const live = first.updates(sessionId);
      if (first.responseIndex(two.id) !== -1) answered.push(`second prompt ${n}`);
      if (live.length > before) answered.push(`second prompt ${n}`);

      const second = context.start({ dataDir, cwd: dir, args: afterArgs });
      await second.initialize();
      const replayed = await load(second, sessionId, cwd);
      if (replayed === undefined) {
        context.fail("other", "load-failed", `kill ${n}: session/load failed after the kill`);
        await second.stop();
        continue;
      }
      const lost = missing(live, answered, replayed);
      if (lost.length > 0) {
        context.fail(
          "lost",
          "after-SIGKILL",
          `kill ${n} after ${target} updates: ${lost.join(", ")}`,
          lost.length,
        );
      }
      // The restarted server goes on with the session.
      const three = second.promptRequest(sessionId, "after restart");
      await second.write(three.frame);
      if ((await second.response(three.id, 20_000)) === undefined) {
        context.fail("other", "hang", `kill ${n}: a prompt after the restart got no answer`);
      }
      await second.stop();
      context.checkCrash(second, `kill ${n}`);
    }
  },
};
