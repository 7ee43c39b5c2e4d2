import { pollUntil } from "../_helpers/wait.ts";
import assert from "node:assert/strict";
import { RUN_COMMAND_PROGRESS_TAIL, runCommandTool } from "../../src/tools/run_command.ts";
import type { ToolDisplay } from "../../src/tools/tool.ts";
import type { CommandResult, RunCommandOptions, Workspace } from "../../src/tools/workspace.ts";
import { waitGone } from "../host/_processes.ts";
import { tempWorkspace } from "./_context.ts";

Deno.test("run_command runs in the session cwd and reports the exit code and output", async () => {
  await using ws = await tempWorkspace();
  const result = await runCommandTool.execute({ command: "pwd; echo hi" }, ws.context());
  assert.deepEqual(result, {
    content: `Exit code: 0\n${ws.root}\nhi`,
    isError: false,
    display: [{ type: "text", text: `Exit code: 0\n${ws.root}\nhi` }],
    locations: [{ path: ws.root }],
  });
});

Deno.test("run_command marks a non-zero exit as an error and shows empty output", async () => {
  await using ws = await tempWorkspace();
  const result = await runCommandTool.execute({ command: "exit 3" }, ws.context());
  assert.equal(result.isError, true);
  assert.equal(result.content, "Exit code: 3\n(no output)");
});

Deno.test("run_command runs in a cwd inside the workspace", async () => {
  await using ws = await tempWorkspace();
  await Deno.mkdir(`${ws.root}/sub`);
  const result = await runCommandTool.execute({ command: "pwd", cwd: "sub" }, ws.context());
  assert.equal(result.content, `Exit code: 0\n${ws.root}/sub`);
  const missing = await runCommandTool.execute({ command: "pwd", cwd: "nope" }, ws.context());
  assert.deepEqual(missing, { content: 'Cannot run in "nope": it does not exist', isError: true });
});

Deno.test("run_command refuses a cwd outside the workspace and runs nothing", async () => {
  await using ws = await tempWorkspace();
  await Deno.symlink(ws.outside, `${ws.root}/out`);
  for (const cwd of ["..", ws.outside, "out", "/tmp", "/"]) {
    const result = await runCommandTool.execute(
      { command: `touch ${ws.outside}/ran`, cwd },
      ws.context(),
    );
    assert.equal(result.isError, true, cwd);
    assert.match(result.content, /outside the workspace/, cwd);
  }
  assert.deepEqual(ws.calls, []);
  await assert.rejects(Deno.stat(`${ws.outside}/ran`));
});

Deno.test("run_command keeps the end of long output and says it was truncated", async () => {
  await using ws = await tempWorkspace();
  const result = await runCommandTool.execute(
    { command: "seq 1 30000; echo THE END" },
    ws.context(),
  );
  const lines = result.content.split("\n");
  assert.equal(lines[0], "Exit code: 0");
  assert.equal(lines[1], "[output truncated: showing the last 30000 bytes]");
  assert.equal(lines.at(-1), "THE END");
  assert.ok(new TextEncoder().encode(result.content).length < 30_200);
});

Deno.test("run_command timeout kills the command and its children", async () => {
  await using ws = await tempWorkspace();
  const started = Date.now();
  const result = await runCommandTool.execute(
    {
      command: "sleep 30 & echo $! > pids; sleep 30 & echo $! >> pids; echo waiting; wait",
      timeout_ms: 300,
    },
    ws.context(),
  );
  assert.ok(Date.now() - started < 2_500);
  assert.equal(result.isError, true);
  assert.equal(
    result.content,
    "Timed out after 300 ms: the command and its child processes were killed\nwaiting",
  );
  const pids = (await ws.read("pids")).trim().split("\n").map(Number);
  assert.equal(pids.length, 2);
  assert.deepEqual(await waitGone(pids), []);
});

Deno.test("run_command cancellation kills the command and its children", async () => {
  await using ws = await tempWorkspace();
  const controller = new AbortController();
  const running = runCommandTool.execute(
    { command: "sleep 30 & echo $! > pids; sleep 30 & echo $! >> pids; wait" },
    ws.context({ signal: controller.signal }),
  );
  let pids: number[] = [];
  // The pids file is written by the command's shell: no event announces it.
  await pollUntil(async () => {
    const text = await ws.read("pids").catch(() => "");
    pids = text.trim().split("\n").filter(Boolean).map(Number);
    return pids.length >= 2;
  }, { what: "both background pids written" });
  assert.equal(pids.length, 2);
  controller.abort();
  const result = await running;
  assert.equal(result.isError, true);
  assert.match(result.content, /^Cancelled: the command and its child processes were killed/);
  assert.deepEqual(await waitGone(pids), []);
});

Deno.test("run_command with an aborted signal runs nothing", async () => {
  await using ws = await tempWorkspace();
  const controller = new AbortController();
  controller.abort();
  const result = await runCommandTool.execute(
    { command: "touch ran" },
    ws.context({ signal: controller.signal }),
  );
  assert.equal(result.isError, true);
  assert.match(result.content, /Cancelled/);
  await assert.rejects(Deno.stat(`${ws.root}/ran`));
});

