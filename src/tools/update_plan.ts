/**
 * The `update_plan` tool: the model's task list, shown to the client as ACP `plan` updates.
 *
 * @module
 */
import { quote } from "./_text.ts";
import type { PlanEntry, Tool, ToolResult } from "./tool.ts";

/** Most entries one plan holds. */
export const PLAN_MAX_ENTRIES = 100;

/** Most characters of one entry's `content`. */
export const PLAN_MAX_CONTENT_LENGTH = 2000;

const STATUSES: readonly PlanEntry["status"][] = ["pending", "in_progress", "completed"];
const PRIORITIES: readonly PlanEntry["priority"][] = ["high", "medium", "low"];
const ENTRY_FIELDS = ["content", "status", "priority"];

const schema = {
  type: "object",
  properties: {
    entries: {
      type: "array",
      maxItems: PLAN_MAX_ENTRIES,
      description:
        "The whole plan, in order: every entry with its current status (an empty list clears the plan).",
      items: {
        type: "object",
        properties: {
          content: {
            type: "string",
            minLength: 1,
            maxLength: PLAN_MAX_CONTENT_LENGTH,
            description: "The task, in one short imperative sentence.",
          },
          status: {
            type: "string",
            enum: STATUSES,
            description: "pending (not started), in_progress (being worked on) or completed.",
          },
          priority: {
            type: "string",
            enum: PRIORITIES,
            description: "high, medium or low (default medium).",
          },
        },
        required: ["content", "status"],
        additionalProperties: false,
      },
    },
  },
  required: ["entries"],
  additionalProperties: false,
} as const;

/**
 * `update_plan {entries: [{content, status, priority?}]}`: replaces the model's plan with the
 * given list (an empty list clears it). It changes nothing in the workspace, so it never asks. The
 * result tells the model the counts by status and carries the list as `plan`, which the session
 * sends to the client as a `plan` update and records in the log. At most
 * {@link PLAN_MAX_ENTRIES} entries of at most {@link PLAN_MAX_CONTENT_LENGTH} characters each.
 *
 * @example Calling the tool
 * ```ts
 * import assert from "node:assert/strict";
 * import { updatePlanTool } from "./update_plan.ts";
 * import type { ToolContext } from "./tool.ts";
 * const result = await updatePlanTool.execute({
 *   entries: [
 *     { content: "Read the failing test", status: "completed" },
 *     { content: "Fix the parser", status: "in_progress", priority: "high" },
 *   ],
 * }, {} as ToolContext);
 * assert.equal(result.content, "Plan updated: 2 entries (1 completed, 1 in progress, 0 pending).");
 * assert.deepEqual(result.plan?.[0], {
 *   content: "Read the failing test", status: "completed", priority: "medium",
 * });
 * ```
 */
export const updatePlanTool: Tool = {
  name: "update_plan",
  description: [
    "Keep a task list for multi-step work; the user sees it as your plan.",
    "Use it when the work takes several steps or the user asks for several things; skip it for a single quick step.",
    "Each call replaces the whole list: send every entry with its current status, in order (an empty list clears the plan).",
    "Keep exactly one entry in_progress while you work, mark each entry completed as soon as it is done, and add entries as you discover them.",
    "Priority is high, medium (the default) or low.",
    `At most ${PLAN_MAX_ENTRIES} entries of at most ${PLAN_MAX_CONTENT_LENGTH} characters each.`,
  ].join(" "),
  inputSchema: schema,
  kind: "think",
  effect: "read",
  title(input: unknown): string {
    const entries = typeof input === "object" && input !== null
      ? (input as { entries?: unknown }).entries
      : undefined;
    if (!Array.isArray(entries)) return "Update plan";
    if (entries.length === 0) return "Clear plan";
    return `Update plan (${entries.length} ${entries.length === 1 ? "entry" : "entries"})`;
  },
  execute(input: unknown): Promise<ToolResult> {
    const parsed = parsePlan(input);
    if (typeof parsed === "string") return Promise.resolve({ content: parsed, isError: true });
    return Promise.resolve({ content: summary(parsed), isError: false, plan: parsed });
  },
};

