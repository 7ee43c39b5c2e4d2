import assert from "node:assert/strict";
import {
  READ_FILE_DEFAULT_LINES,
  READ_FILE_MAX_OUTPUT_BYTES,
  readFileTool,
} from "../../src/tools/read_file.ts";
import { tempWorkspace } from "./_context.ts";

Deno.test("read_file returns lines numbered like cat -n, with a location", async () => {
  await using ws = await tempWorkspace();
  await ws.write("src/a.ts", "const a = 1;\n\tindented\n\nlast");
  const result = await readFileTool.execute({ path: "src/a.ts" }, ws.context());
  assert.deepEqual(result, {
    content: "     1\tconst a = 1;\n     2\t\tindented\n     3\t\n     4\tlast",
    isError: false,
    locations: [{ path: `${ws.root}/src/a.ts`, line: 1 }],
  });
});

Deno.test("read_file honours offset and limit and says where to continue", async () => {
  await using ws = await tempWorkspace();
  const lines = Array.from({ length: 10 }, (_, index) => `line ${index + 1}`);
  await ws.write("a.txt", lines.join("\n") + "\n");
  const result = await readFileTool.execute({ path: "a.txt", offset: 3, limit: 2 }, ws.context());
  assert.equal(
    result.content,
    "     3\tline 3\n     4\tline 4\n[showing lines 3-4 of 10; use offset=5 to read more]",
  );
  assert.deepEqual(result.locations, [{ path: `${ws.root}/a.txt`, line: 3 }]);
  const tail = await readFileTool.execute({ path: "a.txt", offset: 9, limit: 5 }, ws.context());
  assert.equal(tail.content, "     9\tline 9\n    10\tline 10");
  const past = await readFileTool.execute({ path: "a.txt", offset: 11 }, ws.context());
  assert.equal(past.isError, true);
  assert.match(past.content, /only 10 lines/);
});

Deno.test("read_file returns at most 2000 lines by default", async () => {
  await using ws = await tempWorkspace();
  await ws.write("big.txt", Array.from({ length: 2500 }, (_, index) => `${index + 1}`).join("\n"));
  const result = await readFileTool.execute({ path: "big.txt" }, ws.context());
  const lines = result.content.split("\n");
  assert.equal(lines.length, READ_FILE_DEFAULT_LINES + 1);
  assert.equal(lines[1999], "  2000\t2000");
  assert.equal(lines[2000], "[showing lines 1-2000 of 2500; use offset=2001 to read more]");
});

