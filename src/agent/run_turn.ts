import type {
  LlmMessage,
  LlmProvider,
  LlmToolCall,
  LlmToolSpec,
  LlmUsage,
  ProviderError,
} from "../llm/provider.ts";
import type {
  Authorization,
  AuthorizeRequest,
  RelayedPermission,
} from "../permission/authorization.ts";
import type { PermissionMode } from "../permission/mode.ts";
import type { PermissionAnswer } from "../permission/policy.ts";
import type { Tool, ToolContext, ToolLocation, ToolResult } from "../tools/tool.ts";
import type { ElicitationAnswer, RelayedElicitation } from "../tools/elicitation.ts";
import { ToolSet } from "../tools/tool_set.ts";
import type { Workspace, WorkspaceFiles } from "../tools/workspace.ts";
import { abortableDelay } from "../util/abortable_delay.ts";
import type { TurnEvent } from "./turn_event.ts";
import { type BudgetStop, TurnBudget } from "./turn_budget.ts";
import {
  type ModelRequestTelemetry,
  NOOP_TELEMETRY,
  type ToolCallStatus,
  type ToolCallTelemetry,
  type TurnTelemetry,
} from "../telemetry/telemetry.ts";

import type { StopReason } from "../util/stop_reason.ts";
export type { StopReason };

/**
 * Receives the turn's events in order. A returned promise means the client is behind: the loop
 * waits on it before relaying more deltas.
 */
export type TurnEmitter = (event: TurnEvent) => void | Promise<void>;

/** How failed model requests are retried. */
export interface RetryPolicy {
  /** Most attempts per model step, the first included. @default {4} */
  readonly attempts: number;
  /** Backoff before the second attempt; doubles each time, with ±25% jitter. @default {500} */
  readonly baseDelayMs: number;
  /** Longest wait between attempts (a longer `Retry-After` is still honoured up to 60 s). */
  readonly maxDelayMs: number;
}

/** The default {@link RetryPolicy}. */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 4, baseDelayMs: 500, maxDelayMs: 20_000 };

/** How many of one step's tool calls run at once (edits and commands still go one at a time). */
export const TOOL_PARALLELISM = 4;

/** What a model request is made of, for the {@link ContextControl}. */
export interface RequestParts {
  readonly system: string;
  readonly tools: readonly LlmToolSpec[];
  readonly history: readonly LlmMessage[];
}

/** Keeps the conversation within the model's context window (the session's compactor). */
export interface ContextControl {
  /**
   * Runs before each model request; may compact the history in place.
   *
   * @returns Once the history is ready (as it was, when cancelled)
   */
  beforeRequest(parts: RequestParts, signal: AbortSignal): Promise<void>;
  /**
   * Runs after a request failed because the context was too long (once per step).
   *
   * @returns Whether the history was compacted, so the request is worth sending again
   */
  afterOverflow(parts: RequestParts, signal: AbortSignal): Promise<boolean>;
  /** The provider's usage of a request whose reply is `reply` (the history's last message). */
  reported(reply: LlmMessage, usage: LlmUsage): void;
}

/** The settings of the turn loop, fixed for a server's life. */
export interface TurnSettings {
  /** Most model requests in one turn before it stops with `max_turn_requests`. @default {50} */
  readonly maxSteps: number;
  /** Relay deltas as they arrive instead of committed steps. @default {false} */
  readonly stream: boolean;
  /** Most tool calls run in one turn; absent: no limit. */
  readonly maxToolCalls?: number | undefined;
  /** Longest a turn may run in ms (checked before each request and tool call); absent: none. */
  readonly turnTimeoutMs?: number | undefined;
  /** Most tokens (input plus output) a session may spend; absent: no limit. */
  readonly maxSessionTokens?: number | undefined;
  /** Most a session may cost in USD (a model without prices cannot run); absent: no limit. */
  readonly maxSessionCostUsd?: number | undefined;
}

/**
 * What the turns of every session of a server share: built once per server and handed down by
 * reference (the session layer's `SessionServices` extends it).
 */
export interface TurnServices {
  readonly settings: TurnSettings;
  /** The file-system queries tools need besides the workspace (see {@link ToolContext.files}). */
  readonly files: WorkspaceFiles;
  /** How failed model requests are retried. @default {DEFAULT_RETRY} */
  readonly retry?: RetryPolicy | undefined;
}

/**
 * Messages sent into a running turn (a client's `_session/steering`): taken at each step boundary,
 * before the next model request, and appended to the history as user messages. While any wait,
 * a model's end of turn is not the turn's end: the next step takes them.
 */
