import assert from "node:assert/strict";
import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/client";
import { McpCallError } from "../../src/mcp/mcp_connection.ts";
import {
  classifyMcpTool,
  MAX_RESULT_BASE64,
  MAX_RESULT_BLOCKS,
  MAX_RESULT_TEXT,
  mcpTool,
  type McpToolCaller,
  sessionToolName,
  toolResult,
} from "../../src/mcp/mcp_tool.ts";
import type { ToolContext } from "../../src/tools/tool.ts";
import { settle } from "../_helpers/wait.ts";

const PNG = "iVBORw0KGgo=";

function result(value: Record<string, unknown>): CallToolResult {
  return value as CallToolResult;
}

// --- sessionToolName ---

Deno.test("sessionToolName() joins server and tool as mcp__server__tool", () => {
  assert.equal(sessionToolName("files", "read_text"), "mcp__files__read_text");
  assert.equal(sessionToolName("a-b", "Tool-9"), "mcp__a-b__Tool-9");
});

Deno.test("sessionToolName() makes characters outside A-Za-z0-9_- underscores", () => {
  assert.equal(sessionToolName("files", "read.text/all now"), "mcp__files__read_text_all_now");
  assert.equal(sessionToolName("files", "é:ü"), "mcp__files_____");
  assert.match(sessionToolName("s", "\u{1F600}x"), /^mcp__s__[A-Za-z0-9_-]+$/);
});

Deno.test("sessionToolName() keeps names of exactly 64 characters and cuts longer ones to 64", () => {
  const fits = "t".repeat(64 - "mcp__s__".length);
  assert.equal(sessionToolName("s", fits), `mcp__s__${fits}`);
  assert.equal(sessionToolName("s", fits).length, 64);
  const long = sessionToolName("s", `${fits}x`);
  assert.equal(long.length, 64);
  assert.match(long, /^mcp__s__t{47}_[0-9a-f]{8}$/);
  assert.equal(sessionToolName("s", `${fits}x`), long, "the same name every time");
});

Deno.test("sessionToolName() keeps two long names that differ only at the end apart", () => {
  const base = "read_a_very_long_tool_name_that_goes_on_and_on_and_on_";
  const one = sessionToolName("server", `${base}1`);
  const two = sessionToolName("server", `${base}2`);
  assert.equal(one.length, 64);
  assert.equal(two.length, 64);
  assert.notEqual(one, two);
  assert.equal(one.slice(0, 55), two.slice(0, 55));
});

// --- classifyMcpTool ---

Deno.test("classifyMcpTool() maps annotations to kind and effect", () => {
  const cases: Array<[McpTool["annotations"], string, string]> = [
    [undefined, "other", "external"],
    [{}, "other", "external"],
    [{ readOnlyHint: true }, "read", "read"],
    [{ readOnlyHint: true, openWorldHint: true }, "fetch", "read"],
    [{ readOnlyHint: true, openWorldHint: false }, "read", "read"],
    // readOnly wins: destructiveHint only means something for tools that write.
    [{ readOnlyHint: true, destructiveHint: true }, "read", "read"],
    [{ destructiveHint: true }, "delete", "external"],
    [{ readOnlyHint: false, destructiveHint: true }, "delete", "external"],
    [{ readOnlyHint: false, destructiveHint: false }, "other", "external"],
    [{ openWorldHint: true }, "other", "external"],
    [{ idempotentHint: true }, "other", "external"],
    [{ destructiveHint: false }, "other", "external"],
    [{ title: "Something" }, "other", "external"],
  ];
  for (const [annotations, kind, effect] of cases) {
    assert.deepEqual(classifyMcpTool(annotations), { kind, effect }, JSON.stringify(annotations));
  }
});

Deno.test("classifyMcpTool() takes only a boolean true as a hint", () => {
  const loose = { readOnlyHint: "true", destructiveHint: 1 } as unknown as McpTool["annotations"];
  assert.deepEqual(classifyMcpTool(loose), { kind: "other", effect: "external" });
});

// --- toolResult ---

