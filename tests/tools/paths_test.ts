import assert from "node:assert/strict";
import { NodeHost } from "../../src/host/node_host.ts";
import { displayPath, resolveToolPath, type ToolPathResult } from "../../src/tools/paths.ts";
import { tempWorkspace } from "./_context.ts";

const host = new NodeHost();

function refusedWith(result: ToolPathResult, ...parts: readonly string[]): void {
  assert.equal(result.ok, false, JSON.stringify(result));
  if (result.ok) return;
  for (const part of parts) {
    assert.ok(result.reason.includes(part), `${result.reason} lacks ${part}`);
  }
}

Deno.test("resolveToolPath() resolves relative paths against cwd, existing or not", async () => {
  await using ws = await tempWorkspace();
  await ws.write("src/a.ts", "a");
  const scope = { cwd: ws.root, roots: [ws.root] };
  assert.deepEqual(await resolveToolPath(host, scope, "src/a.ts"), {
    ok: true,
    path: `${ws.root}/src/a.ts`,
  });
  assert.deepEqual(await resolveToolPath(host, scope, "./src/../src/./a.ts"), {
    ok: true,
    path: `${ws.root}/src/a.ts`,
  });
  assert.deepEqual(await resolveToolPath(host, scope, "new/dir/b.ts"), {
    ok: true,
    path: `${ws.root}/new/dir/b.ts`,
  });
  assert.deepEqual(await resolveToolPath(host, scope, "."), { ok: true, path: ws.root });
  assert.deepEqual(await resolveToolPath(host, { ...scope, cwd: `${ws.root}/src` }, "../x.ts"), {
    ok: true,
    path: `${ws.root}/x.ts`,
  });
  assert.deepEqual(await resolveToolPath(host, scope, `${ws.root}/src/a.ts`), {
    ok: true,
    path: `${ws.root}/src/a.ts`,
  });
});

Deno.test("resolveToolPath() refuses .. and absolute escapes, naming the path and the roots", async () => {
  await using ws = await tempWorkspace();
  const scope = { cwd: ws.root, roots: [ws.root] };
  refusedWith(
    await resolveToolPath(host, scope, "../outside/secret.txt"),
    '"../outside/secret.txt"',
    "outside the workspace",
    `${ws.outside}/secret.txt`,
    ws.root,
  );
  refusedWith(await resolveToolPath(host, scope, "src/../../../../etc/passwd"), "/etc/passwd");
  refusedWith(await resolveToolPath(host, scope, "/etc/passwd"), '"/etc/passwd"', ws.root);
  refusedWith(await resolveToolPath(host, scope, ".."), "outside the workspace");
  refusedWith(await resolveToolPath(host, scope, `${ws.root}2/x`), "outside the workspace");
  refusedWith(
    await resolveToolPath(host, scope, "/nonexistent/deep/path"),
    "outside the workspace",
  );
});

Deno.test("resolveToolPath() follows file and directory symlinks and refuses those leading out", async () => {
  await using ws = await tempWorkspace();
  await ws.write("real/inner.txt", "x");
  await Deno.symlink(`${ws.outside}/secret.txt`, `${ws.root}/secret_link`);
  await Deno.symlink(ws.outside, `${ws.root}/out_dir`);
  await Deno.symlink(`${ws.root}/real`, `${ws.root}/in_dir`);
  await Deno.symlink("real/inner.txt", `${ws.root}/in_file`);
  const scope = { cwd: ws.root, roots: [ws.root] };
  refusedWith(
    await resolveToolPath(host, scope, "secret_link"),
    "through a symlink",
    `${ws.outside}/secret.txt`,
  );
  refusedWith(await resolveToolPath(host, scope, "out_dir/secret.txt"), "through a symlink");
  refusedWith(await resolveToolPath(host, scope, "out_dir/new.txt"), "through a symlink");
  refusedWith(await resolveToolPath(host, scope, "out_dir/a/b/new.txt"), "through a symlink");
  refusedWith(await resolveToolPath(host, scope, "out_dir"), "through a symlink");
  assert.deepEqual(await resolveToolPath(host, scope, "in_dir/inner.txt"), {
    ok: true,
    path: `${ws.root}/real/inner.txt`,
  });
  assert.deepEqual(await resolveToolPath(host, scope, "in_dir/new.txt"), {
    ok: true,
    path: `${ws.root}/real/new.txt`,
  });
  assert.deepEqual(await resolveToolPath(host, scope, "in_file"), {
    ok: true,
    path: `${ws.root}/real/inner.txt`,
  });
});

