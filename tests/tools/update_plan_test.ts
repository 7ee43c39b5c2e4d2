import assert from "node:assert/strict";
import type { ToolContext } from "../../src/tools/tool.ts";
import {
  PLAN_MAX_CONTENT_LENGTH,
  PLAN_MAX_ENTRIES,
  updatePlanTool,
} from "../../src/tools/update_plan.ts";

// The tool touches nothing: no workspace, no host.
const context = { signal: new AbortController().signal } as unknown as ToolContext;

function run(input: unknown): ReturnType<typeof updatePlanTool.execute> {
  return updatePlanTool.execute(input, context);
}

Deno.test("update_plan replaces the plan, defaults the priority and counts by status", async () => {
  const result = await run({
    entries: [
      { content: "Read the failing test", status: "completed", priority: "low" },
      { content: "Fix the parser", status: "in_progress", priority: "high" },
      { content: "Run the suite", status: "pending", priority: null },
      { content: "Update the changelog", status: "pending" },
    ],
  });
  assert.deepEqual(result, {
    content: "Plan updated: 4 entries (1 completed, 1 in progress, 2 pending).",
    isError: false,
    plan: [
      { content: "Read the failing test", status: "completed", priority: "low" },
      { content: "Fix the parser", status: "in_progress", priority: "high" },
      { content: "Run the suite", status: "pending", priority: "medium" },
      { content: "Update the changelog", status: "pending", priority: "medium" },
    ],
  });
});

Deno.test("update_plan clears the plan with an empty list", async () => {
  assert.deepEqual(await run({ entries: [] }), {
    content: "Plan cleared.",
    isError: false,
    plan: [],
  });
});

Deno.test("update_plan reminds the model to keep one entry in progress", async () => {
  const result = await run({
    entries: [
      { content: "One", status: "in_progress" },
      { content: "Two", status: "in_progress" },
    ],
  });
  assert.equal(
    result.content,
    "Plan updated: 2 entries (0 completed, 2 in progress, 0 pending). " +
      "Keep exactly one entry in progress.",
  );
  assert.equal(result.isError, false);
});

Deno.test("update_plan refuses bad input naming the field and the expectation", async () => {
  const ok = { content: "Fix it", status: "pending" };
  const cases: Array<[unknown, string]> = [
    [null, "Invalid input: expected an object with the field entries (got null)"],
    [[], "Invalid input: expected an object with the field entries (got an array)"],
    [{}, 'Invalid input: "entries" is required'],
    [{ entries: [], todos: [] }, 'Invalid input: unknown field "todos" (expected: entries)'],
    [
      { entries: "write tests" },
      'Invalid input: "entries" must be an array of {content, status, priority?} (got a string)',
    ],
    [
      { entries: [ok, "x"] },
      'Invalid input: "entries[1]" must be an object {content, status, priority?} (got a string)',
    ],
    [{ entries: [{ status: "pending" }] }, 'Invalid input: "entries[0].content" is required'],
    [
      { entries: [{ content: 3, status: "pending" }] },
      'Invalid input: "entries[0].content" must be a string (got a number)',
    ],
    [
      { entries: [{ content: "  ", status: "pending" }] },
      'Invalid input: "entries[0].content" must not be empty',
    ],
    [{ entries: [{ content: "Fix it" }] }, 'Invalid input: "entries[0].status" is required'],
    [
      { entries: [ok, { content: "Fix it", status: "done" }] },
      'Invalid input: "entries[1].status" must be one of "pending", "in_progress", "completed" (got "done")',
    ],
    [
      { entries: [{ ...ok, priority: 1 }] },
      'Invalid input: "entries[0].priority" must be one of "high", "medium", "low" (got a number)',
    ],
    [
      { entries: [{ ...ok, id: "1" }] },
      'Invalid input: unknown field "entries[0].id" (expected: content, status, priority)',
    ],
  ];
  for (const [input, message] of cases) {
    assert.deepEqual(await run(input), { content: message, isError: true }, JSON.stringify(input));
  }
});

Deno.test("update_plan bounds the number of entries and the length of each", async () => {
  const entry = (content: string) => ({ content, status: "pending" });
  const full = await run({ entries: Array.from({ length: PLAN_MAX_ENTRIES }, () => entry("x")) });
  assert.equal(full.isError, false);
  assert.equal(full.plan?.length, PLAN_MAX_ENTRIES);
  assert.deepEqual(
    await run({ entries: Array.from({ length: PLAN_MAX_ENTRIES + 1 }, () => entry("x")) }),
    {
      content: `Invalid input: "entries" must have at most ${PLAN_MAX_ENTRIES} entries (got ${
        PLAN_MAX_ENTRIES + 1
      })`,
      isError: true,
    },
  );
  const longest = await run({ entries: [entry("y".repeat(PLAN_MAX_CONTENT_LENGTH))] });
  assert.equal(longest.isError, false);
  assert.deepEqual(await run({ entries: [entry("y".repeat(PLAN_MAX_CONTENT_LENGTH + 1))] }), {
    content: `Invalid input: "entries[0].content" must have at most ${PLAN_MAX_CONTENT_LENGTH} ` +
      `characters (got ${PLAN_MAX_CONTENT_LENGTH + 1})`,
    isError: true,
  });
});

Deno.test("update_plan is a think tool that never asks, titled by its size", () => {
  assert.equal(updatePlanTool.kind, "think");
  assert.equal(updatePlanTool.effect, "read");
  assert.equal(updatePlanTool.title({ entries: [{}, {}] }), "Update plan (2 entries)");
  assert.equal(updatePlanTool.title({ entries: [{}] }), "Update plan (1 entry)");
  assert.equal(updatePlanTool.title({ entries: [] }), "Clear plan");
  assert.equal(updatePlanTool.title("nonsense"), "Update plan");
  assert.equal(updatePlanTool.locations, undefined);
  const schema = updatePlanTool.inputSchema as {
    properties: { entries: { maxItems: number; items: { required: string[] } } };
  };
  assert.equal(schema.properties.entries.maxItems, PLAN_MAX_ENTRIES);
  assert.deepEqual(schema.properties.entries.items.required, ["content", "status"]);
  assert.match(updatePlanTool.description, /exactly one entry in_progress/);
  assert.match(updatePlanTool.description, new RegExp(`At most ${PLAN_MAX_ENTRIES} entries`));
});
