import assert from "node:assert/strict";
import { listDirectoryTool } from "../../src/tools/list_directory.ts";
import { tempWorkspace } from "./_context.ts";

Deno.test("list_directory lists sorted entries, directories and symlinks marked", async () => {
  await using ws = await tempWorkspace();
  await ws.write("b.txt", "b");
  await ws.write("a/x.txt", "x");
  await ws.write("C.md", "c");
  await ws.write(".hidden", "h");
  await Deno.symlink(`${ws.root}/a`, `${ws.root}/dir_link`);
  await Deno.symlink("b.txt", `${ws.root}/file_link`);
  await Deno.symlink("missing", `${ws.root}/broken`);
  const result = await listDirectoryTool.execute({ path: "." }, ws.context());
  assert.deepEqual(result, {
    content: [
      ".hidden",
      "C.md",
      "a/",
      "b.txt",
      "broken (broken symlink)",
      "dir_link/ (symlink)",
      "file_link (symlink)",
    ].join("\n"),
    isError: false,
    locations: [{ path: ws.root }],
  });
  assert.deepEqual(ws.calls, []);
});

Deno.test("list_directory caps the number of entries", async () => {
  await using ws = await tempWorkspace();
  for (let index = 0; index < 1005; index++) {
    await Deno.writeTextFile(`${ws.root}/f${String(index).padStart(4, "0")}`, "");
  }
  const result = await listDirectoryTool.execute({ path: ws.root }, ws.context());
  const lines = result.content.split("\n");
  assert.equal(lines.length, 1001);
  assert.equal(lines[999], "f0999");
  assert.equal(lines[1000], "[showing the first 1000 of 1005 entries; use find_files to search]");
});

Deno.test("list_directory reports empty, missing and non-directory paths", async () => {
  await using ws = await tempWorkspace();
  await Deno.mkdir(`${ws.root}/empty`);
  await ws.write("file.txt", "x");
  const empty = await listDirectoryTool.execute({ path: "empty" }, ws.context());
  assert.deepEqual([empty.isError, empty.content], [false, "empty is empty"]);
  const missing = await listDirectoryTool.execute({ path: "nope" }, ws.context());
  assert.deepEqual([missing.isError, missing.content], [
    true,
    'Cannot list "nope": it does not exist',
  ]);
  const file = await listDirectoryTool.execute({ path: "file.txt" }, ws.context());
  assert.equal(file.isError, true);
  assert.match(file.content, /not a directory/);
});

Deno.test("list_directory refuses directories outside the workspace", async () => {
  await using ws = await tempWorkspace();
  await Deno.symlink(ws.outside, `${ws.root}/out`);
  for (const path of ["..", "../outside", ws.outside, "out", "/"]) {
    const result = await listDirectoryTool.execute({ path }, ws.context());
    assert.equal(result.isError, true, path);
    assert.match(result.content, /outside the workspace/, path);
    assert.ok(!result.content.includes("secret.txt"));
  }
});

Deno.test("list_directory rejects bad input and never throws in title", async () => {
  await using ws = await tempWorkspace();
  const missing = await listDirectoryTool.execute({}, ws.context());
  assert.match(missing.content, /"path" is required/);
  const wrong = await listDirectoryTool.execute({ path: true }, ws.context());
  assert.match(wrong.content, /"path" must be a string \(got a boolean\)/);
  assert.equal(listDirectoryTool.title({ path: "src" }), "List src");
  assert.equal(listDirectoryTool.title("src"), "List directory");
});

Deno.test("list_directory sorts a large directory and shows the first entries", async () => {
  await using ws = await tempWorkspace();
  const names = Array.from({ length: 1300 }, (_, index) => `f${(index * 7919) % 1300}`);
  await Promise.all(names.map((name) => ws.write(`big/${name}`, "")));
  const result = await listDirectoryTool.execute({ path: "big" }, ws.context());
  assert.equal(result.isError, false, result.content);
  const lines = result.content.split("\n");
  assert.deepEqual(lines.slice(0, -1), [...names].sort().slice(0, 1000));
  assert.equal(lines.at(-1), "[showing the first 1000 of 1300 entries; use find_files to search]");
});
