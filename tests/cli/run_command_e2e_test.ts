/**
 * `acp-harness run` end to end on Deno, Node.js and Bun (issue 30, item 1), as real processes
 * with the scripted model and the fake OpenAI server: text and progress, `--json` (valid against
 * `docs/run_result.schema.json`), `--jsonl`, stdin, `--resume`, `--continue`, `--ephemeral`,
 * each exit code, SIGINT and SIGTERM mid-turn, `ask` fail-closed.
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { jsonResponse, startFakeLlmServer } from "../_helpers/fake_llm_server.ts";
import { fakeStdio } from "../_helpers/mcp_servers.ts";
import { ROOT, type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";

const schema = JSON.parse(await readFile(join(ROOT, "docs/run_result.schema.json"), "utf8"));
const validate = new Ajv2020({ strict: true, allErrors: true }).compile(schema);

/** Fails unless `value` is a valid run result document. */
function assertResult(value: unknown): Record<string, unknown> {
  assert.ok(validate(value), JSON.stringify(validate.errors));
  return value as Record<string, unknown>;
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

/** The test's environment without anything that configures a provider or the server. */
function cleanEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(Deno.env.toObject())) {
    if (/^(ACP_HARNESS_|OPENAI_|ANTHROPIC_|DEEPSEEK_|OLLAMA_)/.test(name)) continue;
    env[name] = value;
  }
  return { ...env, ...extra };
}

interface Place {
  readonly cwd: string;
  readonly data: string;
  readonly script: string;
}

async function place(dirs: TempDirs, steps: unknown[]): Promise<Place> {
  const base = await dirs.make();
  const cwd = join(base, "ws");
  await mkdir(cwd);
  const script = join(base, "script.json");
  await writeFile(script, JSON.stringify(steps));
  return { cwd, data: join(base, "data"), script };
}

interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

interface RunOptions {
  readonly stdin?: string;
  readonly env?: Record<string, string>;
  /** Sends this signal once stderr matches `when`. */
  readonly signal?: { readonly name: "SIGINT" | "SIGTERM"; readonly when: RegExp };
  /** Scripted model and its script (the default); false for flags of one's own. */
  readonly scripted?: boolean;
}

/**
 * Runs `acp-harness run …` to its exit (a bound of 60 s on a hung one). `Deno.Command`, not
 * `node:child_process`: Deno's `ChildProcess` reports a process it signalled as killed by that
 * signal even when it exited with a code of its own (130).
 */
async function run(
  runtime: Runtime,
  where: Place,
  args: string[],
  options: RunOptions = {},
): Promise<Ran> {
  const model = options.scripted === false ? [] : ["--model", "scripted", "--script", where.script];
  const child = new Deno.Command(runtime.command, {
    args: [...runtime.args, "run", "--data-dir", where.data, ...model, ...args],
    cwd: where.cwd,
    env: cleanEnv(options.env ?? {}),
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    // A bound on a hung run: the process is killed (SIGTERM) when it passes.
    signal: AbortSignal.timeout(60_000),
  }).spawn();
  const stdin = child.stdin.getWriter();
  await stdin.write(new TextEncoder().encode(options.stdin ?? "")).catch(() => {});
  await stdin.close().catch(() => {});
  let stdout = "";
  let stderr = "";
  let signalled = false;
  // The signal follows an event: a line on stderr or stdout.
  const read = async (stream: ReadableStream<Uint8Array>, add: (text: string) => void) => {
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      add(text);
      if (options.signal && !signalled && options.signal.when.test(stderr + stdout)) {
        signalled = true;
        child.kill(options.signal.name);
      }
    }
  };
  const [status] = await Promise.all([
    child.status,
    read(child.stdout, (text) => stdout += text),
    read(child.stderr, (text) => stderr += text),
  ]);
  return { code: status.code, stdout, stderr };
}

const LIST = { toolCalls: [{ name: "list_directory", arguments: { path: "." } }] };