Deno.test("toolResult() gives text blocks as text, no parts", () => {
  const mapped = toolResult(result({
    content: [{ type: "text", text: "one" }, { type: "text", text: "two" }],
  }));
  assert.deepEqual(mapped, {
    content: "one\ntwo",
    isError: false,
    display: [{ type: "text", text: "one" }, { type: "text", text: "two" }],
  });
});

Deno.test("toolResult() gives an image as an image part", () => {
  const mapped = toolResult(result({
    content: [{ type: "image", mimeType: "image/png", data: PNG }],
  }));
  const image = { type: "image", mimeType: "image/png", data: PNG };
  assert.deepEqual(mapped, {
    content: "[image: image/png]",
    isError: false,
    parts: [image],
    display: [image],
  });
});

Deno.test("toolResult() gives resource links as link parts, with or without a media type", () => {
  const mapped = toolResult(result({
    content: [
      { type: "resource_link", uri: "file:///a.txt", name: "a.txt", mimeType: "text/plain" },
      { type: "resource_link", uri: "file:///b", name: "b" },
    ],
  }));
  const links = [
    { type: "resource_link", uri: "file:///a.txt", name: "a.txt", mimeType: "text/plain" },
    { type: "resource_link", uri: "file:///b", name: "b" },
  ];
  assert.deepEqual(mapped.parts, links);
  assert.deepEqual(mapped.display, links);
  assert.equal(
    mapped.content,
    "[resource: a.txt file:///a.txt (text/plain)]\n[resource: b file:///b]",
  );
});

Deno.test("toolResult() shows an embedded text resource as a resource; the model gets its text with the uri", () => {
  const mapped = toolResult(result({
    content: [{
      type: "resource",
      resource: { uri: "file:///note.txt", mimeType: "text/plain", text: "embedded text" },
    }],
  }));
  assert.deepEqual(mapped, {
    content: "[resource: file:///note.txt]\nembedded text",
    isError: false,
    display: [{
      type: "resource",
      uri: "file:///note.txt",
      mimeType: "text/plain",
      text: "embedded text",
    }],
  });
  const bare = toolResult(result({
    content: [{ type: "resource", resource: { uri: "mem://x", text: "" } }],
  }));
  assert.deepEqual(bare.display, [{ type: "resource", uri: "mem://x", text: "" }]);
});

Deno.test("toolResult() gives an embedded image blob as an image part", () => {
  const mapped = toolResult(result({
    content: [{
      type: "resource",
      resource: { uri: "file:///dot.png", mimeType: "image/png", blob: PNG },
    }],
  }));
  assert.deepEqual(mapped.parts, [{ type: "image", mimeType: "image/png", data: PNG }]);
  assert.deepEqual(mapped.display, [{
    type: "resource",
    uri: "file:///dot.png",
    mimeType: "image/png",
    blob: PNG,
  }]);
  assert.equal(mapped.content, "[image: image/png]");
});

Deno.test("toolResult() gives a binary blob as a placeholder with its byte count", () => {
  // "AAECAwQF" is 6 bytes.
  const mapped = toolResult(result({
    content: [{
      type: "resource",
      resource: { uri: "file:///data.bin", mimeType: "application/octet-stream", blob: "AAECAwQF" },
    }],
  }));
  assert.equal(
    mapped.content,
    "[resource: file:///data.bin (application/octet-stream), 6 bytes of binary data]",
  );
  assert.equal(mapped.parts, undefined);
  assert.deepEqual(mapped.display, [{
    type: "resource",
    uri: "file:///data.bin",
    mimeType: "application/octet-stream",
    blob: "AAECAwQF",
  }]);
  const untyped = toolResult(result({
    content: [{ type: "resource", resource: { uri: "mem://b", blob: "AAEC" } }],
  }));
  assert.equal(untyped.content, "[resource: mem://b, 3 bytes of binary data]");
});

