import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import {
  bunPlatformPackages,
  denoPlatformPackages,
  findBun,
  findDeno,
} from "./runtime_binaries.ts";
import { ROOT } from "./runtimes.ts";
import { tempDir } from "./temp_dir.ts";

/** A file of `bytes` bytes (a "binary" from 1 MB, a stub below). */
const file = async (path: string, bytes: number): Promise<void> => {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, new Uint8Array(bytes), { mode: 0o755 });
};

const BINARY = 2_000_000;
const STUB = 450;
const deno = denoPlatformPackages()[0]!;
const bun = bunPlatformPackages()[0]!;

Deno.test("platform package names follow the npm packages' naming", () => {
  assert.deepEqual(denoPlatformPackages("linux", "x64"), ["linux-x64-glibc"]);
  assert.deepEqual(denoPlatformPackages("darwin", "arm64"), ["darwin-arm64"]);
  assert.equal(bunPlatformPackages("linux", "x64")[0], "bun-linux-x64");
  assert.equal(bunPlatformPackages("darwin", "arm64")[0], "bun-darwin-aarch64");
  assert.equal(bunPlatformPackages("win32", "x64")[0], "bun-windows-x64");
});

Deno.test("npm layout with install scripts skipped: the platform packages' binaries", async () => {
  await using root = await tempDir("acp-harness-binaries-");
  const modules = join(root.path, "node_modules");
  await file(join(modules, "@deno", deno, "deno"), BINARY);
  await file(join(modules, "@oven", bun, "bin", "bun"), BINARY);
  await file(join(modules, "bun", "bin", "bun.exe"), STUB);
  assert.equal(findDeno(root.path), join(modules, "@deno", deno, "deno"));
  assert.equal(findBun(root.path), join(modules, "@oven", bun, "bin", "bun"));
});

Deno.test("npm layout after install scripts: Bun's binary moved into the bun package", async () => {
  await using root = await tempDir("acp-harness-binaries-");
  const modules = join(root.path, "node_modules");
  await mkdir(join(modules, "@oven", bun, "bin"), { recursive: true });
  await file(join(modules, "bun", "bin", "bun.exe"), BINARY);
  assert.equal(findBun(root.path), join(modules, "bun", "bin", "bun.exe"));
});

Deno.test("Deno's node_modules layout: the binaries under node_modules/.deno", async () => {
  await using root = await tempDir("acp-harness-binaries-");
  const modules = join(root.path, "node_modules");
  const denoBin = join(modules, ".deno", `@deno+${deno}@2.9.6`, "node_modules", "@deno", deno);
  const bunBin = join(modules, ".deno", `@oven+${bun}@1.4.5`, "node_modules", "@oven", bun);
  await file(join(denoBin, "deno"), BINARY);
  await file(join(bunBin, "bin", "bun"), BINARY);
  await file(join(modules, "bun", "bin", "bun.exe"), STUB);
  assert.equal(findDeno(root.path), join(denoBin, "deno"));
  assert.equal(findBun(root.path), join(bunBin, "bin", "bun"));
});

Deno.test("no binary anywhere: node_modules/.bin", async () => {
  await using root = await tempDir("acp-harness-binaries-");
  assert.equal(findDeno(root.path), join(root.path, "node_modules", ".bin", "deno"));
  assert.equal(findBun(root.path), join(root.path, "node_modules", ".bin", "bun"));
});

Deno.test("the project's binaries run", async () => {
  for (const [path, expected] of [[findDeno(ROOT), /^deno \d/], [findBun(ROOT), /^\d+\.\d+/]]) {
    const { success, stdout } = await new Deno.Command(path as string, { args: ["--version"] })
      .output();
    assert.ok(success, `${path} --version`);
    assert.match(new TextDecoder().decode(stdout), expected as RegExp);
  }
});
