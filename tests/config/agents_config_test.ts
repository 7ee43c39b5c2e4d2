/**
 * The config of delegation: the config file's `agents` section and `maxDelegationDepth`.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  ConfigError,
  configFromEnv,
  configFromFile,
  DEFAULT_CONFIG,
} from "../../src/config/config.ts";
import { parseArgs } from "../../src/config/args.ts";

const FILE = "/etc/acp-harness.json";

Deno.test("configFromFile() reads agents by name with their command, args, env and description", () => {
  const agents = {
    reviewer: {
      command: "acp-harness",
      args: ["--model", "openai/gpt-5"],
      env: { OPENAI_API_KEY: "sk-test" },
      inheritEnv: ["ANTHROPIC_API_KEY", "TEAM_*"],
      description: "Reviews a change",
    },
    "claude_code-2": { command: "/usr/local/bin/claude-agent-acp", description: "Claude Code" },
  };
  assert.deepEqual(configFromFile({ agents }, FILE), { agents });
  assert.deepEqual(DEFAULT_CONFIG.agents, {});
});

for (
  const [agents, message] of [
    [[], `"agents": Invalid input: expected record, received array`],
    [
      { "bad name": { command: "x", description: "d" } },
      `"agents.bad name": an agent name must be 1 to 64 letters, digits, _ or -`,
    ],
    [{ "../x": { command: "x", description: "d" } }, `"agents.../x": an agent name must be`],
    [{ a: { description: "d" } }, `"agents.a.command": Invalid input: expected string`],
    [{ a: { command: "", description: "d" } }, `"agents.a.command": Too small`],
    [{ a: { command: "x" } }, `"agents.a.description": Invalid input: expected string`],
    [{ a: { command: "x", description: "d", args: "--x" } }, `"agents.a.args": Invalid input`],
    [{ a: { command: "x", description: "d", args: [1] } }, `"agents.a.args.0": Invalid input`],
    [{ a: { command: "x", description: "d", env: { "A-B": "1" } } }, `"agents.a.env.A-B": `],
    [{ a: { command: "x", description: "d", env: { A: 1 } } }, `"agents.a.env.A": Invalid input`],
    [{ a: { command: "x", description: "d", cwd: "/" } }, `"agents.a": Unrecognized key: "cwd"`],
    [{ a: { command: "x", description: "d", inheritEnv: "HOME" } }, `"agents.a.inheritEnv": `],
    [
      { a: { command: "x", description: "d", inheritEnv: ["A*B"] } },
      `"agents.a.inheritEnv.0": `,
    ],
    [{ a: { command: "x", description: "d", inheritEnv: ["*"] } }, `"agents.a.inheritEnv.0": `],
  ] as const
) {
  Deno.test(`configFromFile() refuses agents ${JSON.stringify(agents)} naming the field`, () => {
    assert.throws(
      () => configFromFile({ agents }, FILE),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.ok(
          error.message.startsWith(`Cannot read config file "${FILE}": ${message}`),
          error.message,
        );
        return true;
      },
    );
  });
}

Deno.test("maxDelegationDepth comes from the flag, the variable or the file, default 1", () => {
  assert.equal(DEFAULT_CONFIG.maxDelegationDepth, 1);
  const command = parseArgs(["--max-delegation-depth", "0"]);
  assert.ok(command.kind === "serve");
  assert.equal(command.overrides.maxDelegationDepth, 0);
  const env = { ACP_HARNESS_MAX_DELEGATION_DEPTH: "2" } as Record<string, string>;
  assert.deepEqual(configFromEnv((name) => env[name]), { maxDelegationDepth: 2 });
  assert.deepEqual(configFromFile({ maxDelegationDepth: 3 }, FILE), { maxDelegationDepth: 3 });
});

Deno.test("maxDelegationDepth refuses what is not a non-negative integer", () => {
  assert.throws(
    () => parseArgs(["--max-delegation-depth", "-1"]),
    new ConfigError(
      `Invalid value "-1" for "--max-delegation-depth": expected a non-negative integer`,
    ),
  );
  assert.throws(
    () => parseArgs(["--max-delegation-depth=1.5"]),
    new ConfigError(
      `Invalid value "1.5" for "--max-delegation-depth": expected a non-negative integer`,
    ),
  );
  assert.throws(
    () => configFromFile({ maxDelegationDepth: -1 }, FILE),
    new ConfigError(
      `Cannot read config file "${FILE}": "maxDelegationDepth" must be a non-negative integer`,
    ),
  );
});
