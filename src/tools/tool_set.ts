/**
 * A session's tools: the built-in tools plus the tools of later sources (MCP servers), found by
 * exact name.
 *
 * @module
 */
import type { Logger } from "../log/logger.ts";
import { nullLogger } from "../log/logger.ts";
import type { Tool } from "./tool.ts";

/** The id of the built-in tools' source. */
export const BUILTIN_SOURCE = "builtin";

/**
 * The names a set takes: what both OpenAI (`^[a-zA-Z0-9_-]{1,64}$`) and Anthropic accept as a
 * tool name. A tool with another name would make every model request of the session fail.
 */
export const TOOL_NAME_PATTERN: RegExp = /^[A-Za-z0-9_-]{1,64}$/;

/** Tools from one place: the built-in tools, or one MCP server's. */
export interface ToolSource {
  /** Who provides the tools: {@link BUILTIN_SOURCE}, or for example `mcp:<server>`. */
  readonly id: string;
  /** Its tools, in the order models see them. */
  readonly tools: readonly Tool[];
}

/** A tool a set did not take, and why. */
export interface RefusedTool {
  /** The source that offered it. */
  readonly source: string;
  /** Its name. */
  readonly name: string;
  /** `duplicate`: the name is taken; `invalid-name`: not {@link TOOL_NAME_PATTERN}. */
  readonly reason: "duplicate" | "invalid-name";
  /** For a duplicate, the source whose tool holds the name. */
  readonly holder?: string;
}

/** Options for {@link ToolSet}. */
export interface ToolSetOptions {
  /** Told (at warn) about every refused tool. @default {nullLogger} */
  readonly logger?: Logger;
  /** Added to every warning, for example `{ sessionId }`. */
  readonly logFields?: Readonly<Record<string, unknown>>;
}

interface Entry {
  readonly tool: Tool;
  readonly source: string;
}

/**
 * The tools one session offers the model, from one or more sources.
 *
 * Lookup is by exact, case-sensitive name (a `Map`). The collision rule: **first come, first
 * served** — a name belongs to the first tool added under it, and a later tool with the same
 * name (from any source, or the same one) is refused, not renamed: it is left out, a warning is
 * logged, and {@link ToolSet.add} returns it. The built-in tools are added first, so they always
 * win; MCP tools are named `mcp__<server>__<tool>` ({@link mcpToolName}) and collide only when
 * two servers share a name or a server lists a tool twice. A tool whose name a provider would
 * reject ({@link TOOL_NAME_PATTERN}) is refused too. Removing a source frees its names; tools
 * refused earlier do not come back.
 *
 * @example Built-ins win a collision
 * ```ts
 * import assert from "node:assert/strict";
 * import { builtinTools } from "./builtin_tools.ts";
 * import { ToolSet } from "./tool_set.ts";
 * const tools = ToolSet.of(builtinTools());
 * const impostor = { ...builtinTools()[0]!, description: "Not the real one" };
 * const refused = tools.add({ id: "mcp:files", tools: [impostor] });
 * assert.deepEqual(refused, [
 *   { source: "mcp:files", name: "read_file", reason: "duplicate", holder: "builtin" },
 * ]);
 * assert.equal(tools.get("read_file"), builtinTools()[0]);
 * assert.equal(tools.get("READ_FILE"), undefined);
 * ```
 */
export class ToolSet {
  readonly #entries = new Map<string, Entry>();
  readonly #logger: Logger;
  readonly #logFields: Readonly<Record<string, unknown>>;
  #list: readonly Tool[] | undefined;

  /**
   * An empty set.
   *
   * @param options Where refusals are logged
   */
  constructor(options: ToolSetOptions = {}) {
    this.#logger = options.logger ?? nullLogger;
    this.#logFields = options.logFields ?? {};
  }

  /**
   * A set of the given tools as the built-in source (a tool whose name an earlier one took is
   * left out, as lookup by first match did).
   *
   * @param tools The tools
   * @param options Where refusals are logged
   * @returns The set
   */
  static of(tools: readonly Tool[], options: ToolSetOptions = {}): ToolSet {
    const set = new ToolSet(options);
    set.add({ id: BUILTIN_SOURCE, tools });
    return set;
  }

  /** How many tools the set holds. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Adds a source's tools, after those already in the set; refuses those whose name is taken or
   * invalid (see the class doc), logging a warning for each.
   *
   * @param source The tools and who provides them
   * @returns The refused tools (empty when every tool was taken)
   */
  add(source: ToolSource): readonly RefusedTool[] {
    const refused: RefusedTool[] = [];
    for (const tool of source.tools) {
      const { name } = tool;
      const holder = this.#entries.get(name);
      if (holder) {
        refused.push({ source: source.id, name, reason: "duplicate", holder: holder.source });
      } else if (!TOOL_NAME_PATTERN.test(name)) {
        refused.push({ source: source.id, name, reason: "invalid-name" });
      } else {
        this.#entries.set(name, { tool, source: source.id });
        this.#list = undefined;
      }
    }
    for (const { source: from, name, reason, holder } of refused) {
      this.#logger.warn("tool refused", {
        ...this.#logFields,
        source: from,
        tool: name,
        reason,
        ...(holder === undefined ? {} : { holder }),
      });
    }
    return refused;
  }

  /**
   * Removes every tool of a source (an MCP server that went away).
   *
   * @param sourceId The source's id
   * @returns How many tools were removed
   */
  remove(sourceId: string): number {
    let removed = 0;
    for (const [name, entry] of this.#entries) {
      if (entry.source !== sourceId) continue;
      this.#entries.delete(name);
      removed++;
    }
    if (removed > 0) this.#list = undefined;
    return removed;
  }

  /**
   * The tool of exactly this name (case-sensitive).
   *
   * @param name The name the model called
   * @returns The tool, or undefined
   */
  get(name: string): Tool | undefined {
    return this.#entries.get(name)?.tool;
  }

  /**
   * The source that provides a tool.
   *
   * @param name The tool's name
   * @returns The source's id, or undefined when the set has no such tool
   */
  sourceOf(name: string): string | undefined {
    return this.#entries.get(name)?.source;
  }

  /**
   * Every tool, in the order models see them: source by source, each in its own order.
   *
   * @returns The tools (the same frozen array until the set changes)
   */
  list(): readonly Tool[] {
    this.#list ??= Object.freeze([...this.#entries.values()].map((entry) => entry.tool));
    return this.#list;
  }
}

/**
 * The name an MCP server's tool gets in a session: `mcp__<server>__<tool>`, with every character
 * outside `A-Za-z0-9_-` replaced by `_` and cut to 64 characters (so two tools may end up with
 * one name; the set then keeps the first).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mcpToolName } from "./tool_set.ts";
 * assert.equal(mcpToolName("my files", "read.text"), "mcp__my_files__read_text");
 * ```
 *
 * @param server The server's name, as the client gave it
 * @param tool The tool's name, as the server gave it
 * @returns The tool's name in the set
 */
export function mcpToolName(server: string, tool: string): string {
  const clean = (text: string): string => text.replace(/[^A-Za-z0-9_-]/g, "_");
  return `mcp__${clean(server)}__${clean(tool)}`.slice(0, 64);
}
