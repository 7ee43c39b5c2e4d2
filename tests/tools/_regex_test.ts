import assert from "node:assert/strict";
import { RE2JS } from "re2js";
import { compileLinePattern, compileRe2, dotAll } from "../../src/tools/_regex.ts";

Deno.test("dotAll is the RE2JS flag of that name", async () => {
  assert.equal(dotAll, RE2JS.DOTALL);
  const compiled = await compileRe2("a.b", dotAll);
  assert.equal(typeof compiled !== "string" && compiled.test("a\nb"), true);
});

Deno.test("compileLinePattern() refuses lookaround and backreferences by name", async () => {
  assert.match(await compileLinePattern("a(?=b)") as string, /^lookahead/);
  assert.match(await compileLinePattern("(a)\\1") as string, /^backreference/);
  const literal = await compileLinePattern("plain text");
  assert.equal(typeof literal !== "string" && literal.test("some plain text"), true);
});
