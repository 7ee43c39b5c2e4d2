import assert from "node:assert/strict";
import { editFileTool } from "../../src/tools/edit_file.ts";
import { tempWorkspace } from "./_context.ts";

Deno.test("edit_file replaces one occurrence and shows the whole file as a diff", async () => {
  await using ws = await tempWorkspace();
  const before = "line 1\nconst a = 1;\nline 3\n";
  await ws.write("src/a.ts", before);
  const result = await editFileTool.execute(
    { path: "src/a.ts", old_text: "const a = 1;", new_text: "const a = 2;" },
    ws.context(),
  );
  const path = `${ws.root}/src/a.ts`;
  const after = "line 1\nconst a = 2;\nline 3\n";
  assert.deepEqual(result, {
    content: "Edited src/a.ts: replaced 1 occurrence at line 2",
    isError: false,
    display: [{ type: "diff", path, oldText: before, newText: after }],
    locations: [{ path, line: 2 }],
  });
  assert.equal(await ws.read("src/a.ts"), after);
});

Deno.test("edit_file refuses an ambiguous old_text and says how often it occurs", async () => {
  await using ws = await tempWorkspace();
  await ws.write("a.txt", "x = 1\ny = 2\nx = 1\nx = 1\n");
  const result = await editFileTool.execute(
    { path: "a.txt", old_text: "x = 1", new_text: "x = 3" },
    ws.context(),
  );
  assert.equal(result.isError, true);
  assert.match(result.content, /occurs 3 times \(at lines 1, 3, 4\)/);
  assert.match(result.content, /replace_all/);
  assert.equal(await ws.read("a.txt"), "x = 1\ny = 2\nx = 1\nx = 1\n");
});

Deno.test("edit_file replace_all replaces every occurrence", async () => {
  await using ws = await tempWorkspace();
  await ws.write("a.txt", "aXbXc");
  const result = await editFileTool.execute(
    { path: "a.txt", old_text: "X", new_text: "$&-$1", replace_all: true },
    ws.context(),
  );
  assert.equal(result.content, "Edited a.txt: replaced 2 occurrences (the first at line 1)");
  assert.equal(await ws.read("a.txt"), "a$&-$1b$&-$1c");
});

Deno.test("edit_file reports text that is not found, with a hint about line numbers", async () => {
  await using ws = await tempWorkspace();
  await ws.write("a.txt", "alpha\nbeta\n");
  const plain = await editFileTool.execute(
    { path: "a.txt", old_text: "gamma", new_text: "delta" },
    ws.context(),
  );
  assert.equal(plain.isError, true);
  assert.match(plain.content, /old_text was not found/);
  const numbered = await editFileTool.execute(
    { path: "a.txt", old_text: "     1\talpha", new_text: "x" },
    ws.context(),
  );
  assert.match(numbered.content, /line-number prefixes/);
  assert.equal(await ws.read("a.txt"), "alpha\nbeta\n");
});

Deno.test("edit_file matches \\n against CRLF files and keeps their line ends", async () => {
  await using ws = await tempWorkspace();
  await ws.write("crlf.txt", "a\r\nb\r\nc\r\n");
  const result = await editFileTool.execute(
    { path: "crlf.txt", old_text: "a\nb", new_text: "A\nB" },
    ws.context(),
  );
  assert.equal(result.isError, false);
  assert.equal(await ws.read("crlf.txt"), "A\r\nB\r\nc\r\n");
});

Deno.test("edit_file reports missing files, identical texts and binary files", async () => {
  await using ws = await tempWorkspace();
  await ws.write("bin", new Uint8Array([0, 1, 2]));
  const missing = await editFileTool.execute(
    { path: "nope.ts", old_text: "a", new_text: "b" },
    ws.context(),
  );
  assert.match(missing.content, /does not exist; use write_file/);
  const same = await editFileTool.execute(
    { path: "nope.ts", old_text: "a", new_text: "a" },
    ws.context(),
  );
  assert.match(same.content, /the same/);
  const binary = await editFileTool.execute(
    { path: "bin", old_text: "a", new_text: "b" },
    ws.context(),
  );
  assert.match(binary.content, /binary/);
  assert.ok([missing, same, binary].every((result) => result.isError));
});

Deno.test("edit_file refuses paths outside the workspace and changes nothing", async () => {
  await using ws = await tempWorkspace();
  await Deno.symlink(`${ws.outside}/secret.txt`, `${ws.root}/link.txt`);
  await Deno.symlink(ws.outside, `${ws.root}/out`);
  for (
    const path of [
      "../outside/secret.txt",
      `${ws.outside}/secret.txt`,
      "link.txt",
      "out/secret.txt",
    ]
  ) {
    const result = await editFileTool.execute(
      { path, old_text: "top secret", new_text: "pwned" },
      ws.context(),
    );
    assert.equal(result.isError, true, path);
    assert.match(result.content, /outside the workspace/, path);
  }
  assert.deepEqual(ws.calls, []);
  assert.equal(await Deno.readTextFile(`${ws.outside}/secret.txt`), "top secret\n");
});

Deno.test("edit_file rejects bad input with a message naming the field", async () => {
  await using ws = await tempWorkspace();
  await ws.write("a.txt", "abc");
  const cases: ReadonlyArray<readonly [unknown, RegExp]> = [
    [{ path: "a.txt", new_text: "x" }, /"old_text" is required/],
    [{ path: "a.txt", old_text: "", new_text: "x" }, /"old_text" must not be empty/],
    [{ path: "a.txt", old_text: "a", new_text: 1 }, /"new_text" must be a string/],
    [
      { path: "a.txt", old_text: "a", new_text: "b", replace_all: "yes" },
      /"replace_all" must be a boolean \(got a string\)/,
    ],
    [{ path: "a.txt", oldText: "a", new_text: "b" }, /unknown field "oldText"/],
  ];
  for (const [input, message] of cases) {
    const result = await editFileTool.execute(input, ws.context());
    assert.equal(result.isError, true);
    assert.match(result.content, message);
  }
  assert.equal(await ws.read("a.txt"), "abc");
});

Deno.test("edit_file title and locations never throw", () => {
  assert.equal(editFileTool.title({ path: "src/a.ts" }), "Edit src/a.ts");
  assert.equal(editFileTool.title([1, 2]), "Edit file");
  assert.deepEqual(editFileTool.locations?.({ path: "a.ts" }, "/w"), [{ path: "/w/a.ts" }]);
  assert.deepEqual(editFileTool.locations?.({}, "/w"), []);
});