Deno.test("toolResult() counts the bytes of a padded base64 blob exactly", () => {
  // "AAECAw==" is 4 bytes and "AAECAwQ=" is 5: the padding is not data.
  for (const [blob, bytes] of [["AAECAw==", 4], ["AAECAwQ=", 5]] as const) {
    const mapped = toolResult(result({
      content: [{ type: "resource", resource: { uri: "mem://p", blob } }],
    }));
    assert.equal(mapped.content, `[resource: mem://p, ${bytes} bytes of binary data]`, blob);
  }
});

Deno.test("toolResult() gives audio as a placeholder", () => {
  const mapped = toolResult(result({
    content: [{ type: "audio", mimeType: "audio/wav", data: "UklGRg==" }],
  }));
  assert.deepEqual(mapped, {
    content: "[audio: audio/wav]",
    isError: false,
    display: [{ type: "text", text: "[audio: audio/wav]" }],
  });
});

Deno.test("toolResult() appends structured content as JSON when no text block carries it", () => {
  const mapped = toolResult(result({
    content: [{ type: "text", text: "3" }],
    structuredContent: { sum: 3 },
  }));
  assert.equal(mapped.content, '3\n{"sum":3}');
  assert.deepEqual(mapped.rawOutput, { sum: 3 });
  // The client is shown what the server sent, not the appended JSON.
  assert.deepEqual(mapped.display, [{ type: "text", text: "3" }]);
  const only = toolResult(result({ content: [], structuredContent: { ok: true } }));
  assert.equal(only.content, '{"ok":true}');
  assert.deepEqual(only.rawOutput, { ok: true });
});

Deno.test("toolResult() does not append structured content a text block already carries", () => {
  for (const text of ['{"sum":3}', '{ "sum": 3 }\n']) {
    const mapped = toolResult(result({
      content: [{ type: "text", text: "The sum:" }, { type: "text", text }],
      structuredContent: { sum: 3 },
    }));
    assert.equal(mapped.content, `The sum:\n${text}`, text);
    assert.deepEqual(mapped.rawOutput, { sum: 3 });
  }
});

Deno.test("toolResult() sets no rawOutput without structured content", () => {
  const mapped = toolResult(result({ content: [{ type: "text", text: "x" }] }));
  assert.equal("rawOutput" in mapped, false);
});

Deno.test("toolResult() passes isError on", () => {
  const failed = toolResult(result({
    isError: true,
    content: [{ type: "text", text: "it failed on purpose" }],
  }));
  assert.equal(failed.isError, true);
  assert.equal(failed.content, "it failed on purpose");
  assert.equal(toolResult(result({ isError: false, content: [] })).isError, false);
  assert.equal(toolResult(result({ isError: "yes", content: [] })).isError, false);
});

Deno.test("toolResult() says (no content) for an empty or missing content list", () => {
  for (const value of [{ content: [] }, {}, { content: "text" }]) {
    const mapped = toolResult(result(value));
    assert.deepEqual(mapped, { content: "(no content)", isError: false }, JSON.stringify(value));
  }
  // Unknown block types are skipped.
  assert.equal(
    toolResult(result({ content: [{ type: "video", uri: "x" }] })).content,
    "(no content)",
  );
});

Deno.test("toolResult() cuts oversized text with a note, for the model and the client", () => {
  const big = "x".repeat(MAX_RESULT_TEXT + 10);
  const mapped = toolResult(result({ content: [{ type: "text", text: big }] }));
  const note = "[cut: the result was too large; left out 10 characters of text]";
  assert.equal(mapped.content, `${"x".repeat(MAX_RESULT_TEXT)}\n${note}`);
  assert.deepEqual(mapped.display, [
    { type: "text", text: "x".repeat(MAX_RESULT_TEXT) },
    { type: "text", text: note },
  ]);
  const exact = toolResult(
    result({ content: [{ type: "text", text: "y".repeat(MAX_RESULT_TEXT) }] }),
  );
  assert.equal(exact.content.length, MAX_RESULT_TEXT);
  // Later text blocks share the allowance; an embedded resource's text too.
  const split = toolResult(result({
    content: [
      { type: "text", text: "a".repeat(MAX_RESULT_TEXT - 5) },
      { type: "resource", resource: { uri: "file:///r", text: "b".repeat(20) } },
      { type: "text", text: "c".repeat(7) },
    ],
  }));
  assert.deepEqual(split.display?.map((item) => item.type), ["text", "resource", "text"]);
  assert.equal((split.display?.[1] as { text: string }).text, "bbbbb");
  assert.match(split.content, /left out 22 characters of text\]$/);
});

