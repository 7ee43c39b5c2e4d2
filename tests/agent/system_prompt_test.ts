/**
 * The system prompt's permission lines: the mode and the rules in short, capped; the prompt cache
 * keys on the mode.
 *
 * @module
 */
import assert from "node:assert/strict";
import { buildSystemPrompt, permissionLines } from "../../src/agent/system_prompt.ts";
import { parseRule } from "../../src/permission/rule_syntax.ts";
import type { PermissionRules } from "../../src/permission/rules.ts";
import { SystemPromptCache } from "../../src/session/system_prompt_cache.ts";

const RULES: PermissionRules = {
  allow: [parseRule("allow", "run_command(npm test)")],
  deny: [parseRule("deny", "write_file(.github/**)")],
  ask: [parseRule("ask", "delegate")],
};

Deno.test("permissionLines() states the mode, and the rules deny first", () => {
  assert.deepEqual(permissionLines("auto"), [
    "Permission mode: auto (tool calls run without asking).",
  ]);
  const [mode, rules] = permissionLines("read-only", RULES);
  assert.equal(
    mode,
    "Permission mode: read-only (edits, commands and other changes are refused unless a rule decides).",
  );
  assert.match(
    rules ?? "",
    /: deny write_file\(\.github\/\*\*\); ask delegate; allow run_command\(npm test\)\.$/,
  );
});

Deno.test("permissionLines() caps the rules it lists", () => {
  const many: PermissionRules = {
    allow: Array.from({ length: 200 }, (_, n) => parseRule("allow", `run_command(make t${n})`)),
    deny: [],
    ask: [],
  };
  const [, rules] = permissionLines("ask", many);
  assert.ok((rules ?? "").length < 1000, `${rules?.length}`);
  assert.match(rules ?? "", /; and \d+ more\.$/);
});

Deno.test("buildSystemPrompt() includes the permission lines when given", () => {
  const base = { roots: ["/w"], model: "echo", date: new Date(0) };
  assert.doesNotMatch(buildSystemPrompt(base), /Permission mode/);
  const text = buildSystemPrompt({ ...base, permissions: { mode: "ask", rules: RULES } });
  assert.match(text, /Permission mode: ask \(edits and commands ask the user first unless/);
  assert.match(text, /Permission rules/);
});

Deno.test("SystemPromptCache.get() rebuilds when the mode changes", () => {
  const cache = new SystemPromptCache({ roots: ["/w"], now: () => 0, rules: RULES });
  const ask = cache.get("M", { mode: "ask" });
  assert.match(ask, /Permission mode: ask/);
  assert.equal(cache.get("M", { mode: "ask" }), ask);
  assert.match(cache.get("M", { mode: "read-only" }), /Permission mode: read-only/);
  assert.match(cache.get("M", { mode: "ask" }), /Permission mode: ask/);
  assert.doesNotMatch(cache.get("M"), /Permission mode/);
});
