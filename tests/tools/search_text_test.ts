import assert from "node:assert/strict";
import { searchTextTool } from "../../src/tools/search_text.ts";
import type { ToolContext } from "../../src/tools/tool.ts";
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
  assert.match(
    invalid.content,
    /^Invalid input: "pattern" is not a valid RE2 regular expression: missing closing \)/,
  );
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

/** A context whose host schedules `onRead` as a macrotask as soon as a file's bytes arrive. */
function contextCallingBackAfterRead(
  ws: TempWorkspace,
  signal: AbortSignal,
  onRead: () => void,
): ToolContext {
  const base = ws.context({ signal });
  const files = new Proxy(base.files, {
    get(target, property, receiver): unknown {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      if (property !== "readFile" && property !== "readFileRange") return value.bind(target);
      return async (...args: unknown[]): Promise<unknown> => {
        const bytes = await value.apply(target, args);
        setTimeout(onRead, 0);
        return bytes;
      };
    },
  });
  return { ...base, files };
}

// Issue 7, defect 2: `^(a+)+$` over lines of 28 `a` and `!` took a backtracking engine ~13 s,
// in one synchronous block: no timer, no other session and no cancel could run meanwhile.
Deno.test("search_text lets the event loop run and stops on cancel while scanning a file", async () => {
  await using ws = await tempWorkspace();
  await ws.write("evil.txt", `${"a".repeat(28)}!\n`.repeat(3) + "filler line\n".repeat(100_000));
  const controller = new AbortController();
  let ticked = false;
  // The macrotask is scheduled just before the scan starts; it cancels the call.
  const context = contextCallingBackAfterRead(ws, controller.signal, () => {
    ticked = true;
    controller.abort();
  });
  const result = await searchTextTool.execute({ pattern: "^(a+)+$", path: "evil.txt" }, context);
  assert.equal(ticked, true, "a timer ran while the scan was in progress");
  assert.equal(result.isError, true);
  assert.match(result.content, /^Cancelled/);
});

Deno.test("search_text matches catastrophic-backtracking patterns in linear time", async () => {
  await using ws = await tempWorkspace();
  await ws.write("evil.txt", `${"a".repeat(28)}!\n`.repeat(3) + "aaaa\n");
  assert.equal(await search(ws, { pattern: "^(a+)+$" }), "evil.txt:4: aaaa");
  assert.equal(
    await search(ws, { pattern: "(x+x+)+y|(a|aa)+!" }),
    [
      `evil.txt:1: ${"a".repeat(28)}!`,
      `evil.txt:2: ${"a".repeat(28)}!`,
      `evil.txt:3: ${"a".repeat(28)}!`,
    ].join("\n"),
  );
  assert.equal(await search(ws, { pattern: "(?i)AAAA$" }), "evil.txt:4: aaaa");
});

Deno.test("search_text refuses backreferences, lookaround and huge patterns by name", async () => {
  await using ws = await tempWorkspace();
  await ws.write("a.txt", "abab\n");
  const refused = async (pattern: string): Promise<string> => {
    const result = await searchTextTool.execute({ pattern }, ws.context());
    assert.equal(result.isError, true, result.content);
    return result.content;
  };
  assert.equal(
    await refused("(ab)\\1"),
    'Invalid input: "pattern" is not a valid RE2 regular expression: backreference `\\1` is not supported (RE2 syntax, like ripgrep: no lookaround, no backreferences)',
  );
  assert.match(await refused("a(?=b)"), /: lookahead `\(\?=` is not supported/);
  assert.match(await refused("(?<!x)a"), /: lookbehind `\(\?<!` is not supported/);
  assert.match(
    await refused("[a-j][^x]{999}[^y]{999}"),
    /too complex \(it compiles to \d+ instructions, at most 1024/,
  );
});

Deno.test("search_text matches a regex on the start of very long lines and says so", async () => {
  await using ws = await tempWorkspace();
  await ws.write("min.js", `${"x".repeat(100_000)}needle\nneedle\n`);
  // A literal pattern is found anywhere in a line.
  assert.deepEqual(
    (await search(ws, { pattern: "needle" })).split("\n").map((line) => line.slice(0, 12)),
    ["min.js:1: xx", "min.js:2: ne"],
  );
  // A regular expression sees the first characters of each line only (linear, but bounded work).
  const content = await search(ws, { pattern: "needl[e]" });
  assert.match(
    content,
    /^min\.js:2: needle\n\[1 line longer than \d+ characters matched on their first \d+ characters only\]$/,
  );
});
