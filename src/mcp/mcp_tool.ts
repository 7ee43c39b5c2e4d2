/**
 * An MCP server's tool as a session tool: its name `mcp__<server>__<tool>`, a schema both model
 * wires take, a kind and a permission treatment from its annotations, and its results as text,
 * images, resource links and embedded resources.
 *
 * @module
 */
import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/client";
import type { ToolEffect } from "../permission/policy.ts";
import type { Tool, ToolContent, ToolDisplay, ToolKind, ToolResult } from "../tools/tool.ts";
import { toolResultText } from "../llm/provider.ts";
import { McpCallError, type McpCallOptions } from "./mcp_connection.ts";
import { fnv1a } from "./mcp_declarations.ts";
import { modelInputSchema } from "./mcp_schema.ts";
import { traceMeta } from "../telemetry/telemetry.ts";

/** What an MCP tool calls through: its server's connection. */
export interface McpToolCaller {
  /** The server's name (as in tool names). */
  readonly name: string;
  /**
   * Calls a tool of the server.
   *
   * @param options The request's `_meta` (the caller's W3C trace context), when there is one,
   *   and who answers the server's questions while the call runs
   */
  callTool(
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    options?: McpCallOptions,
  ): Promise<unknown>;
  /** Settles once a tool list change the server announced has been read (bounded). */
  refreshed(signal: AbortSignal): Promise<void>;
}

/** The most characters of a result's text the model gets; the rest is cut with a note. */
export const MAX_RESULT_TEXT = 1024 * 1024;

/** The most characters of a tool description passed to the model. */
const MAX_DESCRIPTION = 8 * 1024;

/**
 * The name an MCP server's tool takes in a session: `mcp__<server>__<tool>` with characters
 * outside `A-Za-z0-9_-` made `_`; a name over 64 characters (what model wires accept) is cut and
 * ends with a hash of the whole, so two long names stay apart.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sessionToolName } from "./mcp_tool.ts";
 * assert.equal(sessionToolName("files", "read.text"), "mcp__files__read_text");
 * assert.equal(sessionToolName("files", "x".repeat(80)).length, 64);
 * ```
 *
 * @param server The server's (validated) name
 * @param tool The tool's name as the server gave it
 * @returns The name in the session's tool set
 */
