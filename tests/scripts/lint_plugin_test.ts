import assert from "node:assert/strict";
import plugin, { isSized, MAX_FUNCTION_LINES } from "../../scripts/lint_plugin.ts";

/** The repository root, where the plugin looks for src/, bench/ and torture/. */
const ROOT = decodeURIComponent(new URL("../../", import.meta.url).pathname);

/** A function declaration spanning `lines` lines. */
function functionOf(lines: number): string {
  const body = Array.from({ length: lines - 2 }, (_, i) => `  const v${i} = ${i};`);
  return ["export function f(): void {", ...body, "}", ""].join("\n");
}

/** The messages `house/function-size` reports for `source` in a file at `path`. */
function reports(path: string, source: string): string[] {
  return Deno.lint.runPlugin(plugin, path, source).map((diagnostic) => diagnostic.message);
}

Deno.test("house/function-size reports a function one line over the limit in src/, bench/ and torture/", () => {
  const long = functionOf(MAX_FUNCTION_LINES + 1);
  for (const path of ["src/a.ts", "bench/b.ts", "torture/c.ts"].map((path) => ROOT + path)) {
    assert.deepEqual(reports(path, long), [
      `This function spans ${MAX_FUNCTION_LINES + 1} lines; the most is ${MAX_FUNCTION_LINES}.`,
    ]);
  }
});

Deno.test("house/function-size passes a function at the limit, and leaves tests and scripts alone", () => {
  assert.deepEqual(reports(`${ROOT}src/a.ts`, functionOf(MAX_FUNCTION_LINES)), []);
  const long = functionOf(MAX_FUNCTION_LINES + 40);
  assert.deepEqual(reports(`${ROOT}tests/src/a_test.ts`, long), []);
  assert.deepEqual(reports(`${ROOT}scripts/build.ts`, long), []);
});

Deno.test("house/function-size counts methods and arrow functions too", () => {
  const body = Array.from({ length: MAX_FUNCTION_LINES }, (_, i) => `    ${i};`).join("\n");
  const source =
    `class C {\n  m(): void {\n${body}\n  }\n}\nconst g = (): void => {\n${body}\n};\n`;
  assert.equal(reports(`${ROOT}src/a.ts`, source).length, 2);
});

Deno.test("isSized() reads the path below the repository's root, not a src/ above it", () => {
  assert.equal(isSized("/home/me/src/repo/scripts/build.ts", "/home/me/src/repo/"), false);
  assert.equal(isSized("/home/me/src/repo/src/a.ts", "/home/me/src/repo/"), true);
  assert.equal(isSized("/elsewhere/src/a.ts", "/home/me/src/repo/"), false);
});
