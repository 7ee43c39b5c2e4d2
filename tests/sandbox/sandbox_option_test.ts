/**
 * The session config option `sandbox`: a client may tighten the server's level, never loosen it
 * (-32602 naming the field); the choice confines the session's next commands, is recorded in the
 * session's log and comes back with `session/load`. A real server (Deno) with real bubblewrap.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { exitWithin, RpcError, spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { bwrapAvailable } from "../_helpers/bwrap.ts";
import { RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const available = bwrapAvailable();
const DENO_RUNTIME = RUNTIMES[0];

interface SelectOption {
  readonly id: string;
  readonly currentValue: string;
  readonly options?: readonly { readonly value: string }[];
}

function sandboxOption(options: readonly SelectOption[]): SelectOption | undefined {
  return options.find((option) => option.id === "sandbox");
}

/** The last finished tool call's text of a session. */
function lastResult(agent: StdioAgent, sessionId: string): string {
  const done = agent.client.updates(sessionId).map(({ update }) =>
    update as { sessionUpdate: string; status?: string; content?: unknown }
  ).filter((update) =>
    update.sessionUpdate === "tool_call_update" &&
    (update.status === "completed" || update.status === "failed")
  );
  return JSON.stringify(done.at(-1)?.content ?? "");
}

Deno.test({
  name: "the sandbox option tightens only, confines the next commands and is restored on load",
  ignore: !available || DENO_RUNTIME === undefined,
  async fn() {
    const runtime = DENO_RUNTIME!;
    await using dir = await tempDir("acp-harness-sandbox-option-");
    const ws = join(dir.path, "ws");
    await mkdir(ws);
    const script = join(dir.path, "script.json");
    const step = { toolCalls: [{ name: "run_command", arguments: { command: "echo x > f" } }] };
    await writeFile(script, JSON.stringify([step, { text: "ok" }, step, { text: "ok" }]));
    const start = (): StdioAgent =>
      spawnAgent(runtime.command, [
        ...runtime.args,
        ...["--model", "scripted", "--script", script, "--mode", "auto"],
        ...["--data-dir", join(dir.path, "data"), "--sandbox", "workspace-write"],
      ], { cwd: ws, env: { ...Deno.env.toObject(), ACP_HARNESS_DELEGATION_DEPTH: "" } });
    const first = start();
    let sessionId: string;
    try {
      await first.client.initialize();
      const created = await first.client.request<
        { sessionId: string; configOptions: SelectOption[] }
      >(
        "session/new",
        { cwd: ws, mcpServers: [] },
      );
      sessionId = created.sessionId;
      const offered = sandboxOption(created.configOptions);
      assert.equal(offered?.currentValue, "workspace-write");
      assert.deepEqual(offered?.options?.map((option) => option.value), [
        "workspace-write",
        "read-only",
      ]);
      await first.client.prompt(sessionId, "write");
      assert.match(lastResult(first, sessionId), /Exit code: 0/);
      const loosened = await first.client.request("session/set_config_option", {
        sessionId,
        configId: "sandbox",
        value: "off",
      }).then(() => undefined, (error: unknown) => error);
      assert.ok(loosened instanceof RpcError);
      assert.equal(loosened.code, -32602);
      assert.match(loosened.message, /value: sandbox "off" is looser than the server's sandbox/);
      const tightened = await first.client.request<{ configOptions: SelectOption[] }>(
        "session/set_config_option",
        { sessionId, configId: "sandbox", value: "read-only" },
      );
      assert.equal(sandboxOption(tightened.configOptions)?.currentValue, "read-only");
      await first.client.prompt(sessionId, "write again");
      assert.match(lastResult(first, sessionId), /Read-only file system/);
      assert.match(lastResult(first, sessionId), /\[sandbox read-only: /);
    } finally {
      first.end();
      await exitWithin(first, 15_000);
    }
    const second = start();
    try {
      await second.client.initialize();
      const loaded = await second.client.request<{ configOptions: SelectOption[] }>(
        "session/load",
        { sessionId, cwd: ws, mcpServers: [] },
      );
      assert.equal(sandboxOption(loaded.configOptions)?.currentValue, "read-only");
    } finally {
      second.end();
      await exitWithin(second, 15_000);
    }
  },
});
