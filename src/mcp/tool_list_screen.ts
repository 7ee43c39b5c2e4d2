/**
 * Screening of the `tools/list` answers of an MCP server: a tool whose definition the client
 * library would refuse (an input schema that is not an object schema, a definition nested
 * thousands deep) is taken out of the answer before the library reads it, so that one bad tool
 * leaves that tool out instead of failing the whole list, and with it the server's start.
 *
 * @module
 */
import type {
  JSONRPCMessage,
  MessageExtraInfo,
  Transport,
  TransportSendOptions,
} from "@modelcontextprotocol/client";
import { specTypeSchemas } from "@modelcontextprotocol/client";

/**
 * The deepest a tool's definition may nest (objects and arrays, the tool itself the first
 * level). The client library's validation recurses once per level and exhausts the stack a few
 * thousand levels down; a model is shown 32 levels of an input schema at most.
 */
export const MAX_TOOL_DEPTH = 128;

/** A tool taken out of a `tools/list` answer, and why. */
export interface LeftOutTool {
  /** Its name, or `tools[<index>]` when it has none. */
  readonly name: string;
  /** Why, in words (a field and its problem). */
  readonly reason: string;
}

/** How many `tools/list` requests are remembered while they wait for their answers. */
const MAX_PENDING = 64;

/** How much of a tool's name a report quotes. */
const NAME_LENGTH = 200;

/**
 * Makes `transport` take the malformed tools out of every `tools/list` answer before its
 * reader (the MCP client) sees it, and tell `onLeftOut` which ones it took out. The client's
 * own requests are recognized as they are sent; an answer whose `tools` is not an array is left
 * as it is (the client refuses it, rightly). Call it before the client connects.
 *
 * @example A tool with a string schema is left out; the other is kept
 * ```ts
 * import assert from "node:assert/strict";
 * import type { JSONRPCMessage, Transport } from "@modelcontextprotocol/client";
 * import { screenToolLists } from "./tool_list_screen.ts";
 * const read: JSONRPCMessage[] = [];
 * const transport: Transport = {
 *   start: () => Promise.resolve(),
 *   close: () => Promise.resolve(),
 *   send: () => Promise.resolve(),
 * };
 * const reports: string[] = [];
 * screenToolLists(transport, (left) => reports.push(...left.map((tool) => tool.name)));
 * transport.onmessage = (message) => void read.push(message);
 * await transport.send({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
 * transport.onmessage?.({
 *   jsonrpc: "2.0",
 *   id: 1,
 *   result: {
 *     tools: [
 *       { name: "good", inputSchema: { type: "object" } },
 *       { name: "bad", inputSchema: { type: "string" } },
 *     ],
 *   },
 * });
 * assert.deepEqual(
 *   (read[0] as unknown as { result: { tools: Array<{ name: string }> } }).result.tools.map((t) => t.name),
 *   ["good"],
 * );
 * assert.deepEqual(reports, ["bad"]);
 * ```
 *
 * @param transport The transport the client will read
 * @param onLeftOut Told the tools taken out of one answer (never called with none)
 */
export function screenToolLists(
  transport: Transport,
  onLeftOut: (tools: readonly LeftOutTool[]) => void,
): void {
  const pending = new Set<number>();
  const send = transport.send.bind(transport);
  transport.send = (message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> => {
    if ("method" in message && message.method === "tools/list" && "id" in message) {
      if (pending.size >= MAX_PENDING) pending.delete(pending.values().next().value!);
      pending.add(Number(message.id));
    }
    return send(message, options);
  };
  let reader: Transport["onmessage"];
  const screened = (message: JSONRPCMessage, extra?: MessageExtraInfo): void => {
    if (
      pending.size > 0 && !("method" in message) && "id" in message &&
      pending.delete(Number(message.id)) && "result" in message
    ) {
      const { result, left } = screenResult(message.result);
      if (left.length > 0) {
        message = { ...message, result } as JSONRPCMessage;
        onLeftOut(left);
      }
    }
    reader?.(message, extra);
  };
  // The client sets `onmessage` as it connects; the transport calls whatever is there.
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    enumerable: true,
    get: () => reader === undefined ? undefined : screened,
    set: (value: Transport["onmessage"]) => {
      reader = value;
    },
  });
}

/** A `tools/list` result without its malformed tools, and those it left out. */
function screenResult(result: unknown): { result: unknown; left: LeftOutTool[] } {
  const tools = (result as { tools?: unknown } | null)?.tools;
  if (!Array.isArray(tools)) return { result, left: [] };
  const kept: unknown[] = [];
  const left: LeftOutTool[] = [];
  tools.forEach((tool, index) => {
    const reason = toolProblem(tool);
    if (reason === undefined) kept.push(tool);
    else left.push({ name: toolName(tool, index), reason });
  });
  return left.length === 0
    ? { result, left }
    : { result: { ...result as object, tools: kept }, left };
}

/**
 * What is wrong with a tool of a `tools/list` answer, or `undefined` when nothing is: nested
 * deeper than {@link MAX_TOOL_DEPTH} (found without recursion), or refused by the MCP `Tool`
 * schema (no string `name`, an `inputSchema` that is not an object with `type: "object"`, …).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toolProblem } from "./tool_list_screen.ts";
 * assert.equal(toolProblem({ name: "ok", inputSchema: { type: "object" } }), undefined);
 * assert.match(toolProblem({ name: "n", inputSchema: 5 })!, /^inputSchema: /);
 * ```
 *
 * @param tool One item of the answer's `tools`
 * @returns The problem, in words
 */
export function toolProblem(tool: unknown): string | undefined {
  if (typeof tool !== "object" || tool === null || Array.isArray(tool)) {
    return `is not an object (${
      tool === null ? "null" : Array.isArray(tool) ? "array" : typeof tool
    })`;
  }
  if (nestsDeeperThan(tool, MAX_TOOL_DEPTH)) {
    return `its definition nests deeper than ${MAX_TOOL_DEPTH} levels`;
  }
  let checked: ReturnType<typeof specTypeSchemas.Tool["~standard"]["validate"]>;
  try {
    checked = specTypeSchemas.Tool["~standard"].validate(tool);
  } catch (error) {
    return `cannot be checked: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (checked instanceof Promise) {
    // Only a check that failed at once goes on asynchronously: count it as failed.
    checked.catch(() => {});
    return "cannot be checked";
  }
  const issue = checked.issues?.[0];
  if (issue === undefined) return undefined;
  const path = (issue.path ?? []).map((part) =>
    typeof part === "object" && part !== null ? String(part.key) : String(part)
  ).join(".");
  return `${path === "" ? "the tool" : path}: ${issue.message}`;
}

/** A tool's name for a report: its `name` cut to 200 characters, else its place. */
function toolName(tool: unknown, index: number): string {
  const name = (tool as { name?: unknown } | null)?.name;
  return typeof name === "string" && name !== "" ? name.slice(0, NAME_LENGTH) : `tools[${index}]`;
}

/** Whether a JSON value nests deeper than `limit` objects and arrays (no recursion). */
function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (depth > limit) return true;
    for (const child of Object.values(node as object)) {
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}