Deno.test("run prints the final message on stdout, a line per tool call on stderr, exits 0; stdin and - read the prompt, on deno, node and bun", async () => {
  await using dirs = new TempDirs("acp-harness-run-cmd-");
  await onEveryRuntime(async (runtime) => {
    const where = await place(dirs, [
      { ...LIST, usage: { input: 0, output: 0 } },
      { text: "Listed it.", usage: { input: 9, output: 2 } },
    ]);
    const text = await run(runtime, where, ["list", "the", "files", "--ephemeral"]);
    assert.equal(text.code, 0, text.stderr);
    assert.equal(text.stdout, "Listed it.\n");
    assert.match(text.stderr, /^done: List \.$/m);
    assert.doesNotMatch(text.stderr, /\(\d+\.\ds\)/, "no elapsed time off a terminal");

    // A priced model: costUsd is the session's cost from its last usage_update (the second
    // request's 9 tokens in at $1/M and 2 out at $2/M; the first request's usage is zero).
    const config = join(where.cwd, "config.json");
    await writeFile(
      config,
      JSON.stringify({
        models: { scripted: { contextWindow: 1000, pricing: { input: 1, output: 2 } } },
      }),
    );
    const priced = await run(runtime, where, ["--ephemeral", "--json", "--config", config, "go"]);
    assert.equal(priced.code, 0, priced.stderr);
    const doc = assertResult(JSON.parse(priced.stdout));
    assert.equal(doc.costUsd, 0.000013);
    assert.equal(doc.text, "Listed it.");

    const piped = { ...where, cwd: where.cwd };
    for (const args of [["-"], []]) {
      const echo = await run(runtime, piped, ["--ephemeral", "--model", "echo", ...args], {
        stdin: "from stdin\n",
        scripted: false,
      });
      assert.equal(echo.code, 0, echo.stderr);
      assert.match(echo.stdout, /from stdin/);
    }
  });
});

Deno.test("run --json is one schema-valid document; ask mode refuses what it would ask and lists it; --resume, --jsonl and --continue go on in the durable session, on deno, node and bun", async () => {
  await using dirs = new TempDirs("acp-harness-run-cmd-");
  await onEveryRuntime(async (runtime) => {
    const where = await place(dirs, [
      { toolCalls: [{ name: "write_file", arguments: { path: "x.txt", content: "hi" } }] },
      { text: "Could not write." },
      { text: "Second answer." },
      { text: "Third answer." },
    ]);
    const first = await run(runtime, where, ["--json", "write x.txt"]);
    assert.equal(first.code, 0, first.stderr);
    const doc = assertResult(JSON.parse(first.stdout));
    assert.equal(doc.stopReason, "end_turn");
    assert.equal(doc.text, "Could not write.");
    assert.deepEqual(doc.toolCalls, [{ title: "Write x.txt", kind: "edit", status: "failed" }]);
    const denied = doc.denied as Array<{ tool: string; input: string; why: string }>;
    assert.equal(denied.length, 1);
    assert.match(denied[0]?.input ?? "", /x\.txt/);
    assert.match(denied[0]?.why ?? "", /nobody/);
    assert.equal(existsSync(join(where.cwd, "x.txt")), false, "nothing written");
    const sessionId = doc.sessionId as string;

    const second = await run(runtime, where, ["--resume", sessionId, "--jsonl", "again"]);
    assert.equal(second.code, 0, second.stderr);
    const lines = second.stdout.trimEnd().split("\n").map((line) => JSON.parse(line));
    const last = assertResult(lines.pop());
    assert.equal(last.sessionId, sessionId);
    assert.equal(last.text, "Second answer.");
    assert.ok(lines.length > 0, "the updates come first");
    for (const line of lines) {
      assert.equal(line.sessionId, sessionId);
      assert.equal(typeof line.update?.sessionUpdate, "string");
    }
    assert.ok(lines.some((line) => line.update.sessionUpdate === "agent_message_chunk"));

    const third = await run(runtime, where, ["--continue", "--json", "more"]);
    assert.equal(third.code, 0, third.stderr);
    const continued = assertResult(JSON.parse(third.stdout));
    assert.equal(continued.sessionId, sessionId);
    assert.equal(continued.text, "Third answer.");
  });
});

