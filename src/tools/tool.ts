/**
 * The tool contract the agent loop runs, and {@link defineTool}, which builds the built-in tools
 * on it.
 *
 * @module
 */
import type { PermissionMode } from "../permission/mode.ts";
import type { PermissionAnswer, ToolEffect } from "../permission/policy.ts";
import type { Workspace, WorkspaceFiles } from "./workspace.ts";
import type { ToolCallTelemetry } from "../telemetry/telemetry.ts";
import { cancelledResult, errorResult, validateInput } from "./_common.ts";
import type { ElicitationAnswer, ElicitationRequest } from "./elicitation.ts";

/** ACP tool kinds, used by clients to pick icons and by permission policy. */
export type ToolKind =
  | "read"
  | "edit"
  | "delete"
  | "move"
  | "search"
  | "execute"
  | "think"
  | "fetch"
  | "switch_mode"
  | "other";

/** What a tool call is running in. */
export interface ToolContext {
  /** The ACP session the call belongs to. */
  readonly sessionId: string;
  /** The session's working directory (absolute, canonical); relative paths resolve against it. */
  readonly cwd: string;
  /** Absolute canonical workspace roots: the session cwd first, then additional directories. */
  readonly roots: readonly string[];
  /** File and process access: through the ACP client when it offers it, else the host. */
  readonly workspace: Workspace;
  /**
   * The file-system queries clients cannot answer (metadata, listings, symlinks, partial reads),
   * on the host's file system. Only these: tools reach no other part of the host.
   */
  readonly files: WorkspaceFiles;
  /** Aborted when the call is cancelled. */
  readonly signal: AbortSignal;
  /** The call's id, as its `tool_call` update gave it to the client (absent outside a turn). */
  readonly toolCallId?: string;
  /** The permission mode the prompt pinned (absent outside a turn). */
  readonly mode?: PermissionMode;
  /**
   * The call's telemetry: a tool that calls out (an MCP server, a delegated agent) opens its
   * child spans on it and passes its trace context (`carrier()`) on in the `_meta` of what it
   * sends. Absent outside a turn.
   */
  readonly telemetry?: ToolCallTelemetry;
  /**
   * Shows the call's progress: sends its `tool_call_update` with status `in_progress` and this
   * content, which replaces what the client showed (so pass the whole view, and call it at most
   * about once per event-loop task). Does nothing once the call has ended.
   */
  readonly progress?: (display: readonly ToolDisplay[]) => void;
  /**
   * Asks the session's client about something the call is about to do (another agent's tool
   * call, say), under the call's own id; the answer is logged and recorded like any other.
   * Resolves `cancelled` when the call is cancelled; never rejects (a failure is a refusal).
   */
  readonly askPermission?: (
    question: ToolPermissionQuestion,
  ) => Promise<PermissionAnswer | "cancelled">;
  /**
   * Asks the user a question through the client (ACP `elicitation/create`: a form, or a URL to
   * open), under the call's id; the question and the answer are logged and recorded. Absent when
   * nobody can answer (the client did not advertise elicitation, a headless `run`). Resolves
   * `cancel` when the call is cancelled or `signal` withdraws the question; never rejects (a
   * failure is a `decline` or a `cancel`, never an `accept`).
   */
  readonly elicit?: (
    request: ElicitationRequest,
    signal?: AbortSignal,
  ) => Promise<ElicitationAnswer>;
}

/** What {@link ToolContext.askPermission} asks about. */
export interface ToolPermissionQuestion {
  /** What the client is shown. */
  readonly title: string;
  /** The kind of what is asked about (clients pick an icon by it). */
  readonly kind: ToolKind;
  /** Its input, for the client to show. */
  readonly rawInput?: unknown;
  /** The files it touches. */
  readonly locations?: readonly ToolLocation[];
  /** Withdraws the question (besides the call's cancellation). */
  readonly signal?: AbortSignal;
}

/** A file location a tool call touches, for clients to follow along. */
export interface ToolLocation {
  /** Absolute path. */
  readonly path: string;
  /** 1-based line. */
  readonly line?: number;
}