export interface TurnSteering {
  /** Whether messages wait. */
  readonly pending: boolean;
  /**
   * Takes the waiting messages (the taker records and shows them).
   *
   * @returns Them as user messages, in order
   */
  take(): readonly LlmMessage[];
}

/** Everything one turn needs: the server's shared {@link TurnServices} and the turn's own. */
export interface TurnOptions {
  readonly services: TurnServices;
  readonly sessionId: string;
  readonly provider: LlmProvider;
  readonly model: string;
  readonly reasoningEffort?: string;
  readonly maxOutputTokens?: number;
  readonly system: string;
  /**
   * The conversation so far, ending with the new user message. The turn appends each message it
   * commits (and emits a `history` event for it), so the array is the session's conversation.
   */
  readonly history: LlmMessage[];
  /**
   * The tools the model may call, looked up by exact name: the session's set, or a plain list
   * (made into a set of one source for the turn: a later tool with a taken name is left out).
   */
  readonly tools: ToolSet | readonly Tool[];
  /**
   * Whether the model takes image input; when false, providers send tool-result images as text
   * placeholders only. @default {true}
   */
  readonly imageInput?: boolean;
  /**
   * Whether the history holds provider state from another provider than this turn's (which must
   * not be sent to this one). Sessions know this cheaply; when absent, the history is scanned.
   */
  readonly foreignState?: boolean;
  /** The session's working directory (canonical). */
  readonly cwd: string;
  /** Canonical workspace roots, the cwd first. */
  readonly roots: readonly string[];
  readonly workspace: Workspace;
  /** Decides whether a tool call runs; without it every call runs. */
  readonly authorize?: (request: AuthorizeRequest) => Promise<Authorization>;
  /** The permission mode the turn runs under, told to tools. */
  readonly mode?: PermissionMode;
  /** Asks the client what a running tool call asks (`ToolContext.askPermission`). */
  readonly askPermission?: (
    request: RelayedPermission,
  ) => Promise<PermissionAnswer | "cancelled">;
  /**
   * Asks the user what a running tool call asks (`ToolContext.elicit`); absent when nobody can
   * answer (tools then get no `elicit`).
   */
  readonly elicit?: (request: RelayedElicitation) => Promise<ElicitationAnswer>;
  /** Told before each retry of a failed model request. */
  readonly onRetry?: (error: ProviderError, attempt: number, delayMs: number) => void;
  /** Keeps the history within the context window; without it nothing is compacted. */
  readonly context?: ContextControl;
  /**
   * The turn's budget, checked before each model request and tool call.
   * @default {only the settings' `maxSteps`}
   */
  readonly budget?: TurnBudget;
  /**
   * The turn's telemetry: each model request and tool call is one child of it.
   * @default {none recorded}
   */
  readonly telemetry?: TurnTelemetry;
  /**
   * Runs before a tool call that may change files (one whose kind is not `read`, `search`,
   * `think` or `fetch`) once its permission is granted, before it runs: the session takes a
   * checkpoint of its roots (the first time in a turn). It never rejects. @default {none}
   */
  readonly beforeChange?: (signal: AbortSignal) => Promise<void>;
  /** Messages sent into the turn while it runs. @default {none} */
  readonly steering?: TurnSteering;
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

/** The turn's options with its tools as a set. */
type Turn = Omit<TurnOptions, "tools" | "budget" | "telemetry"> & {
  readonly tools: ToolSet;
  readonly budget: TurnBudget;
  readonly telemetry: TurnTelemetry;
};

interface StepResult {
  readonly reason: "stop" | "tool-calls" | "max-tokens" | "refusal" | "aborted";
  readonly calls: readonly LlmToolCall[];
}

type Attempt = StepResult | { readonly reason: "error"; readonly error: ProviderError | undefined };

/**
 * Runs one prompt turn: model step, commit, tool calls, next step, until the model stops (with
 * no steered message waiting).
 *
 * Never throws for cancellation: an aborted signal ends the turn with `cancelled`. A model
 * request that still fails after its retries throws {@link TurnError}.
 *
 * @param options The turn's inputs
 * @returns Why the turn ended
 */
export async function runTurn(turnOptions: TurnOptions): Promise<StopReason> {
  const { tools } = turnOptions;
  const options: Turn = {
    ...turnOptions,
    tools: tools instanceof ToolSet ? tools : ToolSet.of(tools),
    budget: turnOptions.budget ??
      new TurnBudget({ limits: { maxSteps: turnOptions.services.settings.maxSteps } }),
    telemetry: turnOptions.telemetry ?? NOOP_TELEMETRY.promptTurn(),
  };
  const { signal, history, budget, steering } = options;
  for (;;) {
    if (signal.aborted) return "cancelled";
    const stop = budget.beforeRequest();
    if (stop) return stop.stopReason;
    if (steering?.pending) {
      for (const message of steering.take()) {
        history.push(message);
        options.emit({ type: "history", message });
      }
    }
    const result = await runStep(options);
    if (result.reason === "aborted" || signal.aborted) return "cancelled";
    if (result.calls.length > 0) {
      const messages = await runToolCalls(options, result.calls);
      for (const message of messages) {
        history.push(message);
        options.emit({ type: "history", message });
      }
      if (signal.aborted) return "cancelled";
      if (budget.stopped) return budget.stopped.stopReason;
      if (result.reason === "tool-calls" || result.reason === "stop") continue;
    }
    switch (result.reason) {
      case "max-tokens":
        return "max_tokens";
      case "refusal":
        return "refusal";
      default:
        // A message sent in while the model wrote its answer: the turn goes on with it.
        if (steering?.pending) continue;
        return "end_turn";
    }
  }
}

/**
 * The tools of a set as the model is offered them.
 *
 * @param tools The set
 * @returns Their names, descriptions and input schemas
 */
export function toolSpecs(tools: ToolSet): LlmToolSpec[] {
  return tools.list().map(({ name, description, inputSchema }) => ({
    name,
    description,
    inputSchema,
  }));
}

/** One model step, retried on retryable failures. */
async function runStep(options: Turn): Promise<StepResult> {
  const retry = options.services.retry ?? DEFAULT_RETRY;
  const { context, signal } = options;
  const tools = toolSpecs(options.tools);
  const parts: RequestParts = { system: options.system, tools, history: options.history };
  if (context) {
    await context.beforeRequest(parts, signal);
    if (signal.aborted) return { reason: "aborted", calls: [] };
  }
  let recovered = false;
  for (let attempt = 1;; attempt++) {
    const request = options.telemetry.modelRequest({
      provider: options.provider.id,
      model: options.model,
    }, attempt);
    let result: Attempt;
    try {
      result = await attemptStep(options, attempt, tools, request);
    } finally {
      // Ended with its outcome already, unless the stream threw or failed (ended below).
      if (signal.aborted) request.end("cancelled");
    }
    if (result.reason !== "error") return result;
    const error = result.error;
    const outcome = error?.kind ?? "error";
    if (error?.kind === "context-overflow" && context && !recovered) {
      // One compaction and one more request, instead of failing the turn.
      recovered = true;
      const compacted = await context.afterOverflow(parts, signal);
      if (signal.aborted) {
        request.end(outcome);
        return { reason: "aborted", calls: [] };
      }
      if (compacted) {
        request.retry?.(outcome, 0);
        request.end(outcome);
        options.onRetry?.(error, attempt, 0);
        continue;
      }
    }
    const label = `${options.provider.id}/${options.model}`;
    if (!error?.retryable || attempt >= retry.attempts) {
      request.end(outcome);
      const tries = attempt > 1 ? ` (after ${attempt} attempts)` : "";
      throw new TurnError(
        `Model request failed (${label})${tries}: ${error?.message ?? "unknown error"}`,
        error,
      );
    }
    const backoff = retry.baseDelayMs * 2 ** (attempt - 1);
    const jittered = Math.min(retry.maxDelayMs, backoff * (0.75 + Math.random() * 0.5));
    const delayMs = Math.round(
      error.retryAfterMs === undefined ? jittered : Math.min(error.retryAfterMs, 60_000),
    );
    request.retry?.(outcome, delayMs);
    request.end(outcome);
    options.onRetry?.(error, attempt, delayMs);
    if (!(await abortableDelay(delayMs, options.signal))) return { reason: "aborted", calls: [] };
  }
}

/**
 * One model request. Commits the step (history, committed-mode updates) when it succeeds. Its
 * telemetry is ended here unless it failed with a provider error: the caller ends it then, after
 * telling whether it is retried.
 */
async function attemptStep(
  options: Turn,
  attempt: number,
  tools: readonly LlmToolSpec[],
  request: ModelRequestTelemetry,
): Promise<Attempt> {
  const { signal } = options;
  let result: Attempt | undefined;
  try {
    return result = await streamStep(options, attempt, tools, request);
  } finally {
    // Ended with its outcome in the stream; here when it threw or ended without `finish`.
    if (result === undefined) request.end(signal.aborted ? "cancelled" : "error");
  }
}

/** Streams one model request (see {@link attemptStep}), its telemetry told how it goes. */
async function streamStep(
  options: Turn,
  attempt: number,
  tools: readonly LlmToolSpec[],
  request: ModelRequestTelemetry,
): Promise<Attempt> {
  const { signal, emit, history } = options;
  const { stream } = options.services.settings;
  const thoughtId = crypto.randomUUID();
  const messageId = crypto.randomUUID();
  let reasoning = "";
  let text = "";
  let usage: LlmUsage | undefined;
  let providerState: unknown;
  const calls: LlmToolCall[] = [];
  if (options.telemetry.captureContent) {
    request.content?.({ system: options.system, input: history });
  }
  const events = options.provider.stream({
    sessionId: options.sessionId,
    roots: options.roots,
    model: options.model,
    system: options.system,
    messages: options.foreignState === false ? history : forProvider(history, options.provider.id),
    tools,
    ...(options.reasoningEffort === undefined ? {} : { reasoningEffort: options.reasoningEffort }),
    ...(options.maxOutputTokens === undefined ? {} : { maxOutputTokens: options.maxOutputTokens }),
    ...(options.imageInput === undefined ? {} : { imageInput: options.imageInput }),
  }, { signal, attempt });
  for await (const event of events) {
    switch (event.type) {
      case "reasoning-delta":
        request.firstToken();
        reasoning += event.text;
        if (stream && event.text && !signal.aborted) {
          const wait = emit({ type: "thought", messageId: thoughtId, text: event.text });
          if (wait) await untilSettledOrAborted(wait, signal);
        }
        break;
      case "text-delta":
        request.firstToken();
        text += event.text;
        if (stream && event.text && !signal.aborted) {
          const wait = emit({ type: "message", messageId, text: event.text });
          if (wait) await untilSettledOrAborted(wait, signal);
        }
        break;
      case "tool-call":
        request.firstToken();
        calls.push(event.call);
        break;
      case "usage":
        usage = event.usage;
        request.usage(event.usage);
        break;
      case "provider-state":
        providerState = event.state;
        break;
      case "finish": {
        if (event.reason === "aborted" || signal.aborted) {
          request.end("cancelled");
          return { reason: "aborted", calls: [] };
        }
        if (event.reason === "error") return { reason: "error", error: event.error };
        if (options.telemetry.captureContent) {
          request.content?.({ output: { text, reasoning, toolCalls: calls } });
        }
        request.end("ok");
        const message: LlmMessage = {
          role: "assistant",
          text,
          ...(reasoning ? { reasoning } : {}),
          ...(calls.length > 0 ? { toolCalls: calls } : {}),
          ...(providerState === undefined ? {} : { providerState, provider: options.provider.id }),
        };
        history.push(message);
        // The committed step goes to the history (and the log) before the client is shown it.
        emit({
          type: "history",
          message,
          ...(text ? { messageId } : {}),
          ...(reasoning ? { thoughtId } : {}),
        });
        if (!stream) {
          if (reasoning) emit({ type: "thought", messageId: thoughtId, text: reasoning });
          if (text) emit({ type: "message", messageId, text });
        }
        if (usage) {
          options.context?.reported(message, usage);
          emit({ type: "usage", usage });
        }
        const reason = calls.length > 0 && event.reason === "stop" ? "tool-calls" : event.reason;
        return { reason, calls };
      }
    }
  }
  if (signal.aborted) return { reason: "aborted", calls: [] };
  throw new TurnError(
    `Model request failed (${options.provider.id}/${options.model}): stream ended without finish`,
  );
}

/** Waits for `pending` unless `signal` aborts first (a client that stops reading must not hold up a cancel). */
function untilSettledOrAborted(pending: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      signal.removeEventListener("abort", done);
      resolve();
    };
    signal.addEventListener("abort", done, { once: true });
    pending.then(done, done);
  });
}