Deno.test("resolveToolPath() refuses dangling symlinks and loops, inside targets too", async () => {
  await using ws = await tempWorkspace();
  await Deno.symlink(`${ws.outside}/not_yet.txt`, `${ws.root}/dangling_out`);
  await Deno.symlink(`${ws.root}/not_yet.txt`, `${ws.root}/dangling_in`);
  await Deno.symlink(`${ws.outside}/no_dir`, `${ws.root}/dangling_dir`);
  await Deno.symlink(`${ws.root}/loop_b`, `${ws.root}/loop_a`);
  await Deno.symlink(`${ws.root}/loop_a`, `${ws.root}/loop_b`);
  const scope = { cwd: ws.root, roots: [ws.root] };
  refusedWith(
    await resolveToolPath(host, scope, "dangling_out"),
    "symlink whose target does not exist",
  );
  refusedWith(
    await resolveToolPath(host, scope, "dangling_in"),
    "symlink whose target does not exist",
  );
  refusedWith(await resolveToolPath(host, scope, "dangling_dir/x/y.txt"), "symlink");
  refusedWith(await resolveToolPath(host, scope, "loop_a"), "symlink");
  refusedWith(await resolveToolPath(host, scope, "loop_a/x"), "symlink");
});

Deno.test("resolveToolPath() accepts any of several roots and refuses with no roots", async () => {
  await using ws = await tempWorkspace();
  const scope = { cwd: ws.root, roots: [ws.root, ws.outside] };
  assert.deepEqual(await resolveToolPath(host, scope, "../outside/secret.txt"), {
    ok: true,
    path: `${ws.outside}/secret.txt`,
  });
  refusedWith(
    await resolveToolPath(host, { cwd: ws.root, roots: [] }, "a.txt"),
    "workspace roots: none",
  );
  refusedWith(
    await resolveToolPath(host, { cwd: ws.root, roots: [`${ws.root}/sub`] }, "a.txt"),
    "outside the workspace",
  );
});

Deno.test("resolveToolPath() refuses empty paths and NUL bytes", async () => {
  await using ws = await tempWorkspace();
  const scope = { cwd: ws.root, roots: [ws.root] };
  refusedWith(await resolveToolPath(host, scope, ""), "empty");
  refusedWith(await resolveToolPath(host, scope, "a\0b"), "NUL");
});

Deno.test("resolveToolPath() paths through a file resolve but stay inside", async () => {
  await using ws = await tempWorkspace();
  await ws.write("file.txt", "x");
  const scope = { cwd: ws.root, roots: [ws.root] };
  assert.deepEqual(await resolveToolPath(host, scope, "file.txt/x"), {
    ok: true,
    path: `${ws.root}/file.txt/x`,
  });
});

Deno.test("resolveToolPath() stops when the signal aborts", async () => {
  await using ws = await tempWorkspace();
  const controller = new AbortController();
  controller.abort();
  const scope = { cwd: ws.root, roots: [ws.root], signal: controller.signal };
  refusedWith(await resolveToolPath(host, scope, "missing/file.txt"), "Cancelled");
});

Deno.test("displayPath() is relative inside cwd and absolute outside", () => {
  assert.equal(displayPath("/work", "/work/src/a.ts"), "src/a.ts");
  assert.equal(displayPath("/work", "/work"), ".");
  assert.equal(displayPath("/work", "/work2/a"), "/work2/a");
  assert.equal(displayPath("/work/src", "/work/a"), "/work/a");
});
