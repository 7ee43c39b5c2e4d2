import assert from "node:assert/strict";
import { askUserTool, NOBODY_TO_ASK } from "../../src/tools/ask_user.ts";
import type { ElicitationAnswer, ElicitationRequest } from "../../src/tools/elicitation.ts";
import type { ToolContext } from "../../src/tools/tool.ts";

/** The form a request asked. */
function form(request: ElicitationRequest | undefined): unknown {
  return request?.mode === "form" ? request.requestedSchema : undefined;
}

/** A context whose user answers `answer`; the requests asked land in `asked`. */
function asking(answer: ElicitationAnswer, asked: ElicitationRequest[] = []): ToolContext {
  return {
    signal: new AbortController().signal,
    elicit: (request: ElicitationRequest) => {
      asked.push(request);
      return Promise.resolve(answer);
    },
  } as unknown as ToolContext;
}

Deno.test("ask_user: a free-text question asks for one required text field", async () => {
  const asked: ElicitationRequest[] = [];
  const result = await askUserTool.execute(
    { question: "What is the ticket number?" },
    asking({ action: "accept", content: { answer: "ACP-42" } }, asked),
  );
  assert.deepEqual(asked, [{
    mode: "form",
    message: "What is the ticket number?",
    requestedSchema: {
      type: "object",
      properties: { answer: { type: "string", title: "Answer", minLength: 1 } },
      required: ["answer"],
    },
  }]);
  assert.deepEqual(result, {
    content: 'The user answered: "ACP-42"',
    isError: false,
    rawOutput: { action: "accept", content: { answer: "ACP-42" } },
  });
});

Deno.test("ask_user: options are a choice of one, several with multiple, and an own answer with allow_other", async () => {
  const asked: ElicitationRequest[] = [];
  await askUserTool.execute(
    { question: "Which?", options: ["A", "B"] },
    asking({ action: "accept", content: { answer: "B" } }, asked),
  );
  const several = await askUserTool.execute(
    { question: "Which ones?", options: ["A", "B"], multiple: true, allow_other: true },
    asking({ action: "accept", content: { answer: ["A", "B"], other: " C too " } }, asked),
  );
  const own = await askUserTool.execute(
    { question: "Which?", options: ["A"], allow_other: true },
    asking({ action: "accept", content: { other: "Z" } }, asked),
  );
  const nothing = await askUserTool.execute(
    { question: "Which?", options: ["A"], allow_other: true },
    asking({ action: "accept", content: {} }, asked),
  );
  assert.deepEqual(asked.slice(0, 3).map(form), [
    {
      type: "object",
      properties: { answer: { type: "string", title: "Answer", enum: ["A", "B"] } },
      required: ["answer"],
    },
    {
      type: "object",
      properties: {
        answer: { type: "array", title: "Answer", items: { type: "string", enum: ["A", "B"] } },
        other: { type: "string", title: "Other", description: "An answer of your own" },
      },
      required: [],
    },
    {
      type: "object",
      properties: {
        answer: { type: "string", title: "Answer", enum: ["A"] },
        other: { type: "string", title: "Other", description: "An answer of your own" },
      },
      required: [],
    },
  ]);
  assert.equal(several.content, 'The user chose: "A", "B" and wrote: "C too"');
  assert.equal(own.content, 'The user wrote: "Z"');
  assert.equal(nothing.content, "The user submitted the question without choosing an option.");
  const multipleOnly = await askUserTool.execute(
    { question: "Which ones?", options: ["A"], multiple: true },
    asking({ action: "accept", content: { answer: ["A"] } }, asked),
  );
  assert.equal(multipleOnly.content, 'The user chose: "A"');
  assert.deepEqual(form(asked.at(-1)), {
    type: "object",
    properties: {
      answer: {
        type: "array",
        title: "Answer",
        items: { type: "string", enum: ["A"] },
        minItems: 1,
      },
    },
    required: ["answer"],
  });
});

Deno.test("ask_user: a decline and no answer are told to the model", async () => {
  const declined = await askUserTool.execute({ question: "Go?" }, asking({ action: "decline" }));
  assert.deepEqual(declined, {
    content: "The user declined to answer.",
    isError: false,
    rawOutput: { action: "decline" },
  });
  const cancelled = await askUserTool.execute({ question: "Go?" }, asking({ action: "cancel" }));
  assert.deepEqual(cancelled, {
    content: "No answer: the question was dismissed, timed out or cancelled.",
    isError: true,
    rawOutput: { action: "cancel" },
  });
});

Deno.test("ask_user: where nobody can answer, the call is refused with a clear result", async () => {
  const context = { signal: new AbortController().signal } as ToolContext;
  assert.deepEqual(await askUserTool.execute({ question: "Go?" }, context), {
    content: NOBODY_TO_ASK,
    isError: true,
  });
  assert.match(NOBODY_TO_ASK, /nobody can answer/);
});

Deno.test("ask_user: an invalid input names the field, and nothing is asked", async () => {
  const asked: ElicitationRequest[] = [];
  const context = asking({ action: "decline" }, asked);
  const cases: ReadonlyArray<readonly [unknown, string]> = [
    [null, "Invalid input: expected an object with the field question"],
    [{}, 'Invalid input: "question" must be a non-empty string'],
    [{ question: "  " }, 'Invalid input: "question" must be a non-empty string'],
    [
      { question: "x".repeat(2001) },
      'Invalid input: "question" must have at most 2000 characters (got 2001)',
    ],
    [
      { question: "q", extra: 1 },
      'Invalid input: unknown field "extra" (expected: question, options, multiple, allow_other)',
    ],
    [{ question: "q", options: "A" }, 'Invalid input: "options" must be an array of strings'],
    [
      { question: "q", options: ["A", 2] },
      'Invalid input: "options[1]" must be a non-empty string',
    ],
    [{ question: "q", options: ["A", "A"] }, 'Invalid input: "options[1]" repeats "A"'],
    [
      { question: "q", options: ["x".repeat(201)] },
      'Invalid input: "options[0]" must have at most 200 characters',
    ],
    [
      { question: "q", options: Array.from({ length: 21 }, (_, i) => `o${i}`) },
      'Invalid input: "options" must have at most 20 entries (got 21)',
    ],
    [{ question: "q", multiple: "yes" }, 'Invalid input: "multiple" must be a boolean'],
  ];
  for (const [input, message] of cases) {
    assert.deepEqual(await askUserTool.execute(input, context), {
      content: message,
      isError: true,
    });
  }
  assert.deepEqual(asked, []);
});

Deno.test("ask_user: its title and face", () => {
  assert.equal(
    askUserTool.title({ question: "Which database?\nMore text" }),
    "Ask: Which database?",
  );
  assert.equal(askUserTool.title({}), "Ask the user");
  assert.equal(askUserTool.title({ question: "q".repeat(100) }), `Ask: ${"q".repeat(80)}…`);
  assert.equal(askUserTool.effect, "read", "asking changes nothing: no permission asked");
  assert.equal(askUserTool.name, "ask_user");
});
