/**
 * The permission glue: policy first, then the user; "always" answers remembered; all logged.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { AuthorizeRequest } from "../../src/permission/authorization.ts";
import type { PermissionAnswer } from "../../src/permission/policy.ts";
import { PermissionGate, type PermissionQuestion } from "../../src/permission/gate.ts";
import type { StoredEvent } from "../../src/store/session_store.ts";
import type { ToolEffect } from "../../src/permission/policy.ts";
import type { Tool } from "../../src/tools/tool.ts";
import { captureLogger } from "../session/_fakes.ts";
import { parseRule } from "../../src/permission/rule_syntax.ts";
import type { PermissionRules } from "../../src/permission/rules.ts";

function tool(name: string, effect: ToolEffect): Tool {
  return {
    name,
    description: name,
    inputSchema: {},
    kind: effect === "read" ? "read" : "edit",
    effect,
    title: () => name,
    execute: () => Promise.reject(new Error("not run here")),
  };
}

function request(t: Tool, toolCallId = "c1"): AuthorizeRequest {
  return {
    tool: t,
    toolCallId,
    title: `Run ${t.name}`,
    rawInput: { x: 1 },
    locations: [],
    signal: new AbortController().signal,
  };
}

function gate(answers: Array<PermissionAnswer | "cancelled">, rules?: PermissionRules) {
  const questions: PermissionQuestion[] = [];
  const records: StoredEvent[] = [];
  const { logger, lines } = captureLogger();
  const grants = new Map<string, "allow_always" | "reject_always">();
  const permissions = new PermissionGate({
    sessionId: "s1",
    ask: (question) => {
      questions.push(question);
      return Promise.resolve(answers.shift() ?? "reject_once");
    },
    grants,
    output: { record: (events) => records.push(...events) },
    logger,
    ...(rules ? { rules, cwd: "/w", roots: ["/w"] } : {}),
  });
  return { permissions, questions, records, lines, grants };
}

const write = tool("write_file", "write");
const read = tool("read_file", "read");

Deno.test("PermissionGate.authorize() follows the policy without asking", async () => {
  const { permissions, questions, records, lines } = gate([]);
  assert.deepEqual(await permissions.authorize(request(read), "ask"), { allowed: true });
  assert.deepEqual(await permissions.authorize(request(write), "auto"), { allowed: true });
  const denied = await permissions.authorize(request(write), "read-only");
  assert.equal(denied.allowed, false);
  assert.equal(questions.length, 0);
  assert.equal(records.length, 0);
  assert.ok(lines.some((line) =>
    line ===
      'acp-harness debug: permission: allowed by policy {"sessionId":"s1","toolCallId":"c1","tool":"read_file","mode":"ask"}'
  ));
  assert.ok(
    lines.some((line) => line.startsWith("acp-harness info: permission: denied by policy")),
  );
});

Deno.test("PermissionGate.authorize() asks the user, records the answer and remembers 'always'", async () => {
  const { permissions, questions, records, lines, grants } = gate(["allow_always"]);
  assert.deepEqual(await permissions.authorize(request(write, "c1"), "ask"), { allowed: true });
  assert.deepEqual(questions[0], {
    sessionId: "s1",
    toolCallId: "c1",
    title: "Run write_file",
    kind: "edit",
    rawInput: { x: 1 },
    locations: [],
    signal: questions[0]?.signal,
  });
  assert.deepEqual(records, [
    { type: "permission", toolCallId: "c1", tool: "write_file", answer: "allow_always" },
  ]);
  assert.equal(grants.get("write_file"), "allow_always");
  assert.ok(lines.some((line) =>
    line.startsWith("acp-harness info: permission: answered") &&
    line.includes('"answer":"allow_always"')
  ));
  assert.deepEqual(await permissions.authorize(request(write, "c2"), "ask"), { allowed: true });
  assert.equal(questions.length, 1, "the grant is remembered");
});

Deno.test("PermissionGate.authorize() turns refusals and cancellations into reasons", async () => {
  const { permissions, grants } = gate(["reject_once", "cancelled", "reject_always"]);
  assert.deepEqual(await permissions.authorize(request(write), "ask"), {
    allowed: false,
    reason: "The user refused permission to run write_file.",
  });
  assert.deepEqual(await permissions.authorize(request(write), "ask"), {
    allowed: false,
    reason: "Permission to run write_file was not given: the request was cancelled.",
  });
  assert.deepEqual(await permissions.authorize(request(write), "ask"), {
    allowed: false,
    reason: "The user refused permission to run write_file for the rest of this session.",
  });
  assert.equal(grants.get("write_file"), "reject_always");
  const again = await permissions.authorize(request(write), "ask");
  assert.equal(again.allowed, false);
});

function ruleSet(spec: { allow?: string[]; deny?: string[]; ask?: string[] }): PermissionRules {
  return {
    allow: (spec.allow ?? []).map((text) => parseRule("allow", text)),
    deny: (spec.deny ?? []).map((text) => parseRule("deny", text)),
    ask: (spec.ask ?? []).map((text) => parseRule("ask", text)),
  };
}

function commandRequest(command: string, toolCallId = "c1"): AuthorizeRequest {
  return { ...request(tool("run_command", "execute"), toolCallId), rawInput: { command } };
}

Deno.test("PermissionGate.authorize() lets a deny rule beat auto mode, logs and records it", async () => {
  const { permissions, questions, records, lines } = gate([], ruleSet({ deny: ["write_file"] }));
  const denied = await permissions.authorize(request(write), "auto");
  assert.equal(denied.allowed, false);
  assert.match(denied.allowed ? "" : denied.reason, /permission rule --deny 'write_file'/);
  assert.equal(questions.length, 0);
  assert.deepEqual(records, [{
    type: "permission",
    toolCallId: "c1",
    tool: "write_file",
    answer: "reject_once",
    decision: "deny",
    rule: "write_file",
  }]);
  assert.ok(lines.some((line) =>
    line ===
      'acp-harness info: permission: denied by rule {"sessionId":"s1","toolCallId":"c1","tool":"write_file","mode":"auto","rule":"write_file"}'
  ));
});

Deno.test("PermissionGate.authorize() lets allow rules through read-only mode (deny by default)", async () => {
  const { permissions, records } = gate([], ruleSet({ allow: ["run_command(echo *)"] }));
  assert.deepEqual(await permissions.authorize(commandRequest("echo ok"), "read-only"), {
    allowed: true,
  });
  assert.equal(records[0]?.type === "permission" && records[0].rule, "run_command(echo *)");
  for (const command of ["echo ok && touch x", "echo ok; touch x", "echo $(touch x)"]) {
    const refused = await permissions.authorize(commandRequest(command), "read-only");
    assert.equal(refused.allowed, false, command);
    assert.match(
      refused.allowed ? "" : refused.reason,
      /read-only permission mode refused run_command.*No allow rule covers this call \(allowed: run_command\(echo \*\)\)/s,
    );
  }
  // Writes stay refused: no rule covers them.
  assert.equal((await permissions.authorize(request(write), "read-only")).allowed, false);
});

Deno.test("PermissionGate.authorize() asks for an ask rule in auto mode, and remembers nothing", async () => {
  const { permissions, questions, records, grants } = gate(
    ["allow_always", "reject_always"],
    ruleSet({ ask: ["run_command(git push*)"] }),
  );
  assert.deepEqual(await permissions.authorize(commandRequest("git push"), "auto"), {
    allowed: true,
  });
  assert.equal(questions.length, 1);
  assert.equal(grants.size, 0, "an answer to a rule's question is not remembered");
  assert.deepEqual(records[0], {
    type: "permission",
    toolCallId: "c1",
    tool: "run_command",
    answer: "allow_always",
    decision: "ask",
    rule: "run_command(git push*)",
  });
  // It asks again: the earlier "always" skipped nothing.
  assert.equal(
    (await permissions.authorize(commandRequest("git push -f", "c2"), "auto")).allowed,
    false,
  );
  assert.equal(questions.length, 2);
  // Calls no rule matches follow the mode.
  assert.deepEqual(await permissions.authorize(commandRequest("ls", "c3"), "auto"), {
    allowed: true,
  });
  assert.equal(questions.length, 2);
});

Deno.test("PermissionGate.authorize() checks rules before remembered answers", async () => {
  const { permissions, grants, questions } = gate(
    [],
    ruleSet({ deny: ["run_command(rm *)"], ask: ["write_file(src/**)"] }),
  );
  grants.set("run_command", "allow_always");
  grants.set("write_file", "allow_always");
  const denied = await permissions.authorize(commandRequest("rm -rf ~"), "ask");
  assert.equal(denied.allowed, false, "an always answer does not beat a deny rule");
  assert.equal((await permissions.authorize(commandRequest("ls"), "ask")).allowed, true);
  const asked = { ...request(write, "c4"), rawInput: { path: "src/a.ts" } };
  assert.equal((await permissions.authorize(asked, "ask")).allowed, false);
  assert.equal(questions.length, 1, "an always answer does not skip an ask rule");
  const other = { ...request(write, "c5"), rawInput: { path: "docs/a.md" } };
  assert.equal((await permissions.authorize(other, "ask")).allowed, true);
});