Deno.test("toolResult() bounds images and blocks, counting what it left out", () => {
  const huge = "A".repeat(MAX_RESULT_BASE64 + 4);
  const images = toolResult(result({
    content: [
      { type: "image", mimeType: "image/png", data: PNG },
      { type: "image", mimeType: "image/png", data: huge },
    ],
  }));
  assert.equal(images.display?.filter((item) => item.type === "image").length, 1);
  assert.match(images.content, /\[image: image\/png, left out: too large\]/);
  assert.match(images.content, /left out \d+ bytes of images or data\]$/);

  const many = toolResult(result({
    content: Array.from({ length: MAX_RESULT_BLOCKS + 3 }, (_, index) => ({
      type: "text" as const,
      text: String(index),
    })),
  }));
  assert.equal(many.display?.length, MAX_RESULT_BLOCKS + 1);
  assert.match(many.content, /left out 3 more content blocks\]$/);
});

Deno.test("toolResult() keeps the order of mixed blocks", () => {
  const mapped = toolResult(result({
    content: [
      { type: "text", text: "before" },
      { type: "image", mimeType: "image/png", data: PNG },
      { type: "resource", resource: { uri: "file:///n", text: "note" } },
      { type: "text", text: "after" },
    ],
  }));
  assert.deepEqual(mapped.parts, [
    { type: "text", text: "before" },
    { type: "image", mimeType: "image/png", data: PNG },
    { type: "text", text: "[resource: file:///n]\nnote" },
    { type: "text", text: "after" },
  ]);
  assert.equal(mapped.content, "before\n[image: image/png]\n[resource: file:///n]\nnote\nafter");
});

// --- mcpTool ---

interface FakeCall {
  readonly name: string;
  readonly args: Record<string, unknown>;
  readonly signal: AbortSignal;
}

/** A caller that records calls and answers with `answer`. */
class FakeCaller implements McpToolCaller {
  readonly name = "docs";
  readonly calls: FakeCall[] = [];
  readonly events: string[] = [];
  answer: (call: FakeCall) => Promise<unknown> = () =>
    Promise.resolve({ content: [{ type: "text", text: "ok" }] });
  refresh: () => Promise<void> = () => Promise.resolve();

  callTool(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
    const call = { name, args, signal };
    this.calls.push(call);
    this.events.push("call");
    return this.answer(call).finally(() => this.events.push("answered"));
  }

  refreshed(): Promise<void> {
    this.events.push("refreshed");
    return this.refresh();
  }
}

function context(signal = new AbortController().signal): ToolContext {
  return { signal } as ToolContext;
}

const DEFINITION: McpTool = {
  name: "search.docs",
  description: "Searches the docs",
  inputSchema: {
    type: "object",
    properties: { q: { $ref: "#/$defs/query" } },
    $defs: { query: { type: "string" } },
  } as McpTool["inputSchema"],
  annotations: { readOnlyHint: true, openWorldHint: true },
};

Deno.test("mcpTool() describes the server's tool as a session tool", () => {
  const tool = mcpTool(new FakeCaller(), DEFINITION);
  assert.equal(tool.name, "mcp__docs__search_docs");
  assert.equal(tool.description, "Searches the docs");
  assert.deepEqual(tool.inputSchema, { type: "object", properties: { q: { type: "string" } } });
  assert.equal(tool.kind, "fetch");
  assert.equal(tool.effect, "read");
  assert.equal(tool.title({}), "search.docs (MCP docs)");
  const titled = mcpTool(new FakeCaller(), {
    ...DEFINITION,
    title: "Doc search",
    description: "d".repeat(10_000),
  });
  assert.equal(titled.title(undefined), "Doc search (MCP docs)");
  assert.equal(titled.description, `${"d".repeat(8 * 1024)}…`);
  const untitled = mcpTool(new FakeCaller(), { name: "x", inputSchema: { type: "object" } });
  assert.equal(untitled.description, "x");
  assert.equal(untitled.kind, "other");
  assert.equal(untitled.effect, "external");
});