Deno.test("run_command rejects bad input with a message naming the field", async () => {
  await using ws = await tempWorkspace();
  const cases: ReadonlyArray<readonly [unknown, RegExp]> = [
    [{}, /"command" is required/],
    [{ command: "" }, /"command" must not be empty/],
    [{ command: ["ls"] }, /"command" must be a string \(got an array\)/],
    [{ command: "ls", timeout_ms: 600_001 }, /"timeout_ms" must be at most 600000 \(got 600001\)/],
    [{ command: "ls", timeout_ms: 0 }, /"timeout_ms" must be at least 1/],
    [
      { command: "ls", timeout: 5 },
      /unknown field "timeout" \(expected: command, cwd, timeout_ms\)/,
    ],
    [{ command: "ls", cwd: 1 }, /"cwd" must be a string/],
  ];
  for (const [input, message] of cases) {
    const result = await runCommandTool.execute(input, ws.context());
    assert.equal(result.isError, true, JSON.stringify(input));
    assert.match(result.content, message);
  }
  assert.deepEqual(ws.calls, []);
});

Deno.test("run_command passes the options to the workspace and shows a client terminal", async () => {
  await using ws = await tempWorkspace();
  const seen: RunCommandOptions[] = [];
  const terminal: Workspace = {
    readTextFile: () => Promise.reject(new Error("unused")),
    writeTextFile: () => Promise.reject(new Error("unused")),
    runCommand(_command: string, options: RunCommandOptions): Promise<CommandResult> {
      seen.push(options);
      return Promise.resolve({
        output: "done\n",
        truncated: false,
        exitCode: null,
        signal: "SIGSEGV",
        timedOut: false,
        terminalId: "term-1",
      });
    },
  };
  const result = await runCommandTool.execute(
    { command: "./crash" },
    { ...ws.context(), workspace: terminal },
  );
  assert.deepEqual(result.display, [{ type: "terminal", terminalId: "term-1" }]);
  assert.equal(result.content, "Killed by signal SIGSEGV\ndone");
  assert.equal(result.isError, true);
  assert.equal(seen[0]?.cwd, ws.root);
  assert.equal(seen[0]?.timeoutMs, 120_000);
  assert.equal(seen[0]?.outputLimit, 30_000);
});

Deno.test("run_command reports a command that cannot be started", async () => {
  await using ws = await tempWorkspace();
  const broken: Workspace = {
    readTextFile: () => Promise.reject(new Error("unused")),
    writeTextFile: () => Promise.reject(new Error("unused")),
    runCommand: () => Promise.reject(Object.assign(new Error("spawn failed"), { code: "EAGAIN" })),
  };
  const result = await runCommandTool.execute(
    { command: "ls" },
    { ...ws.context(), workspace: broken },
  );
  assert.deepEqual(result, { content: "Cannot run the command: spawn failed", isError: true });
});

Deno.test("run_command title is short and never throws", () => {
  assert.equal(runCommandTool.title({ command: "npm test" }), "Run: npm test");
  assert.equal(runCommandTool.title({ command: "echo a\necho b" }), "Run: echo a …");
  assert.equal(runCommandTool.title({ command: "x".repeat(200) }), `Run: ${"x".repeat(79)}…`);
  assert.equal(runCommandTool.title({}), "Run command");
  assert.equal(runCommandTool.title(null), "Run command");
  assert.deepEqual(runCommandTool.locations?.({ command: "ls", cwd: "sub" }, "/w"), [
    { path: "/w/sub" },
  ]);
});

Deno.test("run_command shows its output while it runs, then the result", async () => {
  await using ws = await tempWorkspace();
  const shown: string[] = [];
  let sawFirst: () => void = () => {};
  const first = new Promise<void>((resolve) => sawFirst = resolve);
  const context = {
    ...ws.context(),
    progress: (display: readonly ToolDisplay[]) => {
      const [part] = display;
      assert.equal(part?.type, "text");
      const text = (part as { text: string }).text;
      shown.push(text);
      if (text.includes("first")) sawFirst();
    },
  };
  // The command goes on only once the test saw its first line as progress: no timing.
  const running = runCommandTool.execute(
    {
      command: "echo first; while [ ! -e go ]; do sleep 0.02; done; echo second",
      timeout_ms: 30_000,
    },
    context,
  );
  await first;
  await Deno.writeTextFile(`${ws.root}/go`, "");
  const result = await running;
  assert.equal(result.content, "Exit code: 0\nfirst\nsecond");
  assert.equal(shown[0], "Running…\nfirst");
  assert.ok(shown.every((text) => text.startsWith("Running…\n")));
  // A pending update would be a timer left running: the test's sanitizer fails on it.
});

Deno.test("run_command's progress shows the end of long output, coalesced", async () => {
  await using ws = await tempWorkspace();
  const shown: string[] = [];
  const context = {
    ...ws.context(),
    progress: (display: readonly ToolDisplay[]) =>
      shown.push((display[0] as { text: string }).text),
  };
  const result = await runCommandTool.execute(
    { command: "for i in $(seq 1 2000); do echo line $i; done" },
    context,
  );
  assert.equal(result.isError, false);
  assert.ok(shown.length >= 1);
  assert.ok(shown.length < 2000, `${shown.length} updates for 2,000 lines`);
  for (const text of shown) {
    assert.ok(text.length <= "Running…\n".length + RUN_COMMAND_PROGRESS_TAIL, `${text.length}`);
  }
});