Deno.test("read_file caps output at 100 KB and cuts very long lines", async () => {
  await using ws = await tempWorkspace();
  const line = "x".repeat(1000);
  await ws.write("wide.txt", Array.from({ length: 500 }, () => line).join("\n"));
  const result = await readFileTool.execute({ path: "wide.txt" }, ws.context());
  assert.ok(new TextEncoder().encode(result.content).length <= READ_FILE_MAX_OUTPUT_BYTES + 200);
  assert.match(
    result.content,
    /\[output capped at 100 KB: showing lines 1-\d+ of 500; use offset=\d+/,
  );
  await ws.write("long.txt", "y".repeat(5000) + "\nshort");
  const long = await readFileTool.execute({ path: "long.txt" }, ws.context());
  assert.match(long.content, /^ {5}1\ty{2000}… \[line cut: 5000 characters\]\n {5}2\tshort\n/);
  assert.match(long.content, /\[1 line longer than 2000 characters cut\]$/);
});

Deno.test("read_file strips CR from CRLF lines", async () => {
  await using ws = await tempWorkspace();
  await ws.write("crlf.txt", "a\r\nb\r\n");
  const result = await readFileTool.execute({ path: "crlf.txt" }, ws.context());
  assert.equal(result.content, "     1\ta\n     2\tb");
});

Deno.test("read_file reports empty, missing, directory and binary files", async () => {
  await using ws = await tempWorkspace();
  await ws.write("empty.txt", "");
  await ws.write("bin.dat", new Uint8Array([0x89, 0x50, 0x00, 0x01]));
  await ws.write("dir/x.txt", "x");
  const empty = await readFileTool.execute({ path: "empty.txt" }, ws.context());
  assert.deepEqual([empty.isError, empty.content], [false, "empty.txt is empty"]);
  const missing = await readFileTool.execute({ path: "nope.txt" }, ws.context());
  assert.deepEqual([missing.isError, missing.content], [
    true,
    'Cannot read "nope.txt": it does not exist',
  ]);
  const dir = await readFileTool.execute({ path: "dir" }, ws.context());
  assert.equal(dir.isError, true);
  assert.match(dir.content, /is a directory; use list_directory/);
  const binary = await readFileTool.execute({ path: "bin.dat" }, ws.context());
  assert.equal(binary.isError, true);
  assert.match(binary.content, /binary/);
});

Deno.test("read_file refuses paths outside the workspace and reads nothing", async () => {
  await using ws = await tempWorkspace();
  await Deno.symlink(`${ws.outside}/secret.txt`, `${ws.root}/link.txt`);
  await Deno.symlink(ws.outside, `${ws.root}/out`);
  for (
    const path of [
      "../outside/secret.txt",
      `${ws.outside}/secret.txt`,
      "link.txt",
      "out/secret.txt",
      "/etc/passwd",
    ]
  ) {
    const result = await readFileTool.execute({ path }, ws.context());
    assert.equal(result.isError, true, path);
    assert.match(result.content, /outside the workspace/, path);
    assert.ok(!result.content.includes("top secret"), path);
  }
  assert.deepEqual(ws.calls, []);
});

Deno.test("read_file follows a symlink that stays inside the workspace", async () => {
  await using ws = await tempWorkspace();
  await ws.write("real.txt", "hello");
  await Deno.symlink("real.txt", `${ws.root}/alias.txt`);
  const result = await readFileTool.execute({ path: "alias.txt" }, ws.context());
  assert.equal(result.content, "     1\thello");
  assert.deepEqual(ws.calls, [
    `workspace.readTextFile ${ws.root}/real.txt`,
    `host.readTextFile ${ws.root}/real.txt`,
  ]);
});

Deno.test("read_file rejects bad input with a message naming the field", async () => {
  await using ws = await tempWorkspace();
  const cases: ReadonlyArray<readonly [unknown, RegExp]> = [
    [undefined, /expected an object/],
    ["a.txt", /expected an object with the fields path, offset, limit \(got a string\)/],
    [[], /got an array/],
    [{}, /"path" is required/],
    [{ path: 3 }, /"path" must be a string \(got a number\)/],
    [{ path: "" }, /"path" must not be empty/],
    [{ path: "a", offset: 0 }, /"offset" must be at least 1 \(got 0\)/],
    [{ path: "a", offset: "3" }, /"offset" must be an integer \(got a string\)/],
    [{ path: "a", limit: 1.5 }, /"limit" must be an integer \(got 1.5\)/],
    [{ path: "a", lines: 3 }, /unknown field "lines" \(expected: path, offset, limit\)/],
  ];
  for (const [input, message] of cases) {
    const result = await readFileTool.execute(input, ws.context());
    assert.equal(result.isError, true, JSON.stringify(input));
    assert.match(result.content, message);
  }
  assert.deepEqual(ws.calls, []);
  await ws.write("a", "x");
  const nulls = await readFileTool.execute({ path: "a", offset: null, limit: null }, ws.context());
  assert.equal(nulls.content, "     1\tx");
});

Deno.test("read_file returns a cancelled result when the signal is aborted", async () => {
  await using ws = await tempWorkspace();
  await ws.write("a.txt", "x");
  const controller = new AbortController();
  controller.abort();
  const result = await readFileTool.execute(
    { path: "a.txt" },
    ws.context({ signal: controller.signal }),
  );
  assert.equal(result.isError, true);
  assert.match(result.content, /Cancelled/);
  assert.deepEqual(ws.calls, []);
});

Deno.test("read_file title and locations never throw", () => {
  assert.equal(readFileTool.title({ path: "src/a.ts" }), "Read src/a.ts");
  assert.equal(readFileTool.title(null), "Read file");
  assert.equal(readFileTool.title({ path: 5 }), "Read file");
  assert.deepEqual(readFileTool.locations?.({ path: "src/a.ts", offset: 4 }, "/w"), [
    { path: "/w/src/a.ts", line: 4 },
  ]);
  assert.deepEqual(readFileTool.locations?.({ path: "/abs/x" }, "/w"), [{ path: "/abs/x" }]);
  assert.deepEqual(readFileTool.locations?.("junk", "/w"), []);
});

Deno.test("read_file refuses FIFOs and other non-regular files instead of blocking on them", async () => {
  await using ws = await tempWorkspace();
  const made = await new Deno.Command("mkfifo", { args: [`${ws.root}/pipe`] }).output();
  assert.equal(made.success, true);
  const result = await readFileTool.execute({ path: "pipe" }, ws.context());
  assert.deepEqual(result, {
    content: 'Cannot read "pipe": it is not a regular file',
    isError: true,
  });
});

Deno.test("read_file refuses a huge (sparse) file without reading it", async () => {
  await using ws = await tempWorkspace();
  const path = await ws.write("huge.bin", "");
  await Deno.truncate(path, 8 * 1024 * 1024 * 1024);
  const result = await readFileTool.execute({ path: "huge.bin" }, ws.context());
  assert.equal(result.isError, true);
  assert.match(
    result.content,
    /^Cannot read "huge\.bin": it has 8589934592 bytes, more than the 16 MiB/,
  );
  assert.deepEqual(ws.calls, []);
});

// Splitting a file of millions of lines at once blocked the event loop; lines are now found
// and counted in slices, with timers and other sessions running in between.
Deno.test("read_file lets the event loop run while it scans a file of many lines", async () => {
  await using ws = await tempWorkspace();
  await ws.write("many.txt", "x\n".repeat(4_000_000));
  const base = ws.context();
  let ticked = false;
  const workspace = {
    ...base.workspace,
    async readTextFile(path: string, options: { signal: AbortSignal }): Promise<string> {
      const text = await base.workspace.readTextFile(path, options);
      setTimeout(() => ticked = true, 0);
      return text;
    },
  };
  const result = await readFileTool.execute(
    { path: "many.txt", offset: 3_999_999, limit: 5 },
    { ...base, workspace },
  );
  assert.equal(ticked, true, "a timer ran while the file was scanned");
  assert.equal(
    result.content,
    "3999999\tx\n4000000\tx",
  );
});
