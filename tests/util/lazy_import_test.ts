/**
 * Keeps the lazy imports of `src/` declared: every `import("./x" + ".ts")` (the spelling that keeps
 * a module out of Deno's start-up graph, explained in `src/util/lazy_import.ts`) is the argument
 * of `lazyImport`, so the one explanation is a go-to-definition away from every site and a search
 * for `lazyImport` finds them all.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { analyze, listTs } from "../_helpers/import_scanner.ts";
import { lazyImport } from "../../src/util/lazy_import.ts";
import type * as Path from "../../src/util/path.ts";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));

/** A dynamic import whose specifier is a sum (strings are blanked in the scanned code). */
const SUM_IMPORT = /\bimport\s*\(\s*(["'`])[^"'`]*\1\s*\+/g;

/** What must come just before such an import: `lazyImport<Type>(`. */
const WRAPPED = /\blazyImport\s*<[^()]*>\s*\(\s*$/;

/** The `file:line` of every sum import in `source` that is not an argument of `lazyImport`. */
function bareSites(file: string, source: string): string[] {
  const { code } = analyze(source);
  const bare: string[] = [];
  for (const match of code.matchAll(SUM_IMPORT)) {
    const before = code.slice(Math.max(0, match.index - 200), match.index);
    if (!WRAPPED.test(before)) {
      bare.push(`${file}:${code.slice(0, match.index).split("\n").length}`);
    }
  }
  return bare;
}

Deno.test("bareSites() finds a lazy import outside lazyImport and passes one inside", () => {
  assert.deepEqual(
    bareSites("a.ts", 'const a = await import("./a" + ".ts");\n'),
    ["a.ts:1"],
  );
  assert.deepEqual(
    bareSites("b.ts", 'const b = lazyImport<typeof B>(\n  import("./b" + ".ts"),\n);\n'),
    [],
  );
  assert.deepEqual(bareSites("c.ts", 'const c = await import("./c.ts");\n'), []);
});

Deno.test('every import("./x" + ".ts") in src/ goes through lazyImport()', async () => {
  const files = await listTs(SRC);
  const bare: string[] = [];
  let sites = 0;
  for (const file of files) {
    const source = await readFile(`${SRC}${file}`, "utf8");
    sites += [...analyze(source).code.matchAll(SUM_IMPORT)].length;
    bare.push(...bareSites(`src/${file}`, source));
  }
  assert.ok(sites >= 10, `expected to find the lazy imports of src/, found ${sites}`);
  assert.deepEqual(bare, [], `lazy imports outside lazyImport():\n${bare.join("\n")}`);
});

Deno.test("lazyImport() resolves to the module it is given", async () => {
  const path = await lazyImport<typeof Path>(import("../../src/util/path" + ".ts"));
  assert.equal(path.isAbsolutePath("/tmp"), true);
});
