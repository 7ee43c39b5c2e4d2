/**
 * `acp-harness export-script` end to end, as real processes: a server on Deno records two
 * prompts against the fake OpenAI server (reasoning, `read_file` and `list_directory` calls,
 * usage) in a JSONL data directory; `export-script` prints the same script on Deno, Node and
 * Bun; then a server on each runtime, started with `--model scripted --script <exported>` in a
 * fresh copy of the workspace, gets the same prompts, and its client sees the same tool calls
 * (names, arguments, statuses, results), messages, thoughts, stop reasons and usage. The usage
 * errors (no SESSION_ID, an unknown one) exit 2 with one line, on every runtime.
 *
 * @module
 */
import assert from "node:assert/strict";
import { cp, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../_helpers/fake_llm_server.ts";
import { openAiTurn } from "../_helpers/llm_fixtures.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const DENO = RUNTIMES.find((runtime) => runtime.name === "deno") as Runtime;

/** The prompts of the session, in order. */
const PROMPTS = ["Look at a.txt and the directory", "And what is in sub?"];

/** The fake provider's answers to the session's four model requests. */
function recordedAnswers(): ReturnType<typeof openAiTurn>[] {
  return [
    openAiTurn({
      reasoning: ["Let me ", "look."],
      text: ["Reading ", "first."],
      toolCalls: [
        { id: "call_read", name: "read_file", arguments: { path: "a.txt" } },
        // Spaced, as some models write them: replayed as the same input.
        { id: "call_list", name: "list_directory", arguments: '{"path": "."}' },
      ],
      usage: { prompt: 1000, completion: 50, cached: 600, reasoning: 20 },
    }),
    openAiTurn({
      reasoning: ["It says alpha."],
      text: ["a.txt says ", "alpha; there is sub/."],
      usage: { prompt: 1200, completion: 12, cached: 1000 },
    }),
    openAiTurn({
      toolCalls: [{ id: "call_sub", name: "list_directory", arguments: { path: "sub" } }],
      usage: { prompt: 1300, completion: 8 },
    }),
    openAiTurn({ text: ["sub holds b.txt."], usage: { prompt: 1400, completion: 6 } }),
  ];
}

/** The environment of the processes: the test's, without what configures the server. */
function env(extra: Record<string, string> = {}): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(Deno.env.toObject())) {
    if (/^ACP_HARNESS_(?!TEST_)|^(OPENAI|ANTHROPIC|DEEPSEEK|OLLAMA)_/.test(name)) continue;
    kept[name] = value;
  }
  return { ...kept, ...extra };
}

/**
 * What the client saw of a session, comparable across runs: the messages and thoughts in order
 * (their ids aside), the tool calls in the order announced, and each call's updates in order
 * (reads run in parallel, so the updates of two calls may interleave either way), with the
 * workspace's path replaced by `<ws>`.
 */
interface Seen {
  /** Each prompt's stop reason and usage. */
  readonly answers: unknown[];
  /** Messages, thoughts, and `tool_call <id>` where a call was announced. */
  readonly flow: string[];
  /** Each call's `tool_call` and `tool_call_update`s (without `_meta`), by call id. */
  readonly calls: Record<string, unknown[]>;
}

/** The updates of a session as compared: see {@link Seen}. */
function comparable(agent: StdioAgent, sessionId: string, cwd: string): Omit<Seen, "answers"> {
  const flow: string[] = [];
  const calls: Record<string, unknown[]> = {};
  for (const { update } of agent.client.updates(sessionId)) {
    const { sessionUpdate } = update;
    if (sessionUpdate === "agent_message_chunk" || sessionUpdate === "agent_thought_chunk") {
      flow.push(`${sessionUpdate}: ${(update.content as { text: string }).text}`);
    } else if (sessionUpdate === "tool_call" || sessionUpdate === "tool_call_update") {
      const { _meta: _meta, ...rest } = update;
      const id = String(update.toolCallId);
      if (sessionUpdate === "tool_call") flow.push(`tool_call ${id}`);
      (calls[id] ??= []).push(JSON.parse(JSON.stringify(rest).replaceAll(cwd, "<ws>")));
    }
  }
  return { flow, calls };
}

