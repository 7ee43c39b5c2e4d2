import assert from "node:assert/strict";
import { compileGlob, type Glob } from "../../src/tools/glob.ts";

function glob(pattern: string): Glob {
  const compiled = compileGlob(pattern);
  if (typeof compiled === "string") throw new Error(compiled);
  return compiled;
}

function check(pattern: string, yes: readonly string[], no: readonly string[]): void {
  const compiled = glob(pattern);
  for (const path of yes) assert.equal(compiled.matches(path), true, `${pattern} ~ ${path}`);
  for (const path of no) assert.equal(compiled.matches(path), false, `${pattern} !~ ${path}`);
}

Deno.test("compileGlob() * and ? stay within one segment", () => {
  check("src/*.ts", ["src/a.ts", "src/.hidden.ts", "src/.ts"], ["src/a/b.ts", "a.ts", "src/a.tsx"]);
  check("src/?.ts", ["src/a.ts"], ["src/ab.ts", "src//.ts"]);
});

Deno.test("compileGlob() ** spans any number of directories, zero included", () => {
  check("**/*.ts", ["a.ts", "x/a.ts", "x/y/z/a.ts"], ["a.tsx", "x/a.js"]);
  check("src/**/test_*.ts", ["src/test_a.ts", "src/x/y/test_a.ts"], ["test_a.ts", "lib/test_a.ts"]);
  check("src/**", ["src/a", "src/x/y"], ["lib/a", "srcx/a"]);
  check("**", ["a", "a/b/c"], []);
});

Deno.test("compileGlob() a pattern without a slash matches base names at any depth", () => {
  check("*.md", ["README.md", "docs/x/guide.md"], ["README.mdx"]);
  check("Makefile", ["Makefile", "a/b/Makefile"], ["Makefile.am"]);
});

Deno.test("compileGlob() expands braces, nested and across slashes", () => {
  check("*.{ts,tsx}", ["a.ts", "b/c.tsx"], ["a.js"]);
  check("{src,tests}/**/*.ts", ["src/a.ts", "tests/x/a.ts"], ["lib/a.ts"]);
  check("{a/b,c}/x", ["a/b/x", "c/x"], ["a/x", "b/x"]);
  check("f.{a,{b,c}}", ["f.a", "f.b", "f.c"], ["f.d"]);
  check("{single}.ts", ["{single}.ts"], ["single.ts"]);
});

Deno.test("compileGlob() supports character classes and escapes regex characters", () => {
  check("file[0-9].txt", ["file1.txt"], ["filea.txt", "file10.txt"]);
  check("file[!0-9].txt", ["filea.txt"], ["file1.txt"]);
  check("a+b(c).ts", ["a+b(c).ts"], ["aab(c).ts", "a+bc.ts"]);
  check("[unclosed", ["[unclosed"], ["u"]);
  check("a\\*b", ["a*b"], ["axb"]);
});

Deno.test("compileGlob() ignores a leading ./ or / and computes the literal base", () => {
  check("./src/*.ts", ["src/a.ts"], []);
  check("/src/*.ts", ["src/a.ts"], []);
  assert.equal(glob("src/lib/**/*.ts").base, "src/lib");
  assert.equal(glob("src/a.ts").base, "src");
  assert.equal(glob("{src,tests}/*.ts").base, "");
  assert.equal(glob("src/{a,b}/*.ts").base, "src");
  assert.equal(glob("*.ts").base, "");
  assert.equal(glob("**/x/*.ts").base, "");
});

Deno.test("compileGlob() names() sees literal segments such as node_modules", () => {
  assert.equal(glob("node_modules/**/package.json").names("node_modules"), true);
  assert.equal(glob("{.git,src}/**").names(".git"), true);
  assert.equal(glob("**/*.ts").names("node_modules"), false);
});

Deno.test("compileGlob() refuses empty patterns, .. and brace explosions", () => {
  assert.equal(typeof compileGlob(""), "string");
  assert.equal(typeof compileGlob("./"), "string");
  assert.match(compileGlob("../*.ts") as string, /\.\./);
  assert.match(compileGlob("a/{b,..}/c") as string, /\.\./);
  const explosion = "{a,b,c,d}".repeat(5);
  assert.match(compileGlob(explosion) as string, /alternatives/);
});

// Globs come from the model; compiled to a backtracking regex, `*a*a*a*a*a*b` against a long
// name of `a`s takes time exponential in the number of stars (the original never finished).
Deno.test("compileGlob() matches pathological globs in linear time", () => {
  const name = "a".repeat(250);
  check("**/*a*a*a*a*a*b", [`x/${name}b`], [`x/${name}`, name]);
  check("*a*a*a*a*a*a*a*a*a*a*b", [`${name}b`], [name, `dir/${name}`]);
  check("{*a*a*a*b,*a*a*a*c}", [`${name}c`], [name]);
});

Deno.test("compileGlob() refuses globs that compile to too large a matcher", () => {
  const compiled = compileGlob(
    `{${Array.from({ length: 200 }, (_, i) => `*x${i}*y*z`).join(",")}}`,
  );
  assert.equal(typeof compiled, "string");
  assert.match(compiled as string, /^The pattern cannot be matched: it is too complex/);
});
