/**
 * Setting the sandbox up, on Deno, Node.js and Bun: a sandbox asked for that cannot be set up
 * (`ACP_HARNESS_BWRAP=/nonexistent`) stops the start with exit 2 and a line naming bubblewrap and
 * how to install it; the default falls back to `off` with one warning line on stderr and the
 * warning in the `initialize` answer's `_meta`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { exitWithin, spawnAgent } from "../_helpers/acp_client.ts";
import { RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const MISSING = { ACP_HARNESS_BWRAP: "/nonexistent/bwrap", ACP_HARNESS_DELEGATION_DEPTH: "" };

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: a requested sandbox without bubblewrap exits 2 naming bubblewrap`, async () => {
    await using dir = await tempDir("acp-harness-sandbox-start-");
    for (const level of ["workspace-write", "read-only"]) {
      const agent = spawnAgent(runtime.command, [
        ...runtime.args,
        ...["--data-dir", `${dir.path}/data`, "--sandbox", level],
      ], { cwd: dir.path, env: { ...Deno.env.toObject(), ...MISSING } });
      const code = await exitWithin(agent, 30_000);
      assert.equal(code, 2, agent.stderr());
      const lines = agent.stderr().trim().split("\n");
      assert.equal(lines.length, 1, agent.stderr());
      assert.match(lines[0] ?? "", new RegExp(`^acp-harness: Cannot set up the ${level} sandbox`));
      assert.match(lines[0] ?? "", /bubblewrap/);
      assert.match(lines[0] ?? "", /apt-get install bubblewrap/);
      assert.match(lines[0] ?? "", /\/nonexistent\/bwrap/);
    }
  });

  Deno.test(`${runtime.name}: the default sandbox without bubblewrap is off, with one warning line and the _meta`, async () => {
    await using dir = await tempDir("acp-harness-sandbox-start-");
    const agent = spawnAgent(runtime.command, [
      ...runtime.args,
      ...["--data-dir", `${dir.path}/data`],
    ], { cwd: dir.path, env: { ...Deno.env.toObject(), ...MISSING } });
    try {
      const answer = await agent.client.initialize() as {
        _meta?: { "acp-harness"?: { sandbox?: { level: string; warning?: string } } };
      };
      const sandbox = answer._meta?.["acp-harness"]?.sandbox;
      assert.equal(sandbox?.level, "off");
      assert.match(sandbox?.warning ?? "", /without a sandbox.*bubblewrap/);
      const sessionId = await agent.client.newSession(dir.path);
      const options = await agent.client.request<{ configOptions: { id: string }[] }>(
        "session/set_config_option",
        { sessionId, configId: "mode", value: "auto" },
      );
      const offered = options.configOptions.find((option) => option.id === "sandbox") as
        | { currentValue: string; options: { value: string }[] }
        | undefined;
      assert.equal(offered?.currentValue, "off");
      assert.deepEqual(offered?.options.map((option) => option.value), ["off"]);
      const refused = await agent.client.request("session/set_config_option", {
        sessionId,
        configId: "sandbox",
        value: "read-only",
      }).then(() => undefined, (error: { code: number; message: string; data?: unknown }) => error);
      assert.equal(refused?.code, -32602);
      assert.match(
        refused?.message ?? "",
        /value: sandbox "read-only" cannot be set up here.*expected one of off/,
      );
    } finally {
      agent.end();
      await exitWithin(agent, 15_000);
    }
    const warnings = agent.stderr().split("\n").filter((line) => /without a sandbox/.test(line));
    assert.equal(warnings.length, 1, agent.stderr());
  });
}