/**
 * One piece of a tool result: text, an image (base64 `data`) or a link to a resource. Tools that
 * speak for others (MCP servers) return these; the agent maps them to ACP tool-call content and
 * to what each model provider takes in a tool result.
 */
export type ToolContent =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image"; readonly mimeType: string; readonly data: string }
  | {
    readonly type: "resource_link";
    readonly uri: string;
    readonly name: string;
    readonly mimeType?: string;
  };

/**
 * Rich content a client shows for a tool call: any {@link ToolContent}, an embedded resource (its
 * text, or its bytes as base64 `blob`), a diff or a terminal.
 */
export type ToolDisplay =
  | ToolContent
  | {
    readonly type: "resource";
    readonly uri: string;
    readonly mimeType?: string;
    readonly text?: string;
    readonly blob?: string;
  }
  /** `oldText` is null for a new file. */
  | {
    readonly type: "diff";
    readonly path: string;
    readonly oldText: string | null;
    readonly newText: string;
  }
  /** A terminal the client created (`terminal/create`) and still shows. */
  | { readonly type: "terminal"; readonly terminalId: string };

/** One entry of the model's plan, as ACP's `plan` update carries it. */
export interface PlanEntry {
  /** What the task is. */
  readonly content: string;
  /** Whether it is not started, being worked on, or done. */
  readonly status: "pending" | "in_progress" | "completed";
  /** How much it matters to the goal. */
  readonly priority: "high" | "medium" | "low";
}

/** What a tool call produced. Failure is a result, never a throw. */
export interface ToolResult {
  /**
   * Text the model sees; when `parts` is set, their text form (`toolResultText` of
   * src/llm/provider.ts makes it).
   */
  readonly content: string;
  /**
   * The result as parts, when it carries images or resource links (MCP tools return them): what
   * the client is shown and what models that take images in a tool result see instead of
   * `content`. Providers that take only text get `content`.
   */
  readonly parts?: readonly ToolContent[];
  /** Whether the call failed. */
  readonly isError: boolean;
  /** What the client shows; defaults to `parts`, else `content` as text. */
  readonly display?: readonly ToolDisplay[];
  /** Files the call touched, for clients to follow along. */
  readonly locations?: readonly ToolLocation[];
  /** Machine-readable output for the client (an MCP tool's structured content). */
  readonly rawOutput?: unknown;
  /** The model's whole new plan, sent to the client as a `plan` update (`update_plan`). */
  readonly plan?: readonly PlanEntry[];
}

/** A tool the model can call. */
export interface Tool {
  /** Name the model calls the tool by. */
  readonly name: string;
  /** What the tool does, for the model. */
  readonly description: string;
  /** JSON schema of the input object. */
  readonly inputSchema: Readonly<Record<string, unknown>>;
  /** ACP tool kind. */
  readonly kind: ToolKind;
  /** What the tool does to the world (decides whether permission modes let it run). */
  readonly effect: ToolEffect;
  /** A short human title for one call, shown by clients. Must not throw on bad input. */
  title(input: unknown): string;
  /** Files the call will touch, resolved against `cwd` (best effort, no I/O). */
  locations?(input: unknown, cwd: string): readonly ToolLocation[];
  /** Runs the call. */
  execute(input: unknown, context: ToolContext): Promise<ToolResult>;
}

/** A string input field. */
export type StringSchema = {
  readonly type: "string";
  readonly description: string;
  readonly minLength?: number;
};

/** An integer input field. */
export type IntegerSchema = {
  readonly type: "integer";
  readonly description: string;
  readonly minimum?: number;
  readonly maximum?: number;
};

/** A boolean input field. */
export type BooleanSchema = {
  readonly type: "boolean";
  readonly description: string;
};

/** One input field. */
export type PropertySchema = StringSchema | IntegerSchema | BooleanSchema;

/**
 * The JSON schema subset the built-in tools use for their input: an object of string, integer
 * and boolean fields, nothing else allowed.
 */
