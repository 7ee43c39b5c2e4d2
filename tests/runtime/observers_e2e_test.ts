/**
 * Read-only observers over real HTTP: `serve --http` as a child process on Deno and Node.js, two
 * clients of the SDK's `createHttpStream` on 127.0.0.1. The owner's turn waits on its permission
 * request while the observer attaches; the observer then sees the rest of the turn live, the same
 * text as the owner, is refused a prompt, and is told when the owner closes the session.
 *
 * @module
 */
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  type AcpTestClient,
  exitWithin,
  listeningUrl,
  memoryClient,
  RpcError,
  spawnAgent,
} from "../_helpers/acp_client.ts";
import { RUNTIMES } from "../_helpers/runtimes.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";

const SCRIPT = [
  { toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "out.txt", content: "z" } }] },
  { text: "written, watched" },
];

const AUTH = { authorization: "Bearer e2e-token" };

function agentText(client: AcpTestClient, sessionId: string): string {
  return client.updates(sessionId)
    .filter(({ update }) => update.sessionUpdate === "agent_message_chunk")
    .map(({ update }) => (update.content as { text: string }).text).join("|");
}

async function closeClient(client: AcpTestClient): Promise<void> {
  await (client as unknown as { close(): Promise<void> }).close().catch(() => {});
}

for (const runtime of RUNTIMES.filter((runtime) => runtime.name !== "bun")) {
  Deno.test(`${runtime.name}: an observer over HTTP sees the owner's running turn live and cannot act`, async () => {
    await using dirs = new TempDirs("acp-harness-observers-e2e-");
    const cwd = await dirs.make();
    const data = await dirs.make();
    const script = join(data, "script.json");
    await writeFile(script, JSON.stringify(SCRIPT));
    const agent = spawnAgent(runtime.command, [
      ...runtime.args,
      ...["serve", "--http", "--port", "0", "--data-dir", data, "--model", "scripted"],
      ...["--script", script, "--mode", "ask", "--token", "e2e-token", "--log-level", "info"],
    ]);
    const clients: AcpTestClient[] = [];
    try {
      const url = await listeningUrl(agent);
      const owner = memoryClient(createHttpStream(`${url}/acp`, { headers: AUTH }));
      const observer = memoryClient(createHttpStream(`${url}/acp`, { headers: AUTH }));
      clients.push(owner, observer);
      let asked!: () => void;
      let answer!: () => void;
      const askedPromise = new Promise<void>((resolve) => asked = resolve);
      const answered = new Promise<void>((resolve) => answer = resolve);
      owner.handlers.set("session/request_permission", async () => {
        asked();
        await answered;
        return { outcome: { outcome: "selected", optionId: "allow_once" } };
      });
      const init = await owner.initialize();
      const capabilities = init.agentCapabilities as { _meta: Record<string, unknown> };
      assert.deepEqual(capabilities._meta["acp-harness"], { observe: { maxObservers: 8 } });
      const sessionId = await owner.newSession(cwd);
      const turn = owner.prompt(sessionId, "write it");
      await askedPromise;
      await observer.initialize();
      const loaded = await observer.request<{ _meta: Record<string, unknown> }>("session/load", {
        sessionId,
        cwd,
        mcpServers: [],
        _meta: { "acp-harness": { observe: true } },
      });
      assert.deepEqual(loaded._meta["acp-harness"], { observing: true });
      assert.ok(observer.updates(sessionId).some(({ update }) => update.toolCallId === "w1"));
      await assert.rejects(
        observer.prompt(sessionId, "me too"),
        (error: unknown) =>
          error instanceof RpcError && error.code === -32002 &&
          /read-only observer/.test(error.message),
      );
      answer();
      assert.equal(await turn, "end_turn");
      await observer.waitFor(() => agentText(observer, sessionId) === "written, watched");
      assert.equal(agentText(observer, sessionId), agentText(owner, sessionId));
      assert.ok(!observer.frames.some((frame) => frame.method === "session/request_permission"));
      await owner.request("session/close", { sessionId });
      await observer.waitFor(() =>
        observer.frames.some((frame) => frame.method === "_acp-harness/observer_detached")
      );
      assert.deepEqual([...owner.problems, ...observer.problems], []);
      for (const client of clients) await closeClient(client);
      Deno.kill(agent.child.pid as number, "SIGTERM");
      assert.equal(await exitWithin(agent, 10_000), 0, agent.stderr());
    } finally {
      for (const client of clients) await closeClient(client);
      agent.child.kill("SIGKILL");
      await agent.exited;
    }
  });
}
