import assert from "node:assert/strict";
import { writeFileTool } from "../../src/tools/write_file.ts";
import { tempWorkspace } from "./_context.ts";

Deno.test("write_file creates a file and its parents, with a new-file diff", async () => {
  await using ws = await tempWorkspace();
  const result = await writeFileTool.execute(
    { path: "a/b/new.ts", content: "one\ntwo\n" },
    ws.context(),
  );
  const path = `${ws.root}/a/b/new.ts`;
  assert.deepEqual(result, {
    content: "Created a/b/new.ts (2 lines, 8 bytes)",
    isError: false,
    display: [{ type: "diff", path, oldText: null, newText: "one\ntwo\n" }],
    locations: [{ path }],
  });
  assert.equal(await ws.read("a/b/new.ts"), "one\ntwo\n");
});

Deno.test("write_file replaces a file and shows the old text in the diff", async () => {
  await using ws = await tempWorkspace();
  await ws.write("a.txt", "old");
  const result = await writeFileTool.execute({ path: "a.txt", content: "new €" }, ws.context());
  assert.equal(result.isError, false);
  assert.equal(result.content, "Wrote a.txt (1 line, 7 bytes)");
  assert.deepEqual(result.display, [
    { type: "diff", path: `${ws.root}/a.txt`, oldText: "old", newText: "new €" },
  ]);
  assert.equal(await ws.read("a.txt"), "new €");
});

Deno.test("write_file writes through an inside symlink to its target", async () => {
  await using ws = await tempWorkspace();
  await ws.write("real.txt", "old");
  await Deno.symlink("real.txt", `${ws.root}/alias.txt`);
  const result = await writeFileTool.execute({ path: "alias.txt", content: "new" }, ws.context());
  assert.equal(result.isError, false);
  assert.equal(await ws.read("real.txt"), "new");
  assert.equal((await Deno.lstat(`${ws.root}/alias.txt`)).isSymlink, true);
});

Deno.test("write_file with unchanged content writes nothing", async () => {
  await using ws = await tempWorkspace();
  await ws.write("a.txt", "same");
  const result = await writeFileTool.execute({ path: "a.txt", content: "same" }, ws.context());
  assert.equal(result.isError, false);
  assert.match(result.content, /already has this content/);
  assert.ok(!ws.calls.some((call) => call.includes("write")));
});

Deno.test("write_file refuses a directory", async () => {
  await using ws = await tempWorkspace();
  await Deno.mkdir(`${ws.root}/dir`);
  const result = await writeFileTool.execute({ path: "dir", content: "x" }, ws.context());
  assert.deepEqual(result, { content: 'Cannot write "dir": it is a directory', isError: true });
});

Deno.test("write_file refuses paths outside the workspace and writes nothing", async () => {
  await using ws = await tempWorkspace();
  await Deno.symlink(`${ws.outside}/secret.txt`, `${ws.root}/link.txt`);
  await Deno.symlink(ws.outside, `${ws.root}/out`);
  await Deno.symlink(`${ws.outside}/created.txt`, `${ws.root}/dangling.txt`);
  const targets = [
    "../outside/secret.txt",
    `${ws.outside}/secret.txt`,
    "link.txt",
    "out/secret.txt",
    "out/new/deep.txt",
    "../outside/new.txt",
    "dangling.txt",
  ];
  for (const path of targets) {
    const result = await writeFileTool.execute({ path, content: "pwned" }, ws.context());
    assert.equal(result.isError, true, path);
    assert.match(result.content, /outside the workspace|symlink whose target does not exist/, path);
  }
  assert.deepEqual(ws.calls, []);
  assert.equal(await Deno.readTextFile(`${ws.outside}/secret.txt`), "top secret\n");
  const names = [];
  for await (const entry of Deno.readDir(ws.outside)) names.push(entry.name);
  assert.deepEqual(names, ["secret.txt"]);
});

Deno.test("write_file rejects bad input with a message naming the field", async () => {
  await using ws = await tempWorkspace();
  const cases: ReadonlyArray<readonly [unknown, RegExp]> = [
    [{ path: "a.txt" }, /"content" is required/],
    [{ path: "a.txt", content: 42 }, /"content" must be a string \(got a number\)/],
    [{ path: ["a"], content: "x" }, /"path" must be a string \(got an array\)/],
    [{ path: "a.txt", content: "x", mode: "0644" }, /unknown field "mode"/],
    [null, /expected an object/],
  ];
  for (const [input, message] of cases) {
    const result = await writeFileTool.execute(input, ws.context());
    assert.equal(result.isError, true);
    assert.match(result.content, message);
  }
  assert.deepEqual(ws.calls, []);
});

Deno.test("write_file with an aborted signal writes nothing", async () => {
  await using ws = await tempWorkspace();
  const controller = new AbortController();
  controller.abort();
  const result = await writeFileTool.execute(
    { path: "a.txt", content: "x" },
    ws.context({ signal: controller.signal }),
  );
  assert.equal(result.isError, true);
  await assert.rejects(Deno.stat(`${ws.root}/a.txt`));
});

Deno.test("write_file title and locations never throw", () => {
  assert.equal(writeFileTool.title({ path: "a.ts", content: "" }), "Write a.ts");
  assert.equal(writeFileTool.title(undefined), "Write file");
  assert.deepEqual(writeFileTool.locations?.({ path: "../x" }, "/w/s"), [{ path: "/w/x" }]);
  assert.deepEqual(writeFileTool.locations?.(42, "/w"), []);
});