/**
 * The history as one provider may see it: provider state (thinking signatures, reasoning
 * content) is only ever sent back to the provider that produced it.
 */
function forProvider(history: LlmMessage[], provider: string): LlmMessage[] {
  const foreign = (message: LlmMessage): boolean =>
    message.role === "assistant" && message.providerState !== undefined &&
    message.provider !== provider;
  if (!history.some(foreign)) return history;
  return history.map((message) => {
    if (!foreign(message) || message.role !== "assistant") return message;
    const { providerState: _state, provider: _provider, ...rest } = message;
    return rest;
  });
}

interface PreparedCall {
  readonly call: LlmToolCall;
  readonly tool: Tool | undefined;
  readonly input: unknown;
  readonly parsed: boolean;
  readonly title: string;
  readonly locations: readonly ToolLocation[];
}

/**
 * Announces every call of a step in order, then runs them: reads up to {@link TOOL_PARALLELISM}
 * at once, while an edit or a command is a barrier that starts after every call before it has
 * finished and finishes before any call after it starts. So calls that touch the same path (a
 * write then a read of it, or a read then an edit) run in the order the model gave them, whatever
 * symlinks or relative paths name it. Resolves with the tool messages in call order.
 */
async function runToolCalls(
  options: Turn,
  calls: readonly LlmToolCall[],
): Promise<LlmMessage[]> {
  const prepared = calls.map((call) => prepare(options, call));
  for (const { call, tool, input, title, locations } of prepared) {
    options.emit({
      type: "tool-call",
      toolCallId: call.id,
      name: call.name,
      title,
      kind: tool?.kind ?? "other",
      rawInput: input,
      locations,
    });
  }
  const results: LlmMessage[] = new Array(prepared.length);
  const finished: Promise<void>[] = new Array(prepared.length);
  // The calls each call waits for: everything since the last barrier, or, for a barrier,
  // everything before it.
  const waitsFor = (index: number): Promise<void>[] => {
    const barrier = mutates(prepared[index] as PreparedCall);
    const before: Promise<void>[] = [];
    for (let earlier = index - 1; earlier >= 0; earlier--) {
      const other = mutates(prepared[earlier] as PreparedCall);
      if (barrier || other) before.push(finished[earlier] as Promise<void>);
      if (other) break;
    }
    return before;
  };
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < prepared.length) {
      const index = next++;
      const entry = prepared[index] as PreparedCall;
      // Counted in call order, before waiting: which calls a budget stops does not vary.
      const stop = entry.tool && entry.parsed ? options.budget.beforeToolCall() : undefined;
      let done = (): void => {};
      finished[index] = new Promise((resolve) => done = resolve);
      try {
        const before = waitsFor(index);
        if (before.length > 0) await Promise.all(before);
        results[index] = await runToolCall(options, entry, stop);
      } finally {
        done();
      }
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(TOOL_PARALLELISM, prepared.length) }, () => worker()),
  );
  return results;
}