Deno.test("mcpTool() execute() calls the server with the arguments and the call's signal", async () => {
  const caller = new FakeCaller();
  caller.answer = () => Promise.resolve({ content: [{ type: "text", text: "found" }] });
  const controller = new AbortController();
  const tool = mcpTool(caller, DEFINITION);
  const mapped = await tool.execute({ q: "mcp" }, context(controller.signal));
  assert.deepEqual(mapped, {
    content: "found",
    isError: false,
    display: [{ type: "text", text: "found" }],
  });
  assert.equal(caller.calls.length, 1);
  assert.equal(caller.calls[0]!.name, "search.docs");
  assert.deepEqual(caller.calls[0]!.args, { q: "mcp" });
  assert.equal(caller.calls[0]!.signal, controller.signal);
});

Deno.test("mcpTool() execute() refuses arguments that are not an object without calling", async () => {
  const caller = new FakeCaller();
  const tool = mcpTool(caller, DEFINITION);
  for (const input of [null, undefined, "q", 3, [], [{ q: "x" }]]) {
    assert.deepEqual(await tool.execute(input, context()), {
      content: "The arguments must be a JSON object.",
      isError: true,
    }, JSON.stringify(input));
  }
  assert.equal(caller.calls.length, 0);
});

Deno.test("mcpTool() execute() turns a McpCallError into a failed result with its message", async () => {
  const caller = new FakeCaller();
  caller.answer = () =>
    Promise.reject(new McpCallError("the MCP server docs did not answer tools/call x within 1 s"));
  const tool = mcpTool(caller, DEFINITION);
  assert.deepEqual(await tool.execute({}, context()), {
    content: "The MCP tool call failed: the MCP server docs did not answer tools/call x within 1 s",
    isError: true,
  });
  caller.answer = () => Promise.reject(new McpCallError("tools/call x was cancelled", true));
  assert.deepEqual(await tool.execute({}, context()), {
    content: "The MCP tool call failed: tools/call x was cancelled",
    isError: true,
  });
  caller.answer = () => Promise.reject(new TypeError("odd"));
  assert.deepEqual(await tool.execute({}, context()), {
    content: "The MCP tool call failed: TypeError: odd",
    isError: true,
  });
});

Deno.test("mcpTool() execute() passes a server's isError result on", async () => {
  const caller = new FakeCaller();
  caller.answer = () =>
    Promise.resolve({ isError: true, content: [{ type: "text", text: "no such doc" }] });
  const mapped = await mcpTool(caller, DEFINITION).execute({}, context());
  assert.equal(mapped.isError, true);
  assert.equal(mapped.content, "no such doc");
});

Deno.test("mcpTool() execute() waits for a tool list refresh after the call", async () => {
  const caller = new FakeCaller();
  let release: () => void = () => {};
  caller.refresh = () => new Promise<void>((resolve) => release = resolve);
  let done = false;
  const running = mcpTool(caller, DEFINITION).execute({}, context()).then((mapped) => {
    done = true;
    return mapped;
  });
  // Nothing settles it but the refresh.
  for (let turn = 0; turn < 3; turn++) await settle();
  assert.deepEqual(caller.events, ["call", "answered", "refreshed"]);
  assert.equal(done, false);
  release();
  assert.equal((await running).content, "ok");
  // A failed call does not wait for a refresh.
  caller.events.length = 0;
  caller.answer = () => Promise.reject(new McpCallError("gone"));
  await mcpTool(caller, DEFINITION).execute({}, context());
  assert.deepEqual(caller.events, ["call", "answered"]);
});
