/**
 * The `ask_user` tool: a structured question from the model to the user (a choice among options,
 * several options, or free text), asked through the client's elicitation form.
 *
 * @module
 */
import { quote } from "./_text.ts";
import type { ElicitationAnswer, ElicitationSchema } from "./elicitation.ts";
import type { Tool, ToolContext, ToolResult } from "./tool.ts";
import { isRecord } from "../util/json.ts";

/** Most characters of the question. */
export const ASK_USER_MAX_QUESTION = 2000;

/** Most options one question offers. */
export const ASK_USER_MAX_OPTIONS = 20;

/** Most characters of one option. */
export const ASK_USER_MAX_OPTION = 200;

/** What the model is told when nobody can answer (a client without elicitation, a headless run). */
export const NOBODY_TO_ASK =
  "Cannot ask the user: nobody can answer questions in this session (the client does not show " +
  "ACP elicitation forms, or this is a headless run). Do not ask again: decide yourself and say " +
  "what you assumed, or end your turn with the question in your answer.";

const FIELDS = ["question", "options", "multiple", "allow_other"];

const schema = {
  type: "object",
  properties: {
    question: {
      type: "string",
      minLength: 1,
      maxLength: ASK_USER_MAX_QUESTION,
      description: "The question, complete in itself: the user sees it in a dialog.",
    },
    options: {
      type: "array",
      maxItems: ASK_USER_MAX_OPTIONS,
      items: { type: "string", minLength: 1, maxLength: ASK_USER_MAX_OPTION },
      description:
        "The answers to choose from, each short and distinct. Leave out for a free-text question.",
    },
    multiple: {
      type: "boolean",
      description: "With options: the user may pick several (default false: exactly one).",
    },
    allow_other: {
      type: "boolean",
      description: "With options: the user may also write an answer of their own (default false).",
    },
  },
  required: ["question"],
  additionalProperties: false,
} as const;

/** A checked input. */
interface Question {
  readonly question: string;
  readonly options: readonly string[];
  readonly multiple: boolean;
  readonly allowOther: boolean;
}

/**
 * `ask_user {question, options?, multiple?, allow_other?}`: asks the user and waits for the
 * answer. With `options` the user picks one (or several, with `multiple`), and may write one of
 * their own with `allow_other`; without, the user writes the answer. Asked through the client's
 * ACP elicitation form (`elicitation/create`, `mode: "form"`), under the call's id, logged and
 * recorded in the session log; it changes nothing, so it never asks permission. The session offers
 * it only when the client advertised `elicitation.form`; where nobody can answer (no `elicit` in
 * the context) a call gets {@link NOBODY_TO_ASK} as its error result. The result tells the model
 * the answer, a decline or that none came, and carries `{action, content}` as `rawOutput`.
 *
 * @example Asking a client that answers
 * ```ts
 * import assert from "node:assert/strict";
 * import { askUserTool } from "./ask_user.ts";
 * import type { ToolContext } from "./tool.ts";
 * const context = {
 *   signal: new AbortController().signal,
 *   elicit: () => Promise.resolve({ action: "accept", content: { answer: "Postgres" } }),
 * } as unknown as ToolContext;
 * const result = await askUserTool.execute(
 *   { question: "Which database?", options: ["SQLite", "Postgres"] },
 *   context,
 * );
 * assert.equal(result.content, 'The user answered: "Postgres"');
 * assert.equal(result.isError, false);
 * ```
 */
export const askUserTool: Tool = {
  name: "ask_user",
  description: [
    "Ask the user a question and wait for the answer: to choose between approaches, to confirm an assumption that matters, or to get a fact only the user knows.",
    "Give options when the answers are known (the user picks one, or several with multiple; allow_other lets them write their own); leave options out for a free-text answer.",
    "Ask one clear question at a time, only when you cannot reasonably decide yourself.",
    "The user may decline or not answer: then go on with your best judgement and say what you assumed.",
  ].join(" "),
  inputSchema: schema,
  kind: "other",
  effect: "read",
  title(input: unknown): string {
    const question = isRecord(input) ? input.question : undefined;
    if (typeof question !== "string" || question.trim() === "") return "Ask the user";
    const line = question.trim().split("\n")[0] ?? "";
    return `Ask: ${line.length > 80 ? `${line.slice(0, 80)}…` : line}`;
  },
  async execute(input: unknown, context: ToolContext): Promise<ToolResult> {
    const parsed = parseQuestion(input);
    if (typeof parsed === "string") return { content: parsed, isError: true };
    if (!context.elicit) return { content: NOBODY_TO_ASK, isError: true };
    if (context.signal.aborted) return { content: "Tool call cancelled", isError: true };
    const answer = await context.elicit({
      mode: "form",
      message: parsed.question,
      requestedSchema: formOf(parsed),
    });
    return resultOf(answer, parsed);
  },
};

