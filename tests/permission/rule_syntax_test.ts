/**
 * The rule syntax: TOOL or TOOL(SPECIFIER), the errors with their positions, lists split on the
 * commas outside parentheses, and the `*` matcher.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  matchesStarPattern,
  MAX_RULE_LENGTH,
  parseRule,
  RuleSyntaxError,
  splitRuleList,
} from "../../src/permission/rule_syntax.ts";

Deno.test("parseRule() reads a tool, a glob of tools and a tool with a specifier", () => {
  assert.deepEqual(parseRule("deny", " write_file "), {
    kind: "deny",
    text: "write_file",
    tool: "write_file",
  });
  assert.equal(parseRule("allow", "mcp__github__*").tool, "mcp__github__*");
  assert.deepEqual(parseRule("allow", "run_command(git  status\t*)"), {
    kind: "allow",
    text: "run_command(git  status\t*)",
    tool: "run_command",
    specifier: "git status *",
  });
  assert.equal(parseRule("allow", "write_file(src/**)").specifier, "src/**");
  assert.equal(parseRule("ask", "delegate(review*)").specifier, "review*");
  // Parentheses nest inside a specifier.
  assert.equal(parseRule("allow", "run_command(echo (a))").specifier, "echo (a)");
  // Unknown tools are allowed (MCP tools appear later).
  assert.equal(parseRule("deny", "some_future_tool").tool, "some_future_tool");
});

const BAD: ReadonlyArray<readonly [string, RegExp, number]> = [
  ["", /Empty rule/, 1],
  ["   ", /Empty rule/, 1],
  ["run_command(npm", /Missing "\)"/, 16],
  ["run_command()", /Empty specifier/, 13],
  ["run_command(  )", /Empty specifier/, 13],
  ["write_file(a)b", /Unexpected text after "\)"/, 14],
  ["write file", /Unexpected " " in the tool name/, 6],
  ["(x)", /Missing tool name/, 1],
  ["update_plan(x)", /"update_plan" takes no specifier/, 12],
  ["mcp__github__*(x)", /"mcp__github__\*" takes no specifier/, 15],
  ["run_command(a))", /Unexpected text after "\)"/, 15],
  ["write_file((a)", /Missing "\)"/, 15],
];

Deno.test("parseRule() names the problem and the character it is at", () => {
  for (const [text, problem, position] of BAD) {
    assert.throws(() => parseRule("allow", text), (error: unknown) => {
      assert.ok(error instanceof RuleSyntaxError, text);
      assert.match(error.message, problem, text);
      assert.equal(error.position, position, text);
      assert.match(error.message, new RegExp(`at character ${position}$`), text);
      return true;
    });
  }
  assert.throws(() => parseRule("allow", `run_command(${"a".repeat(MAX_RULE_LENGTH)})`), /longer/);
});

Deno.test("splitRuleList() splits on commas outside parentheses only", () => {
  assert.deepEqual(splitRuleList("write_file,read_file"), ["write_file", "read_file"]);
  assert.deepEqual(splitRuleList(" run_command(echo a, b) , delegate ,, "), [
    "run_command(echo a, b)",
    "delegate",
  ]);
  assert.deepEqual(splitRuleList("run_command(printf '(%s,%s)' a b),x"), [
    "run_command(printf '(%s,%s)' a b)",
    "x",
  ]);
  assert.deepEqual(splitRuleList(""), []);
});

Deno.test("matchesStarPattern() matches * as any run and the rest literally", () => {
  assert.ok(matchesStarPattern("npm test*", "npm test"));
  assert.ok(matchesStarPattern("npm test*", "npm test --watch"));
  assert.ok(!matchesStarPattern("npm test", "npm test --watch"));
  assert.ok(matchesStarPattern("*", ""));
  assert.ok(matchesStarPattern("a*b*c", "aXbYc"));
  assert.ok(!matchesStarPattern("a*b*c", "aXbY"));
  assert.ok(matchesStarPattern("git status *", "git status -s"));
  assert.ok(!matchesStarPattern("git status *", "git status"));
  assert.ok(matchesStarPattern("a.c", "a.c"));
  assert.ok(!matchesStarPattern("a.c", "abc"), "no regular expression");
  assert.ok(!matchesStarPattern("echo *", "echo a; b", (c) => c !== ";"));
  assert.ok(matchesStarPattern("echo *;*", "echo a;b", (c) => c !== ";"));
});

Deno.test("matchesStarPattern() agrees with a reference on random cases, restricted stars too", () => {
  const alphabet = ["a", "b", ";", "*"];
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = (length: number, from: string[]) =>
    Array.from({ length }, () => from[Math.floor(next() * from.length)]).join("");
  for (let run = 0; run < 3000; run++) {
    const pattern = pick(Math.floor(next() * 6), alphabet);
    const text = pick(Math.floor(next() * 7), ["a", "b", ";"]);
    const escape = (c: string) => c.replace(/[;]/g, "\\;");
    const free = new RegExp(`^${[...pattern].map((c) => c === "*" ? ".*" : escape(c)).join("")}$`);
    const bound = new RegExp(
      `^${[...pattern].map((c) => c === "*" ? "[^;]*" : escape(c)).join("")}$`,
    );
    assert.equal(matchesStarPattern(pattern, text), free.test(text), `${pattern} ~ ${text}`);
    assert.equal(
      matchesStarPattern(pattern, text, (c) => c !== ";"),
      bound.test(text),
      `${pattern} ~ ${text} (restricted)`,
    );
  }
});

Deno.test("matchesStarPattern() stays fast on a pathological pattern", () => {
  const started = performance.now();
  assert.ok(!matchesStarPattern("*a*a*a*a*a*a*a*a*b", "a".repeat(8192)));
  assert.ok(performance.now() - started < 2000);
});
