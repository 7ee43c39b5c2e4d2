import assert from "node:assert/strict";
import { parseArgs } from "../../src/config/args.ts";
import { ConfigError } from "../../src/config/config.ts";

Deno.test("run: the words are the prompt; its flags and the settings' mix in any order", () => {
  const command = parseArgs([
    "run",
    "--json",
    "fix",
    "--model",
    "echo",
    "the",
    "--file",
    "a.ts",
    "--file=b.ts",
    "tests",
    "--mcp-config",
    "mcp.json",
  ]);
  assert(command.kind === "run");
  assert.deepEqual(command.run.words, ["fix", "the", "tests"]);
  assert.equal(command.run.output, "json");
  assert.deepEqual(command.run.files, ["a.ts", "b.ts"]);
  assert.equal(command.run.mcpConfig, "mcp.json");
  assert.equal(command.overrides.model, "echo");
  assert.equal(command.run.ephemeral, false);
});

Deno.test("run: '-' reads stdin, '--' ends the flags, --resume, --continue and --ephemeral", () => {
  const stdin = parseArgs(["run", "--jsonl", "-"]);
  assert(stdin.kind === "run");
  assert.deepEqual([stdin.run.words, stdin.run.output], [["-"], "jsonl"]);
  const rest = parseArgs(["run", "--resume", "s1", "--", "--not-a-flag", "x"]);
  assert(rest.kind === "run");
  assert.deepEqual([rest.run.resume, rest.run.words], ["s1", ["--not-a-flag", "x"]]);
  const latest = parseArgs(["run", "--continue", "go"]);
  assert(latest.kind === "run" && latest.run.continueLatest);
  const memory = parseArgs(["run", "--ephemeral"]);
  assert(memory.kind === "run" && memory.run.ephemeral && memory.run.words.length === 0);
});

Deno.test("run: conflicting or incomplete flags are usage errors naming the flag", () => {
  const cases: Array<[string[], RegExp]> = [
    [["run", "--json", "--jsonl"], /"--json" and "--jsonl"/],
    [["run", "--resume", "a", "--continue"], /"--resume" and "--continue"/],
    [["run", "--ephemeral", "--continue"], /"--ephemeral"/],
    [["run", "--resume"], /"--resume" needs a value/],
    [["run", "--file", "--json"], /"--file" needs a value/],
    [["run", "--continue=yes"], /"--continue" takes no value/],
    [["--jsonl"], /"--jsonl" applies only to "acp-harness run"/],
    [["--resume", "x"], /"--resume" applies only to "acp-harness run"/],
    [["--json"], /"--json" applies only to "acp-harness models" and "acp-harness run"/],
    [["serve", "hello"], /Unexpected argument "hello"/],
  ];
  for (const [args, message] of cases) {
    assert.throws(() => parseArgs(args), (error: unknown) => {
      assert(error instanceof ConfigError, String(error));
      assert.match(error.message, message, args.join(" "));
      return true;
    });
  }
});
