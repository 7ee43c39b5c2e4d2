import assert from "node:assert/strict";
import { PERMISSION_MODES, type PermissionMode } from "../../src/permission/mode.ts";
import { decidePermission, type PermissionGrants } from "../../src/permission/policy.ts";
import type { ToolEffect } from "../../src/permission/policy.ts";

const EFFECTS: readonly ToolEffect[] = ["read", "write", "execute", "external"];
const NONE: PermissionGrants = new Map();

Deno.test("decidePermission() covers every mode and effect without grants", () => {
  const expected: Record<PermissionMode, Record<ToolEffect, string>> = {
    "auto": { read: "allow", write: "allow", execute: "allow", external: "allow" },
    "ask": { read: "allow", write: "ask", execute: "ask", external: "ask" },
    "read-only": { read: "allow", write: "deny", execute: "deny", external: "deny" },
  };
  assert.deepEqual([...PERMISSION_MODES].sort(), Object.keys(expected).sort());
  for (const mode of PERMISSION_MODES) {
    for (const effect of EFFECTS) {
      assert.equal(
        decidePermission(mode, "some_tool", effect, NONE).action,
        expected[mode][effect],
        `${mode} × ${effect}`,
      );
    }
  }
});

Deno.test("decidePermission() returns exactly the decision shape", () => {
  assert.deepEqual(decidePermission("auto", "run_command", "execute", NONE), { action: "allow" });
  assert.deepEqual(decidePermission("ask", "read_file", "read", NONE), { action: "allow" });
  assert.deepEqual(decidePermission("ask", "write_file", "write", NONE), { action: "ask" });
});

Deno.test("decidePermission() in read-only mode explains the refusal to the model", () => {
  const write = decidePermission("read-only", "write_file", "write", NONE);
  assert.ok(write.action === "deny");
  assert.match(write.reason, /read-only/);
  assert.match(write.reason, /write_file/);
  assert.match(write.reason, /changes files/);
  assert.match(write.reason, /"ask" or "auto"/);

  const execute = decidePermission("read-only", "run_command", "execute", NONE);
  assert.ok(execute.action === "deny");
  assert.match(execute.reason, /run_command/);
  assert.match(execute.reason, /runs commands/);

  const external = decidePermission("read-only", "mcp__files__write", "external", NONE);
  assert.ok(external.action === "deny");
  assert.match(external.reason, /mcp__files__write/);
  assert.match(external.reason, /not marked read-only/);
});

Deno.test("decidePermission() in ask mode follows a remembered allow_always", () => {
  const grants: PermissionGrants = new Map([["write_file", "allow_always"]]);
  assert.deepEqual(decidePermission("ask", "write_file", "write", grants), { action: "allow" });
  // Grants are per tool name.
  assert.deepEqual(decidePermission("ask", "edit_file", "write", grants), { action: "ask" });
  assert.deepEqual(decidePermission("ask", "run_command", "execute", grants), { action: "ask" });
});

Deno.test("decidePermission() in ask mode follows a remembered reject_always", () => {
  const grants: PermissionGrants = new Map([["run_command", "reject_always"]]);
  const decision = decidePermission("ask", "run_command", "execute", grants);
  assert.ok(decision.action === "deny");
  assert.match(decision.reason, /run_command/);
  assert.match(decision.reason, /rest of this session/);
  assert.deepEqual(decidePermission("ask", "write_file", "write", grants), { action: "ask" });
});

Deno.test("decidePermission() lets the mode win over remembered grants", () => {
  const allowed: PermissionGrants = new Map([["write_file", "allow_always"]]);
  const rejected: PermissionGrants = new Map([
    ["write_file", "reject_always"],
    ["read_file", "reject_always"],
  ]);
  // read-only refuses even a tool the user allowed always.
  assert.equal(decidePermission("read-only", "write_file", "write", allowed).action, "deny");
  // auto runs everything, and reading always runs.
  assert.equal(decidePermission("auto", "write_file", "write", rejected).action, "allow");
  for (const mode of PERMISSION_MODES) {
    assert.equal(decidePermission(mode, "read_file", "read", rejected).action, "allow", mode);
  }
});
