/**
 * The `delegate` tool end to end, on Deno, Node.js and Bun: a parent acp-harness (scripted model)
 * delegates to a child acp-harness (scripted) started from its config file; the child's
 * permission request is answered by the parent's client, a cancel stops the child and leaves no
 * process, and the depth limit holds. Every update the parent emits is checked against the ACP
 * schema.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { exitWithin, spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { MARK, marked } from "../_helpers/marked_processes.ts";
import { pollUntil } from "../_helpers/wait.ts";

/** Kills whatever carries the marker, so a failing test leaves nothing behind. */
async function killMarked(mark: string): Promise<void> {
  for (const pid of await marked(mark)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone.
    }
  }
}

interface Setup {
  /** The workspace both agents work in. */
  readonly cwd: string;
  /** The marker in every delegated agent's environment. */
  readonly mark: string;
  /** Writes a file in the temporary directory (outside the workspace); returns its path. */
  file(name: string, content: unknown): Promise<string>;
}

/** The command line of an acp-harness on `runtime` with a scripted model. */
function harnessArgs(runtime: Runtime, script: string, dataDir: string, extra: string[] = []) {
  return [
    ...runtime.args,
    ...["--model", "scripted", "--script", script, "--store", "memory:", "--data-dir", dataDir],
    ...extra,
  ];
}

/**
 * A config file declaring `worker`: an acp-harness on the same runtime running `childScript`,
 * with the marker in its environment.
 */
async function workerConfig(
  runtime: Runtime,
  setup: Setup,
  childScript: unknown,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const script = await setup.file(`child-${crypto.randomUUID()}.json`, childScript);
  return await setup.file(`config-${crypto.randomUUID()}.json`, {
    agents: {
      worker: {
        command: runtime.command,
        args: harnessArgs(runtime, script, join(setup.cwd, "..", "child-data")),
        env: { [MARK]: setup.mark },
        description: "Writes files when asked",
      },
    },
    ...extra,
  });
}

/** Starts the parent: an acp-harness with `config` and the parent script. */
async function parent(
  runtime: Runtime,
  setup: Setup,
  config: string,
  script: unknown,
  extra: string[] = [],
): Promise<StdioAgent> {
  const scriptFile = await setup.file(`parent-${crypto.randomUUID()}.json`, script);
  const agent = spawnAgent(
    runtime.command,
    harnessArgs(runtime, scriptFile, join(setup.cwd, "..", "data"), [
      "--config",
      config,
      ...extra,
    ]),
    { cwd: setup.cwd, env: { ...Deno.env.toObject(), ACP_HARNESS_DELEGATION_DEPTH: "" } },
  );
  await agent.client.initialize();
  return agent;
}

/** Runs `body` with a fresh workspace; stops the parent and every marked process afterwards. */
async function withSetup(body: (setup: Setup, agents: StdioAgent[]) => Promise<void>) {
  await using dir = await tempDir("acp-harness-delegate-");
  const cwd = join(dir.path, "ws");
  await Deno.mkdir(cwd);
  const mark = crypto.randomUUID();
  const agents: StdioAgent[] = [];
  const setup: Setup = {
    cwd,
    mark,
    async file(name, content) {
      const path = join(dir.path, name);
      await writeFile(path, JSON.stringify(content));
      return path;
    },
  };
  try {
    await body(setup, agents);
  } finally {
    for (const agent of agents) {
      agent.end();
      await exitWithin(agent, 10_000).catch(() => {});
    }
    await killMarked(mark);
  }
}

type Update = Record<string, unknown> & { sessionUpdate: string };

/** The session's updates of one tool call. */
function callUpdates(agent: StdioAgent, sessionId: string, toolCallId: string): Update[] {
  return agent.client.updates(sessionId).map(({ update }) => update as Update).filter((update) =>
    update.toolCallId === toolCallId
  );
}

/** The text blocks of a tool call update's content, joined. */
function contentText(update: Update): string {
  const content = (update.content ?? []) as Array<{ content?: { text?: string } }>;
  return content.map((item) => item.content?.text ?? "").join("\n");
}

const DELEGATE = {
  toolCalls: [{
    id: "call_delegate",
    name: "delegate",
    arguments: { agent: "worker", prompt: "Write notes.txt" },
  }],
};

