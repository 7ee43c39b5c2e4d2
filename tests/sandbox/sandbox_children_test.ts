/**
 * `--sandbox-children`: a session's MCP stdio server runs in the command sandbox (its write
 * outside the roots is refused, and it still serves its tools); without the flag it runs
 * unconfined. A real server (Deno) with real bubblewrap.
 *
 * @module
 */
import assert from "node:assert/strict";
import { copyFile, mkdir, mkdtemp, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { exitWithin, spawnAgent } from "../_helpers/acp_client.ts";
import { bwrapAvailable } from "../_helpers/bwrap.ts";
import { FAKE_MCP_SERVER, NODE } from "../_helpers/mcp_servers.ts";
import { RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const available = bwrapAvailable();

Deno.test({
  name: "--sandbox-children confines a session's MCP stdio server; without it the server is free",
  ignore: !available,
  async fn() {
    const runtime = RUNTIMES[0]!;
    await using dir = await tempDir("acp-harness-sandbox-children-");
    // Outside /tmp, which the sandbox replaces with a private one (see sandbox_e2e_test.ts).
    const outside = await mkdtemp("/var/tmp/acp-harness-sandbox-children-");
    try {
      for (const children of [true, false]) {
        const ws = join(dir.path, `ws-${children}`);
        await mkdir(ws);
        // The server's script from inside the session's root: the sandbox's private /tmp hides
        // the checkout's own copy when the checkout lives under /tmp (as a CI clone may).
        const script = join(ws, "fake_mcp_server.mjs");
        await copyFile(FAKE_MCP_SERVER, script);
        const planted = join(outside, `planted-${children}`);
        const agent = spawnAgent(runtime.command, [
          ...runtime.args,
          ...["--data-dir", join(dir.path, "data"), "--sandbox", "workspace-write"],
          ...(children ? ["--sandbox-children"] : []),
        ], { cwd: ws, env: { ...Deno.env.toObject(), ACP_HARNESS_DELEGATION_DEPTH: "" } });
        try {
          await agent.client.initialize();
          const created = await agent.client.request<{ _meta?: unknown }>("session/new", {
            cwd: ws,
            mcpServers: [{
              name: "fake",
              command: "/bin/sh",
              args: ["-c", `echo x > ${planted}; exec "$0" "$1"`, NODE, script],
              env: [],
            }],
          });
          // The server started (inside the sandbox too: node runs read-only).
          assert.equal(created._meta, undefined, JSON.stringify(created._meta));
        } finally {
          agent.end();
          await exitWithin(agent, 15_000);
        }
        const written = (await stat(planted).catch(() => undefined)) !== undefined;
        assert.equal(written, !children, `children sandboxed: ${children}`);
      }
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  },
});
