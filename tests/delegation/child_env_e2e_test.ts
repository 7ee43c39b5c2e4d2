/**
 * The environment of the server's children end to end, on Deno, Node.js and Bun: a parent
 * acp-harness started with API keys and its token in its environment runs `env` through
 * `run_command`, opens a session with a stdio MCP server and delegates to a child acp-harness
 * that runs `env` too. The command keeps the user's variables but none of the server's secrets;
 * the MCP server and the delegated agent see neither, only what programs need (`HOME`, `PATH`)
 * and what was declared for them. A failing agent that prints the key and 10 KiB of noise on
 * stderr fails with a bounded message that quotes no key.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { exitWithin, spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { FAKE_MCP_SERVER, NODE } from "../_helpers/mcp_servers.ts";
import { MARK, marked } from "../_helpers/marked_processes.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

/** The server's secrets in the parent's environment. */
const SECRETS: Readonly<Record<string, string>> = {
  OPENAI_API_KEY: "sk-test-openai-0123456789abcdef",
  ANTHROPIC_API_KEY: "sk-ant-test-0123456789abcdef",
  DEEPSEEK_API_KEY: "deepseek-test-0123456789abcdef",
  ACP_HARNESS_TOKEN: "acp-token-0123456789abcdef",
};

/** A variable of the user's environment that commands keep. */
const USER_VARIABLE = { CI_SOME_VAR: "ci-value-42" };

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

/** `env` output as a map. */
function parseEnv(text: string): Map<string, string> {
  const vars = new Map<string, string>();
  for (const line of text.split("\n")) {
    const at = line.indexOf("=");
    if (at > 0) vars.set(line.slice(0, at), line.slice(at + 1));
  }
  return vars;
}

/** The secrets (names or values) that `text` (an `env` dump, a message) shows. */
function leaks(text: string): string[] {
  return Object.entries(SECRETS).flatMap(([name, value]) =>
    text.includes(value) || new RegExp(`^${name}=`, "m").test(text) ? [name] : []
  );
}

interface Setup {
  readonly dir: string;
  readonly cwd: string;
  readonly mark: string;
  file(name: string, content: unknown): Promise<string>;
}