/** Whether a call may change what other calls see (an edit, a command, an unknown effect). */
function mutates(entry: PreparedCall): boolean {
  return entry.tool !== undefined && entry.parsed && entry.tool.effect !== "read";
}

/** Tool kinds that never change files: no checkpoint is taken before them. */
const UNCHANGING_KINDS: ReadonlySet<string> = new Set(["read", "search", "think", "fetch"]);

/** Whether a tool may change files (edits, commands, MCP tools, delegated agents). */
function changesFiles(tool: Tool): boolean {
  return !UNCHANGING_KINDS.has(tool.kind);
}

function prepare(options: Turn, call: LlmToolCall): PreparedCall {
  const tool = options.tools.get(call.name);
  let input: unknown = call.arguments;
  let parsed = true;
  try {
    input = call.arguments.trim() === "" ? {} : JSON.parse(call.arguments);
  } catch {
    parsed = false;
  }
  let title = call.name;
  let locations: readonly ToolLocation[] = [];
  if (tool && parsed) {
    try {
      title = tool.title(input);
      locations = tool.locations?.(input, options.cwd) ?? [];
    } catch {
      // Titles and locations are best effort.
    }
  }
  return { call, tool, input, parsed, title, locations };
}

async function runToolCall(
  options: Turn,
  entry: PreparedCall,
  stop: BudgetStop | undefined,
): Promise<LlmMessage> {
  const { emit, signal } = options;
  const { call, tool, input, parsed } = entry;
  const telemetry = options.telemetry.toolCall(call.name, tool !== undefined, {
    id: call.id,
    kind: tool?.kind ?? "other",
  });
  let result: ToolResult;
  let denied: { reason: string; rule?: string } | undefined;
  /** Set when the call did not run; else it ran and its result says how it went. */
  let notRun: ToolCallStatus | undefined;
  if (stop) {
    result = { content: `Tool call not run: ${stop.message}`, isError: true };
    notRun = "not_run";
  } else if (!tool) {
    result = { content: `Unknown tool "${call.name}"`, isError: true };
    notRun = "not_run";
  } else if (!parsed) {
    result = { content: `Tool arguments are not valid JSON: ${call.arguments}`, isError: true };
    notRun = "not_run";
  } else if (signal.aborted) {
    result = { content: "Tool call cancelled", isError: true };
    notRun = "cancelled";
  } else {
    let authorization: Authorization;
    try {
      authorization = options.authorize
        ? await options.authorize({
          tool,
          toolCallId: call.id,
          title: entry.title,
          rawInput: input,
          locations: entry.locations,
          signal,
          telemetry,
        })
        : { allowed: true };
    } catch (error) {
      // Fail closed: a permission check that breaks is a refusal, never a run.
      authorization = { allowed: false, reason: `Permission check failed: ${String(error)}` };
    }
    if (authorization.allowed && options.beforeChange && changesFiles(tool)) {
      await options.beforeChange(signal);
    }
    if (!authorization.allowed) {
      result = { content: authorization.reason, isError: true };
      notRun = signal.aborted ? "cancelled" : "denied";
      denied = {
        reason: authorization.reason,
        ...(authorization.rule === undefined ? {} : { rule: authorization.rule }),
      };
    } else if (signal.aborted) {
      result = { content: "Tool call cancelled", isError: true };
      notRun = "cancelled";
    } else {
      emit({ type: "tool-call-update", toolCallId: call.id, status: "in_progress" });
      let running = true;
      try {
        result = await tool.execute(input, toolContext(options, entry, () => running, telemetry));
      } catch (error) {
        result = { content: `Tool failed: ${String(error)}`, isError: true };
      } finally {
        running = false;
      }
    }
  }
  emit({
    type: "tool-call-update",
    toolCallId: call.id,
    status: result.isError ? "failed" : "completed",
    text: result.content,
    ...(result.parts ? { parts: result.parts } : {}),
    ...(result.display ? { display: result.display } : {}),
    ...(result.locations ? { locations: result.locations } : {}),
    ...(result.rawOutput === undefined ? {} : { rawOutput: result.rawOutput }),
    ...(denied ? { denied } : {}),
  });
  if (options.telemetry.captureContent) telemetry.content?.(input, result.content);
  telemetry.end(
    notRun ?? (!result.isError ? "completed" : signal.aborted ? "cancelled" : "failed"),
  );
  if (result.plan && !result.isError) emit({ type: "plan", entries: result.plan });
  return {
    role: "tool",
    toolCallId: call.id,
    name: call.name,
    content: result.content,
    ...(result.parts ? { parts: result.parts } : {}),
    isError: result.isError,
  };
}

