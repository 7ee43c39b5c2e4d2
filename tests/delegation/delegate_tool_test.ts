/**
 * The `delegate` tool in this process, driving a minimal ACP agent (`_fixtures/asking_agent.ts`)
 * and failing ones: permission answers under each mode, the depth passed down, cancellation,
 * failures naming the agent and the stage, and the session's end stopping what runs.
 *
 * @module
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import type { PermissionMode } from "../../src/permission/mode.ts";
import { delegateTool } from "../../src/delegation/delegate_tool.ts";
import { NodeHost } from "../../src/host/node_host.ts";
import { createLogger } from "../../src/log/logger.ts";
import type { PermissionAnswer } from "../../src/permission/policy.ts";
import { SessionDisposer } from "../../src/session/session_disposer.ts";
import type {
  Tool,
  ToolContext,
  ToolDisplay,
  ToolPermissionQuestion,
  ToolResult,
} from "../../src/tools/tool.ts";
import type { Workspace, WorkspaceFiles } from "../../src/tools/workspace.ts";
import { DENO } from "../_helpers/runtimes.ts";

const AGENT = fileURLToPath(new URL("./_fixtures/asking_agent.ts", import.meta.url));
const FAST = { eofMs: 2000, termMs: 500 };

/** What one call saw: its progress and the questions it asked. */
interface Call {
  readonly result: ToolResult;
  readonly progress: ToolDisplay[][];
  readonly asked: ToolPermissionQuestion[];
}

/** A delegate tool for the asking agent (and a missing program), with the session's disposer. */
function setUp(
  env: Record<string, string> = {},
): { tool: Tool; disposer: SessionDisposer; logs: string[] } {
  const disposer = new SessionDisposer();
  const logs: string[] = [];
  const tool = delegateTool({
    agents: {
      asker: {
        command: DENO,
        args: ["run", "-A", AGENT],
        env,
        description: "Asks before anything",
      },
      missing: { command: "/nonexistent/agent", description: "Not there" },
      quitter: { command: "sh", args: ["-c", "exit 3"], description: "Exits at once" },
    },
    processes: new NodeHost(),
    depth: 1,
    disposer,
    grace: FAST,
    logger: createLogger("info", (line) => logs.push(line)),
  });
  return { tool, disposer, logs };
}

/** Runs one call with a hand-made context. */
async function call(
  tool: Tool,
  input: unknown,
  options: {
    mode?: PermissionMode;
    answer?: PermissionAnswer | "cancelled";
    signal?: AbortSignal;
    onProgress?: () => void;
  } = {},
): Promise<Call> {
  const progress: ToolDisplay[][] = [];
  const asked: ToolPermissionQuestion[] = [];
  const context: ToolContext = {
    sessionId: "parent",
    cwd: Deno.cwd(),
    roots: [Deno.cwd()],
    workspace: {} as Workspace,
    files: {} as WorkspaceFiles,
    signal: options.signal ?? new AbortController().signal,
    toolCallId: "call_1",
    mode: options.mode ?? "ask",
    progress: (display) => {
      progress.push([...display]);
      options.onProgress?.();
    },
    askPermission: (question) => {
      asked.push(question);
      return Promise.resolve(options.answer ?? "allow_once");
    },
  };
  const result = await tool.execute(input, context);
  return { result, progress, asked };
}

Deno.test("delegate asks the session's client in ask mode and picks the agent's option of that kind", async () => {
  const { tool, disposer } = setUp();
  try {
    const { result, asked, progress } = await call(tool, { agent: "asker", prompt: "go" }, {
      answer: "reject_always",
    });
    assert.equal(result.isError, false, result.content);
    assert.equal(
      result.content,
      `Agent "asker" stopped: end_turn\n\ndepth 2; chose opt_reject_always`,
    );
    assert.deepEqual(asked, [{
      title: "asker: Touch a file",
      kind: "edit",
      locations: [],
      signal: (asked[0] as ToolPermissionQuestion).signal,
    }]);
    // What the agent said before it asked was shown before the question.
    assert.ok(progress.length > 0);
    assert.match(JSON.stringify(progress[0]), /depth 2/);
  } finally {
    await disposer.dispose();
  }
});

for (
  const [mode, kinds, expected] of [
    ["auto", "allow_once,allow_always,reject_once", "opt_allow_once"],
    ["auto", "allow_always,reject_once", "opt_allow_always"],
    ["read-only", "allow_once,reject_once,reject_always", "opt_reject_once"],
    ["read-only", "allow_once,reject_always", "opt_reject_always"],
    ["read-only", "allow_once", "cancelled"],
  ] as const
) {
  Deno.test(`delegate answers for itself in ${mode} mode (agent offers ${kinds}): ${expected}`, async () => {
    const { tool, disposer } = setUp({ ASKING_AGENT_OPTIONS: kinds });
    try {
      const { result, asked } = await call(tool, { agent: "asker", prompt: "go" }, { mode });
      assert.equal(asked.length, 0, "the client is not asked");
      assert.match(result.content, new RegExp(`chose ${expected}$`));
    } finally {
      await disposer.dispose();
    }
  });
}

