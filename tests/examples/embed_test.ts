import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { tempDir } from "../_helpers/temp_dir.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

Deno.test("examples/embed.ts serves one exchange in-process and leaves nothing behind", async () => {
  // The example's temporary data directory goes here, so the test can see it is removed.
  await using temp = await tempDir("acp-harness-embed-test-");
  const tmp = temp.path;
  const { stdout } = await promisify(execFile)(
    Deno.execPath(),
    ["run", "-A", `${ROOT}examples/embed.ts`, "embedded prompt"],
    { cwd: ROOT, timeout: 30_000, env: { ...Deno.env.toObject(), TMPDIR: tmp } },
  );
  assert.match(stdout, /^reply: Echo: embedded prompt$/m);
  assert.match(stdout, /^stop reason: end_turn$/m);
  assert.match(stdout, /^session [0-9a-f-]{36} released its tools$/m);
  assert.deepEqual(await Array.fromAsync(Deno.readDir(tmp)), []);
});