/** What a tool call runs in; `progress` is sent only while `running()` holds. */
function toolContext(
  options: Turn,
  entry: PreparedCall,
  running: () => boolean,
  telemetry: ToolCallTelemetry,
): ToolContext {
  const { signal, askPermission, elicit, mode } = options;
  const tool = entry.tool as Tool;
  const toolCallId = entry.call.id;
  return {
    sessionId: options.sessionId,
    cwd: options.cwd,
    roots: options.roots,
    workspace: options.workspace,
    files: options.services.files,
    signal,
    toolCallId,
    telemetry,
    ...(mode ? { mode } : {}),
    progress: (display) => {
      if (!running() || signal.aborted) return;
      options.emit({ type: "tool-call-update", toolCallId, status: "in_progress", display });
    },
    ...(askPermission
      ? {
        askPermission: async (question) => {
          const answer = await askPermission({
            ...question,
            tool,
            toolCallId,
            telemetry,
            signal: question.signal ? AbortSignal.any([signal, question.signal]) : signal,
          });
          // The question showed the asker's title and input on this call: show its own again.
          if (running() && !signal.aborted) {
            options.emit({
              type: "tool-call-update",
              toolCallId,
              status: "in_progress",
              restore: {
                title: entry.title,
                kind: tool.kind,
                rawInput: entry.input,
                locations: entry.locations,
              },
            });
          }
          return answer;
        },
      }
      : {}),
    ...(elicit
      ? {
        // A call that has ended asks nothing: its question is withdrawn at once.
        elicit: (request, withdraw) =>
          running()
            ? elicit({
              tool: tool.name,
              toolCallId,
              request,
              signal: withdraw ? AbortSignal.any([signal, withdraw]) : signal,
            })
            : Promise.resolve({ action: "cancel" }),
      }
      : {}),
  };
}
