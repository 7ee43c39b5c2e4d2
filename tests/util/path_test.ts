import assert from "node:assert/strict";
import { isAbsolutePath } from "../../src/util/path.ts";

Deno.test("isAbsolutePath() accepts POSIX absolute paths", () => {
  for (const path of ["/", "/tmp", "/home/me/project", "//double"]) {
    assert.equal(isAbsolutePath(path), true, path);
  }
});

Deno.test("isAbsolutePath() accepts Windows drive and UNC paths", () => {
  for (const path of ["C:\\", "c:\\Users\\me", "D:/work", "z:/", "\\\\server\\share\\dir"]) {
    assert.equal(isAbsolutePath(path), true, path);
  }
});

Deno.test("isAbsolutePath() rejects relative paths", () => {
  for (
    const path of [
      "",
      ".",
      "..",
      "tmp",
      "./tmp",
      "../tmp",
      "a/b",
      "~/project",
      "C:",
      "C:relative",
      "1:\\x",
      "\\single",
      "file:///tmp",
    ]
  ) {
    assert.equal(isAbsolutePath(path), false, JSON.stringify(path));
  }
});
