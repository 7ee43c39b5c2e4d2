import assert from "node:assert/strict";
import { createLogger } from "../../src/log/logger.ts";
import { builtinTools } from "../../src/tools/builtin_tools.ts";
import type { Tool } from "../../src/tools/tool.ts";
import { BUILTIN_SOURCE, mcpToolName, ToolSet } from "../../src/tools/tool_set.ts";

/** A tool that does nothing, named as the test needs. */
function tool(name: string, description = `The ${name} tool`): Tool {
  return {
    name,
    description,
    inputSchema: { type: "object" },
    kind: "other",
    effect: "read",
    title: () => name,
    execute: () => Promise.resolve({ content: name, isError: false }),
  };
}

Deno.test("ToolSet.of() holds the built-in tools in their order", () => {
  const tools = ToolSet.of(builtinTools());
  assert.deepEqual(tools.list(), builtinTools());
  assert.equal(tools.size, builtinTools().length);
  assert.equal(tools.sourceOf("run_command"), BUILTIN_SOURCE);
});

Deno.test("ToolSet looks tools up by exact, case-sensitive name", () => {
  const tools = ToolSet.of([tool("read"), tool("Read"), tool("read_file")]);
  assert.equal(tools.get("read")?.description, "The read tool");
  assert.equal(tools.get("Read")?.description, "The Read tool");
  assert.equal(tools.get("READ"), undefined);
  assert.equal(tools.get("rea"), undefined);
  assert.equal(tools.get(" read"), undefined);
  assert.equal(tools.get("toString"), undefined);
});

Deno.test("ToolSet keeps the built-in tool when a later source brings the same name, and warns", () => {
  const lines: string[] = [];
  const tools = ToolSet.of(builtinTools(), {
    logger: createLogger("warn", (line) => lines.push(line)),
    logFields: { sessionId: "s1" },
  });
  const refused = tools.add({
    id: "mcp:files",
    tools: [tool("read_file", "An impostor"), tool("mcp__files__stat")],
  });
  assert.deepEqual(refused, [
    { source: "mcp:files", name: "read_file", reason: "duplicate", holder: BUILTIN_SOURCE },
  ]);
  assert.equal(tools.get("read_file"), builtinTools()[0]);
  assert.equal(tools.get("mcp__files__stat")?.description, "The mcp__files__stat tool");
  assert.deepEqual(tools.list().map((t) => t.name).slice(-2), [
    builtinTools().at(-1)?.name,
    "mcp__files__stat",
  ]);
  assert.deepEqual(lines, [
    'acp-harness warn: tool refused {"sessionId":"s1","source":"mcp:files","tool":"read_file",' +
    '"reason":"duplicate","holder":"builtin"}\n',
  ]);
});

Deno.test("ToolSet keeps the first of two tools with one name within a source", () => {
  const tools = new ToolSet();
  const refused = tools.add({ id: "mcp:a", tools: [tool("x", "first"), tool("x", "second")] });
  assert.deepEqual(refused, [{ source: "mcp:a", name: "x", reason: "duplicate", holder: "mcp:a" }]);
  assert.equal(tools.get("x")?.description, "first");
  assert.equal(tools.size, 1);
});

Deno.test("ToolSet refuses names a provider would reject", () => {
  const tools = new ToolSet();
  const refused = tools.add({
    id: "mcp:odd",
    tools: [tool("has space"), tool("dotted.name"), tool(""), tool("a".repeat(65)), tool("ok-1_A")],
  });
  assert.deepEqual(refused.map((r) => [r.name.slice(0, 8), r.reason]), [
    ["has spac", "invalid-name"],
    ["dotted.n", "invalid-name"],
    ["", "invalid-name"],
    ["aaaaaaaa", "invalid-name"],
  ]);
  assert.deepEqual(tools.list().map((t) => t.name), ["ok-1_A"]);
});

Deno.test("ToolSet.remove() drops a source's tools and frees their names", () => {
  const tools = ToolSet.of([tool("a")]);
  tools.add({ id: "mcp:one", tools: [tool("b"), tool("c")] });
  const before = tools.list();
  assert.equal(tools.list(), before, "the list is reused while the set does not change");
  assert.ok(Object.isFrozen(before));
  assert.equal(tools.remove("mcp:one"), 2);
  assert.equal(tools.remove("mcp:none"), 0);
  assert.deepEqual(tools.list().map((t) => t.name), ["a"]);
  assert.deepEqual(tools.add({ id: "mcp:two", tools: [tool("b")] }), []);
  assert.equal(tools.sourceOf("b"), "mcp:two");
});

Deno.test("ToolSet holds many tools from many sources", () => {
  const tools = ToolSet.of(builtinTools());
  for (let server = 0; server < 50; server++) {
    const names = Array.from({ length: 100 }, (_, index) => mcpToolName(`s${server}`, `t${index}`));
    assert.deepEqual(tools.add({ id: `mcp:s${server}`, tools: names.map((n) => tool(n)) }), []);
  }
  const builtins = builtinTools().length;
  assert.equal(tools.size, builtins + 5000);
  assert.equal(tools.list().length, builtins + 5000);
  assert.equal(tools.list()[builtins]?.name, "mcp__s0__t0");
  assert.equal(tools.list().at(-1)?.name, "mcp__s49__t99");
  for (let server = 0; server < 50; server++) {
    for (let index = 0; index < 100; index++) {
      const name = `mcp__s${server}__t${index}`;
      assert.equal(tools.get(name)?.name, name);
      assert.equal(tools.sourceOf(name), `mcp:s${server}`);
    }
  }
});

Deno.test("mcpToolName() namespaces and cleans the name", () => {
  assert.equal(mcpToolName("github", "create_issue"), "mcp__github__create_issue");
  assert.equal(mcpToolName("my server", "a.b/c"), "mcp__my_server__a_b_c");
  assert.equal(mcpToolName("s", "x".repeat(100)).length, 64);
});
