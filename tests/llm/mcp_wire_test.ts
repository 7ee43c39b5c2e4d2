/**
 * What an MCP server's tools look like on the model wires: a session with the fake stdio MCP
 * server, a model on the fake OpenAI-compatible or Anthropic server that calls
 * `mcp__fake__schema_zoo` and `mcp__fake__image`, and the request bodies the fake LLM received:
 * object schemas without `$ref`/`$defs` or a top-level `anyOf`, and the image result as an image
 * (an Anthropic `tool_result` image block; OpenAI tool text plus a follow-up user image message)
 * with the embedded resource's text in what the model reads.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type CapturedRequest,
  type FakeResponse,
  startFakeLlmServer,
} from "../_helpers/fake_llm_server.ts";
import { anthropicTurn, openAiTurn } from "../_helpers/llm_fixtures.ts";
import { fakeStdio } from "../_helpers/mcp_servers.ts";
import { startServer } from "../_helpers/server.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";

/** The one-pixel PNG the fake MCP server's `image` tool returns. */
const PNG_1X1 =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/** Valid arguments for `schema_zoo` (its `where` is a `$ref` to a point). */
const ZOO_ARGS = { where: { x: 1, y: 2 }, id: 7 };

type Api = "openai-chat" | "anthropic-messages";

/**
 * Runs one prompt in a session with the fake MCP server against a fake LLM speaking `api`, whose
 * answers are `turns`; returns the requests the fake LLM received.
 */
async function promptWithFakeMcp(
  api: Api,
  turns: readonly FakeResponse[],
): Promise<CapturedRequest[]> {
  await using dirs = new TempDirs("acp-harness-mcp-wire-");
  await using llm = await startFakeLlmServer();
  const cwd = await dirs.make();
  const server = startServer({
    config: {
      model: "fake/coder",
      mode: "auto",
      providers: {
        fake: {
          api,
          baseUrl: api === "openai-chat" ? `${llm.url}/v1` : llm.url,
          apiKeyEnv: "FAKE_API_KEY",
        },
      },
      // The model takes images, so tool result images go to it as images.
      models: { "fake/coder": { contextWindow: 100_000, image: true } },
    },
    env: { FAKE_API_KEY: "sk-test" },
  });
  try {
    await server.client.initialize();
    const fake = fakeStdio();
    const sessionId = await server.client.newSession(cwd, {
      mcpServers: [{ name: "fake", command: fake.command, args: fake.args, env: [] }],
    });
    llm.enqueue(...turns);
    assert.equal(await server.client.prompt(sessionId, "use the MCP tools"), "end_turn");
    assert.deepEqual(server.client.problems, []);
    const failed = server.client.updates(sessionId).filter(({ update }) =>
      update.sessionUpdate === "tool_call_update" && update.status === "failed"
    );
    assert.deepEqual(failed, [], "no tool call failed");
    return llm.requests;
  } finally {
    await server.disconnect();
  }
}

/** Asserts that `schema` is what both wires take: an object, no refs or defs, no top anyOf. */
function assertWireSchema(name: string, schema: unknown): void {
  const top = schema as Record<string, unknown>;
  assert.equal(top.type, "object", `${name}: top-level type`);
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    assert.ok(!(key in top), `${name}: no top-level ${key}`);
  }
  const text = JSON.stringify(schema);
  assert.doesNotMatch(text, /"\$ref"|"\$defs"|"definitions"/, `${name}: ${text}`);
}

/** The inlined `where` point of `schema_zoo`. */
const POINT = {
  type: "object",
  properties: { x: { type: "number" }, y: { type: "number" } },
  required: ["x", "y"],
  additionalProperties: false,
};