Deno.test("delegate maps an answer the agent has no option for onto one of the same sense", async () => {
  const { tool, disposer } = setUp({ ASKING_AGENT_OPTIONS: "allow_always,reject_once" });
  try {
    const allowed = await call(tool, { agent: "asker", prompt: "go" }, { answer: "allow_once" });
    assert.match(allowed.result.content, /chose opt_allow_always$/);
    const cancelled = await call(tool, { agent: "asker", prompt: "go" }, { answer: "cancelled" });
    assert.match(cancelled.result.content, /chose cancelled$/);
  } finally {
    await disposer.dispose();
  }
});

Deno.test("delegate sends session/cancel down when the call is cancelled", async () => {
  const { tool, disposer, logs } = setUp();
  try {
    const controller = new AbortController();
    const { promise: said, resolve } = Promise.withResolvers<void>();
    const running = call(tool, { agent: "asker", prompt: "hang" }, {
      signal: controller.signal,
      onProgress: resolve,
    });
    // The agent is mid-prompt once it has said something.
    await said;
    controller.abort();
    const { result } = await running;
    assert.equal(result.isError, true);
    assert.match(result.content, /Delegation to "asker" was cancelled/);
    // The agent answered the cancel itself: session/cancel reached it.
    assert.ok(
      logs.some((line) => /delegate: cancelled.*"answer":"cancelled"/.test(line)),
      logs.join(""),
    );
  } finally {
    await disposer.dispose();
  }
});

Deno.test("delegate fails naming the agent and the stage", async () => {
  const { tool, disposer } = setUp();
  try {
    const missing = await call(tool, { agent: "missing", prompt: "go" });
    assert.equal(missing.result.isError, true);
    assert.match(missing.result.content, /^Cannot start agent "missing": /);
    const quitter = await call(tool, { agent: "quitter", prompt: "go" });
    assert.equal(quitter.result.isError, true);
    assert.match(quitter.result.content, /^Agent "quitter" failed at initialize: /);
    assert.match(quitter.result.content, /code 3/);
    const refused = await call(tool, { agent: "asker", prompt: "refuse" });
    assert.equal(refused.result.isError, true);
    assert.equal(refused.result.content, `Agent "asker" stopped: refusal`);
    const crashed = await call(tool, { agent: "asker", prompt: "crash" });
    assert.equal(crashed.result.isError, true);
    assert.match(crashed.result.content, /^Agent "asker" failed during its prompt: /);
    assert.match(crashed.result.content, /code 7/);
  } finally {
    await disposer.dispose();
  }
});

Deno.test("delegate quotes a bounded, redacted tail of a failing agent's stderr", async () => {
  const disposer = new SessionDisposer();
  const secret = "opaque-server-key-0123456789";
  const script = [
    `echo "using ${secret}" >&2`,
    'i=0; while [ $i -lt 200 ]; do echo "noise $i" >&2; i=$((i+1)); done',
    `printf "\\033[31mBearer abc.def.ghi sk-abcdefghijklmnop ${secret}\\033[0m\\n" >&2`,
    "exit 5",
  ].join("; ");
  const tool = delegateTool({
    agents: { noisy: { command: "sh", args: ["-c", script], description: "Noisy" } },
    processes: new NodeHost(),
    depth: 1,
    disposer,
    grace: FAST,
    secrets: [secret],
  });
  try {
    const { result } = await call(tool, { agent: "noisy", prompt: "go" });
    assert.equal(result.isError, true);
    assert.match(
      result.content,
      /^Agent "noisy" failed at initialize: .*\(agent exited with code 5\)/,
    );
    const [, tail = ""] = result.content.split("\nIts stderr ends with:\n");
    assert.ok(tail.startsWith("…noise "), tail);
    assert.equal(tail.split("\n").length, 20);
    assert.match(tail, /\nBearer \[redacted\] \[redacted\] \[redacted\]$/);
    assert.ok(!result.content.includes(secret));
    assert.ok(!result.content.includes("\x1b"));
  } finally {
    await disposer.dispose();
  }
});

Deno.test("delegate refuses bad input naming the field", async () => {
  const { tool, disposer } = setUp();
  try {
    const unknown = await call(tool, { agent: "nobody", prompt: "go" });
    assert.equal(
      unknown.result.content,
      `Invalid input: "agent" must be one of asker, missing, quitter`,
    );
    const empty = await call(tool, { agent: "asker", prompt: " " });
    assert.equal(empty.result.content, `Invalid input: "prompt" must be a non-empty string`);
    assert.deepEqual(tool.inputSchema.properties, {
      agent: { type: "string", enum: ["asker", "missing", "quitter"], description: "Which agent" },
      prompt: { type: "string", description: "The task, complete and self-contained" },
    });
    assert.match(tool.description, /- asker: Asks before anything/);
  } finally {
    await disposer.dispose();
  }
});

Deno.test("the session's end stops a running agent and later calls refuse to start one", async () => {
  const { tool, disposer } = setUp();
  const { promise: said, resolve } = Promise.withResolvers<void>();
  const running = call(tool, { agent: "asker", prompt: "hang" }, { onProgress: resolve });
  // Not cancelled: the agent hangs until the session's clean-up stops it.
  await said;
  await disposer.dispose();
  const { result } = await running;
  assert.equal(result.isError, true);
  const after = await call(tool, { agent: "asker", prompt: "go" });
  assert.match(after.result.content, /the session has ended/);
});