async function withSetup(body: (setup: Setup, agents: StdioAgent[]) => Promise<void>) {
  await using dir = await tempDir("acp-harness-child-env-");
  const cwd = join(dir.path, "ws");
  await Deno.mkdir(cwd);
  const mark = crypto.randomUUID();
  const agents: StdioAgent[] = [];
  const setup: Setup = {
    dir: dir.path,
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

function harnessArgs(runtime: Runtime, script: string, dataDir: string, extra: string[] = []) {
  return [
    ...runtime.args,
    ...["--model", "scripted", "--script", script, "--store", "memory:", "--data-dir", dataDir],
    ...extra,
  ];
}

/** Starts the parent acp-harness with the secrets and the user's variable in its environment. */
async function parent(
  runtime: Runtime,
  setup: Setup,
  config: unknown,
  script: unknown,
): Promise<StdioAgent> {
  const scriptFile = await setup.file(`parent-${crypto.randomUUID()}.json`, script);
  const configFile = await setup.file(`config-${crypto.randomUUID()}.json`, config);
  const agent = spawnAgent(
    runtime.command,
    harnessArgs(runtime, scriptFile, join(setup.dir, "data"), [
      ...["--config", configFile, "--mode", "auto"],
    ]),
    {
      cwd: setup.cwd,
      env: {
        ...Deno.env.toObject(),
        ACP_HARNESS_DELEGATION_DEPTH: "",
        ...SECRETS,
        ...USER_VARIABLE,
      },
    },
  );
  await agent.client.initialize();
  return agent;
}

type Update = Record<string, unknown> & { sessionUpdate: string };

/** The text of a tool call's last update's content. */
function lastContent(agent: StdioAgent, sessionId: string, toolCallId: string): Update {
  const updates = agent.client.updates(sessionId).map(({ update }) => update as Update)
    .filter((update) => update.toolCallId === toolCallId);
  return updates.at(-1) as Update;
}

function contentText(update: Update): string {
  const content = (update.content ?? []) as Array<{ content?: { text?: string } }>;
  return content.map((item) => item.content?.text ?? "").join("\n");
}

for (const runtime of RUNTIMES) {
  const name = runtime.name;

  Deno.test(`${name}: commands, MCP stdio servers and delegated agents see none of the server's secrets`, async () => {
    await withSetup(async (setup, agents) => {
      const childScript = await setup.file("child.json", [
        {
          toolCalls: [{ name: "run_command", arguments: { command: "env > child_env.txt" } }],
        },
        { text: "Wrote my environment." },
      ]);
      const config = {
        agents: {
          worker: {
            command: runtime.command,
            args: harnessArgs(runtime, childScript, join(setup.dir, "child-data")),
            env: { [MARK]: setup.mark, DECLARED_FOR_AGENT: "declared-value" },
            description: "Reports its environment",
          },
        },
      };
      const agent = await parent(runtime, setup, config, [
        {
          toolCalls: [{
            id: "call_env",
            name: "run_command",
            arguments: { command: "env > parent_env.txt" },
          }],
        },
        {
          toolCalls: [{
            id: "call_delegate",
            name: "delegate",
            arguments: { agent: "worker", prompt: "Report your environment" },
          }],
        },
        { text: "Done." },
      ]);
      agents.push(agent);
      // An MCP stdio server from the client: it writes its environment, then serves.
      const sessionId = await agent.client.newSession(setup.cwd, {
        mcpServers: [{
          name: "envdump",
          command: "/bin/sh",
          args: ["-c", `env > mcp_env.txt; exec "${NODE}" "${FAKE_MCP_SERVER}"`],
          env: [{ name: "DECLARED_FOR_MCP", value: "mcp-value" }, {
            name: MARK,
            value: setup.mark,
          }],
        }],
      });
      assert.equal(await agent.client.prompt(sessionId, "Go"), "end_turn");
      assert.equal(lastContent(agent, sessionId, "call_delegate").status, "completed");

      const command = parseEnv(await readFile(join(setup.cwd, "parent_env.txt"), "utf8"));
      const mcp = parseEnv(await readFile(join(setup.cwd, "mcp_env.txt"), "utf8"));
      const child = parseEnv(await readFile(join(setup.cwd, "child_env.txt"), "utf8"));
      for (const [what, vars] of [["command", command], ["mcp", mcp], ["agent", child]] as const) {
        const dump = [...vars].map(([key, value]) => `${key}=${value}`).join("\n");
        assert.deepEqual(leaks(dump), [], `${what} sees the server's secrets`);
        assert.equal(vars.get("HOME"), process.env.HOME, `${what} has HOME`);
        assert.ok(vars.get("PATH"), `${what} has PATH`);
      }
      // run_command keeps the user's environment otherwise.
      assert.equal(command.get("CI_SOME_VAR"), USER_VARIABLE.CI_SOME_VAR);
      // MCP servers and delegated agents get only the allow-list and what was declared.
      assert.equal(mcp.get("CI_SOME_VAR"), undefined);
      assert.equal(mcp.get("DECLARED_FOR_MCP"), "mcp-value");
      assert.equal(child.get("CI_SOME_VAR"), undefined);
      assert.equal(child.get("DECLARED_FOR_AGENT"), "declared-value");
      assert.equal(child.get("ACP_HARNESS_DELEGATION_DEPTH"), "1");
      const harnessVars = [...child.keys()].filter((key) =>
        key.startsWith("ACP_HARNESS_") && !key.startsWith("ACP_HARNESS_OWNER_") &&
        key !== "ACP_HARNESS_DELEGATION_DEPTH" && key !== MARK
      );
      assert.deepEqual(harnessVars, []);
      assert.deepEqual(leaks(agent.stderr()), []);
    });
  });

  Deno.test(`${name}: a failing delegated agent's message keeps stage and exit, a bounded stderr tail and no key`, async () => {
    await withSetup(async (setup, agents) => {
      // The agent is handed the server's OpenAI key (inheritEnv), prints it with 10 KiB of noise
      // and a last line, and exits before answering initialize.
      const noisy = [
        'printf "starting with key %s\\n" "$OPENAI_API_KEY" >&2',
        'printf "\\033[31mAuthorization: Bearer %s\\033[0m\\n" "$OPENAI_API_KEY" >&2',
        "i=0; while [ $i -lt 160 ]; do " +
        'printf "noise %03d %s\\n" $i "................................................................" >&2; ' +
        "i=$((i+1)); done",
        'printf "key again: %s\\n" "$OPENAI_API_KEY" >&2',
        'printf "fatal: cannot start\\n" >&2',
        "exit 7",
      ].join("; ");
      const config = {
        agents: {
          broken: {
            command: "/bin/sh",
            args: ["-c", noisy],
            env: { [MARK]: setup.mark },
            inheritEnv: ["OPENAI_API_KEY"],
            description: "Fails at start",
          },
        },
      };
      const agent = await parent(runtime, setup, config, [
        {
          toolCalls: [{
            id: "call_broken",
            name: "delegate",
            arguments: { agent: "broken", prompt: "Do it" },
          }],
        },
        { text: "It failed." },
      ]);
      agents.push(agent);
      const sessionId = await agent.client.newSession(setup.cwd);
      assert.equal(await agent.client.prompt(sessionId, "Go"), "end_turn");
      const last = lastContent(agent, sessionId, "call_broken");
      assert.equal(last.status, "failed");
      const text = contentText(last);
      assert.match(text, /Agent "broken" failed at initialize/);
      assert.match(text, /agent exited with code 7/);
      assert.match(text, /Its stderr ends with:\n…/);
      assert.match(text, /fatal: cannot start$/);
      assert.match(text, /key again: \[redacted\]/);
      assert.deepEqual(leaks(text), []);
      const tail = text.slice(text.indexOf("Its stderr ends with:\n"));
      assert.ok(new TextEncoder().encode(tail).length <= 2100, `${tail.length} chars`);
      assert.ok(tail.split("\n").length <= 21, tail);
      assert.ok(!tail.includes("\x1b"), tail);
      assert.deepEqual(leaks(agent.stderr()), []);
    });
  });
}
