/**
 * The server's secrets and its children: a server started with API keys (`OPENAI_API_KEY`,
 * `ANTHROPIC_API_KEY`, `DEEPSEEK_API_KEY`, a custom provider's `apiKeyEnv`) and its HTTP token in
 * its environment runs, in each round's session, `env` through `run_command`, a stdio MCP server
 * that dumps its environment, a delegated acp-harness (same runtime) whose model runs `env`, and
 * a delegated agent that prints the server's key (handed to it on purpose with `inheritEnv`) and
 * noise on stderr and dies. Each secret seen by a command, an MCP server or an agent (by name or
 * value), and each one quoted by a failure message, the client's updates or the server's stderr,
 * is an escape; so is a failure message longer than its bound, or a command that lost the user's
 * variables.
 *
 * @module
 */
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { FAKE_MCP_SERVER, NODE } from "../../tests/_helpers/mcp_servers.ts";
import type { Scenario, ScenarioContext } from "../context.ts";
import { MARKER_VARIABLE, writeScript } from "../driver.ts";

/** A variable of the user's environment that commands keep. */
const USER_VARIABLE = "CI_SOME_VAR";

/** The children whose environment is checked, and the files they write it to. */
const DUMPS = { command: "command_env.txt", mcp: "mcp_env.txt", agent: "agent_env.txt" };

/** The secrets of one run: by variable name, unique values. */
function secrets(): Record<string, string> {
  const id = crypto.randomUUID().replaceAll("-", "");
  return {
    OPENAI_API_KEY: `sk-torture-openai-${id}`,
    ANTHROPIC_API_KEY: `sk-ant-torture-${id}`,
    DEEPSEEK_API_KEY: `deepseek-torture-${id}`,
    TORTURE_CUSTOM_KEY: `custom-torture-${id}`,
    ACP_HARNESS_TOKEN: `token-torture-${id}`,
  };
}

/** The names of `keys` that `text` shows, as `NAME=` at a line's start or by value. */
function seen(text: string, keys: Readonly<Record<string, string>>): string[] {
  return Object.entries(keys).flatMap(([name, value]) =>
    text.includes(value) || text.split("\n").some((line) => line.startsWith(`${name}=`))
      ? [name]
      : []
  );
}

/** A shell script that prints the key and 10 KiB of noise on stderr, then exits 7. */
const NOISY_AGENT = [
  'printf "key %s\\n" "$OPENAI_API_KEY" >&2',
  'printf "\\033[31mAuthorization: Bearer %s\\033[0m\\n" "$OPENAI_API_KEY" >&2',
  'i=0; while [ $i -lt 160 ]; do printf "noise %03d %064d\\n" $i 0 >&2; i=$((i+1)); done',
  'printf "again %s\\nfatal\\n" "$OPENAI_API_KEY" >&2',
  "exit 7",
].join("; ");

/** The longest a delegated agent's failure message may be, in UTF-8 bytes (its tail 2 KiB). */
const MAX_FAILURE_BYTES = 2600;

/** The config file: a provider keyed by a custom variable, a reporting agent, a noisy one. */
async function writeConfig(context: ScenarioContext, dir: string): Promise<string> {
  const childScript = await writeScript(dir, "child.json", [
    { toolCalls: [{ name: "run_command", arguments: { command: `env > ${DUMPS.agent}` } }] },
    { text: "reported" },
  ]);
  const { runtime } = context;
  const marker = { [MARKER_VARIABLE]: context.marker };
  return await writeScript(dir, "config.json", {
    providers: {
      custom: {
        api: "openai-chat",
        baseUrl: "http://127.0.0.1:9",
        apiKeyEnv: "TORTURE_CUSTOM_KEY",
      },
    },
    agents: {
      reporter: {
        command: runtime.command,
        args: [
          ...runtime.args,
          ...["--model", "scripted", "--script", childScript, "--store", "memory:"],
          ...["--data-dir", join(dir, "child-data")],
        ],
        env: { ...marker, DECLARED_FOR_AGENT: "yes" },
        description: "Reports its environment",
      },
      noisy: {
        command: "/bin/sh",
        args: ["-c", NOISY_AGENT],
        env: marker,
        inheritEnv: ["OPENAI_API_KEY"],
        description: "Dies noisily",
      },
    },
  });
}

