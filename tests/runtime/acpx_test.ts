import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, realpath, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { schemaProblems } from "../_helpers/acp_schema.ts";
import { commandLine, ROOT, RUNTIMES } from "../_helpers/runtimes.ts";

const base = await realpath(await mkdtemp(join(tmpdir(), "acp-harness-acpx-")));
const workspace = join(base, "ws");
await mkdir(join(base, "home"), { recursive: true });
await mkdir(workspace, { recursive: true });
const hangScript = join(base, "hang.json");
await writeFile(hangScript, JSON.stringify([{ delayMs: 60_000, text: "never" }]));

interface AcpxRun {
  readonly code: number | null;
  readonly frames: Array<Record<string, unknown>>;
  readonly stderr: string;
}

/** Runs acpx with a temporary HOME; `interrupt` sends SIGINT once the prompt is on the wire. */
function runAcpx(args: readonly string[], interrupt = false): Promise<AcpxRun> {
  const child = spawn(`${ROOT}node_modules/.bin/acpx`, args, {
    cwd: workspace,
    env: { ...Deno.env.toObject(), HOME: join(base, "home"), ACP_HARNESS_HOME: join(base, "data") },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  let interrupted = false;
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stdout.on("data", (text: string) => {
    stdout += text;
    if (interrupt && !interrupted && stdout.includes('"method":"session/prompt"')) {
      interrupted = true;
      // acpx forwards Ctrl-C as session/cancel; give the prompt a moment to be running.
      setTimeout(() => Deno.kill(child.pid as number, "SIGINT"), 200);
    }
  });
  child.stderr.on("data", (text: string) => stderr += text);
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  return new Promise((resolve) => {
    child.on("exit", (code) => {
      clearTimeout(timer);
      const frames = stdout.split("\n").filter((line) => line.trim() !== "").map((line) =>
        JSON.parse(line) as Record<string, unknown>
      );
      resolve({ code, frames, stderr });
    });
  });
}

/** Schema problems in the agent's frames (acpx prints both directions). */
function agentProblems(frames: ReadonlyArray<Record<string, unknown>>): string[] {
  const requests = new Map<unknown, string>();
  const problems: string[] = [];
  for (const frame of frames) {
    if (typeof frame.method === "string" && "id" in frame) requests.set(frame.id, frame.method);
    const isAgentResponse = !("method" in frame) && requests.has(frame.id) &&
      !["session/request_permission"].includes(requests.get(frame.id) as string);
    const isAgentNotification = frame.method === "session/update";
    if (isAgentResponse) {
      problems.push(...schemaProblems(frame, requests.get(frame.id)));
    } else if (isAgentNotification) problems.push(...schemaProblems(frame));
  }
  return problems;
}

for (const runtime of RUNTIMES) {
  Deno.test(`acpx exec drives acp-harness on ${runtime.name}`, async () => {
    const run = await runAcpx([
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
    assert.deepEqual(last?.result, { stopReason: "end_turn" });
    assert.deepEqual(agentProblems(run.frames), []);
  });
}

Deno.test("acpx Ctrl-C sends session/cancel; the prompt ends cancelled and acpx exits 0", async () => {
  const [, node] = RUNTIMES;
  assert.ok(node);
  const run = await runAcpx([
    "--agent",
    commandLine(node, ["--model", "scripted", "--script", hangScript]),
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
  assert.deepEqual(answer?.result, { stopReason: "cancelled" });
  assert.deepEqual(agentProblems(run.frames), []);
});
