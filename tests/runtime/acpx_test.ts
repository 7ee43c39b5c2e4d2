import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { schemaProblems, withoutSpend } from "../_helpers/acp_schema.ts";
import { type AcpxRun, removeAcpxSocketDir, runAcpx, stopAcpxProcesses } from "../_helpers/acpx.ts";
import { startFakeLlmServer } from "../_helpers/fake_llm_server.ts";
import { openAiTurn } from "../_helpers/llm_fixtures.ts";
import { commandLine, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

/** A test's directory: acpx's HOME, the agent's data, the workspace and a script that hangs. */
interface AcpxDir extends AsyncDisposable {
  readonly base: string;
  readonly workspace: string;
  readonly hangScript: string;
}

/** Makes a test's {@link AcpxDir}; disposing it removes everything in it. */
async function acpxDir(): Promise<AcpxDir> {
  const dir = await tempDir("acp-harness-acpx-");
  const workspace = join(dir.path, "ws");
  await mkdir(join(dir.path, "home"), { recursive: true });
  await mkdir(workspace, { recursive: true });
  const hangScript = join(dir.path, "hang.json");
  await writeFile(hangScript, JSON.stringify([{ delayMs: 60_000, text: "never" }]));
  return {
    base: dir.path,
    workspace,
    hangScript,
    async [Symbol.asyncDispose]() {
      await stopAcpxProcesses(join(dir.path, "home"));
      await removeAcpxSocketDir(join(dir.path, "home"));
      await dir[Symbol.asyncDispose]();
    },
  };
}

/**
 * Runs acpx with a temporary HOME; `interrupt` sends SIGINT once the prompt is running: acpx
 * printed the agent's `session_info_update`, which the agent sends when it has admitted the
 * first prompt of a session and begun its turn.
 */
function runAcpxIn(
  { base, workspace }: AcpxDir,
  args: readonly string[],
  interrupt = false,
  env: Record<string, string> = {},
): Promise<AcpxRun> {
  let interrupted = false;
  return runAcpx(args, {
    cwd: workspace,
    env: { HOME: join(base, "home"), ACP_HARNESS_HOME: join(base, "data"), ...env },
    timeoutMs: 20_000,
    until: "exit",
    onStdout(stdout, child) {
      if (interrupt && !interrupted && stdout.includes('"sessionUpdate":"session_info_update"')) {
        interrupted = true;
        // acpx forwards Ctrl-C to the running prompt as session/cancel.
        Deno.kill(child.pid as number, "SIGINT");
      }
    },
  });
}

/** Methods the agent calls on the client (their requests are the agent's, responses acpx's). */
const CLIENT_METHODS = /^(fs\/|terminal\/|session\/request_permission$|session\/update$)/;

/** Schema problems in the agent's frames (acpx prints both directions). */
function agentProblems(frames: ReadonlyArray<Record<string, unknown>>): string[] {
  const requests = new Map<unknown, string>();
  // Ids of the agent's own requests still waiting for acpx's answer; ids of the two sides overlap.
  const agentRequests = new Set<unknown>();
  const problems: string[] = [];
  for (const frame of frames) {
    const method = frame.method;
    if (typeof method === "string") {
      if (CLIENT_METHODS.test(method)) {
        problems.push(...schemaProblems(frame));
        if ("id" in frame) agentRequests.add(frame.id);
      } else if ("id" in frame) requests.set(frame.id, method);
    } else if (agentRequests.has(frame.id)) {
      agentRequests.delete(frame.id);
    } else if (requests.has(frame.id)) {
      problems.push(...schemaProblems(frame, requests.get(frame.id)));
      requests.delete(frame.id);
    }
  }
  return problems;
}

for (const runtime of RUNTIMES) {
  Deno.test(`acpx exec drives acp-harness on ${runtime.name}`, async () => {
    await using dir = await acpxDir();
    const run = await runAcpxIn(dir, [
      "--agent",
      commandLine(runtime),
      "--format",
      "json",
      "--approve-all",
      "exec",
      "hello from acpx",
    ]);
    assert.equal(run.code, 0, run.stderr);
    const init = run.frames.find((frame) => frame.id === 0 && "result" in frame)?.result as {
      agentInfo: { name: string };
      protocolVersion: number;
    };
    assert.equal(init.agentInfo.name, "acp-harness");
    assert.equal(init.protocolVersion, 1);
    const message = run.frames.find((frame) =>
      (frame.params as { update?: { sessionUpdate?: string } })?.update?.sessionUpdate ===
        "agent_message_chunk"
    );
    assert.equal(
      (message?.params as { update: { content: { text: string } } }).update.content.text,
      "Echo: hello from acpx",
    );
    const last = run.frames.at(-1);
    assert.deepEqual(withoutSpend(last?.result), { stopReason: "end_turn" });
    assert.deepEqual(agentProblems(run.frames), []);
  });
}

Deno.test("acpx Ctrl-C sends session/cancel; the prompt ends cancelled and acpx exits 0", async () => {
  await using dir = await acpxDir();
  const [, node] = RUNTIMES;
  assert.ok(node);
  const run = await runAcpxIn(dir, [
    "--agent",
    commandLine(node, ["--model", "scripted", "--script", dir.hangScript]),
    "--format",
    "json",
    "--approve-all",
    "exec",
    "this will be interrupted",
  ], true);
  assert.equal(run.code, 0, run.stderr);
  assert.ok(
    run.frames.some((frame) => frame.method === "session/cancel"),
    "acpx sent session/cancel",
  );
  const prompt = run.frames.find((frame) => frame.method === "session/prompt");
  const answer = run.frames.find((frame) => frame.id === prompt?.id && "result" in frame);
  assert.deepEqual(withoutSpend(answer?.result), { stopReason: "cancelled" });
  assert.deepEqual(agentProblems(run.frames), []);
});

for (const [flag, answer] of [["--approve-all", "allow"], ["--deny-all", "deny"]] as const) {
  Deno.test(`acpx ${flag}: an edit through acpx's own fs and permission handling`, async () => {
    await using dir = await acpxDir();
    const server = await startFakeLlmServer();
    try {
      const file = join(dir.workspace, `${answer}.txt`);
      await writeFile(file, "before\n");
      const configFile = join(dir.base, `${answer}.config.json`);
      await writeFile(
        configFile,
        JSON.stringify({
          providers: { fake: { api: "openai-chat", baseUrl: `${server.url}/v1` } },
        }),
      );
      server.enqueue(
        openAiTurn({
          toolCalls: [{
            id: "e1",
            name: "edit_file",
            arguments: { path: `${answer}.txt`, old_text: "before", new_text: "after" },
          }],
        }),
        openAiTurn({ text: ["finished"] }),
      );
      const [, node] = RUNTIMES;
      assert.ok(node);
      const run = await runAcpxIn(dir, [
        "--agent",
        commandLine(node, ["--config", configFile, "--model", "fake/coder"]),
        "--format",
        "json",
        flag,
        "exec",
        "edit the file",
      ]);
      const asked = run.frames.filter((frame) => frame.method === "session/request_permission");
      assert.equal(asked.length, 1);
      const last = run.frames.at(-1);
      if (answer === "allow") {
        assert.equal(run.code, 0, run.stderr);
        assert.equal(await readFile(file, "utf8"), "after\n");
        // acpx advertises fs, so the edit went through its fs/write_text_file.
        assert.ok(run.frames.some((frame) => frame.method === "fs/write_text_file"));
        assert.deepEqual(withoutSpend(last?.result), { stopReason: "end_turn" });
      } else {
        assert.equal(run.code, 5, "acpx exits 5 when every permission request was denied");
        assert.equal(await readFile(file, "utf8"), "before\n");
        assert.ok(!run.frames.some((frame) => frame.method === "fs/write_text_file"));
      }
      assert.deepEqual(agentProblems(run.frames), []);
    } finally {
      await server.close();
    }
  });
}
