import assert from "node:assert/strict";
import type { JSONRPCMessage, Transport } from "@modelcontextprotocol/client";
import {
  type LeftOutTool,
  MAX_TOOL_DEPTH,
  screenToolLists,
  toolProblem,
} from "../../src/mcp/tool_list_screen.ts";

/** An object schema nested `depth` levels, parsed from text (no recursion building it). */
function deepSchema(depth: number): unknown {
  const open = '{"type":"object","properties":{"a":';
  return JSON.parse(`${open.repeat(depth)}{"type":"string"}${"}}".repeat(depth)}`);
}

/** A transport that records what is sent, screened, with a reader that keeps what it reads. */
function screened(): {
  transport: Transport;
  sent: JSONRPCMessage[];
  read: JSONRPCMessage[];
  left: LeftOutTool[][];
} {
  const sent: JSONRPCMessage[] = [];
  const read: JSONRPCMessage[] = [];
  const left: LeftOutTool[][] = [];
  const transport: Transport = {
    start: () => Promise.resolve(),
    close: () => Promise.resolve(),
    send: (message) => {
      sent.push(message);
      return Promise.resolve();
    },
  };
  screenToolLists(transport, (tools) => left.push([...tools]));
  transport.onmessage = (message) => void read.push(message);
  return { transport, sent, read, left };
}

const GOOD = { name: "good", inputSchema: { type: "object", properties: {} } };

Deno.test("toolProblem() accepts well-formed tools", () => {
  assert.equal(toolProblem(GOOD), undefined);
  assert.equal(toolProblem({ name: "t", inputSchema: { type: "object" }, extra: 1 }), undefined);
  assert.equal(toolProblem({ name: "t", inputSchema: deepSchema(30) }), undefined);
  assert.equal(
    toolProblem({ name: "t", inputSchema: { type: "object" }, outputSchema: { type: "object" } }),
    undefined,
  );
});

Deno.test("toolProblem() names what is wrong with a malformed tool", () => {
  assert.match(
    toolProblem({ name: "t", inputSchema: { type: "string" } })!,
    /^inputSchema\.type: /,
  );
  assert.match(toolProblem({ name: "t", inputSchema: 5 })!, /^inputSchema: .*expected object/);
  assert.match(toolProblem({ name: "t" })!, /^inputSchema: /);
  assert.match(toolProblem({ inputSchema: { type: "object" } })!, /^name: /);
  assert.match(toolProblem({ name: 7, inputSchema: { type: "object" } })!, /^name: /);
  assert.equal(toolProblem(null), "is not an object (null)");
  assert.equal(toolProblem(["x"]), "is not an object (array)");
  assert.equal(toolProblem("poke"), "is not an object (string)");
  for (const depth of [MAX_TOOL_DEPTH, 5_000, 10_000]) {
    assert.equal(
      toolProblem({ name: "deep", inputSchema: deepSchema(depth) }),
      `its definition nests deeper than ${MAX_TOOL_DEPTH} levels`,
    );
  }
  assert.equal(
    toolProblem({ name: "deep", inputSchema: { type: "object" }, outputSchema: deepSchema(5_000) }),
    `its definition nests deeper than ${MAX_TOOL_DEPTH} levels`,
  );
});

Deno.test("screenToolLists() takes the malformed tools out of a tools/list answer only", async () => {
  const { transport, sent, read, left } = screened();
  await transport.send({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
  await transport.send({ jsonrpc: "2.0", id: 2, method: "prompts/list", params: {} });
  assert.equal(sent.length, 2);
  const bad = [
    { name: "deep_in", inputSchema: deepSchema(5_000) },
    { name: "string_in", inputSchema: { type: "string" } },
    { name: "number_in", inputSchema: 5 },
    42,
  ];
  // The server echoes the id as a string: the client matches it as a number, so does this.
  transport.onmessage?.({
    jsonrpc: "2.0",
    id: "1",
    result: { tools: [GOOD, ...bad, { ...GOOD, name: "good_too" }], nextCursor: "c" },
  } as unknown as JSONRPCMessage);
  const prompts = { jsonrpc: "2.0", id: 2, result: { prompts: [{ name: 5 }] } } as JSONRPCMessage;
  transport.onmessage?.(prompts);
  assert.equal(read.length, 2);
  const result =
    (read[0] as unknown as { result: { tools: Array<{ name: string }>; nextCursor: string } })
      .result;
  assert.deepEqual(result.tools.map((tool) => tool.name), ["good", "good_too"]);
  assert.equal(result.nextCursor, "c");
  assert.equal(read[1], prompts, "other answers pass as they are");
  assert.deepEqual(left.length, 1);
  assert.deepEqual(left[0]!.map((tool) => tool.name), [
    "deep_in",
    "string_in",
    "number_in",
    "tools[4]",
  ]);
  assert.match(left[0]![0]!.reason, /nests deeper than/);
});

Deno.test("screenToolLists() passes answers with nothing to take out as they are", async () => {
  const { transport, read, left } = screened();
  await transport.send({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
  await transport.send({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} });
  await transport.send({ jsonrpc: "2.0", id: 3, method: "tools/list", params: {} });
  const fine = { jsonrpc: "2.0", id: 1, result: { tools: [GOOD] } } as JSONRPCMessage;
  const notArray = { jsonrpc: "2.0", id: 2, result: { tools: "many" } } as JSONRPCMessage;
  const refused = { jsonrpc: "2.0", id: 3, error: { code: -1, message: "no" } } as JSONRPCMessage;
  // An answer to a request never sent (or sent by someone else) is not screened.
  const unasked = {
    jsonrpc: "2.0",
    id: 9,
    result: { tools: [{ name: "x", inputSchema: 5 }] },
  } as JSONRPCMessage;
  const notification = { jsonrpc: "2.0", method: "notifications/tools/list_changed" };
  for (const message of [fine, notArray, refused, unasked, notification as JSONRPCMessage]) {
    transport.onmessage?.(message);
  }
  assert.deepEqual(read, [fine, notArray, refused, unasked, notification]);
  assert.deepEqual(left, []);
});