export function sessionToolName(server: string, tool: string): string {
  const name = `mcp__${server}__${tool.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  if (name.length <= 64) return name;
  return `${name.slice(0, 55)}_${fnv1a(name)}`;
}

/**
 * The ACP tool kind and permission effect an MCP tool's annotations give: a tool marked
 * `readOnlyHint` reads (`fetch` when it also reaches the open world); any other tool acts through
 * the server (`external`: `read-only` mode refuses it, `ask` asks), shown as `delete` when marked
 * destructive, else `other`. Hints are the server's word, so only `readOnlyHint` loosens policy.
 *
 * @param annotations The tool's annotations
 * @returns Its kind and effect
 */
export function classifyMcpTool(
  annotations: McpTool["annotations"],
): { kind: ToolKind; effect: ToolEffect } {
  if (annotations?.readOnlyHint === true) {
    return { kind: annotations.openWorldHint === true ? "fetch" : "read", effect: "read" };
  }
  return { kind: annotations?.destructiveHint === true ? "delete" : "other", effect: "external" };
}

/**
 * A session tool that calls an MCP server's tool.
 *
 * @param server The server's connection
 * @param definition The tool as the server listed it
 * @returns The tool
 */
export function mcpTool(server: McpToolCaller, definition: McpTool): Tool {
  const { kind, effect } = classifyMcpTool(definition.annotations);
  const shown = definition.annotations?.title ?? definition.title ?? definition.name;
  const description = definition.description ?? shown;
  return {
    name: sessionToolName(server.name, definition.name),
    description: description.length > MAX_DESCRIPTION
      ? `${description.slice(0, MAX_DESCRIPTION)}…`
      : description,
    inputSchema: modelInputSchema(definition.inputSchema),
    kind,
    effect,
    title: () => `${shown} (MCP ${server.name})`,
    async execute(input, context): Promise<ToolResult> {
      if (typeof input !== "object" || input === null || Array.isArray(input)) {
        return { content: "The arguments must be a JSON object.", isError: true };
      }
      let result: unknown;
      const span = context.telemetry?.mcpCall?.(server.name, definition.name);
      try {
        const meta = traceMeta(context.telemetry);
        result = await server.callTool(
          definition.name,
          input as Record<string, unknown>,
          context.signal,
          {
            ...(meta === undefined ? {} : { meta }),
            // The server's questions during the call go to the user when someone can answer.
            ...(context.elicit ? { elicit: context.elicit } : {}),
          },
        );
      } catch (error) {
        const message = error instanceof McpCallError ? error.message : String(error);
        span?.end(error instanceof McpCallError && error.cancelled ? "cancelled" : "mcp_error");
        return { content: `The MCP tool call failed: ${message}`, isError: true };
      }
      const failed = typeof result === "object" && result !== null &&
        (result as { isError?: unknown }).isError === true;
      span?.end(failed ? "tool_error" : undefined);
      // A tool list change announced before this answer is seen by the next model step.
      await server.refreshed(context.signal);
      return toolResult(result as CallToolResult);
    },
  };
}

/**
 * An MCP `tools/call` result as a session tool result: text, images and resource links as parts
 * (what the model sees, `audio` and binary resources as placeholders), embedded resources shown
 * to the client as resources and given to the model as their text, structured content given to
 * the model as JSON when no text block carries it already and to the client as `rawOutput`.
 * `isError` makes the call fail. A result is bounded before it goes anywhere: 1 MiB of text,
 * 20 MiB of images and embedded bytes (base64) and 1,000 blocks; what is left out is counted in a
 * closing `[cut: …]` line.
 *
 * @param result The server's result
 * @returns The tool result
 */
export function toolResult(result: CallToolResult): ToolResult {
  const parts: ToolContent[] = [];
  const display: ToolDisplay[] = [];
  const budget = new ResultBudget();
  const blocks = Array.isArray(result.content) ? result.content : [];
  for (const block of blocks) {
    if (!budget.block()) continue;
    switch (block.type) {
      case "text": {
        const text = budget.text(block.text);
        if (text === undefined) break;
        parts.push({ type: "text", text });
        display.push({ type: "text", text });
        break;
      }
      case "image":
        if (!budget.bytes(block.data)) {
          parts.push({ type: "text", text: `[image: ${block.mimeType}, left out: too large]` });
          break;
        }
        parts.push({ type: "image", mimeType: block.mimeType, data: block.data });
        display.push({ type: "image", mimeType: block.mimeType, data: block.data });
        break;
      case "resource_link": {
        const link = {
          type: "resource_link" as const,
          uri: block.uri,
          name: block.name,
          ...(block.mimeType === undefined ? {} : { mimeType: block.mimeType }),
        };
        parts.push(link);
        display.push(link);
        break;
      }
      case "resource":
        embedded(block.resource, budget, parts, display);
        break;
      case "audio":
        parts.push({ type: "text", text: `[audio: ${block.mimeType}]` });
        display.push({ type: "text", text: `[audio: ${block.mimeType}]` });
        break;
    }
  }
  let structured = result.structuredContent;
  if (structured !== undefined) {
    const json = JSON.stringify(structured);
    if (json.length > MAX_RESULT_TEXT) {
      budget.leftOut += json.length;
      structured = undefined;
    } else if (!carriesJson(parts, json)) {
      const text = budget.text(json);
      if (text !== undefined) parts.push({ type: "text", text });
    }
  }
  const note = budget.note();
  if (note) {
    parts.push({ type: "text", text: note });
    display.push({ type: "text", text: note });
  }
  if (parts.length === 0) parts.push({ type: "text", text: "(no content)" });
  const rich = parts.some((part) => part.type !== "text");
  return {
    content: toolResultText(parts),
    isError: result.isError === true,
    ...(rich ? { parts } : {}),
    ...(display.length > 0 ? { display } : {}),
    ...(structured === undefined ? {} : { rawOutput: structured }),
  };
}

/** An embedded resource: shown as itself, given to the model as its text or an image. */
function embedded(
  resource: Extract<CallToolResult["content"][number], { type: "resource" }>["resource"],
  budget: ResultBudget,
  parts: ToolContent[],
  display: ToolDisplay[],
): void {
  const mime = resource.mimeType === undefined ? {} : { mimeType: resource.mimeType };
  if ("text" in resource && typeof resource.text === "string") {
    const text = budget.text(resource.text);
    if (text === undefined) return;
    parts.push({ type: "text", text: `[resource: ${resource.uri}]\n${text}` });
    display.push({ type: "resource", uri: resource.uri, ...mime, text });
  } else if ("blob" in resource && typeof resource.blob === "string") {
    const described = `[resource: ${resource.uri}${
      resource.mimeType ? ` (${resource.mimeType})` : ""
    }, ${base64Bytes(resource.blob)} bytes of binary data]`;
    if (!budget.bytes(resource.blob)) {
      parts.push({ type: "text", text: `${described.slice(0, -1)}, left out: too large]` });
      return;
    }
    parts.push(
      resource.mimeType?.startsWith("image/")
        ? { type: "image", mimeType: resource.mimeType, data: resource.blob }
        : { type: "text", text: described },
    );
    display.push({ type: "resource", uri: resource.uri, ...mime, blob: resource.blob });
  }
}

/** The most base64 characters of images and embedded bytes passed on from one result. */
export const MAX_RESULT_BASE64 = 20 * 1024 * 1024;

/** The most content blocks passed on from one result. */
export const MAX_RESULT_BLOCKS = 1000;

/** What is left of one result's allowance, and what was left out. */
class ResultBudget {
  #text = MAX_RESULT_TEXT;
  #base64 = MAX_RESULT_BASE64;
  #blocks = MAX_RESULT_BLOCKS;
  /** Characters of text left out. */
  leftOut = 0;
  #blocksLeftOut = 0;
  #bytesLeftOut = 0;

  /** Whether one more block may go. */
  block(): boolean {
    if (this.#blocks > 0) {
      this.#blocks--;
      return true;
    }
    this.#blocksLeftOut++;
    return false;
  }

  /** The part of `text` that fits (undefined when nothing does). */
  text(text: string): string | undefined {
    if (text.length <= this.#text) {
      this.#text -= text.length;
      return text;
    }
    const kept = this.#text;
    this.#text = 0;
    this.leftOut += text.length - kept;
    return kept > 0 ? text.slice(0, kept) : undefined;
  }

  /** Whether base64 data of this length fits. */
  bytes(base64: string): boolean {
    if (base64.length <= this.#base64) {
      this.#base64 -= base64.length;
      return true;
    }
    this.#bytesLeftOut += base64Bytes(base64);
    return false;
  }

  /** The closing line saying what was left out, when anything was. */
  note(): string | undefined {
    const what = [
      this.leftOut > 0 ? `${this.leftOut} characters of text` : "",
      this.#bytesLeftOut > 0 ? `${this.#bytesLeftOut} bytes of images or data` : "",
      this.#blocksLeftOut > 0 ? `${this.#blocksLeftOut} more content blocks` : "",
    ].filter((item) => item !== "");
    return what.length > 0
      ? `[cut: the result was too large; left out ${what.join(", ")}]`
      : undefined;
  }
}

/** Whether a text part already holds this JSON (servers are asked to include it). */
function carriesJson(parts: readonly ToolContent[], wanted: string): boolean {
  return parts.some((part) => {
    if (part.type !== "text" || part.text.length > MAX_RESULT_TEXT) return false;
    try {
      return JSON.stringify(JSON.parse(part.text)) === wanted;
    } catch {
      return false;
    }
  });
}

/** How many bytes a base64 text holds. */
function base64Bytes(base64: string): number {
  const padding = base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor(base64.length * 3 / 4) - padding);
}
