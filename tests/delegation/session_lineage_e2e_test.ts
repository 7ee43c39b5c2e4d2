/**
 * Session lineage end to end, on Deno, Node.js and Bun: a parent acp-harness (scripted model)
 * delegates to a child acp-harness on the same data directory; the child's session records the
 * parent's session and `delegate` call, the parent's `session/list` leaves it out unless its
 * `_meta` asks (then names the parent), `session/load` of the id in `rawOutput` replays it, and
 * deleting the parent deletes it. Every frame the parent sends is checked against the ACP schema.
 *
 * @module
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { exitWithin, RpcError, spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { MARK, marked } from "../_helpers/marked_processes.ts";
import { RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";

type Entry = { sessionId: string; _meta?: Record<string, unknown> };
type Update = Record<string, unknown> & { sessionUpdate: string };

const DELEGATE = {
  toolCalls: [{
    id: "call_delegate",
    name: "delegate",
    arguments: { agent: "worker", prompt: "Say hello" },
  }],
};

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: a delegated session is the parent's child: hidden, listed on request, loaded, deleted with it`, async () => {
    await using dir = await tempDir("acp-harness-lineage-");
    const cwd = join(dir.path, "ws");
    const data = join(dir.path, "data");
    await Deno.mkdir(cwd);
    const mark = crypto.randomUUID();
    const file = async (name: string, content: unknown): Promise<string> => {
      const path = join(dir.path, name);
      await writeFile(path, JSON.stringify(content));
      return path;
    };
    const harness = (script: string): string[] => [
      ...runtime.args,
      ...["--model", "scripted", "--script", script, "--data-dir", data],
    ];
    const config = await file("config.json", {
      agents: {
        worker: {
          command: runtime.command,
          args: harness(await file("child.json", [{ text: "Hello from the worker." }])),
          env: { [MARK]: mark },
          description: "Says hello",
        },
      },
    });
    const parentScript = await file("parent.json", [DELEGATE, { text: "The worker said hello." }]);
    let agent: StdioAgent | undefined;
    try {
      agent = spawnAgent(
        runtime.command,
        [...harness(parentScript), "--config", config, "--mode", "auto"],
        { cwd, env: { ...Deno.env.toObject(), ACP_HARNESS_DELEGATION_DEPTH: "" } },
      );
      const { client } = agent;
      await client.initialize();
      const sessionId = await client.newSession(cwd);
      assert.equal(await client.prompt(sessionId, "Delegate a greeting"), "end_turn");
      const last = client.updates(sessionId).map(({ update }) => update as Update)
        .filter((update) => update.toolCallId === "call_delegate").at(-1);
      assert.equal(last?.status, "completed", JSON.stringify(last));
      const child = (last?.rawOutput as { sessionId: string }).sessionId;
      assert.match(child, /^[0-9a-f-]{36}$/);
      // The child's process is gone once the call ended: its session is free to load here.
      await pollUntil(async () => (await marked(mark)).length === 0, {
        what: "the worker to be gone",
      });

      const list = async (meta?: Record<string, unknown>): Promise<Entry[]> =>
        (await client.request<{ sessions: Entry[] }>("session/list", {
          ...(meta ? { _meta: { "acp-harness": meta } } : {}),
        })).sessions;
      assert.deepEqual((await list()).map((entry) => entry.sessionId), [sessionId]);
      const all = await list({ children: true });
      assert.deepEqual(all.map((entry) => entry.sessionId).sort(), [sessionId, child].sort());
      const parent = { sessionId, toolCallId: "call_delegate" };
      assert.deepEqual(all.find((entry) => entry.sessionId === child)?._meta, {
        "acp-harness": { parent },
      });
      assert.deepEqual((await list({ parent: sessionId })).map((entry) => entry.sessionId), [
        child,
      ]);

      await client.request("session/load", { sessionId: child, cwd, mcpServers: [] });
      const replayed = client.updates(child).map(({ update }) => update as Update);
      assert.ok(
        replayed.some((update) =>
          update.sessionUpdate === "agent_message_chunk" &&
          JSON.stringify(update.content).includes("Hello from the worker.")
        ),
        JSON.stringify(replayed),
      );
      assert.ok(replayed.some((update) => update.sessionUpdate === "user_message_chunk"));

      assert.deepEqual(await client.request("session/delete", { sessionId }), {});
      assert.deepEqual(await list({ children: true }), []);
      await assert.rejects(
        client.request("session/load", { sessionId: child, cwd, mcpServers: [] }),
        (error: unknown) => error instanceof RpcError && error.code === -32002,
      );
      assert.deepEqual(client.problems, []);
    } finally {
      agent?.end();
      if (agent) await exitWithin(agent, 10_000).catch(() => {});
      for (const pid of await marked(mark)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Gone.
        }
      }
    }
  });
}
