import { pollUntil } from "../_helpers/wait.ts";
import assert from "node:assert/strict";
import process from "node:process";
import { NodeHost } from "../../src/host/node_host.ts";
import { HostWorkspace } from "../../src/tools/host_workspace.ts";
import type { RunCommandOptions } from "../../src/tools/workspace.ts";
import { waitGone } from "../host/_processes.ts";
import { tempWorkspace } from "./_context.ts";

const workspace = new HostWorkspace(new NodeHost());

function options(cwd: string, overrides: Partial<RunCommandOptions> = {}): RunCommandOptions {
  return {
    cwd,
    timeoutMs: 10_000,
    outputLimit: 30_000,
    signal: new AbortController().signal,
    ...overrides,
  };
}

Deno.test("HostWorkspace reads and writes text, creating parents and leaving no temp files", async () => {
  await using ws = await tempWorkspace();
  const signal = new AbortController().signal;
  const file = `${ws.root}/a/b/c.txt`;
  await workspace.writeTextFile(file, "héllo\n", { signal });
  assert.equal(await workspace.readTextFile(file, { signal }), "héllo\n");
  await workspace.writeTextFile(file, "again", { signal });
  assert.equal(await ws.read("a/b/c.txt"), "again");
  const names = [];
  for await (const entry of Deno.readDir(`${ws.root}/a/b`)) names.push(entry.name);
  assert.deepEqual(names, ["c.txt"]);
  await assert.rejects(workspace.readTextFile(`${ws.root}/missing.txt`, { signal }));
});

Deno.test("HostWorkspace.writeTextFile() does nothing when the signal is aborted", async () => {
  await using ws = await tempWorkspace();
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(
    workspace.writeTextFile(`${ws.root}/x/y.txt`, "x", { signal: controller.signal }),
  );
  await assert.rejects(Deno.stat(`${ws.root}/x`));
});

Deno.test("HostWorkspace.runCommand() runs sh in cwd and reports output and exit code", async () => {
  await using ws = await tempWorkspace();
  const result = await workspace.runCommand(
    'pwd; echo "$GIT_PAGER"; sleep 0.05; echo err >&2; exit 7',
    options(ws.root),
  );
  assert.deepEqual(result, {
    output: `${ws.root}\ncat\nerr\n`,
    truncated: false,
    exitCode: 7,
    signal: null,
    timedOut: false,
  });
});

Deno.test("HostWorkspace.runCommand() keeps stdout and stderr in arrival order", async () => {
  await using ws = await tempWorkspace();
  const result = await workspace.runCommand(
    "echo 1; sleep 0.05; echo 2 >&2; sleep 0.05; echo 3",
    options(ws.root),
  );
  assert.equal(result.output, "1\n2\n3\n");
});

Deno.test("HostWorkspace.runCommand() keeps the tail of long output, UTF-8 safe", async () => {
  await using ws = await tempWorkspace();
  // 5000 three-byte characters, then a marker: a 100-byte cut lands inside a character.
  const result = await workspace.runCommand(
    "i=0; while [ $i -lt 5000 ]; do printf '€'; i=$((i+1)); done; printf END",
    options(ws.root, { outputLimit: 100 }),
  );
  assert.equal(result.truncated, true);
  assert.ok(result.output.endsWith("€END"));
  assert.ok(!result.output.includes("\uFFFD"), "no broken characters");
  assert.equal(result.output, "€".repeat(32) + "END");
  assert.equal(result.exitCode, 0);
});

Deno.test("HostWorkspace.runCommand() keeps a character split across chunks whole", async () => {
  await using ws = await tempWorkspace();
  const result = await workspace.runCommand(
    "printf '\\342'; sleep 0.05; printf '\\202\\254'; printf x >&2",
    options(ws.root),
  );
  assert.equal(result.output, "€x");
});

Deno.test("HostWorkspace.runCommand() timeout kills the whole process group", async () => {
  await using ws = await tempWorkspace();
  const started = Date.now();
  const result = await workspace.runCommand(
    `sleep 30 & echo $! > ${ws.root}/pids; sleep 30 & echo $! >> ${ws.root}/pids; echo started; wait`,
    options(ws.root, { timeoutMs: 300 }),
  );
  assert.ok(Date.now() - started < 2_500);
  assert.equal(result.timedOut, true);
  assert.equal(result.exitCode, null);
  assert.equal(result.signal, "SIGTERM");
  assert.equal(result.output, "started\n");
  const pids = (await ws.read("pids")).trim().split("\n").map(Number);
  assert.equal(pids.length, 2);
  assert.deepEqual(await waitGone(pids), []);
});

Deno.test("HostWorkspace.runCommand() abort kills the whole process group", async () => {
  await using ws = await tempWorkspace();
  const controller = new AbortController();
  const running = workspace.runCommand(
    `sleep 30 & echo $! > ${ws.root}/pids; sleep 30 & echo $! >> ${ws.root}/pids; wait`,
    options(ws.root, { signal: controller.signal }),
  );
  // The pids file is written by the command's shell: no event announces it.
  await pollUntil(
    async () => (await ws.read("pids").catch(() => "")).trim().split("\n").length === 2,
    { what: "both background pids written" },
  );
  const pids = (await ws.read("pids")).trim().split("\n").map(Number);
  controller.abort();
  const result = await running;
  assert.equal(result.timedOut, false);
  assert.equal(result.signal, "SIGTERM");
  assert.deepEqual(await waitGone(pids), []);
});

Deno.test("HostWorkspace.runCommand() rejects when aborted before start or when cwd is missing", async () => {
  await using ws = await tempWorkspace();
  const controller = new AbortController();
  controller.abort(new Error("stop"));
  await assert.rejects(
    workspace.runCommand("touch ran", options(ws.root, { signal: controller.signal })),
    /stop/,
  );
  await assert.rejects(workspace.runCommand("true", options(`${ws.root}/missing`)));
  await assert.rejects(Deno.stat(`${ws.root}/ran`));
});

Deno.test("HostWorkspace.runCommand() keeps the user's environment but the hidden secrets", async () => {
  await using ws = await tempWorkspace();
  const host = new NodeHost({
    PATH: process.env.PATH,
    HOME: "/home/me",
    CI_SOME_VAR: "ci",
    OPENAI_API_KEY: "sk-secret",
    ACP_HARNESS_TOKEN: "token",
  });
  const hiding = new HostWorkspace(host, { hiddenEnv: ["OPENAI_API_KEY", "ACP_HARNESS_TOKEN"] });
  const script =
    'echo "$CI_SOME_VAR|$HOME|${OPENAI_API_KEY-unset}|${ACP_HARNESS_TOKEN-unset}|$PAGER"';
  const hidden = await hiding.runCommand(script, options(ws.root));
  assert.equal(hidden.output, "ci|/home/me|unset|unset|cat\n");
  const plain = await new HostWorkspace(host).runCommand(script, options(ws.root));
  assert.equal(plain.output, "ci|/home/me|sk-secret|token|cat\n", "nothing hidden by default");
});
