import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdir, stat } from "node:fs/promises";
import { promisify } from "node:util";
import { ROOT } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

Deno.test("examples/demo.ts drives the server through one exchange and prints it", async () => {
  // Were the demo to use the default data directory, it would be this one: it must stay empty.
  await using home = await tempDir("acp-harness-demo-");
  const { stdout } = await promisify(execFile)(
    Deno.execPath(),
    ["run", "-A", `${ROOT}examples/demo.ts`, "demo prompt"],
    {
      cwd: ROOT,
      timeout: 30_000,
      env: { ...Deno.env.toObject(), ACP_HARNESS_HOME: home.path },
    },
  );
  const lines = stdout.split("\n");
  assert.ok(lines.some((line) => line.startsWith("→ ") && line.includes('"method":"initialize"')));
  assert.ok(lines.some((line) => line.startsWith("← ") && line.includes("Echo: demo prompt")));
  assert.match(stdout, /The turn ended with "end_turn"; the server exited with code 0\./);
  assert.deepEqual(await readdir(home.path), [], "nothing in the default data directory");
  const dataDir = /recorded in (\S+), removed/.exec(stdout)?.[1];
  assert.ok(dataDir, stdout);
  await assert.rejects(stat(dataDir), { code: "ENOENT" }, "the demo removed its data directory");
});