/** See the module doc. */
export const env: Scenario = {
  name: "env",
  description: "server secrets seen by commands, MCP servers and delegated agents",
  async run(context: ScenarioContext): Promise<void> {
    const rounds = context.pick(5, 2, 1);
    const keys = secrets();
    const dir = join(context.base, "files");
    const config = await writeConfig(context, dir);
    const script = await writeScript(dir, "parent.json", [
      { toolCalls: [{ name: "run_command", arguments: { command: `env > ${DUMPS.command}` } }] },
      {
        toolCalls: [
          { id: "call_reporter", name: "delegate", arguments: { agent: "reporter", prompt: "go" } },
        ],
      },
      {
        toolCalls: [
          { id: "call_noisy", name: "delegate", arguments: { agent: "noisy", prompt: "go" } },
        ],
      },
      { text: "done" },
    ]);
    const server = context.start({
      dataDir: join(context.base, "data"),
      cwd: context.base,
      args: ["--mode", "auto", "--model", "scripted", "--script", script, "--config", config],
      env: { ...keys, [USER_VARIABLE]: "kept", ACP_HARNESS_DELEGATION_DEPTH: "" },
    });
    await server.initialize();
    for (let round = 0; round < rounds; round++) {
      const cwd = join(context.base, "ws", String(round));
      await mkdir(cwd, { recursive: true });
      const sessionId = await server.newSession(cwd, {
        mcpServers: [{
          name: "envdump",
          command: "/bin/sh",
          args: ["-c", `env > ${DUMPS.mcp}; exec "${NODE}" "${FAKE_MCP_SERVER}"`],
          env: [{ name: MARKER_VARIABLE, value: context.marker }],
        }],
      });
      const from = server.frames.length;
      const prompt = server.promptRequest(sessionId, "go");
      await server.write(prompt.frame);
      if ((await server.response(prompt.id, 120_000)) === undefined) {
        if (!(await context.checkAnswers(server, `round ${round}`))) return;
        context.fail("other", "hang", `round ${round}: the turn did not end within 120 s`);
        continue;
      }
      for (const [child, file] of Object.entries(DUMPS)) {
        const text = await readFile(join(cwd, file), "utf8").catch(() => undefined);
        context.run(Object.keys(keys).length);
        if (text === undefined) {
          context.fail("other", "no-dump", `round ${round}: ${child} wrote no ${file}`);
          continue;
        }
        for (const name of seen(text, keys)) {
          context.fail("escapes", `${child}-env`, `round ${round}: ${child} sees ${name}`);
        }
        const kept = text.split("\n").includes(`${USER_VARIABLE}=kept`);
        if (kept !== (child === "command")) {
          context.fail(
            "other",
            "user-env",
            `round ${round}: ${child} has ${USER_VARIABLE}: ${kept}`,
          );
        }
      }
      const updates = server.updates(sessionId, from);
      const noisy = updates.filter((update) => update.toolCallId === "call_noisy").at(-1);
      const message = JSON.stringify(noisy?.content ?? "");
      context.run();
      if (noisy?.status !== "failed" || !message.includes("exited with code 7")) {
        context.fail("other", "no-failure", `round ${round}: ${message.slice(0, 300)}`);
      }
      if (new TextEncoder().encode(message).length > MAX_FAILURE_BYTES) {
        context.fail("escapes", "unbounded-stderr", `round ${round}: ${message.length} chars`);
      }
      for (const name of seen(JSON.stringify(updates), keys)) {
        context.fail("escapes", "client-sees-key", `round ${round}: updates quote ${name}`);
      }
    }
    context.run();
    for (const name of seen(server.stderr, keys)) {
      context.fail("escapes", "log-quotes-key", `the server's stderr quotes ${name}`);
    }
  },
};
