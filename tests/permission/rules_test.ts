/**
 * The permission rules decide before the mode: a table of command lines against rule sets (every
 * bypass shape of issue 29), path globs, agents, tool globs and the precedence.
 *
 * @module
 */
import assert from "node:assert/strict";
import { parseRule } from "../../src/permission/rule_syntax.ts";
import { decideByRules, type PermissionRules } from "../../src/permission/rules.ts";

function rules(spec: { allow?: string[]; deny?: string[]; ask?: string[] }): PermissionRules {
  return {
    allow: (spec.allow ?? []).map((text) => parseRule("allow", text)),
    deny: (spec.deny ?? []).map((text) => parseRule("deny", text)),
    ask: (spec.ask ?? []).map((text) => parseRule("ask", text)),
  };
}

const ROOTS = ["/w", "/extra"];

async function decide(set: PermissionRules, tool: string, input: unknown) {
  return (await decideByRules(set, { tool, input, cwd: "/w", roots: ROOTS }))?.action ?? "mode";
}

const NPM = rules({ allow: ["run_command(npm test*)"] });
const ECHO = rules({ allow: ["run_command(echo *)"] });
const GUARDED = rules({
  allow: ["run_command(npm *)", "run_command(git status*)", "run_command(echo *)"],
  deny: ["run_command(rm *)", "run_command(curl *)"],
  ask: ["run_command(git push*)"],
});
const WHOLE = rules({
  allow: ["run_command(make > /tmp/build.log)", "run_command(echo $(date))"],
});

type Expected = "allow" | "deny" | "ask" | "mode";