/** Starts a server, sends {@link PROMPTS} in a new session, stops it; what the client saw. */
async function session(
  runtime: Runtime,
  cwd: string,
  flags: readonly string[],
  extraEnv: Record<string, string> = {},
): Promise<Seen & { readonly sessionId: string }> {
  const agent = spawnAgent(runtime.command, [...runtime.args, "--mode", "auto", ...flags], {
    cwd,
    env: env(extraEnv),
  });
  try {
    await agent.client.initialize();
    const sessionId = await agent.client.newSession(cwd);
    const answers: unknown[] = [];
    for (const text of PROMPTS) {
      const result = await agent.client.request<{ stopReason: string; usage?: unknown }>(
        "session/prompt",
        { sessionId, prompt: [{ type: "text", text }] },
      );
      answers.push({ stopReason: result.stopReason, usage: result.usage });
    }
    assert.deepEqual(agent.client.problems, []);
    assert.deepEqual(agent.impure, []);
    agent.end();
    const exit = await agent.exited;
    assert.equal(exit.code, 0, agent.stderr());
    return { sessionId, answers, ...comparable(agent, sessionId, cwd) };
  } finally {
    if (agent.exit === undefined) {
      agent.child.kill("SIGKILL");
      await agent.exited;
    }
  }
}

/** Runs `acp-harness …` on a runtime to its exit (a bound of 60 s on a hung one). */
async function cli(
  runtime: Runtime,
  cwd: string,
  args: readonly string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command(runtime.command, {
    args: [...runtime.args, ...args],
    cwd,
    env: env(),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(60_000),
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/** Runs `check` for every runtime at once; fails with every runtime's failure, named. */
async function onEveryRuntime(check: (runtime: Runtime) => Promise<void>): Promise<void> {
  const outcomes = await Promise.allSettled(RUNTIMES.map((runtime) => check(runtime)));
  const failures = outcomes.flatMap((outcome, index) =>
    outcome.status === "rejected"
      ? [`${RUNTIMES[index]?.name}: ${String(outcome.reason?.stack ?? outcome.reason)}`]
      : []
  );
  assert.deepEqual(failures, [], failures.join("\n\n"));
}

Deno.test("export-script turns a recorded session into a script that replays its tool calls, messages and thoughts, on deno, node and bun", async () => {
  await using dir = await tempDir("acp-harness-export-e2e-");
  await using fake: FakeLlmServer = await startFakeLlmServer();
  // The workspace as it was before the session, copied for each run.
  const pristine = join(dir.path, "pristine");
  await mkdir(join(pristine, "sub"), { recursive: true });
  await writeFile(join(pristine, "a.txt"), "alpha\n");
  await writeFile(join(pristine, "sub", "b.txt"), "beta\n");
  const fresh = async (name: string): Promise<string> => {
    const cwd = join(dir.path, name, "ws");
    await cp(pristine, cwd, { recursive: true });
    return cwd;
  };
  const config = join(dir.path, "config.json");
  await writeFile(
    config,
    JSON.stringify({
      providers: {
        fake: { api: "openai-chat", baseUrl: `${fake.url}/v1`, apiKeyEnv: "FAKE_API_KEY" },
      },
    }),
  );

  // Recorded against the fake OpenAI server.
  const data = join(dir.path, "data");
  const recordedCwd = await fresh("recorded");
  fake.enqueue(...recordedAnswers());
  const recorded = await session(
    DENO,
    recordedCwd,
    ["--config", config, "--model", "fake/coder", "--data-dir", data],
    { FAKE_API_KEY: "sk-test" },
  );
  assert.equal(fake.requests.length, 4);
  // The session did what the answers say (so the comparison below compares something).
  assert.deepEqual(recorded.flow, [
    "agent_thought_chunk: Let me look.",
    "agent_message_chunk: Reading first.",
    "tool_call call_read",
    "tool_call call_list",
    "agent_thought_chunk: It says alpha.",
    "agent_message_chunk: a.txt says alpha; there is sub/.",
    "tool_call call_sub",
    "agent_message_chunk: sub holds b.txt.",
  ]);
  for (const [id, updates] of Object.entries(recorded.calls)) {
    const statuses = updates.map((update) => (update as { status: string }).status);
    assert.deepEqual(statuses, ["pending", "in_progress", "completed"], id);
  }
  assert.match(JSON.stringify(recorded.calls.call_read), /alpha/);
  assert.match(JSON.stringify(recorded.calls.call_sub), /b\.txt/);

  // Exported on every runtime: the same script, which the scripted model reads.
  const exports = new Map<string, string>();
  await onEveryRuntime(async (runtime) => {
    const exported = await cli(runtime, dir.path, [
      "export-script",
      recorded.sessionId,
      "--data-dir",
      data,
    ]);
    assert.equal(exported.code, 0, exported.stderr);
    assert.equal(exported.stderr, "");
    exports.set(runtime.name, exported.stdout);

    const missing = await cli(runtime, dir.path, ["export-script", "--data-dir", data]);
    assert.equal(missing.code, 2);
    assert.equal(missing.stdout, "");
    assert.match(missing.stderr, /^acp-harness: "acp-harness export-script" needs a SESSION_ID\n/);
    const unknown = await cli(runtime, dir.path, ["export-script", "no-such-id", "--store", data]);
    assert.equal(unknown.code, 2);
    assert.equal(unknown.stdout, "");
    assert.equal(
      unknown.stderr,
      `acp-harness export-script: Cannot find session "no-such-id" in ${data}\n`,
    );
  });
  const script = exports.get("deno") ?? "";
  assert.equal(exports.get("node"), script);
  assert.equal(exports.get("bun"), script);
  assert.deepEqual(JSON.parse(script), [
    {
      thought: "Let me look.",
      text: "Reading first.",
      toolCalls: [
        { id: "call_read", name: "read_file", arguments: { path: "a.txt" } },
        { id: "call_list", name: "list_directory", arguments: { path: "." } },
      ],
      usage: { input: 1000, output: 50, cacheRead: 600, reasoning: 20 },
      finish: "tool-calls",
    },
    {
      thought: "It says alpha.",
      text: "a.txt says alpha; there is sub/.",
      usage: { input: 1200, output: 12, cacheRead: 1000 },
    },
    {
      toolCalls: [{ id: "call_sub", name: "list_directory", arguments: { path: "sub" } }],
      usage: { input: 1300, output: 8 },
      finish: "tool-calls",
    },
    { text: "sub holds b.txt.", usage: { input: 1400, output: 6 } },
  ]);
  assert.ok(script.startsWith('[\n  {\n    "thought"') && script.endsWith("\n]\n"));
  const scriptFile = join(dir.path, "exported.json");
  await writeFile(scriptFile, script);

  // Replayed offline on every runtime, each in a fresh copy of the workspace.
  await onEveryRuntime(async (runtime) => {
    const cwd = await fresh(`replay-${runtime.name}`);
    const replayed = await session(runtime, cwd, [
      "--model",
      "scripted",
      "--script",
      scriptFile,
      "--data-dir",
      join(dir.path, `replay-${runtime.name}`, "data"),
    ]);
    assert.deepEqual(replayed.flow, recorded.flow);
    assert.deepEqual(replayed.calls, recorded.calls);
    assert.deepEqual(replayed.answers, recorded.answers);
  });
  // The replays asked the fake server nothing.
  assert.equal(fake.requests.length, 4);
});
