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

function gate(answers: Array<PermissionAnswer | "cancelled">) {
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