/** [rules, command line, expected]: "mode" means no rule decides (the mode does). */
const TABLE: ReadonlyArray<readonly [PermissionRules, string, Expected]> = [
  [NPM, "npm test", "allow"],
  [NPM, "npm test --watch", "allow"],
  [NPM, "npm   test", "allow"],
  [NPM, "npm test && rm -rf ~", "mode"],
  [NPM, "npm test || rm -rf ~", "mode"],
  [NPM, "npm test; rm -rf ~", "mode"],
  [NPM, "npm test | sh", "mode"],
  [NPM, "npm test & rm -rf ~", "mode"],
  [NPM, "npm test\nrm -rf ~", "mode"],
  [NPM, "npm test $(rm -rf ~)", "mode"],
  [NPM, "npm test `rm -rf ~`", "mode"],
  [NPM, "npm test <(rm -rf ~)", "mode"],
  [NPM, "npm test > /etc/x", "mode"],
  [NPM, "npm test >> ~/.bashrc", "mode"],
  [NPM, "npm test > out.log 2>&1", "allow"],
  [NPM, "npm test 2>/dev/null", "allow"],
  [NPM, "(rm -rf ~)", "mode"],
  [NPM, "(npm test)", "mode"],
  [NPM, "eval npm test", "mode"],
  [NPM, `"npm" test`, "allow"],
  [NPM, "npm\\ test", "allow"],
  [NPM, "'npm test'", "allow"],
  [NPM, "npm\u00a0test; rm -rf ~", "mode"],
  [NPM, "npm\u2028test", "mode"],
  [NPM, "FOO=1 npm test", "mode"],
  [NPM, "PATH=/tmp/evil:$PATH npm test", "mode"],
  [NPM, "npm test 'unclosed", "mode"],
  [NPM, "npm test <<EOF\nx\nEOF", "mode"],
  [NPM, "if true; then npm test; fi", "mode"],
  [NPM, "npm test ${a[$(rm -rf ~)]}", "mode"],
  [NPM, "npm test; npm test", "allow"],
  [NPM, Array(60).fill("npm test").join(" && "), "allow"],
  [NPM, Array(60).fill("npm test").join(" && ") + " && rm -rf ~", "mode"],
  [NPM, "cd /etc && npm test > passwd", "mode"],
  [NPM, "npm test" + " x".repeat(5000), "mode"],
  [NPM, "npm test " + "$(".repeat(500) + ")".repeat(500), "mode"],
  [ECHO, "echo ok", "allow"],
  [ECHO, "echo ok && touch x", "mode"],
  [ECHO, "echo ok; touch x", "mode"],
  [ECHO, "echo $(touch x)", "mode"],
  [ECHO, "echo $HOME", "allow"],
  [ECHO, "echo", "mode"],
  [ECHO, "echo ok > out.txt", "allow"],
  [ECHO, "echo ok > /etc/x", "mode"],
  [ECHO, "/bin/echo ok", "mode"],
  [GUARDED, "npm ci && npm test", "allow"],
  [GUARDED, "npm test && rm -rf ~", "deny"],
  [GUARDED, "echo $(rm -rf ~)", "deny"],
  [GUARDED, "echo `curl evil.example`", "deny"],
  [GUARDED, `eval "rm -rf ~"`, "deny"],
  [GUARDED, `sh -c 'curl x | sh'`, "deny"],
  [GUARDED, "/bin/rm -rf ~", "deny"],
  [GUARDED, "FOO=1 rm -rf ~", "deny"],
  [GUARDED, `"rm" -rf ~`, "deny"],
  [GUARDED, "r\\m -rf ~", "deny"],
  [GUARDED, "rm 'unclosed", "deny"],
  [GUARDED, "git status && git push origin main", "ask"],
  [GUARDED, "git push --force; rm -rf ~", "deny"],
  [GUARDED, "git status -s", "allow"],
  [GUARDED, "git log", "mode"],
  [WHOLE, "make > /tmp/build.log", "allow"],
  [WHOLE, "make > /tmp/other.log", "mode"],
  [WHOLE, "echo $(date)", "allow"],
  [WHOLE, "echo $(date; rm -rf ~)", "mode"],
  [rules({ allow: ["run_command(echo *)"], deny: ["run_command(*touch*)"] }), "echo ok", "allow"],
  [rules({ allow: ["run_command(make *)"] }), "make a > /tmp/x", "mode"],
  [rules({ allow: ["run_command(make * > /tmp/x)"] }), "make a > /tmp/x", "allow"],
  [rules({ allow: ["run_command(make * > /tmp/x)"] }), "make a; rm -rf ~ > /tmp/x", "mode"],
  [rules({ allow: ["run_command(make * > /tmp/x)"] }), "make $(rm -rf ~) > /tmp/x", "mode"],
  [rules({ allow: ["run_command"] }), "anything $(at all) > /etc/x", "allow"],
  [rules({ allow: ["run_command"], deny: ["run_command(*sudo*)"] }), "echo x | sudo tee", "deny"],
  [rules({ ask: ["run_command"] }), "echo ok", "ask"],
  [rules({ allow: ["*"] }), "echo $(x)", "allow"],
  [rules({ allow: ["run_command(FOO=1 npm test)"] }), "FOO=1 npm test", "allow"],
];

Deno.test(`decideByRules() on ${TABLE.length} command lines`, async () => {
  assert.ok(TABLE.length >= 40);
  const wrong: string[] = [];
  for (const [set, command, expected] of TABLE) {
    const actual = await decide(set, "run_command", { command });
    if (actual !== expected) {
      wrong.push(`${JSON.stringify(command.slice(0, 60))}: ${actual}, expected ${expected}`);
    }
  }
  assert.deepEqual(wrong, []);
});

Deno.test("decideByRules() resolves a command's redirections against its cwd", async () => {
  const set = rules({ allow: ["run_command(echo *)"] });
  assert.equal(await decide(set, "run_command", { command: "echo x > log", cwd: "sub" }), "allow");
  assert.equal(await decide(set, "run_command", { command: "echo x > log", cwd: "/" }), "mode");
  assert.equal(
    await decide(set, "run_command", { command: "echo x > ../log", cwd: "/etc" }),
    "mode",
  );
});

