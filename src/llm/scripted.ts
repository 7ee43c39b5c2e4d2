import * as z from "zod";
import { abortableDelay } from "../util/abortable_delay.ts";
import {
  type FinishReason,
  type LlmEvent,
  type LlmProvider,
  type LlmRequest,
  type LlmStreamOptions,
  ProviderError,
  type ProviderErrorKind,
} from "./provider.ts";

// Built on first use: only runs with a script need them, and zod schemas cost start-up time.
let scriptSchemas: { steps: z.ZodType; object: z.ZodType } | undefined;
function schemas(): { steps: z.ZodType; object: z.ZodType } {
  if (scriptSchemas) return scriptSchemas;
  const textOrChunks = z.union([z.string(), z.array(z.string())]);

  const stepSchema = z.strictObject({
    thought: textOrChunks.optional(),
    text: textOrChunks.optional(),
    toolCalls: z.array(z.strictObject({
      id: z.string().min(1).optional(),
      name: z.string().min(1),
      arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
    })).optional(),
    usage: z.strictObject({
      input: z.number().int().nonnegative(),
      output: z.number().int().nonnegative(),
      cacheRead: z.number().int().nonnegative().optional(),
      cacheWrite: z.number().int().nonnegative().optional(),
      reasoning: z.number().int().nonnegative().optional(),
    }).optional(),
    delayMs: z.number().nonnegative().optional(),
    chunkDelayMs: z.number().nonnegative().optional(),
    finish: z.enum(["stop", "tool-calls", "max-tokens", "refusal"]).optional(),
    error: z.strictObject({
      message: z.string().min(1),
      kind: z.enum([
        "auth",
        "quota",
        "rate-limit",
        "context-overflow",
        "bad-request",
        "server",
        "transport",
      ]).optional(),
      status: z.number().int().optional(),
      retryable: z.boolean().optional(),
      retryAfterMs: z.number().nonnegative().optional(),
    }).optional(),
  });

  const stepsSchema = z.array(stepSchema);
  scriptSchemas = { steps: stepsSchema, object: z.strictObject({ steps: stepsSchema }) };
  return scriptSchemas;
}

/** One scripted model step. See docs/models.md for the format. */
export interface ScriptStep {
  /** Reasoning text, whole or as deltas. */
  readonly thought?: string | string[];
  /** Answer text, whole or as deltas. */
  readonly text?: string | string[];
  /** Tool calls; `arguments` is an object or a raw (possibly malformed) JSON string. */
  readonly toolCalls?: ReadonlyArray<{
    readonly id?: string;
    readonly name: string;
    readonly arguments?: string | Record<string, unknown>;
  }>;
  /** Token usage reported for the step. */
  readonly usage?: {
    readonly input: number;
    readonly output: number;
    readonly cacheRead?: number;
    readonly cacheWrite?: number;
    readonly reasoning?: number;
  };
  /** Wait before the first event. */
  readonly delayMs?: number;
  /** Wait before each delta. */
  readonly chunkDelayMs?: number;
  /** How the step ends; default `tool-calls` when it has tool calls, else `stop`. */
  readonly finish?: "stop" | "tool-calls" | "max-tokens" | "refusal";
  /** Ends the step with a provider failure after its deltas. */
  readonly error?: {
    readonly message: string;
    readonly kind?: Exclude<ProviderErrorKind, "script">;
    readonly status?: number;
    readonly retryable?: boolean;
    readonly retryAfterMs?: number;
  };
}

/** A parsed script: the model steps in the order they answer requests. */
export interface Script {
  /** The model steps, in order. */
  readonly steps: readonly ScriptStep[];
}

/**
 * Validates a script given as parsed JSON.
 *
 * Accepts either an array of steps or `{ "steps": [...] }`.
 *
 * @example Parsing a one-step script
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseScript } from "./scripted.ts";
 * const script = parseScript([{ text: "hello" }]);
 * assert(script.steps.length === 1);
 * ```
 *
 * @param json The parsed file content
 * @param file The file it came from, named in the error message
 * @returns The script
 * @throws {TypeError} `Cannot parse script "<file>": <path>: <problem>`, naming the file and the
 *   first invalid field by its path (`0.toolCalls.1.name`: the first step's second tool call)
 */
