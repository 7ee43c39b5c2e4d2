/**
 * The permission-rule settings: `--allow`/`--deny`/`--ask` (repeatable), ACP_HARNESS_ALLOW/DENY/ASK
 * (split on commas outside parentheses), the config file's `permissions` section; sources add
 * up; a rule that does not parse names the rule, its source and the position, and stops the
 * start with exit 2.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { writeFile } from "node:fs/promises";
import {
  ConfigError,
  configFromEnv,
  configFromFile,
  mergeConfig,
} from "../../src/config/config.ts";
import { parseArgs } from "../../src/config/args.ts";
import { settingsOf } from "../../src/cli/cli_settings.ts";
import { exitWithin, spawnAgent } from "../_helpers/acp_client.ts";
import { RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const texts = (rules: ReadonlyArray<{ text: string }> | undefined) =>
  (rules ?? []).map((rule) => rule.text);

function serveOverrides(args: string[]) {
  const command = parseArgs(args);
  assert.equal(command.kind, "serve");
  return command.kind === "serve" ? command.overrides : {};
}

Deno.test("--allow, --deny and --ask repeat, and a flag may list rules", () => {
  const overrides = serveOverrides([
    "--allow",
    "run_command(npm test)",
    "--allow=write_file(src/**),read_file",
    "--deny",
    "write_file(src/secret/**)",
    "--ask",
    "run_command(git push*)",
    "--allow",
    "run_command(npm test)",
  ]);
  assert.deepEqual(texts(overrides.allow), [
    "run_command(npm test)",
    "write_file(src/**)",
    "read_file",
  ]);
  assert.deepEqual(texts(overrides.deny), ["write_file(src/secret/**)"]);
  assert.deepEqual(texts(overrides.ask), ["run_command(git push*)"]);
  assert.equal(overrides.allow?.[0]?.kind, "allow");
  assert.equal(overrides.deny?.[0]?.kind, "deny");
});

Deno.test("ACP_HARNESS_ALLOW/DENY/ASK split on commas outside parentheses", () => {
  const env: Record<string, string> = {
    ACP_HARNESS_ALLOW: "run_command(echo a, b), write_file",
    ACP_HARNESS_DENY: "delegate",
    ACP_HARNESS_ASK: "mcp__github__*",
  };
  const config = configFromEnv((name) => env[name]);
  assert.deepEqual(texts(config.allow), ["run_command(echo a, b)", "write_file"]);
  assert.equal(config.allow?.[0]?.specifier, "echo a, b");
  assert.deepEqual(texts(config.deny), ["delegate"]);
  assert.deepEqual(texts(config.ask), ["mcp__github__*"]);
});

Deno.test("the config file's permissions section, and sources adding up", () => {
  const file = configFromFile({
    permissions: { allow: ["run_command(npm test)"], deny: ["write_file(.git/**)"], ask: [] },
  }, "c.json");
  const env = configFromEnv((name) => name === "ACP_HARNESS_DENY" ? "delegate" : undefined);
  const flags = serveOverrides(["--allow", "run_command(npm test)", "--allow", "read_file"]);
  const merged = mergeConfig(file, env, flags);
  assert.deepEqual(texts(merged.allow), ["run_command(npm test)", "read_file"]);
  assert.deepEqual(texts(merged.deny), ["write_file(.git/**)", "delegate"]);
  assert.deepEqual(texts(merged.ask), []);
  assert.deepEqual(texts(mergeConfig().allow), []);
  const server = settingsOf(merged).server;
  assert.deepEqual(texts(server.permissionRules?.deny), ["write_file(.git/**)", "delegate"]);
});

function assertConfigError(fn: () => unknown, ...parts: string[]): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof ConfigError, String(error));
    for (const part of parts) assert.ok(error.message.includes(part), `${error.message} / ${part}`);
    return true;
  });
}

Deno.test("a rule that does not parse is named with its source and position", () => {
  assertConfigError(
    () => parseArgs(["--allow", "run_command(npm"]),
    `Invalid rule "run_command(npm" in "--allow": missing ")" at character 16`,
  );
  assertConfigError(
    () => parseArgs(["--deny=write file"]),
    `Invalid rule "write file" in "--deny"`,
    "at character 6",
  );
  assertConfigError(() => parseArgs(["--ask"]), `Option "--ask" needs a value`);
  assertConfigError(
    () =>
      configFromEnv((name) => name === "ACP_HARNESS_ASK" ? "read_file, update_plan(x)" : undefined),
    "ACP_HARNESS_ASK",
    `Invalid rule "update_plan(x)"`,
    `"update_plan" takes no specifier`,
    "at character 12",
  );
  assertConfigError(
    () => configFromFile({ permissions: { deny: ["write_file", "run_command()"] } }, "c.json"),
    `Cannot read config file "c.json"`,
    `Invalid rule "run_command()" in "permissions.deny[1]": empty specifier at character 13`,
  );
  assertConfigError(
    () => configFromFile({ permissions: { allow: "write_file" } }, "c.json"),
    `"permissions.allow" must be an array of rules`,
  );
  assertConfigError(
    () => configFromFile({ permissions: ["write_file"] }, "c.json"),
    `"permissions" must be an object`,
  );
  assertConfigError(
    () => configFromFile({ permissions: { alow: [] } }, "c.json"),
    `unknown key "permissions.alow" (did you mean "permissions.allow"?)`,
  );
  assertConfigError(
    () => configFromFile({ permissions: { allow: [3] } }, "c.json"),
    `"permissions.allow[0]" must be a rule`,
  );
});

Deno.test("a rule that does not parse stops the start with exit 2, on each runtime", async () => {
  await using dir = await tempDir("acp-harness-rules-config-");
  const file = join(dir.path, "config.json");
  await writeFile(file, JSON.stringify({ permissions: { ask: ["run_command(git push"] } }));
  for (const runtime of RUNTIMES) {
    const { code, stderr } = await run(runtime.command, [
      ...runtime.args,
      "--config",
      file,
    ], dir.path);
    assert.equal(code, 2, `${runtime.name}: ${stderr}`);
    assert.match(
      stderr,
      /Invalid rule "run_command\(git push" in "permissions\.ask\[0\]": missing "\)" at character 21/,
      runtime.name,
    );
  }
});

async function run(
  command: string,
  args: string[],
  cwd: string,
): Promise<{ code: number | null; stderr: string }> {
  const agent = spawnAgent(command, args, { cwd });
  agent.end();
  const code = await exitWithin(agent, 60_000);
  return { code, stderr: agent.stderr() };
}