for (const runtime of RUNTIMES) {
  const name = runtime.name;

  Deno.test(`${name}: delegate runs a child acp-harness whose write is allowed by the parent's client`, async () => {
    await withSetup(async (setup, agents) => {
      const config = await workerConfig(runtime, setup, [
        {
          text: "Writing the notes.",
          toolCalls: [{ name: "write_file", arguments: { path: "notes.txt", content: "hi\n" } }],
        },
        { text: "Wrote notes.txt." },
      ]);
      const agent = await parent(runtime, setup, config, [DELEGATE, {
        text: "The worker is done.",
      }], [
        "--mode",
        "ask",
        "--log-level",
        "info",
      ]);
      agents.push(agent);
      const asked: Array<Record<string, unknown>> = [];
      agent.client.handlers.set("session/request_permission", (params) => {
        asked.push(params as Record<string, unknown>);
        return { outcome: { outcome: "selected", optionId: "allow_once" } };
      });
      const sessionId = await agent.client.newSession(setup.cwd);
      assert.equal(await agent.client.prompt(sessionId, "Delegate the notes"), "end_turn");

      assert.equal(await readFile(join(setup.cwd, "notes.txt"), "utf8"), "hi\n");
      // The delegate call itself (effect external) and the child's write, both under its id.
      assert.equal(asked.length, 2, JSON.stringify(asked));
      const [first, second] = asked.map((params) => params.toolCall as Record<string, unknown>);
      assert.equal(first?.toolCallId, "call_delegate");
      assert.equal(second?.toolCallId, "call_delegate");
      assert.match(String(second?.title), /^worker: /);
      assert.equal(second?.kind, "edit");

      // What the child did before it asked was shown before the question.
      const frames = agent.client.frames;
      const asking = frames.findLastIndex((frame) => frame.method === "session/request_permission");
      const shown = frames.findIndex((frame) =>
        frame.method === "session/update" &&
        JSON.stringify(frame.params).includes("[tool] Write notes.txt (pending)")
      );
      assert.ok(shown !== -1 && shown < asking, `${shown} < ${asking}`);

      const updates = callUpdates(agent, sessionId, "call_delegate");
      // After the answer the call shows its own title and input again.
      const restored = updates.find((update) =>
        update.sessionUpdate === "tool_call_update" && update.title !== undefined
      );
      assert.equal(restored?.title, "Delegate to worker");
      assert.equal(restored?.kind, "other");
      assert.equal((restored?.rawInput as { agent?: string } | undefined)?.agent, "worker");
      const progress = updates.filter((update) =>
        update.sessionUpdate === "tool_call_update" && update.status === "in_progress" &&
        update.content !== undefined
      );
      assert.ok(progress.some((update) => contentText(update).includes("Writing the notes.")));
      const last = updates.at(-1) as Update;
      assert.equal(last.status, "completed");
      assert.match(contentText(last), /Wrote notes\.txt\./);
      assert.match(contentText(last), /\[tool\] .*\(completed\)/);
      const { sessionId: childSession, ...output } = last.rawOutput as Record<string, unknown>;
      // The child's session is named, so a client can find it in the child's store.
      assert.match(String(childSession), /^[0-9a-f-]{36}$/);
      assert.notEqual(childSession, sessionId);
      assert.deepEqual(output, {
        agent: "worker",
        stopReason: "end_turn",
        text: "Wrote notes.txt.",
      });
      assert.deepEqual(agent.client.problems, []);
      // The delegate lines are the session's: they carry its connection's id.
      const delegateLines = agent.stderr().split("\n").filter((line) => line.includes("delegate:"));
      assert.ok(delegateLines.length >= 2, agent.stderr());
      for (const line of delegateLines) assert.match(line, /"connectionId":"c1"/);
      await pollUntil(async () => (await marked(setup.mark)).length === 0, {
        what: "the child to be gone (its supervisor exits after it)",
      });
    });
  });

  Deno.test(`${name}: cancelling a delegation resolves cancelled and leaves no child process`, async () => {
    await withSetup(async (setup, agents) => {
      const config = await workerConfig(runtime, setup, [
        {
          text: "Thinking hard.",
          toolCalls: [{ name: "list_directory", arguments: { path: "." } }],
        },
        { delayMs: 60_000, text: "never" },
      ]);
      const agent = await parent(runtime, setup, config, [DELEGATE, { text: "unused" }], [
        "--mode",
        "auto",
      ]);
      agents.push(agent);
      const sessionId = await agent.client.newSession(setup.cwd);
      const prompt = agent.client.prompt(sessionId, "Delegate");
      // The child's first step is shown in the parent's call: the child is mid-prompt.
      await agent.client.waitFor(
        () =>
          callUpdates(agent, sessionId, "call_delegate").some((update) =>
            contentText(update).includes("list_directory") ||
            contentText(update).includes("Thinking hard.")
          ),
        30_000,
      );
      const children = await marked(setup.mark);
      assert.ok(children.length > 0, "the child runs");
      await agent.client.notify("session/cancel", { sessionId });
      assert.equal(await prompt, "cancelled");
      const last = callUpdates(agent, sessionId, "call_delegate").at(-1) as Update;
      assert.equal(last.status, "failed");
      assert.match(contentText(last), /cancelled/);
      for (const pid of children) {
        await pollUntil(() => !alive(pid), { what: `process ${pid} to be gone` });
      }
      assert.deepEqual(await marked(setup.mark), []);
      assert.deepEqual(agent.client.problems, []);
    });
  });

  for (const how of ["stdin EOF", "session/close"] as const) {
    Deno.test(`${name}: ${how} mid-delegation leaves no child process`, async () => {
      await withSetup(async (setup, agents) => {
        const config = await workerConfig(runtime, setup, [
          { text: "Working.", toolCalls: [{ name: "list_directory", arguments: { path: "." } }] },
          { delayMs: 60_000, text: "never" },
        ]);
        const agent = await parent(runtime, setup, config, [DELEGATE, { text: "unused" }], [
          "--mode",
          "auto",
        ]);
        agents.push(agent);
        const sessionId = await agent.client.newSession(setup.cwd);
        const prompt = agent.client.prompt(sessionId, "Delegate").catch(() => "no answer");
        await agent.client.waitFor(
          () =>
            callUpdates(agent, sessionId, "call_delegate").some((update) =>
              contentText(update).includes("Working.")
            ),
          30_000,
        );
        const children = await marked(setup.mark);
        assert.ok(children.length > 0, "the child runs");
        if (how === "stdin EOF") {
          agent.end();
          assert.equal(await exitWithin(agent, 20_000), 0);
        } else {
          assert.deepEqual(await agent.client.request("session/close", { sessionId }), {});
          assert.equal(await prompt, "cancelled");
        }
        for (const pid of children) {
          await pollUntil(() => !alive(pid), { what: `process ${pid} to be gone` });
        }
        assert.deepEqual(await marked(setup.mark), []);
        assert.deepEqual(agent.client.problems, []);
      });
    });
  }

  Deno.test(`${name}: a bad agent in the config file stops the start naming the field`, async () => {
    await withSetup(async (setup) => {
      const config = await setup.file("bad.json", { agents: { worker: { description: "x" } } });
      const agent = spawnAgent(runtime.command, [...runtime.args, "--config", config], {
        cwd: setup.cwd,
      });
      assert.equal(await exitWithin(agent, 30_000), 2);
      assert.match(agent.stderr(), /"agents\.worker\.command": Invalid input: expected string/);
    });
  });

  for (const maxDepth of [1, 2]) {
    Deno.test(`${name}: with maxDelegationDepth ${maxDepth}, ${maxDepth} level(s) of delegation run`, async () => {
      await withSetup(async (setup, agents) => {
        // Every level reads the same config file, so every level has the agent configured; each
        // one's model tries to delegate, then answers.
        const script = await setup.file("nested.json", [
          { toolCalls: [{ name: "delegate", arguments: { agent: "worker", prompt: "deeper" } }] },
          { text: "level done" },
        ]);
        const config = join(script, "..", "config.json");
        const dataDir = join(setup.cwd, "..", "child-data");
        await setup.file("config.json", {
          maxDelegationDepth: maxDepth,
          agents: {
            worker: {
              command: runtime.command,
              args: harnessArgs(runtime, script, dataDir, ["--config", config]),
              env: { [MARK]: setup.mark },
              description: "Tries to delegate further",
            },
          },
        });
        const agent = await parent(runtime, setup, config, [DELEGATE, { text: "done" }], [
          "--mode",
          "auto",
        ]);
        agents.push(agent);
        const sessionId = await agent.client.newSession(setup.cwd);
        assert.equal(await agent.client.prompt(sessionId, "go"), "end_turn");
        const last = callUpdates(agent, sessionId, "call_delegate").at(-1) as Update;
        assert.equal(last.status, "completed");
        // The child's own call: an unknown tool at the limit, else a delegation whose child (at
        // the limit) could not delegate again.
        assert.match(
          contentText(last),
          maxDepth === 1
            ? /\[tool\] delegate \(failed\)/
            : /\[tool\] Delegate to worker \(completed\)/,
        );
        assert.deepEqual(agent.client.problems, []);
      });
    });
  }
}

/** Whether a process with this id is alive (zombies count as dead). */
function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return false;
  }
}