/** The form that asks a question. */
function formOf(question: Question): ElicitationSchema {
  const { options, multiple, allowOther } = question;
  if (options.length === 0) {
    return {
      type: "object",
      properties: { answer: { type: "string", title: "Answer", minLength: 1 } },
      required: ["answer"],
    };
  }
  const choice = multiple
    ? {
      type: "array",
      title: "Answer",
      items: { type: "string", enum: [...options] },
      ...(allowOther ? {} : { minItems: 1 }),
    }
    : { type: "string", title: "Answer", enum: [...options] };
  return {
    type: "object",
    properties: {
      answer: choice,
      ...(allowOther
        ? { other: { type: "string", title: "Other", description: "An answer of your own" } }
        : {}),
    },
    required: allowOther ? [] : ["answer"],
  };
}

/** What the model is told of the answer. */
function resultOf(answer: ElicitationAnswer, question: Question): ToolResult {
  if (answer.action === "decline") {
    return { content: "The user declined to answer.", isError: false, rawOutput: answer };
  }
  if (answer.action === "cancel") {
    return {
      content: "No answer: the question was dismissed, timed out or cancelled.",
      isError: true,
      rawOutput: answer,
    };
  }
  const content = answer.content ?? {};
  const chosen = content.answer;
  const other = typeof content.other === "string" ? content.other.trim() : "";
  const parts: string[] = [];
  if (Array.isArray(chosen) && chosen.length > 0) {
    parts.push(`The user chose: ${chosen.map((item) => quote(item)).join(", ")}`);
  } else if (typeof chosen === "string" && chosen !== "") {
    parts.push(`The user answered: ${quote(chosen)}`);
  }
  if (other !== "") {
    parts.push(`${parts.length > 0 ? "and wrote" : "The user wrote"}: ${quote(other)}`);
  }
  const text = parts.length > 0
    ? parts.join(" ")
    : question.options.length > 0
    ? "The user submitted the question without choosing an option."
    : "The user submitted an empty answer.";
  return { content: text, isError: false, rawOutput: answer };
}

/** The question of a valid input, or the message naming the first bad field. */
function parseQuestion(input: unknown): Question | string {
  if (!isRecord(input)) return "Invalid input: expected an object with the field question";
  for (const name of Object.keys(input)) {
    if (!FIELDS.includes(name)) {
      return `Invalid input: unknown field ${quote(name)} (expected: ${FIELDS.join(", ")})`;
    }
  }
  const { question, options, multiple, allow_other: allowOther } = input;
  if (typeof question !== "string" || question.trim() === "") {
    return 'Invalid input: "question" must be a non-empty string';
  }
  if (question.length > ASK_USER_MAX_QUESTION) {
    return `Invalid input: "question" must have at most ${ASK_USER_MAX_QUESTION} characters (got ${question.length})`;
  }
  const list = options ?? [];
  if (!Array.isArray(list)) return 'Invalid input: "options" must be an array of strings';
  if (list.length > ASK_USER_MAX_OPTIONS) {
    return `Invalid input: "options" must have at most ${ASK_USER_MAX_OPTIONS} entries (got ${list.length})`;
  }
  for (const [index, option] of list.entries()) {
    if (typeof option !== "string" || option.trim() === "") {
      return `Invalid input: "options[${index}]" must be a non-empty string`;
    }
    if (option.length > ASK_USER_MAX_OPTION) {
      return `Invalid input: "options[${index}]" must have at most ${ASK_USER_MAX_OPTION} characters`;
    }
    if (list.indexOf(option) !== index) {
      return `Invalid input: "options[${index}]" repeats ${quote(option)}`;
    }
  }
  for (const [name, value] of [["multiple", multiple], ["allow_other", allowOther]] as const) {
    if (value !== undefined && value !== null && typeof value !== "boolean") {
      return `Invalid input: ${quote(name)} must be a boolean`;
    }
  }
  return {
    question,
    options: list as string[],
    multiple: multiple === true,
    allowOther: allowOther === true,
  };
}