Deno.test("OpenAI wire: MCP tool schemas are plain objects; an MCP image result follows as a user image message", async () => {
  const requests = await promptWithFakeMcp("openai-chat", [
    openAiTurn({
      toolCalls: [
        { id: "call_zoo", name: "mcp__fake__schema_zoo", arguments: ZOO_ARGS },
        { id: "call_img", name: "mcp__fake__image", arguments: {} },
      ],
    }),
    openAiTurn({ text: ["Seen."] }),
  ]);
  assert.equal(requests.length, 2);
  const first = requests[0]!.body as {
    tools: Array<{ type: string; function: { name: string; parameters: unknown } }>;
  };
  const mcpTools = first.tools.filter((tool) => tool.function.name.startsWith("mcp__fake__"));
  assert.ok(mcpTools.length >= 10, `the fake server's tools are offered: ${mcpTools.length}`);
  for (const tool of mcpTools) assertWireSchema(tool.function.name, tool.function.parameters);
  const zoo = mcpTools.find((tool) => tool.function.name === "mcp__fake__schema_zoo");
  const parameters = zoo?.function.parameters as { properties: Record<string, unknown> };
  assert.deepEqual(parameters.properties.where, POINT, "the $ref is inlined");

  const messages = (requests[1]!.body as { messages: Array<Record<string, unknown>> }).messages;
  const zooResult = messages.find((message) => message.tool_call_id === "call_zoo");
  assert.deepEqual(zooResult, { role: "tool", tool_call_id: "call_zoo", content: "ok" });
  const imageAt = messages.findIndex((message) => message.tool_call_id === "call_img");
  const imageResult = messages[imageAt] as { role: string; content: string };
  assert.equal(imageResult.role, "tool");
  // Tool messages take text only: the image is a placeholder, the link a line, and the embedded
  // resource its text.
  assert.equal(
    imageResult.content,
    "[image: image/png]\n[resource: note.txt file:///note.txt (text/plain)]\n" +
      "[resource: file:///note.txt]\nembedded text",
  );
  // The run of tool messages is followed by one user message with the images.
  assert.ok(messages.slice(imageAt + 1).every((message) => message.role !== "tool"));
  assert.deepEqual(messages[imageAt + 1], {
    role: "user",
    content: [
      {
        type: "text",
        text: "The images of the result of tool call call_img (mcp__fake__image):",
      },
      { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_1X1}` } },
    ],
  });
});

Deno.test("Anthropic wire: MCP tool schemas are plain objects; an MCP image result is an image block of its tool_result", async () => {
  const requests = await promptWithFakeMcp("anthropic-messages", [
    anthropicTurn({ toolUse: { id: "toolu_zoo", name: "mcp__fake__schema_zoo", input: ZOO_ARGS } }),
    anthropicTurn({ toolUse: { id: "toolu_img", name: "mcp__fake__image", input: {} } }),
    anthropicTurn({ text: "Seen." }),
  ]);
  assert.equal(requests.length, 3);
  const first = requests[0]!.body as { tools: Array<{ name: string; input_schema: unknown }> };
  const mcpTools = first.tools.filter((tool) => tool.name.startsWith("mcp__fake__"));
  assert.ok(mcpTools.length >= 10, `the fake server's tools are offered: ${mcpTools.length}`);
  for (const tool of mcpTools) assertWireSchema(tool.name, tool.input_schema);
  const zoo = mcpTools.find((tool) => tool.name === "mcp__fake__schema_zoo");
  const schema = zoo?.input_schema as { properties: Record<string, unknown> };
  assert.deepEqual(schema.properties.where, POINT, "the $ref is inlined");

  const messages = (requests[2]!.body as {
    messages: Array<{ role: string; content: Array<Record<string, unknown>> }>;
  }).messages;
  const results = messages.flatMap((message) =>
    message.role === "user" ? message.content.filter((block) => block.type === "tool_result") : []
  );
  assert.deepEqual(
    results.find((block) => block.tool_use_id === "toolu_zoo"),
    { type: "tool_result", tool_use_id: "toolu_zoo", content: "ok", is_error: false },
  );
  assert.deepEqual(results.find((block) => block.tool_use_id === "toolu_img"), {
    type: "tool_result",
    tool_use_id: "toolu_img",
    content: [
      { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_1X1 } },
      { type: "text", text: "[resource: note.txt file:///note.txt (text/plain)]" },
      { type: "text", text: "[resource: file:///note.txt]\nembedded text" },
    ],
    is_error: false,
  });
});
