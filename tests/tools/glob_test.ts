import assert from "node:assert/strict";
import { compileGlob, type Glob } from "../../src/tools/glob.ts";

async function glob(pattern: string): Promise<Glob> {
  const compiled = await compileGlob(pattern);
  if (typeof compiled === "string") throw new Error(compiled);
  return compiled;
}

async function check(
  pattern: string,
  yes: readonly string[],
  no: readonly string[],
): Promise<void> {
  const compiled = await glob(pattern);
  for (const path of yes) assert.equal(compiled.matches(path), true, `${pattern} ~ ${path}`);
  for (const path of no) assert.equal(compiled.matches(path), false, `${pattern} !~ ${path}`);
}

Deno.test("compileGlob() * and ? stay within one segment", async () => {
  await check("src/*.ts", ["src/a.ts", "src/.hidden.ts", "src/.ts"], [
    "src/a/b.ts",
    "a.ts",
    "src/a.tsx",
  ]);
  await check("src/?.ts", ["src/a.ts"], ["src/ab.ts", "src//.ts"]);
});

Deno.test("compileGlob() ** spans any number of directories, zero included", async () => {
  await check("**/*.ts", ["a.ts", "x/a.ts", "x/y/z/a.ts"], ["a.tsx", "x/a.js"]);
  await check("src/**/test_*.ts", ["src/test_a.ts", "src/x/y/test_a.ts"], [
    "test_a.ts",
    "lib/test_a.ts",
  ]);
  await check("src/**", ["src/a", "src/x/y"], ["lib/a", "srcx/a"]);
  await check("**", ["a", "a/b/c"], []);
});

Deno.test("compileGlob() a pattern without a slash matches base names at any depth", async () => {
  await check("*.md", ["README.md", "docs/x/guide.md"], ["README.mdx"]);
  await check("Makefile", ["Makefile", "a/b/Makefile"], ["Makefile.am"]);
});

Deno.test("compileGlob() expands braces, nested and across slashes", async () => {
  await check("*.{ts,tsx}", ["a.ts", "b/c.tsx"], ["a.js"]);
  await check("{src,tests}/**/*.ts", ["src/a.ts", "tests/x/a.ts"], ["lib/a.ts"]);
  await check("{a/b,c}/x", ["a/b/x", "c/x"], ["a/x", "b/x"]);
  await check("f.{a,{b,c}}", ["f.a", "f.b", "f.c"], ["f.d"]);
  await check("{single}.ts", ["{single}.ts"], ["single.ts"]);
});

Deno.test("compileGlob() supports character classes and escapes regex characters", async () => {
  await check("file[0-9].txt", ["file1.txt"], ["filea.txt", "file10.txt"]);
  await check("file[!0-9].txt", ["filea.txt"], ["file1.txt"]);
  await check("a+b(c).ts", ["a+b(c).ts"], ["aab(c).ts", "a+bc.ts"]);
  await check("[unclosed", ["[unclosed"], ["u"]);
  await check("a\\*b", ["a*b"], ["axb"]);
});

Deno.test("compileGlob() ignores a leading ./ or / and computes the literal base", async () => {
  await check("./src/*.ts", ["src/a.ts"], []);
  await check("/src/*.ts", ["src/a.ts"], []);
  assert.equal((await glob("src/lib/**/*.ts")).base, "src/lib");
  assert.equal((await glob("src/a.ts")).base, "src");
  assert.equal((await glob("{src,tests}/*.ts")).base, "");
  assert.equal((await glob("src/{a,b}/*.ts")).base, "src");
  assert.equal((await glob("*.ts")).base, "");
  assert.equal((await glob("**/x/*.ts")).base, "");
});

Deno.test("compileGlob() names() sees literal segments such as node_modules", async () => {
  assert.equal((await glob("node_modules/**/package.json")).names("node_modules"), true);
  assert.equal((await glob("{.git,src}/**")).names(".git"), true);
  assert.equal((await glob("**/*.ts")).names("node_modules"), false);
});

Deno.test("compileGlob() refuses empty patterns, .. and brace explosions", async () => {
  assert.equal(typeof await compileGlob(""), "string");
  assert.equal(typeof await compileGlob("./"), "string");
  assert.match(await compileGlob("../*.ts") as string, /\.\./);
  assert.match(await compileGlob("a/{b,..}/c") as string, /\.\./);
  const explosion = "{a,b,c,d}".repeat(5);
  assert.match(await compileGlob(explosion) as string, /alternatives/);
});

// Globs come from the model; compiled to a backtracking regex, `*a*a*a*a*a*b` against a long
// name of `a`s takes time exponential in the number of stars (the original never finished).
Deno.test("compileGlob() matches pathological globs in linear time", async () => {
  const name = "a".repeat(250);
  await check("**/*a*a*a*a*a*b", [`x/${name}b`], [`x/${name}`, name]);
  await check("*a*a*a*a*a*a*a*a*a*a*b", [`${name}b`], [name, `dir/${name}`]);
  await check("{*a*a*a*b,*a*a*a*c}", [`${name}c`], [name]);
});

Deno.test("compileGlob() refuses globs that compile to too large a matcher", async () => {
  const compiled = await compileGlob(
    `{${Array.from({ length: 200 }, (_, i) => `*x${i}*y*z`).join(",")}}`,
  );
  assert.equal(typeof compiled, "string");
  assert.match(compiled as string, /^The pattern cannot be matched: it is too complex/);
});
