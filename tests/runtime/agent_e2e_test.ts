import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import {
  type FakeLlmServer,
  jsonResponse,
  startFakeLlmServer,
} from "../_helpers/fake_llm_server.ts";
import { anthropicTurn, openAiTurn } from "../_helpers/llm_fixtures.ts";
import { RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";

const [, NODE] = RUNTIMES as [unknown, { command: string; args: readonly string[] }];

/** A running server; disposing it kills what still runs and removes its directory. */
interface Started extends AsyncDisposable {
  readonly agent: StdioAgent;
  readonly cwd: string;
  readonly sessionId: string;
  readonly server: FakeLlmServer;
}

/** A server process on the bundled Node build, talking to a fake provider on loopback. */
async function start(
  options: {
    mode?: string;
    api?: "openai-chat" | "anthropic-messages";
    answer?: string;
    /** Extra flags (`--sandbox off` for a test that reads host pids a command writes). */
    flags?: readonly string[];
  } = {},
): Promise<Started> {
  const dir = await tempDir("acp-harness-e2e-");
  const server = await startFakeLlmServer();
  // The workspace, with the config file next to it (out of the model's sight).
  const cwd = join(dir.path, "ws");
  await mkdir(cwd);
  const configFile = join(dir.path, "config.json");
  const api = options.api ?? "openai-chat";
  await writeFile(
    configFile,
    JSON.stringify({
      providers: {
        fake: {
          api,
          baseUrl: api === "openai-chat" ? `${server.url}/v1` : server.url,
          apiKeyEnv: "FAKE_API_KEY",
        },
      },
      models: { "fake/coder": { contextWindow: 32_000, pricing: { input: 1, output: 2 } } },
    }),
  );
  const agent = spawnAgent(NODE.command, [
    ...NODE.args,
    "--config",
    configFile,
    "--model",
    "fake/coder",
    "--mode",
    options.mode ?? "ask",
    ...options.flags ?? [],
  ], {
    cwd,
    env: { ...Deno.env.toObject(), FAKE_API_KEY: "sk-test", ACP_HARNESS_HOME: join(cwd, ".home") },
  });
  agent.client.handlers.set("session/request_permission", () => ({
    outcome: { outcome: "selected", optionId: options.answer ?? "allow_once" },
  }));
  const dispose = async (): Promise<void> => {
    if (agent.child.exitCode === null && agent.child.signalCode === null) {
      agent.child.kill("SIGKILL");
    }
    await agent.exited;
    await server.close();
    await dir[Symbol.asyncDispose]();
  };
  try {
    await agent.client.initialize();
    const sessionId = await agent.client.newSession(cwd);
    return { agent, cwd, sessionId, server, [Symbol.asyncDispose]: dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}

async function stop({ agent, server }: Started): Promise<void> {
  agent.end();
  await agent.exited;
  await server.close();
}

function toolStatuses(agent: StdioAgent, sessionId: string): Array<[string, string]> {
  return agent.client.updates(sessionId).map(({ update }) => update)
    .filter((update) =>
      update.sessionUpdate === "tool_call_update" && update.status !== "in_progress"
    )
    .map((update) => [update.toolCallId as string, update.status as string]);
}

Deno.test("a scripted coding task reads, edits after permission, runs a command and answers", async () => {
  await using run = await start();
  const { agent, cwd, server } = run;
  await writeFile(join(cwd, "app.txt"), "value = 1\n");
  // AGENTS.md is read when a session starts.
  await writeFile(join(cwd, "AGENTS.md"), "Always answer in one line.\n");
  const sessionId = await agent.client.newSession(cwd);
  server.enqueue(
    openAiTurn({
      text: ["Let me look."],
      toolCalls: [{ id: "r1", name: "read_file", arguments: { path: "app.txt" } }],
    }),
    openAiTurn({
      toolCalls: [{
        id: "e1",
        name: "edit_file",
        arguments: { path: "app.txt", old_text: "value = 1", new_text: "value = 2" },
      }],
    }),
    openAiTurn({
      toolCalls: [{
        id: "c1",
        name: "run_command",
        arguments: { command: "cat app.txt > copy.txt" },
      }],
    }),
    openAiTurn({ text: ["Done: ", "value is 2."], usage: { prompt: 900, completion: 20 } }),
  );
  assert.equal(
    await agent.client.prompt(sessionId, "Set value to 2 and copy the file"),
    "end_turn",
  );
  assert.equal(await readFile(join(cwd, "app.txt"), "utf8"), "value = 2\n");
  assert.equal(await readFile(join(cwd, "copy.txt"), "utf8"), "value = 2\n");
  assert.deepEqual(toolStatuses(agent, sessionId), [["r1", "completed"], ["e1", "completed"], [
    "c1",
    "completed",
  ]]);
  const asked = agent.client.frames.filter((frame) =>
    frame.method === "session/request_permission"
  );
  assert.deepEqual(
    asked.map((frame) =>
      (frame.params as { toolCall: { toolCallId: string } }).toolCall.toolCallId
    ),
    ["e1", "c1"],
  );
  // The model saw the tool results, the system prompt had AGENTS.md, the key was sent.
  assert.equal(server.requests.length, 4);
  const first = server.requests[0]!;
  assert.equal(first.path, "/v1/chat/completions");
  assert.equal(first.headers.authorization, "Bearer sk-test");
  const firstBody = first.body as {
    messages: Array<{ role: string; content: string }>;
    tools: unknown[];
  };
  assert.match(firstBody.messages[0]!.content, /Always answer in one line\./);
  assert.equal(firstBody.tools.length, 8);
  const second = server.requests[1]!.body as {
    messages: Array<{ role: string; content: string; tool_call_id?: string }>;
  };
  const toolMessage = second.messages.find((message) => message.role === "tool");
  assert.equal(toolMessage?.tool_call_id, "r1");
  assert.match(toolMessage?.content ?? "", /value = 1/);
  const message = agent.client.updates(sessionId).filter(({ update }) =>
    update.sessionUpdate === "agent_message_chunk"
  )
    .map(({ update }) => (update.content as { text: string }).text);
  assert.deepEqual(message, ["Let me look.", "Done: value is 2."]);
  const usage = agent.client.updates(sessionId).map(({ update }) => update)
    .filter((update) => update.sessionUpdate === "usage_update").at(-1);
  assert.deepEqual(usage, {
    sessionUpdate: "usage_update",
    used: 920,
    size: 32_000,
    // Three tool steps of 100 in ($1/M) + 10 out ($2/M), then 900 in + 20 out.
    cost: { amount: 0.0013, currency: "USD" },
  });
  assert.deepEqual(agent.client.problems, []);
  assert.deepEqual(agent.impure, []);
  await stop(run);
});

Deno.test("a rejected edit leaves the file unchanged and the tool call failed", async () => {
  await using run = await start({ answer: "reject_once" });
  const { agent, cwd, sessionId, server } = run;
  await writeFile(join(cwd, "app.txt"), "value = 1\n");
  server.enqueue(
    openAiTurn({
      toolCalls: [{
        id: "e1",
        name: "edit_file",
        arguments: { path: "app.txt", old_text: "1", new_text: "2" },
      }],
    }),
    openAiTurn({ text: ["Understood."] }),
  );
  assert.equal(await agent.client.prompt(sessionId, "edit"), "end_turn");
  assert.equal(await readFile(join(cwd, "app.txt"), "utf8"), "value = 1\n");
  assert.deepEqual(toolStatuses(agent, sessionId), [["e1", "failed"]]);
  await stop(run);
});

Deno.test("cancel mid-stream closes the provider connection and ends the prompt cancelled", async () => {
  await using run = await start();
  const { agent, sessionId, server } = run;
  server.enqueue(openAiTurn({ text: ["one ", "two ", "three"], chunkDelayMs: 50, hold: true }));
  const prompt = agent.client.prompt(sessionId, "talk");
  await server.waitForRequests(1);
  await agent.client.notify("session/cancel", { sessionId });
  assert.equal(await prompt, "cancelled");
  await server.waitForCutOff(1, 5_000);
  await stop(run);
});

Deno.test("429 with Retry-After is retried, then the turn succeeds", async () => {
  await using run = await start();
  const { agent, sessionId, server } = run;
  server.enqueue(
    jsonResponse(429, { error: { message: "Rate limit reached" } }, { "retry-after": "0" }),
    openAiTurn({ text: ["after the retry"] }),
  );
  assert.equal(await agent.client.prompt(sessionId, "hi"), "end_turn");
  assert.equal(server.requests.length, 2);
  assert.match(agent.stderr(), /model request failed .*"status":429/);
  await stop(run);
});

Deno.test("a request that keeps failing rejects the prompt with -32603 naming provider, model and status", async () => {
  await using run = await start();
  const { agent, sessionId, server } = run;
  server.enqueue(jsonResponse(401, { error: { message: "Invalid API key" } }));
  const response = await agent.client.requestRaw("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "hi" }],
  });
  const error = response.error as { code: number; message: string };
  assert.equal(error.code, -32603);
  assert.match(error.message, /fake\/coder/);
  assert.match(error.message, /401/);
  assert.match(error.message, /Invalid API key/);
  assert.doesNotMatch(error.message, /sk-test/);
  await stop(run);
});

Deno.test("DeepSeek reasoning_content is sent back on the next request", async () => {
  await using run = await start({ mode: "auto" });
  const { agent, sessionId, server } = run;
  server.enqueue(
    openAiTurn({
      reasoning: ["I should list files."],
      toolCalls: [{ id: "l1", name: "list_directory", arguments: { path: "." } }],
    }),
    openAiTurn({ text: ["Listed."] }),
  );
  assert.equal(await agent.client.prompt(sessionId, "list"), "end_turn");
  const body = server.requests[1]!.body as { messages: Array<Record<string, unknown>> };
  const assistant = body.messages.find((message) => message.role === "assistant");
  assert.equal(assistant?.reasoning_content, "I should list files.");
  const thought = agent.client.updates(sessionId).find(({ update }) =>
    update.sessionUpdate === "agent_thought_chunk"
  );
  assert.equal((thought?.update.content as { text: string }).text, "I should list files.");
  await stop(run);
});

Deno.test("Anthropic thinking blocks go back unchanged, signature included", async () => {
  await using run = await start({ mode: "auto", api: "anthropic-messages" });
  const { agent, sessionId, server } = run;
  server.enqueue(
    anthropicTurn({
      thinking: { text: "Check the directory.", signature: "sig-123" },
      toolUse: { id: "toolu_1", name: "list_directory", input: { path: "." } },
    }),
    anthropicTurn({ text: "Listed." }),
  );
  assert.equal(await agent.client.prompt(sessionId, "list"), "end_turn");
  assert.equal(server.requests[0]!.path, "/v1/messages");
  assert.equal(server.requests[0]!.headers["x-api-key"], "sk-test");
  const body = server.requests[1]!.body as { messages: Array<{ role: string; content: unknown }> };
  const assistant = body.messages.find((message) => message.role === "assistant");
  assert.deepEqual((assistant?.content as Array<Record<string, unknown>>)[0], {
    type: "thinking",
    thinking: "Check the directory.",
    signature: "sig-123",
  });
  await stop(run);
});

async function alive(pid: number): Promise<boolean> {
  try {
    Deno.kill(pid, "SIGCONT");
  } catch {
    return false;
  }
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    return stat.split(") ")[1]?.[0] !== "Z";
  } catch {
    return false;
  }
}

Deno.test("a command's child processes are gone after its timeout and after a cancel", async () => {
  // Unconfined: the pids the command writes are the host's (in the sandbox they would be its own
  // PID namespace's; tests/sandbox/ covers the sandbox's kill).
  await using run = await start({ mode: "auto", flags: ["--sandbox", "off"] });
  const { agent, cwd, sessionId, server } = run;
  const script = "sleep 30 & echo $! > $PIDFILE; sleep 30";
  server.enqueue(
    openAiTurn({
      toolCalls: [{
        id: "c1",
        name: "run_command",
        arguments: { command: script.replace("$PIDFILE", "timeout.pid"), timeout_ms: 500 },
      }],
    }),
    openAiTurn({ text: ["timed out"] }),
    openAiTurn({
      toolCalls: [{
        id: "c2",
        name: "run_command",
        arguments: { command: script.replace("$PIDFILE", "cancel.pid") },
      }],
    }),
  );
  assert.equal(await agent.client.prompt(sessionId, "run slow"), "end_turn");
  assert.deepEqual(toolStatuses(agent, sessionId), [["c1", "failed"]]);
  const timedOut = Number(await readFile(join(cwd, "timeout.pid"), "utf8"));
  assert.equal(await alive(timedOut), false, "the background child of the timed-out command");

  const prompt = agent.client.prompt(sessionId, "run slow again");
  // The pid file is written by the command's shell, a grandchild of this test: no frame or event
  // says it exists, so poll for it.
  const pidFile = join(cwd, "cancel.pid");
  await pollUntil(() => readFile(pidFile, "utf8").then((text) => text.trim() !== "", () => false), {
    what: "the command to write its background child's pid",
  });
  await agent.client.notify("session/cancel", { sessionId });
  assert.equal(await prompt, "cancelled");
  const cancelled = Number(await readFile(pidFile, "utf8"));
  // That background child is not ours to wait on: poll until the kill has landed.
  await pollUntil(async () => !(await alive(cancelled)), {
    what: "the background child of the cancelled command to be gone",
    timeoutMs: 2_500,
  }).catch(() => {});
  assert.equal(await alive(cancelled), false, "the background child of the cancelled command");
  await stop(run);
});

Deno.test("read-only mode refuses edits without asking; auto mode runs them without asking", async () => {
  for (const mode of ["read-only", "auto"] as const) {
    await using run = await start({ mode });
    const { agent, cwd, sessionId, server } = run;
    await writeFile(join(cwd, "app.txt"), "value = 1\n");
    server.enqueue(
      openAiTurn({
        toolCalls: [{
          id: "e1",
          name: "edit_file",
          arguments: { path: "app.txt", old_text: "1", new_text: "2" },
        }],
      }),
      openAiTurn({ text: ["ok"] }),
    );
    assert.equal(await agent.client.prompt(sessionId, "edit"), "end_turn");
    const asked = agent.client.frames.filter((frame) =>
      frame.method === "session/request_permission"
    );
    assert.equal(asked.length, 0, mode);
    assert.equal(
      await readFile(join(cwd, "app.txt"), "utf8"),
      mode === "auto" ? "value = 2\n" : "value = 1\n",
    );
    assert.deepEqual(toolStatuses(agent, sessionId), [[
      "e1",
      mode === "auto" ? "completed" : "failed",
    ]]);
    await stop(run);
  }
});