Deno.test("run exits 3 on a refusal, 4 on max_tokens and max_turn_requests, 1 when the provider fails, 2 on bad usage naming the flag, on deno, node and bun", async () => {
  await using dirs = new TempDirs("acp-harness-run-cmd-");
  await using fake = await startFakeLlmServer();
  const unauthorized = jsonResponse(401, { error: { message: "invalid api key" } });
  fake.enqueue(unauthorized, unauthorized, unauthorized);
  await onEveryRuntime(async (runtime) => {
    const refusal = await run(runtime, await place(dirs, [{ text: "No.", finish: "refusal" }]), [
      "--ephemeral",
      "--json",
      "do it",
    ]);
    assert.equal(refusal.code, 3, refusal.stderr);
    assert.equal(assertResult(JSON.parse(refusal.stdout)).stopReason, "refusal");

    const limit = await run(runtime, await place(dirs, [{ text: "cut", finish: "max-tokens" }]), [
      "--ephemeral",
      "go",
    ]);
    assert.equal(limit.code, 4, limit.stderr);
    assert.match(limit.stderr, /stopped: max_tokens/);
    const steps = await run(runtime, await place(dirs, [LIST, LIST, { text: "never" }]), [
      "--ephemeral",
      "--json",
      "--max-steps",
      "1",
      "go",
    ]);
    assert.equal(steps.code, 4, steps.stderr);
    assert.equal(assertResult(JSON.parse(steps.stdout)).stopReason, "max_turn_requests");

    const where = await place(dirs, []);
    const failed = await run(runtime, where, [
      "--ephemeral",
      "--json",
      "--model",
      "openai/gpt-5",
      "hi",
    ], {
      scripted: false,
      env: { OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: `${fake.url}/v1` },
    });
    assert.equal(failed.code, 1, failed.stderr);
    const failure = assertResult(JSON.parse(failed.stdout));
    assert.equal(failure.stopReason, null);
    assert.match(String(failure.error), /401|key/i);

    const bad = await run(runtime, where, ["--ephemeral", "--continue", "hi"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--ephemeral/);
    const typo = await run(runtime, where, ["--jsn", "hi"]);
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /Unknown option "--jsn" \(did you mean "--json"\?\)/);
    const missing = await run(runtime, where, ["--resume", "no-such-session", "hi"]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--resume no-such-session/);
  });
  // Each failing run asked once: a 401 is not retried.
  assert.equal(fake.requests.length, 3);
});

Deno.test("run: SIGINT mid-turn cancels it, prints what was done and exits 130; SIGTERM too, on deno, node and bun", async () => {
  await using dirs = new TempDirs("acp-harness-run-cmd-");
  await onEveryRuntime(async (runtime) => {
    const steps = [LIST, { delayMs: 120_000, text: "too late" }];
    const interrupted = await run(runtime, await place(dirs, steps), ["--ephemeral", "go"], {
      signal: { name: "SIGINT", when: /^done: List \.$/m },
    });
    assert.equal(interrupted.code, 130, interrupted.stderr);
    assert.match(interrupted.stderr, /stopped: cancelled/);

    const terminated = await run(runtime, await place(dirs, steps), [
      "--ephemeral",
      "--jsonl",
      "go",
    ], {
      signal: { name: "SIGTERM", when: /"status":"completed"/ },
    });
    assert.equal(terminated.code, 130, terminated.stderr);
    const last = assertResult(JSON.parse(terminated.stdout.trimEnd().split("\n").pop() ?? ""));
    assert.equal(last.stopReason, "cancelled");
    assert.deepEqual(last.toolCalls, [{ title: "List .", kind: "read", status: "completed" }]);
  });
});

Deno.test("run --file attaches resource links; --mcp-config's servers serve the session, a bad file exits 2, on deno, node and bun", async () => {
  await using dirs = new TempDirs("acp-harness-run-cmd-");
  await onEveryRuntime(async (runtime) => {
    const where = await place(dirs, [
      { toolCalls: [{ name: "mcp__fake__echo", arguments: { text: "ping" } }] },
      { text: "Echoed." },
    ]);
    await writeFile(join(where.cwd, "notes.md"), "# notes\n");
    const linked = await run(runtime, where, [
      "--ephemeral",
      "--model",
      "echo",
      "--file",
      "notes.md",
      "see",
    ], {
      scripted: false,
    });
    assert.equal(linked.code, 0, linked.stderr);
    assert.match(
      linked.stdout,
      /\[resource_link name="notes\.md" uri="file:\/\/\/.*\/ws\/notes\.md"\]/,
    );

    const mcp = join(where.cwd, "mcp.json");
    const { command, args } = fakeStdio();
    await writeFile(
      mcp,
      JSON.stringify({ mcpServers: [{ name: "fake", command, args, env: [] }] }),
    );
    const used = await run(runtime, where, [
      "--ephemeral",
      "--mode",
      "auto",
      "--json",
      "--mcp-config",
      mcp,
      "echo",
    ]);
    assert.equal(used.code, 0, used.stderr);
    const doc = assertResult(JSON.parse(used.stdout));
    assert.deepEqual(
      (doc.toolCalls as Array<{ status: string }>).map((call) => call.status),
      ["completed"],
      used.stdout + used.stderr,
    );
    assert.equal(doc.text, "Echoed.");

    await writeFile(mcp, JSON.stringify({ mcpServers: [{ name: "fake" }] }));
    const invalid = await run(runtime, where, ["--ephemeral", "--mcp-config", mcp, "echo"]);
    assert.equal(invalid.code, 2);
    assert.match(invalid.stderr, /--mcp-config/);
    const missing = await run(runtime, where, ["--ephemeral", "--file", "nope.md", "see"]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--file "nope\.md"/);
  });
});

