import assert from "node:assert/strict";
import { builtinTools } from "../../src/tools/builtin_tools.ts";

const WEIRD_INPUTS: readonly unknown[] = [
  undefined,
  null,
  0,
  "text",
  [],
  {},
  { path: 1, pattern: {}, command: [] },
  { path: "\0", cwd: "\0" },
  Object.create(null),
];

Deno.test("builtinTools() lists the eight tools in order", () => {
  assert.deepEqual(builtinTools().map((tool) => [tool.name, tool.kind, tool.effect]), [
    ["read_file", "read", "read"],
    ["write_file", "edit", "write"],
    ["edit_file", "edit", "write"],
    ["list_directory", "read", "read"],
    ["find_files", "search", "read"],
    ["search_text", "search", "read"],
    ["run_command", "execute", "execute"],
    ["update_plan", "think", "read"],
  ]);
  assert.equal(builtinTools(), builtinTools());
  assert.ok(Object.isFrozen(builtinTools()));
});

Deno.test("builtinTools() have closed object schemas whose required fields exist", () => {
  for (const tool of builtinTools()) {
    const schema = tool.inputSchema as {
      type: string;
      properties: Record<string, { type: string; description: string }>;
      required: string[];
      additionalProperties: boolean;
    };
    assert.equal(schema.type, "object", tool.name);
    assert.equal(schema.additionalProperties, false, tool.name);
    assert.ok(schema.required.length > 0, tool.name);
    for (const name of schema.required) {
      assert.ok(name in schema.properties, `${tool.name}.${name}`);
    }
    for (const [name, property] of Object.entries(schema.properties)) {
      assert.match(name, /^[a-z_]+$/, `${tool.name}.${name}`);
      assert.ok(
        ["string", "integer", "boolean", "array"].includes(property.type),
        `${tool.name}.${name}`,
      );
      assert.ok(property.description.length > 10, `${tool.name}.${name}`);
    }
    assert.ok(tool.description.length > 80, tool.name);
    assert.doesNotThrow(() => JSON.stringify(schema));
  }
});

Deno.test("builtinTools() titles and locations never throw on bad input", () => {
  for (const tool of builtinTools()) {
    for (const input of WEIRD_INPUTS) {
      const title = tool.title(input);
      assert.equal(typeof title, "string");
      assert.ok(title.length > 0);
      const locations = tool.locations?.(input, "/w") ?? [];
      for (const location of locations) assert.ok(location.path.startsWith("/"));
    }
  }
});

Deno.test("builtinTools() execute returns an error result for bad input without throwing", async () => {
  const signal = new AbortController().signal;
  // No host or workspace: validation must fail before either is touched.
  const context = {
    sessionId: "s",
    cwd: "/nonexistent",
    roots: ["/nonexistent"],
    signal,
  } as unknown as Parameters<ReturnType<typeof builtinTools>[number]["execute"]>[1];
  for (const tool of builtinTools()) {
    for (const input of [undefined, null, 1, "x", [], { unknown: true }]) {
      const result = await tool.execute(input, context);
      assert.equal(result.isError, true, `${tool.name} ${JSON.stringify(input)}`);
      assert.match(result.content, /^Invalid input: /);
    }
  }
});