export function parseScript(json: unknown, file?: string): Script {
  // Choosing the schema by shape (rather than a union) keeps zod's errors pointing at the field.
  const result = Array.isArray(json)
    ? schemas().steps.safeParse(json)
    : schemas().object.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0];
    const path = issue?.path.length ? issue.path.join(".") : "(root)";
    const source = file === undefined ? "" : ` "${file}"`;
    throw new TypeError(`Cannot parse script${source}: ${path}: ${issue?.message ?? "invalid"}`);
  }
  const data = result.data as ScriptStep[] | { steps: ScriptStep[] };
  return { steps: Array.isArray(data) ? data : data.steps };
}

/**
 * Replays a script of model steps: each model request gets the next step of its session.
 *
 * A session's position starts at the number of assistant messages already in its history, so a
 * restored session continues where it left off. A step that fails still counts. When the script
 * runs out the request fails with a non-retryable error saying so.
 *
 * @example Replaying text then a tool call
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseScript, ScriptedProvider } from "./scripted.ts";
 * const provider = new ScriptedProvider(parseScript([{ text: "hi" }]));
 * assert(provider.id === "scripted");
 * ```
 */
export class ScriptedProvider implements LlmProvider {
  /** Always `scripted`. */
  readonly id: string = "scripted";
  readonly #steps: readonly ScriptStep[];
  readonly #cursors = new Map<string, number>();

  /**
   * Creates a provider that replays `script`.
   *
   * @param script The steps to replay
   */
  constructor(script: Script) {
    this.#steps = script.steps;
  }

  /**
   * Streams the session's next step.
   *
   * @param request The conversation
   * @param options Carries the abort signal
   * @returns The step's events
   */
  async *stream(request: LlmRequest, options: LlmStreamOptions): AsyncIterable<LlmEvent> {
    const { signal } = options;
    const index = this.#cursors.get(request.sessionId) ??
      request.messages.filter((message) => message.role === "assistant").length;
    this.#cursors.set(request.sessionId, index + 1);
    const step = this.#steps[index];
    if (!step) {
      const error = new ProviderError(
        `script has no step ${index + 1} (it has ${this.#steps.length})`,
        { kind: "script", retryable: false },
      );
      return yield { type: "finish", reason: "error", error };
    }
    if (!(await abortableDelay(step.delayMs ?? 0, signal))) {
      return yield { type: "finish", reason: "aborted" };
    }
    const pause = step.chunkDelayMs ?? 0;
    for (const text of chunks(step.thought)) {
      if (pause > 0 && !(await abortableDelay(pause, signal))) break;
      if (signal.aborted) break;
      yield { type: "reasoning-delta", text };
    }
    for (const text of chunks(step.text)) {
      if (pause > 0 && !(await abortableDelay(pause, signal))) break;
      if (signal.aborted) break;
      yield { type: "text-delta", text };
    }
    if (signal.aborted) return yield { type: "finish", reason: "aborted" };
    const calls = step.toolCalls ?? [];
    for (const [position, call] of calls.entries()) {
      yield {
        type: "tool-call",
        call: {
          id: call.id ?? `call_${index + 1}_${position + 1}`,
          name: call.name,
          arguments: typeof call.arguments === "string"
            ? call.arguments
            : JSON.stringify(call.arguments ?? {}),
        },
      };
    }
    if (step.usage) {
      const { input, output, cacheRead, cacheWrite, reasoning } = step.usage;
      yield {
        type: "usage",
        usage: {
          input,
          output,
          ...(cacheRead === undefined ? {} : { cacheRead }),
          ...(cacheWrite === undefined ? {} : { cacheWrite }),
          ...(reasoning === undefined ? {} : { reasoning }),
        },
      };
    }
    if (step.error) {
      const { message, kind, status, retryable, retryAfterMs } = step.error;
      const error = new ProviderError(message, {
        kind: kind ?? "server",
        retryable: retryable ?? false,
        ...(status === undefined ? {} : { status }),
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      });
      return yield { type: "finish", reason: "error", error };
    }
    const reason: FinishReason = step.finish ?? (calls.length > 0 ? "tool-calls" : "stop");
    yield { type: "finish", reason };
  }
}

function chunks(value: string | string[] | undefined): readonly string[] {
  if (value === undefined) return [];
  return typeof value === "string" ? (value === "" ? [] : [value]) : value;
}