Deno.test("run --json lists what a rule and the mode refused (with the rule), carries the turn's budget, and starts the config file's MCP servers, on deno, node and bun", async () => {
  await using dirs = new TempDirs("acp-harness-run-cmd-");
  await onEveryRuntime(async (runtime) => {
    const where = await place(dirs, [
      {
        toolCalls: [
          { id: "w", name: "write_file", arguments: { path: "secret.txt", content: "x" } },
          { id: "c", name: "run_command", arguments: { command: "echo hi" } },
          { id: "m", name: "mcp__fake__echo", arguments: { text: "ping" } },
        ],
      },
      { text: "Some were refused." },
    ]);
    const config = join(where.cwd, "..", "config.json");
    const { command, args } = fakeStdio();
    await writeFile(
      config,
      JSON.stringify({ mcpServers: [{ name: "fake", command, args, env: [] }] }),
    );
    const ran = await run(runtime, where, [
      "--ephemeral",
      "--json",
      "--config",
      config,
      "--mode",
      "read-only",
      "--deny",
      "write_file(secret.txt)",
      "--allow",
      "mcp__fake__echo",
      "--max-tool-calls",
      "5",
      "go",
    ]);
    assert.equal(ran.code, 0, ran.stderr);
    const doc = assertResult(JSON.parse(ran.stdout));
    assert.deepEqual(
      (doc.toolCalls as Array<{ status: string }>).map((call) => call.status),
      ["failed", "failed", "completed"],
      ran.stdout,
    );
    const denied = doc.denied as Array<{ tool: string; why: string; rule?: string }>;
    assert.equal(denied.length, 2, ran.stdout);
    assert.equal(denied[0]?.rule, "write_file(secret.txt)");
    assert.match(denied[0]?.why ?? "", /permission rule --deny/);
    assert.equal(denied[1]?.rule, undefined);
    assert.match(denied[1]?.why ?? "", /read-only permission mode refused run_command/);
    const budget = doc.budget as { limits: Record<string, number>; spent: Record<string, number> };
    assert.deepEqual(budget.limits, { maxSteps: 50, maxToolCalls: 5 });
    assert.equal(budget.spent.steps, 2);
    // A call refused permission counts (a loop of refused calls is held to the limit too).
    assert.equal(budget.spent.toolCalls, 3);
    assert.equal(existsSync(join(where.cwd, "secret.txt")), false);
  });
});

Deno.test("run: nobody can answer questions: ask_user is not offered and an MCP server's question is declined, on deno, node and bun", async () => {
  await using dirs = new TempDirs("acp-harness-run-cmd-");
  await onEveryRuntime(async (runtime) => {
    const where = await place(dirs, [
      {
        toolCalls: [
          { id: "ask", name: "ask_user", arguments: { question: "Which one?" } },
          { id: "mcp", name: "mcp__fake__elicit", arguments: {} },
        ],
      },
      { text: "Went on without an answer." },
    ]);
    const mcp = join(where.cwd, "mcp.json");
    const { command, args } = fakeStdio("--elicit");
    await writeFile(
      mcp,
      JSON.stringify({ mcpServers: [{ name: "fake", command, args, env: [] }] }),
    );
    const ran = await run(runtime, where, [
      "--ephemeral",
      "--mode",
      "auto",
      "--jsonl",
      "--mcp-config",
      mcp,
      "ask me",
    ]);
    assert.equal(ran.code, 0, ran.stderr);
    const updates = ran.stdout.split("\n").filter((line) => line.trim() !== "").map((line) =>
      JSON.parse(line) as Record<string, unknown>
    ).map((line) => (line.update ?? line) as Record<string, unknown>);
    const last = (id: string): string =>
      JSON.stringify(updates.filter((update) => update.toolCallId === id).at(-1));
    assert.match(last("ask"), /"status":"failed"/);
    assert.match(last("ask"), /Unknown tool \\"ask_user\\"/);
    assert.match(last("mcp"), /"status":"completed"/);
    assert.match(last("mcp"), /\{\\"action\\":\\"decline\\"\}/);
    assert.match(ran.stdout, /Went on without an answer\./);
  });
});
