/**
 * The tool contract the agent loop runs.
 *
 * @module
 */

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
  readonly sessionId: string;
  /** Absolute workspace roots: the session cwd first, then additional directories. */
  readonly roots: readonly string[];
  readonly signal: AbortSignal;
}

/** What a tool call produced. Failure is a result, never a throw. */
export interface ToolResult {
  /** Text the model sees. */
  readonly content: string;
  readonly isError: boolean;
}

/** A tool the model can call. */
export interface Tool {
  readonly name: string;
  readonly description: string;
  /** JSON schema of the input object. */
  readonly inputSchema: Readonly<Record<string, unknown>>;
  readonly kind: ToolKind;
  /** A short human title for one call, shown by clients. */
  title(input: unknown): string;
  /** Runs the call. */
  execute(input: unknown, context: ToolContext): Promise<ToolResult>;
}
