import type {
  LlmMessage,
  LlmProvider,
  LlmToolCall,
  LlmUsage,
  ProviderError,
} from "../llm/provider.ts";
import type { Tool, ToolResult } from "../tools/tool.ts";
import type { TurnEvent } from "./turn_event.ts";

/** How a turn ended, in ACP terms. */
export type StopReason = "end_turn" | "max_tokens" | "max_turn_requests" | "refusal" | "cancelled";

/**
 * Receives the turn's events in order. A returned promise means the client is behind: the loop
 * waits on it before relaying more deltas.
 */
export type TurnEmitter = (event: TurnEvent) => void | Promise<void>;

/** Everything one turn needs. */
export interface TurnOptions {
  readonly sessionId: string;
  readonly provider: LlmProvider;
  readonly model: string;
  readonly reasoningEffort?: string;
  readonly system: string;
  /**
   * The conversation so far, ending with the new user message. The turn appends each message it
   * commits (and emits a `history` event for it), so the array is the session's conversation.
   */
  readonly history: LlmMessage[];
  readonly tools: readonly Tool[];
  readonly roots: readonly string[];
  /** Most model requests in one turn before it stops with `max_turn_requests`. */
  readonly maxSteps: number;
  /** Relay deltas as they arrive instead of committed steps. */
  readonly stream: boolean;
  readonly signal: AbortSignal;
  readonly emit: TurnEmitter;
}

/**
 * A model request that failed for good. The protocol layer reports it as an internal error
 * naming the provider and model.
 */
export class TurnError extends Error {
  /** The provider failure behind it. */
  readonly providerError: ProviderError | undefined;

  /**
   * @param message What failed
   * @param providerError The underlying provider failure
   */
  constructor(message: string, providerError?: ProviderError) {
    super(message, providerError ? { cause: providerError } : undefined);
    this.name = "TurnError";
    this.providerError = providerError;
  }
}

interface StepResult {
  readonly reason: "stop" | "tool-calls" | "max-tokens" | "refusal" | "aborted";
  readonly calls: readonly LlmToolCall[];
}

/**
 * Runs one prompt turn: model step, commit, tool calls, next step, until the model stops.
 *
 * Never throws for cancellation: an aborted signal ends the turn with `cancelled`. A model
 * failure throws {@link TurnError}.
 *
 * @param options The turn's inputs
 * @returns Why the turn ended
 */
export async function runTurn(options: TurnOptions): Promise<StopReason> {
  const { signal, history } = options;
  for (let step = 0;; step++) {
    if (signal.aborted) return "cancelled";
    if (step >= options.maxSteps) return "max_turn_requests";
    const result = await runStep(options, history);
    if (result.reason === "aborted" || signal.aborted) return "cancelled";
    if (result.calls.length > 0) {
      for (const call of result.calls) {
        const message = await runToolCall(options, call);
        history.push(message);
        options.emit({ type: "history", message });
      }
      if (signal.aborted) return "cancelled";
      if (result.reason === "tool-calls" || result.reason === "stop") continue;
    }
    switch (result.reason) {
      case "max-tokens":
        return "max_tokens";
      case "refusal":
        return "refusal";
      default:
        return "end_turn";
    }
  }
}

async function runStep(options: TurnOptions, history: LlmMessage[]): Promise<StepResult> {
  const { signal, emit, stream } = options;
  const thoughtId = crypto.randomUUID();
  const messageId = crypto.randomUUID();
  let reasoning = "";
  let text = "";
  let usage: LlmUsage | undefined;
  let providerState: unknown;
  const calls: LlmToolCall[] = [];
  const events = options.provider.stream({
    sessionId: options.sessionId,
    model: options.model,
    system: options.system,
    messages: history,
    tools: options.tools.map(({ name, description, inputSchema }) => ({
      name,
      description,
      inputSchema,
    })),
    ...(options.reasoningEffort === undefined ? {} : { reasoningEffort: options.reasoningEffort }),
  }, { signal });
  for await (const event of events) {
    switch (event.type) {
      case "reasoning-delta":
        reasoning += event.text;
        if (stream && event.text && !signal.aborted) {
          const wait = emit({ type: "thought", messageId: thoughtId, text: event.text });
          if (wait) await wait;
        }
        break;
      case "text-delta":
        text += event.text;
        if (stream && event.text && !signal.aborted) {
          const wait = emit({ type: "message", messageId, text: event.text });
          if (wait) await wait;
        }
        break;
      case "tool-call":
        calls.push(event.call);
        break;
      case "usage":
        usage = event.usage;
        break;
      case "provider-state":
        providerState = event.state;
        break;
      case "finish": {
        if (event.reason === "aborted" || signal.aborted) return { reason: "aborted", calls: [] };
        if (event.reason === "error") {
          const reason = event.error?.message ?? "unknown error";
          throw new TurnError(
            `Model request failed (${options.provider.id}/${options.model}): ${reason}`,
            event.error,
          );
        }
        if (!stream) {
          if (reasoning) emit({ type: "thought", messageId: thoughtId, text: reasoning });
          if (text) emit({ type: "message", messageId, text });
        }
        const message: LlmMessage = {
          role: "assistant",
          text,
          ...(reasoning ? { reasoning } : {}),
          ...(calls.length > 0 ? { toolCalls: calls } : {}),
          ...(providerState === undefined ? {} : { providerState }),
        };
        history.push(message);
        emit({ type: "history", message });
        if (usage) emit({ type: "usage", usage });
        return { reason: event.reason, calls };
      }
    }
  }
  if (signal.aborted) return { reason: "aborted", calls: [] };
  throw new TurnError(
    `Model request failed (${options.provider.id}/${options.model}): stream ended without finish`,
  );
}

async function runToolCall(options: TurnOptions, call: LlmToolCall): Promise<LlmMessage> {
  const { emit, signal } = options;
  const tool = options.tools.find((candidate) => candidate.name === call.name);
  let input: unknown = call.arguments;
  let parsed = true;
  try {
    input = call.arguments.trim() === "" ? {} : JSON.parse(call.arguments);
  } catch {
    parsed = false;
  }
  emit({
    type: "tool-call",
    toolCallId: call.id,
    name: call.name,
    title: tool ? safeTitle(tool, input) : call.name,
    kind: tool?.kind ?? "other",
    rawInput: input,
  });
  let result: ToolResult;
  if (!tool) {
    result = { content: `Unknown tool "${call.name}"`, isError: true };
  } else if (!parsed) {
    result = { content: `Tool arguments are not valid JSON: ${call.arguments}`, isError: true };
  } else if (signal.aborted) {
    result = { content: "Tool call cancelled", isError: true };
  } else {
    emit({ type: "tool-call-update", toolCallId: call.id, status: "in_progress" });
    try {
      result = await tool.execute(input, {
        sessionId: options.sessionId,
        roots: options.roots,
        signal,
      });
    } catch (error) {
      result = { content: `Tool failed: ${String(error)}`, isError: true };
    }
    if (signal.aborted && !result.isError) {
      result = { content: `${result.content}\n(turn cancelled)`, isError: false };
    }
  }
  emit({
    type: "tool-call-update",
    toolCallId: call.id,
    status: result.isError ? "failed" : "completed",
    text: result.content,
  });
  return {
    role: "tool",
    toolCallId: call.id,
    name: call.name,
    content: result.content,
    isError: result.isError,
  };
}

function safeTitle(tool: Tool, input: unknown): string {
  try {
    return tool.title(input);
  } catch {
    return tool.name;
  }
}
