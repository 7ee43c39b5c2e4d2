import assert from "node:assert/strict";
import {
  defineTool,
  type ObjectSchema,
  type Tool,
  type ToolContext,
  type ToolResult,
} from "../../src/tools/tool.ts";

const schema: ObjectSchema = {
  type: "object",
  properties: {
    word: { type: "string", minLength: 1, description: "A word." },
    times: { type: "integer", minimum: 1, description: "How often." },
  },
  required: ["word"],
  additionalProperties: false,
};

interface Input {
  readonly word: string;
  readonly times?: number | null;
}

/** A context with only a signal: the tools below touch nothing else. */
function contextWith(signal: AbortSignal): ToolContext {
  return { signal } as ToolContext;
}

/** A tool that repeats its word, recording the steps of each call in `steps`. */
function repeatTool(steps: string[]): Tool {
  return defineTool<Input, Input & { readonly prepared: true }>({
    name: "repeat",
    description: "Repeats a word.",
    schema,
    kind: "other",
    effect: "read",
    title: (input) => typeof input === "object" && input !== null ? "Repeat" : "Repeat?",
    locations: (_input, cwd) => [{ path: cwd }],
    prepare(input) {
      steps.push("prepare");
      if (input.word === "no") return 'Invalid input: the word may not be "no"';
      return Promise.resolve({ ...input, prepared: true as const });
    },
    run(input): Promise<ToolResult> {
      steps.push("run");
      assert.equal(input.prepared, true);
      return Promise.resolve({ content: input.word.repeat(input.times ?? 1), isError: false });
    },
  });
}

Deno.test("defineTool() makes a tool of the definition's face", () => {
  const tool = repeatTool([]);
  assert.deepEqual(Object.keys(tool), [
    "name",
    "description",
    "inputSchema",
    "kind",
    "effect",
    "title",
    "locations",
    "execute",
  ]);
  assert.equal(tool.name, "repeat");
  assert.equal(tool.inputSchema, schema);
  assert.equal(tool.title(null), "Repeat?");
  assert.deepEqual(tool.locations?.({}, "/w"), [{ path: "/w" }]);
  const bare = defineTool<Input>({
    name: "bare",
    description: "No locations.",
    schema,
    kind: "other",
    effect: "read",
    title: () => "Bare",
    run: () => Promise.resolve({ content: "", isError: false }),
  });
  assert.equal("locations" in bare, false);
});

Deno.test("defineTool() checks, prepares, checks for cancellation, then runs", async () => {
  const steps: string[] = [];
  const tool = repeatTool(steps);
  const live = contextWith(new AbortController().signal);
  assert.deepEqual(await tool.execute({ word: "ab", times: 2 }, live), {
    content: "abab",
    isError: false,
  });
  assert.deepEqual(steps, ["prepare", "run"]);
});

Deno.test("defineTool() answers an invalid input before it prepares anything", async () => {
  const steps: string[] = [];
  const tool = repeatTool(steps);
  const live = contextWith(new AbortController().signal);
  assert.deepEqual(await tool.execute({ word: "ab", extra: 1 }, live), {
    content: 'Invalid input: unknown field "extra" (expected: word, times)',
    isError: true,
  });
  assert.deepEqual(await tool.execute("ab", live), {
    content: "Invalid input: expected an object with the fields word, times (got a string)",
    isError: true,
  });
  assert.deepEqual(steps, []);
});

Deno.test("defineTool() refuses what prepare refuses, even on a cancelled call; else a cancelled call is cancelled", async () => {
  const steps: string[] = [];
  const tool = repeatTool(steps);
  const cancelled = contextWith(AbortSignal.abort());
  assert.deepEqual(await tool.execute({ word: "no" }, cancelled), {
    content: 'Invalid input: the word may not be "no"',
    isError: true,
  });
  assert.deepEqual(await tool.execute({ word: "ab" }, cancelled), {
    content: "Cancelled: the tool call was aborted",
    isError: true,
  });
  assert.deepEqual(steps, ["prepare", "prepare"]);
});
