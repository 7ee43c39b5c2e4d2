import assert from "node:assert/strict";
import { searchTextTool } from "../../src/tools/search_text.ts";
import { type TempWorkspace, tempWorkspace } from "./_context.ts";

async function search(ws: TempWorkspace, input: unknown): Promise<string> {
  const result = await searchTextTool.execute(input, ws.context());
  assert.equal(result.isError, false, result.content);
  return result.content;
}

Deno.test("search_text prints path:line: text for matches in walk order", async () => {
  await using ws = await tempWorkspace();
  await ws.write("src/a.ts", "const x = 1;\n// TODO: one\nconst y = 2;\n");
  await ws.write("src/sub/b.ts", "// TODO: two\r\n");
  await ws.write("README.md", "TODO: docs\n");
  const result = await searchTextTool.execute({ pattern: "TODO: \\w+" }, ws.context());
  assert.deepEqual(result.content.split("\n"), [
    "README.md:1: TODO: docs",
    "src/a.ts:2: // TODO: one",
    "src/sub/b.ts:1: // TODO: two",
  ]);
  assert.deepEqual(result.locations, [
    { path: `${ws.root}/README.md`, line: 1 },
    { path: `${ws.root}/src/a.ts`, line: 2 },
    { path: `${ws.root}/src/sub/b.ts`, line: 1 },
  ]);
});

Deno.test("search_text filters with include and searches a single file", async () => {
  await using ws = await tempWorkspace();
  await ws.write("src/a.ts", "needle\n");
  await ws.write("src/a.md", "needle\n");
  await ws.write("lib/c.ts", "needle\n");
  assert.equal(
    await search(ws, { pattern: "needle", include: "*.ts" }),
    "lib/c.ts:1: needle\nsrc/a.ts:1: needle",
  );
  assert.equal(
    await search(ws, { pattern: "needle", include: "src/*" }),
    "src/a.md:1: needle\nsrc/a.ts:1: needle",
  );
  assert.equal(
    await search(ws, { pattern: "needle", path: "src", include: "*.md" }),
    "src/a.md:1: needle",
  );
  assert.equal(await search(ws, { pattern: "need", path: "lib/c.ts" }), "lib/c.ts:1: needle");
});

Deno.test("search_text skips binary, large, .git, node_modules and symlinked files", async () => {
  await using ws = await tempWorkspace();
  await ws.write("text.txt", "secret here\n");
  await ws.write("bin.dat", new Uint8Array([0x73, 0x65, 0x63, 0x72, 0x65, 0x74, 0x00]));
  await ws.write("big.log", "secret\n" + "x".repeat(3 * 1024 * 1024));
  await ws.write(".git/HEAD", "secret\n");
  await ws.write("node_modules/p/index.js", "secret\n");
  await Deno.symlink(`${ws.outside}/secret.txt`, `${ws.root}/link.txt`);
  await Deno.symlink(ws.outside, `${ws.root}/out`);
  const content = await search(ws, { pattern: "secret" });
  assert.equal(
    content,
    "text.txt:1: secret here\n[skipped 1 binary file, 1 file over 2 MiB]",
  );
  assert.ok(!ws.calls.some((call) => call.includes(ws.outside)));
  assert.equal(
    await search(ws, { pattern: "secret", include: "node_modules/**" }),
    "node_modules/p/index.js:1: secret",
  );
});

Deno.test("search_text stops after 500 matches and says so", async () => {
  await using ws = await tempWorkspace();
  await ws.write("many.txt", Array.from({ length: 600 }, (_, index) => `hit ${index}`).join("\n"));
  const lines = (await search(ws, { pattern: "^hit" })).split("\n");
  assert.equal(lines.length, 501);
  assert.equal(lines[499], "many.txt:500: hit 499");
  assert.equal(lines[500], "[stopped after 500 matches; narrow the pattern, path or include]");
});

Deno.test("search_text cuts long matching lines", async () => {
  await using ws = await tempWorkspace();
  await ws.write("min.js", `${"a".repeat(1000)}needle`);
  const content = await search(ws, { pattern: "needle" });
  assert.equal(content, `min.js:1: ${"a".repeat(299)}…`);
});

Deno.test("search_text reports no matches and invalid regexes", async () => {
  await using ws = await tempWorkspace();
  await ws.write("a.txt", "hello\n");
  assert.equal(
    await search(ws, { pattern: "absent" }),
    'No matches for "absent" in . (1 file searched)',
  );
  const invalid = await searchTextTool.execute({ pattern: "(unclosed" }, ws.context());
  assert.equal(invalid.isError, true);
  assert.match(invalid.content, /"pattern" is not a valid JavaScript regular expression/);
  const badInclude = await searchTextTool.execute({ pattern: "x", include: "../*" }, ws.context());
  assert.match(badInclude.content, /"include"/);
  const badType = await searchTextTool.execute({ pattern: "x", path: 1 }, ws.context());
  assert.match(badType.content, /"path" must be a string/);
});

Deno.test("search_text refuses paths outside the workspace and reads nothing there", async () => {
  await using ws = await tempWorkspace();
  await Deno.symlink(`${ws.outside}/secret.txt`, `${ws.root}/link.txt`);
  await Deno.symlink(ws.outside, `${ws.root}/out`);
  for (const path of ["..", "../outside/secret.txt", ws.outside, "out", "link.txt", "/etc"]) {
    const result = await searchTextTool.execute({ pattern: "secret", path }, ws.context());
    assert.equal(result.isError, true, path);
    assert.match(result.content, /outside the workspace/, path);
  }
  assert.deepEqual(ws.calls, []);
});

Deno.test("search_text title and locations never throw", () => {
  assert.equal(searchTextTool.title({ pattern: "TODO" }), "Search TODO");
  assert.equal(searchTextTool.title({ pattern: "TODO", path: "src" }), "Search TODO in src");
  assert.equal(searchTextTool.title({ pattern: "x".repeat(100) }).length, "Search ".length + 60);
  assert.equal(searchTextTool.title(undefined), "Search text");
  assert.deepEqual(searchTextTool.locations?.({ path: "src" }, "/w"), [{ path: "/w/src" }]);
});
