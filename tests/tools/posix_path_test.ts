import assert from "node:assert/strict";
import {
  basenamePath,
  dirnamePath,
  isInsidePath,
  joinPath,
  normalizePath,
  relativePath,
} from "../../src/tools/posix_path.ts";

Deno.test("normalizePath() collapses slashes, dots and parent segments", () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["/", "/"],
    ["", "."],
    [".", "."],
    ["//a///b//", "/a/b"],
    ["/a/./b/.", "/a/b"],
    ["/a/b/../c", "/a/c"],
    ["/a/b/../../..", "/"],
    ["/../../etc/passwd", "/etc/passwd"],
    ["a/../..", ".."],
    ["../a/./b/..", "../a"],
    ["a/b/", "a/b"],
    ["./a", "a"],
    ["/a/..b/c..", "/a/..b/c.."],
    ["/a/.../b", "/a/.../b"],
  ];
  for (const [input, expected] of cases) assert.equal(normalizePath(input), expected, input);
});

Deno.test("joinPath() joins and normalizes; an absolute part restarts", () => {
  assert.equal(joinPath("/work", "src", "a.ts"), "/work/src/a.ts");
  assert.equal(joinPath("/work", "../../x"), "/x");
  assert.equal(joinPath("/work", "/etc", "passwd"), "/etc/passwd");
  assert.equal(joinPath("/work", ""), "/work");
  assert.equal(joinPath("a", "b/../c"), "a/c");
  assert.equal(joinPath(), ".");
});

Deno.test("dirnamePath() and basenamePath() split the last segment", () => {
  assert.equal(dirnamePath("/work/src/a.ts"), "/work/src");
  assert.equal(dirnamePath("/work/"), "/");
  assert.equal(dirnamePath("/"), "/");
  assert.equal(dirnamePath("a.ts"), ".");
  assert.equal(dirnamePath("a/b"), "a");
  assert.equal(dirnamePath(".."), "../..");
  assert.equal(basenamePath("/work/src/a.ts"), "a.ts");
  assert.equal(basenamePath("/work/src/"), "src");
  assert.equal(basenamePath("/"), "/");
  assert.equal(basenamePath("a"), "a");
});

Deno.test("isInsidePath() compares whole segments", () => {
  assert.equal(isInsidePath("/work", "/work"), true);
  assert.equal(isInsidePath("/work", "/work/a/b"), true);
  assert.equal(isInsidePath("/work/", "/work/a"), true);
  assert.equal(isInsidePath("/work", "/work2"), false);
  assert.equal(isInsidePath("/work", "/workspace/a"), false);
  assert.equal(isInsidePath("/work", "/work/../etc"), false);
  assert.equal(isInsidePath("/work", "/"), false);
  assert.equal(isInsidePath("/", "/anything"), true);
});

Deno.test("relativePath() walks up and down between absolute paths", () => {
  assert.equal(relativePath("/work", "/work/src/a.ts"), "src/a.ts");
  assert.equal(relativePath("/work", "/work"), ".");
  assert.equal(relativePath("/work/src", "/work/tests/a"), "../tests/a");
  assert.equal(relativePath("/work", "/"), "..");
  assert.equal(relativePath("/", "/a/b"), "a/b");
  assert.equal(relativePath("/work", "/work2/a"), "../work2/a");
});