export type ObjectSchema = {
  readonly type: "object";
  readonly properties: Readonly<Record<string, PropertySchema>>;
  readonly required: readonly string[];
  readonly additionalProperties: false;
};

/**
 * What {@link defineTool} makes a {@link Tool} of: the tool's face, and the work of one call on an
 * input already checked against `schema`.
 *
 * @typeParam Input The input as `schema` describes it (an optional field may be `null`)
 * @typeParam Prepared What {@link prepare} makes of it for {@link run}; the input itself without
 *   `prepare`
 */
export interface ToolDefinition<Input extends object, Prepared extends object = Input> {
  /** Name the model calls the tool by. */
  readonly name: string;
  /** What the tool does, for the model. */
  readonly description: string;
  /** The input's schema: what the model is told, and what every call is checked against. */
  readonly schema: ObjectSchema;
  /** ACP tool kind. */
  readonly kind: ToolKind;
  /** What the tool does to the world (decides whether permission modes let it run). */
  readonly effect: ToolEffect;
  /** A short human title for one call (the input is unchecked here). Must not throw. */
  title(input: unknown): string;
  /** Files the call will touch, resolved against `cwd` (unchecked input; no I/O). */
  locations?(input: unknown, cwd: string): readonly ToolLocation[];
  /**
   * Readies a checked input for {@link run} (compiles a pattern, say), or refuses it: a string is
   * the message of the call's error result. Runs before the cancellation check, so a refused input
   * says so even on a cancelled call.
   */
  prepare?(input: Input): Prepared | string | Promise<Prepared | string>;
  /** Does the call: its input is checked, prepared, and the call was not cancelled before it. */
  run(input: Prepared, context: ToolContext): Promise<ToolResult>;
}

/**
 * Makes a {@link Tool} of a definition. Its `execute` checks the input against the schema (an
 * invalid one is an error result naming the first bad field), prepares it, answers a call
 * cancelled by then with the cancelled result, and only then runs it.
 *
 * @example A tool that greets
 * ```ts
 * import assert from "node:assert/strict";
 * import { defineTool, type ToolContext } from "./tool.ts";
 * const greet = defineTool<{ readonly name: string }>({
 *   name: "greet",
 *   description: "Greets someone.",
 *   schema: {
 *     type: "object",
 *     properties: { name: { type: "string", minLength: 1, description: "Who." } },
 *     required: ["name"],
 *     additionalProperties: false,
 *   },
 *   kind: "other",
 *   effect: "read",
 *   title: () => "Greet",
 *   run: ({ name }) => Promise.resolve({ content: `Hello, ${name}`, isError: false }),
 * });
 * const context = { signal: new AbortController().signal } as ToolContext;
 * assert.equal((await greet.execute({ name: "Ada" }, context)).content, "Hello, Ada");
 * assert.equal(
 *   (await greet.execute({}, context)).content,
 *   'Invalid input: "name" is required',
 * );
 * ```
 *
 * @typeParam Input The input as the schema describes it
 * @typeParam Prepared What `prepare` makes of it (the input itself without `prepare`)
 * @param definition The tool's face and its work
 * @returns The tool
 */
export function defineTool<Input extends object, Prepared extends object = Input>(
  definition: ToolDefinition<Input, Prepared>,
): Tool {
  const { schema, prepare, run } = definition;
  const execute = async (input: unknown, context: ToolContext): Promise<ToolResult> => {
    const invalid = validateInput(schema, input);
    if (invalid !== undefined) return errorResult(invalid);
    // Checked against the schema just now.
    const checked = input as Input;
    let prepared = prepare ? prepare(checked) : checked as object as Prepared;
    if (prepared instanceof Promise) prepared = await prepared;
    if (typeof prepared === "string") return errorResult(prepared);
    if (context.signal.aborted) return cancelledResult();
    return await run(prepared, context);
  };
  return {
    name: definition.name,
    description: definition.description,
    inputSchema: schema,
    kind: definition.kind,
    effect: definition.effect,
    title: definition.title,
    ...(definition.locations ? { locations: definition.locations } : {}),
    execute,
  };
}