/** The plan of a valid input, or the message naming the first bad field. */
function parsePlan(input: unknown): PlanEntry[] | string {
  if (!isRecord(input)) {
    return `Invalid input: expected an object with the field entries (got ${typeName(input)})`;
  }
  for (const name of Object.keys(input)) {
    if (name !== "entries") {
      return `Invalid input: unknown field ${quote(name)} (expected: entries)`;
    }
  }
  const entries = input.entries;
  if (entries === undefined || entries === null) return 'Invalid input: "entries" is required';
  if (!Array.isArray(entries)) {
    return `Invalid input: "entries" must be an array of {content, status, priority?} (got ${
      typeName(entries)
    })`;
  }
  if (entries.length > PLAN_MAX_ENTRIES) {
    return `Invalid input: "entries" must have at most ${PLAN_MAX_ENTRIES} entries (got ${entries.length})`;
  }
  const plan: PlanEntry[] = [];
  for (const [index, entry] of entries.entries()) {
    const parsed = parseEntry(entry, `entries[${index}]`);
    if (typeof parsed === "string") return `Invalid input: ${parsed}`;
    plan.push(parsed);
  }
  return plan;
}

function parseEntry(entry: unknown, at: string): PlanEntry | string {
  if (!isRecord(entry)) {
    return `${quote(at)} must be an object {content, status, priority?} (got ${typeName(entry)})`;
  }
  for (const name of Object.keys(entry)) {
    if (!ENTRY_FIELDS.includes(name)) {
      return `unknown field ${quote(`${at}.${name}`)} (expected: ${ENTRY_FIELDS.join(", ")})`;
    }
  }
  const { content, status, priority } = entry;
  if (content === undefined || content === null) return `${quote(`${at}.content`)} is required`;
  if (typeof content !== "string") {
    return `${quote(`${at}.content`)} must be a string (got ${typeName(content)})`;
  }
  if (content.trim() === "") return `${quote(`${at}.content`)} must not be empty`;
  if (content.length > PLAN_MAX_CONTENT_LENGTH) {
    return `${
      quote(`${at}.content`)
    } must have at most ${PLAN_MAX_CONTENT_LENGTH} characters (got ${content.length})`;
  }
  if (status === undefined || status === null) return `${quote(`${at}.status`)} is required`;
  if (!STATUSES.includes(status as PlanEntry["status"])) {
    return `${quote(`${at}.status`)} must be one of ${oneOf(STATUSES)} (got ${shown(status)})`;
  }
  if (
    priority !== undefined && priority !== null &&
    !PRIORITIES.includes(priority as PlanEntry["priority"])
  ) {
    return `${quote(`${at}.priority`)} must be one of ${oneOf(PRIORITIES)} (got ${
      shown(priority)
    })`;
  }
  return {
    content,
    status: status as PlanEntry["status"],
    priority: (priority ?? "medium") as PlanEntry["priority"],
  };
}

/** What the model is told: the counts by status, and a nudge when several entries are in progress. */
function summary(plan: readonly PlanEntry[]): string {
  if (plan.length === 0) return "Plan cleared.";
  const count = (status: PlanEntry["status"]): number =>
    plan.filter((entry) => entry.status === status).length;
  const running = count("in_progress");
  const size = `${plan.length} ${plan.length === 1 ? "entry" : "entries"}`;
  const text = `Plan updated: ${size} (${count("completed")} completed, ${running} in progress, ${
    count("pending")
  } pending).`;
  return running > 1 ? `${text} Keep exactly one entry in progress.` : text;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function oneOf(values: readonly string[]): string {
  return values.map((value) => quote(value)).join(", ");
}

function shown(value: unknown): string {
  return typeof value === "string" ? quote(value) : typeName(value);
}

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}
