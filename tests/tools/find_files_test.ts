import assert from "node:assert/strict";
import { findFilesTool } from "../../src/tools/find_files.ts";
import { type TempWorkspace, tempWorkspace } from "./_context.ts";

async function tree(ws: TempWorkspace): Promise<void> {
  for (
    const file of [
      "README.md",
      "src/a.ts",
      "src/b.tsx",
      "src/lib/c.ts",
      "src/lib/deep/d.ts",
      "tests/a_test.ts",
      "docs/guide.md",
      ".git/config.ts",
      "node_modules/pkg/index.ts",
      "src/node_modules/x.ts",
    ]
  ) await ws.write(file, "x");
}

async function find(ws: TempWorkspace, input: unknown): Promise<string> {
  const result = await findFilesTool.execute(input, ws.context());
  assert.equal(result.isError, false, result.content);
  return result.content;
}

Deno.test("find_files matches globs, sorted, skipping .git and node_modules", async () => {
  await using ws = await tempWorkspace();
  await tree(ws);
  assert.equal(
    await find(ws, { pattern: "**/*.ts" }),
    "src/a.ts\nsrc/lib/c.ts\nsrc/lib/deep/d.ts\ntests/a_test.ts",
  );
  assert.equal(
    await find(ws, { pattern: "*.ts" }),
    "src/a.ts\nsrc/lib/c.ts\nsrc/lib/deep/d.ts\ntests/a_test.ts",
  );
  assert.equal(await find(ws, { pattern: "src/*.{ts,tsx}" }), "src/a.ts\nsrc/b.tsx");
  assert.equal(await find(ws, { pattern: "src/lib/**" }), "src/lib/c.ts\nsrc/lib/deep/d.ts");
  assert.equal(await find(ws, { pattern: "*.md" }), "README.md\ndocs/guide.md");
  assert.equal(await find(ws, { pattern: "??????.md" }), "README.md");
});

Deno.test("find_files enters .git and node_modules when the pattern names them", async () => {
  await using ws = await tempWorkspace();
  await tree(ws);
  assert.equal(
    await find(ws, { pattern: "node_modules/**/*.ts" }),
    "node_modules/pkg/index.ts",
  );
  assert.equal(
    await find(ws, { pattern: "**/node_modules/*.ts" }),
    "src/node_modules/x.ts",
  );
  assert.equal(await find(ws, { pattern: ".git/*" }), ".git/config.ts");
});

Deno.test("find_files searches under path, results relative to it", async () => {
  await using ws = await tempWorkspace();
  await tree(ws);
  assert.equal(await find(ws, { pattern: "**/*.ts", path: "src/lib" }), "c.ts\ndeep/d.ts");
  assert.equal(
    await find(ws, { pattern: "*.ts", path: `${ws.root}/src` }),
    "a.ts\nlib/c.ts\nlib/deep/d.ts",
  );
  assert.equal(
    await find(ws, { pattern: "*.zig" }),
    'No files match "*.zig" in .',
  );
});

Deno.test("find_files lists symlinks but does not enter symlinked directories", async () => {
  await using ws = await tempWorkspace();
  await ws.write("src/a.ts", "x");
  await Deno.symlink(ws.outside, `${ws.root}/out`);
  await Deno.symlink(`${ws.outside}/secret.txt`, `${ws.root}/secret.txt`);
  await Deno.symlink(`${ws.root}/src`, `${ws.root}/loop`);
  assert.equal(
    await find(ws, { pattern: "**/*" }),
    "loop\nout\nsecret.txt\nsrc/a.ts",
  );
  assert.equal(await find(ws, { pattern: "out/**" }), 'No files match "out/**" in .');
});

Deno.test("find_files caps the number of results", async () => {
  await using ws = await tempWorkspace();
  await Deno.mkdir(`${ws.root}/many`);
  for (let index = 0; index < 1003; index++) {
    await Deno.writeTextFile(`${ws.root}/many/${String(index).padStart(4, "0")}.txt`, "");
  }
  const content = await find(ws, { pattern: "**/*.txt" });
  const lines = content.split("\n");
  assert.equal(lines.length, 1001);
  assert.equal(lines[0], "many/0000.txt");
  assert.equal(lines[999], "many/0999.txt");
  assert.equal(
    lines[1000],
    "[showing the first 1000 of 1003 matches; use a narrower pattern or path]",
  );
});

Deno.test("find_files refuses search paths outside the workspace and bad patterns", async () => {
  await using ws = await tempWorkspace();
  await Deno.symlink(ws.outside, `${ws.root}/out`);
  for (const path of ["..", ws.outside, "out", "/"]) {
    const result = await findFilesTool.execute({ pattern: "*", path }, ws.context());
    assert.equal(result.isError, true, path);
    assert.match(result.content, /outside the workspace/, path);
  }
  const dotdot = await findFilesTool.execute({ pattern: "../outside/*" }, ws.context());
  assert.equal(dotdot.isError, true);
  assert.match(dotdot.content, /"pattern".*\.\./);
  const missing = await findFilesTool.execute({ pattern: "*", path: "nope" }, ws.context());
  assert.match(missing.content, /does not exist/);
  const bad = await findFilesTool.execute({ pattern: 7 }, ws.context());
  assert.match(bad.content, /"pattern" must be a string/);
});

Deno.test("find_files title and locations never throw", () => {
  assert.equal(findFilesTool.title({ pattern: "*.ts" }), "Find *.ts");
  assert.equal(findFilesTool.title({ pattern: "*.ts", path: "src" }), "Find *.ts in src");
  assert.equal(findFilesTool.title(7), "Find files");
  assert.deepEqual(findFilesTool.locations?.({ pattern: "*" }, "/w"), [{ path: "/w" }]);
  assert.deepEqual(findFilesTool.locations?.(null, "/w"), [{ path: "/w" }]);
});

Deno.test("find_files walks a deep tree without recursion and matches a pathological glob", async () => {
  await using ws = await tempWorkspace();
  const deep = Array.from({ length: 300 }, () => "d").join("/");
  await ws.write(`${deep}/${"a".repeat(200)}b`, "x");
  await ws.write(`${deep}/${"a".repeat(200)}`, "x");
  assert.equal(await find(ws, { pattern: "**/*a*a*a*a*a*b" }), `${deep}/${"a".repeat(200)}b`);
  assert.equal(
    await find(ws, { pattern: "*a*a*a*a*a*a*a*a*a*a*b" }),
    `${deep}/${"a".repeat(200)}b`,
  );
});

Deno.test("find_files stops walking when the signal aborts", async () => {
  await using ws = await tempWorkspace();
  for (let index = 0; index < 20; index++) await ws.write(`dir${index}/sub/file.txt`, "x");
  const controller = new AbortController();
  const base = ws.context({ signal: controller.signal });
  let listed = 0;
  const files = new Proxy(base.files, {
    get(target, property, receiver): unknown {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      if (property !== "readDir") return value.bind(target);
      return (...args: unknown[]): unknown => {
        if (++listed === 3) controller.abort();
        return value.apply(target, args);
      };
    },
  });
  const result = await findFilesTool.execute({ pattern: "**/*.txt" }, { ...base, files });
  assert.equal(result.isError, true);
  assert.match(result.content, /^Cancelled/);
  assert.equal(listed, 3);
});