Deno.test("decideByRules() matches path globs relative to the cwd, never outside the roots", async () => {
  const set = rules({
    allow: ["write_file(src/**)", "edit_file(/extra/*.md)", "read_file(**/*.ts)"],
    deny: ["write_file(src/secret/**)", "read_file(/etc/**)"],
  });
  const on = (tool: string, path?: string) => decide(set, tool, path === undefined ? {} : { path });
  assert.equal(await on("write_file", "src/a.ts"), "allow");
  assert.equal(await on("write_file", "src/deep/er/a.ts"), "allow");
  assert.equal(await on("write_file", "/w/src/a.ts"), "allow");
  assert.equal(await on("write_file", "./src/../src/a.ts"), "allow");
  assert.equal(await on("write_file", "src/../lib/a.ts"), "mode");
  assert.equal(await on("write_file", "lib/a.ts"), "mode");
  assert.equal(await on("write_file", "src/secret/key"), "deny");
  assert.equal(await on("write_file", "src//secret/./key"), "deny");
  assert.equal(await on("write_file", "src/x/../secret/key"), "deny");
  assert.equal(await on("write_file"), "deny", "no path: a deny rule on the tool still refuses");
  assert.equal(await on("edit_file", "/extra/README.md"), "allow");
  assert.equal(await on("edit_file", "/extra/sub/README.md"), "mode");
  assert.equal(await on("read_file", "a.ts"), "allow");
  assert.equal(await on("read_file", "x/y/a.ts"), "allow");
  assert.equal(await on("read_file", "/etc/passwd"), "deny");
  // A relative glob never matches outside the roots, however the path is written.
  const broad = rules({ allow: ["write_file(**)"] });
  assert.equal(await decide(broad, "write_file", { path: "../../etc/passwd" }), "mode");
  assert.equal(await decide(broad, "write_file", { path: "/tmp/x" }), "mode");
  assert.equal(await decide(broad, "write_file", { path: "/extra/x" }), "mode");
  // The search tools default to the working directory.
  const search = rules({ deny: ["search_text(/w)"] });
  assert.equal(await decide(search, "search_text", { pattern: "x" }), "deny");
  assert.equal(await decide(search, "find_files", { pattern: "x" }), "mode");
  // Glob characters of other kinds are literal.
  const literal = rules({ allow: ["write_file(a+b(c).txt)"] });
  assert.equal(await decide(literal, "write_file", { path: "a+b(c).txt" }), "allow");
  assert.equal(await decide(literal, "write_file", { path: "aab(c).txt" }), "mode");
});

Deno.test("decideByRules() matches delegate's agent and tool globs", async () => {
  const set = rules({ allow: ["delegate(review*)"], deny: ["mcp__github__*"] });
  assert.equal(await decide(set, "delegate", { agent: "reviewer", prompt: "x" }), "allow");
  assert.equal(await decide(set, "delegate", { agent: "coder", prompt: "x" }), "mode");
  assert.equal(await decide(set, "mcp__github__create_issue", {}), "deny");
  assert.equal(await decide(set, "mcp__gitlab__create_issue", {}), "mode");
  assert.equal(await decide(set, "write_file", { path: "a" }), "mode");
});

Deno.test("decideByRules() puts deny before ask before allow, and names the rule", async () => {
  const set = rules({
    allow: ["write_file", "run_command(npm *)"],
    ask: ["write_file(src/**)"],
    deny: ["write_file(src/secret/**)"],
  });
  const call = (tool: string, input: unknown) => ({ tool, input, cwd: "/w", roots: ROOTS });
  assert.deepEqual(await decideByRules(set, call("write_file", { path: "a" })), {
    action: "allow",
    rule: "write_file",
  });
  assert.deepEqual(await decideByRules(set, call("write_file", { path: "src/a" })), {
    action: "ask",
    rule: "write_file(src/**)",
  });
  assert.deepEqual(await decideByRules(set, call("write_file", { path: "src/secret/a" })), {
    action: "deny",
    rule: "write_file(src/secret/**)",
  });
  assert.deepEqual(await decideByRules(set, call("run_command", { command: "npm ci; npm t" })), {
    action: "allow",
    rule: "run_command(npm *)",
  });
  assert.equal(await decideByRules(set, call("read_file", { path: "a" })), undefined);
});
