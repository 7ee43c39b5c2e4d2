import assert from "node:assert/strict";
import type { LlmContentPart } from "../../src/llm/provider.ts";
import { invokedCommand, type SessionCommand } from "../../src/tools/session_commands.ts";

const OFFERED: readonly SessionCommand[] = [
  { name: "mcp__docs__greet", description: "Greets", hint: "name" },
  { name: "mcp__docs__review", description: "Reviews" },
];

function text(value: string): LlmContentPart[] {
  return [{ type: "text", text: value }];
}

Deno.test("invokedCommand() finds an offered command and its trimmed input", () => {
  assert.deepEqual(invokedCommand(text("/mcp__docs__greet Ada Lovelace  "), OFFERED), {
    name: "mcp__docs__greet",
    input: "Ada Lovelace",
  });
});

Deno.test("invokedCommand() allows whitespace before the slash", () => {
  assert.deepEqual(invokedCommand(text("  \n\t/mcp__docs__greet Ada"), OFFERED), {
    name: "mcp__docs__greet",
    input: "Ada",
  });
});

Deno.test("invokedCommand() takes a command without arguments", () => {
  for (const prompt of ["/mcp__docs__review", "/mcp__docs__review   ", "/mcp__docs__review\n"]) {
    assert.deepEqual(invokedCommand(text(prompt), OFFERED), {
      name: "mcp__docs__review",
      input: "",
    }, JSON.stringify(prompt));
  }
});

Deno.test("invokedCommand() keeps multi-line arguments whole", () => {
  assert.deepEqual(
    invokedCommand(text("/mcp__docs__greet\nfirst line\n\n  second line\n"), OFFERED),
    { name: "mcp__docs__greet", input: "first line\n\n  second line" },
  );
});

Deno.test("invokedCommand() takes the rest of the prompt (later parts) as no input", () => {
  const content: LlmContentPart[] = [
    { type: "text", text: "/mcp__docs__greet Ada" },
    { type: "text", text: "more" },
  ];
  assert.deepEqual(invokedCommand(content, OFFERED), { name: "mcp__docs__greet", input: "Ada" });
});

Deno.test("invokedCommand() leaves unknown commands and paths as text", () => {
  for (
    const prompt of [
      "/etc/hosts",
      "/etc/hosts is odd",
      "/mcp__docs__greet/x",
      "/mcp__docs__gree",
      "/mcp__docs__greeting Ada",
      "/MCP__DOCS__GREET Ada",
      "/unknown",
      "/ mcp__docs__greet",
      "//mcp__docs__greet",
      "/mcp__docs__greet.",
      "/mcp__docs__greet,Ada",
      "please /mcp__docs__greet Ada",
      "mcp__docs__greet Ada",
      "/",
      "",
    ]
  ) {
    assert.equal(invokedCommand(text(prompt), OFFERED), undefined, JSON.stringify(prompt));
  }
});

Deno.test("invokedCommand() needs an offered list that has the name", () => {
  assert.equal(invokedCommand(text("/mcp__docs__greet Ada"), []), undefined);
  assert.equal(invokedCommand(text("/toString"), OFFERED), undefined);
  assert.equal(invokedCommand(text("/constructor"), OFFERED), undefined);
});

Deno.test("invokedCommand() needs the first part to be text", () => {
  const image: LlmContentPart = { type: "image", mimeType: "image/png", data: "AAAA" };
  assert.equal(invokedCommand([image, ...text("/mcp__docs__greet Ada")], OFFERED), undefined);
  assert.equal(invokedCommand([], OFFERED), undefined);
});
