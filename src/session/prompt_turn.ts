/**
 * A session's prompt turns, each from admission to its recorded end: the prompt is recorded
 * before anything else happens, the agent loop (`runTurn` in `../agent/run_turn.ts`: model,
 * tools, results) runs with the pinned selection, and the turn's end is recorded and logged.
 *
 * @module
 */
import {
  type ContextControl,
  runTurn,
  type StopReason,
  toolSpecs,
  TurnError,
  type TurnOptions,
} from "../agent/run_turn.ts";
import type { ModelInfo } from "../llm/catalog.ts";
import type { LlmContentPart, LlmProvider, LlmToolSpec, ProviderError } from "../llm/provider.ts";
import type { Logger } from "../log/logger.ts";
import type { StoredContentPart } from "../store/session_store.ts";
import type { ToolSet } from "../tools/tool_set.ts";
import type { Workspace } from "../tools/workspace.ts";
import type { Selection } from "./config_options.ts";
import type { Compactor, CompactOutcome } from "../compaction/compactor.ts";
import type { ContextMeter } from "../compaction/context_meter.ts";
import type { Conversation } from "./conversation.ts";
import type { Outbox } from "./outbox.ts";
import type { PermissionGate } from "../permission/gate.ts";
import type { ElicitationRelay } from "./elicitation_relay.ts";
import { invokedCommand, type SessionCommands } from "../tools/session_commands.ts";
import { sandboxLevel, turnEffort } from "./selection.ts";
import type { SystemPromptSandbox } from "../agent/system_prompt.ts";
import { sandboxedWorkspace } from "../tools/sandboxed_workspace.ts";
import { toStoredContent } from "./stored_content.ts";
import type { SessionServices } from "./session_services.ts";
import type { SessionTitle } from "./session_title.ts";
import type { SystemPromptCache } from "./system_prompt_cache.ts";
import type { TurnEventMapper } from "./turn_event_mapper.ts";
import type { UsageMeter } from "./usage_meter.ts";
import type { SessionCheckpoints } from "./checkpoints.ts";
import { type SteeredMessage, SteeringInbox } from "./steering_inbox.ts";
import {
  type BudgetLimits,
  type BudgetReport,
  type BudgetStop,
  TurnBudget,
} from "../agent/turn_budget.ts";
import {
  type ModelLabels,
  NOOP_TELEMETRY,
  type TraceCarrier,
  type TurnEnd,
  type TurnTelemetry,
} from "../telemetry/telemetry.ts";

/** What a {@link PromptTurn} is built from: the server's shared services and the session's parts. */
export interface PromptTurnOptions {
  /** What every session of the server shares (built once per server). */
  readonly services: SessionServices;
  readonly sessionId: string;
  readonly cwd: string;
  /** Canonical workspace roots, the cwd first. */
  readonly roots: readonly string[];
  /**
   * Beyond the roots, where the sandbox lets the session's commands write (a worktree's git
   * state, so that a command can commit). @default {none}
   */
  readonly sandboxPaths?: readonly string[];
  /** The session's tools, looked up by exact name. */
  readonly tools: ToolSet;
  readonly workspace: Workspace;
  /** The client takes `notice` updates: a model request's retry is told as one. */
  readonly notices?: boolean;
  readonly logger: Logger;
  readonly outbox: Outbox;
  readonly conversation: Conversation;
  readonly title: SessionTitle;
  readonly systemPrompt: SystemPromptCache;
  readonly permissions: PermissionGate;
  /** Relays the questions of running tool calls to the user; absent when nobody can answer. */
  readonly elicitation?: ElicitationRelay;
  readonly events: TurnEventMapper;
  /** The session's slash commands: a prompt that invokes one becomes what it expands to. */
  readonly commands?: SessionCommands;
  /** Measures what each request fills of the context window. */
  readonly meter: ContextMeter;
  /** Compacts the conversation when it nears the window. */
  readonly compactor: Compactor;
  /** The session's usage and cost. */
  readonly usage: UsageMeter;
  /**
   * The session's own budgets (the client's, from `session/new`), each at most the server's:
   * the lower of the two holds.
   */
  readonly budgets?: BudgetLimits;
  /** The session's checkpoints: one is taken before each turn's first change to the files. */
  readonly checkpoints?: SessionCheckpoints;
}

/** What one turn has come to, for its end. */
interface TurnState {
  readonly pinned: Selection;
  readonly startedAt: number;
  /** Whether its events still reach the client (not after it ended). */
  open: boolean;
  /** Whether the prompt was admitted (recorded). */
  started: boolean;
  /** Whether the session got its title from this prompt. */
  titled: boolean;
  /** The turn's budget, once the loop starts. */
  budget?: TurnBudget;
  /** The turn's telemetry (ended with the turn). */
  readonly telemetry: TurnTelemetry;
  /** The budget limit that ended the turn, when one did. */
  budgetLimit?: string;
  stopReason?: StopReason;
  failure?: unknown;
  /**
   * Set when the admission record, or a record a tool waited for, could not be written: the
   * prompt fails with it.
   */
  admission?: { readonly error: unknown };
}

/**
 * Runs prompt turns: admits the prompt (records it before anything else happens), runs the agent
 * loop with the pinned selection, and records and logs the turn's end.
 */
export class PromptTurn {
  readonly #options: PromptTurnOptions;
  #lastBudget: BudgetReport | undefined;
  /** The running turn's steered messages, from the turn's start until its loop ends. */
  #inbox: SteeringInbox | undefined;
  /** What the last turn's loop did not take of its steered messages. */
  #leftover: SteeredMessage[] = [];

  /** @param options What the turns use */
  constructor(options: PromptTurnOptions) {
    this.#options = options;
  }

  /**
   * Sends a message into the running turn: its model takes it at its next step.
   *
   * @param message The message
   * @returns `false` when no turn's agent loop runs (none, or a slash command)
   */
  steer(message: SteeredMessage): boolean {
    return this.#inbox?.push(message) ?? false;
  }

  /**
   * Hands over what the last turn's loop ended without taking of its steered messages (a budget
   * or an error ended it, or a cancel), once.
   *
   * @returns The messages, in order
   */
  takeLeftover(): SteeredMessage[] {
    const left = this.#leftover;
    this.#leftover = [];
    return left;
  }

  /** The session's checkpoints, when it has them. */
  get checkpoints(): SessionCheckpoints | undefined {
    return this.#options.checkpoints;
  }

  /** The session's usage meter (the turn's tokens: {@link UsageMeter.turnUsage}). */
  get usage(): UsageMeter {
    return this.#options.usage;
  }

  /**
   * Runs one turn.
   *
   * @param content The validated user message
   * @param controller The turn's controller (aborted on cancel; aborted here when the admission
   *   record fails)
   * @param pinned The selection the prompt runs with
   * @param trace The request's W3C trace context
   * @param plain Take the message as text even when it names a command (steered leftovers)
   * @returns Why the turn ended, once every update of the turn is queued
   * @throws When the admission cannot be recorded or the model request fails for good
   */
  async run(
    content: readonly LlmContentPart[],
    controller: AbortController,
    pinned: Selection,
    trace?: TraceCarrier,
    plain = false,
  ): Promise<StopReason> {
    const telemetry = this.#options.services.telemetry ?? NOOP_TELEMETRY;
    const state: TurnState = {
      pinned,
      startedAt: this.#options.services.now(),
      open: true,
      started: false,
      titled: false,
      telemetry: telemetry.enabled
        ? telemetry.promptTurn({
          sessionId: this.#options.sessionId,
          model: this.#modelLabels(pinned),
          parent: trace,
        })
        : NOOP_TELEMETRY.promptTurn(),
    };
    // The turn's store commits are its children in a trace.
    this.#options.outbox.traceParent = state.telemetry.carrier?.();
    this.#logStart(content, pinned);
    // Open from the turn's start: a message steered in while the prompt is admitted (an MCP
    // prompt expanded, images stored) joins at the loop's first step.
    const inbox = this.#inbox = new SteeringInbox(this.#options.outbox);
    try {
      const { info, provider } = this.#options.services.catalog.resolve(pinned.model);
      let message = content;
      const invoked = plain ? undefined : this.#invoked(content);
      if (invoked) {
        message = await invoked.commands.expand(invoked.name, invoked.input, controller.signal);
        if (controller.signal.aborted) return state.stopReason = this.#cancelled(state);
      }
      await this.#admit(message, controller, state);
      if (controller.signal.aborted) return state.stopReason = this.#cancelled(state);
      const budget = state.budget = this.#budget(info);
      // The turn's own controller: the client's cancel aborts it, and so does the time limit.
      const turn = new AbortController();
      const cancel = (): void => turn.abort(controller.signal.reason);
      controller.signal.addEventListener("abort", cancel, { once: true });
      const remaining = budget.remainingMs();
      const timer = remaining === undefined ? undefined : setTimeout(() => {
        budget.expire();
        turn.abort(new DOMException("the turn's time limit passed", "TimeoutError"));
      }, remaining);
      let reason: StopReason;
      try {
        const beforeChange = this.#options.checkpoints?.turnHook(content);
        reason = await runTurn({
          ...this.#turnOptions(info, provider, turn, state),
          steering: inbox,
          ...(beforeChange ? { beforeChange } : {}),
        });
      } catch (error) {
        if (controller.signal.aborted || !turn.signal.aborted) throw error;
        // Something below threw on the time limit's abort: the turn ended on its budget.
        reason = "cancelled";
      } finally {
        clearTimeout(timer);
        controller.signal.removeEventListener("abort", cancel);
        this.#lastBudget = budget.report();
      }
      const stop = budget.stopped;
      const timedOut = reason === "cancelled" && !controller.signal.aborted && !state.admission &&
        stop?.limit === "turnTimeout";
      if (stop && (reason !== "cancelled" || timedOut)) {
        state.budgetLimit = stop.limit;
        this.#budgetReached(stop);
      }
      if (stop && timedOut) return state.stopReason = stop.stopReason;
      return state.stopReason = reason === "cancelled" ? this.#cancelled(state) : reason;
    } catch (error) {
      // A cancelled turn is an outcome, even if something below threw on the abort.
      if (controller.signal.aborted) return state.stopReason = this.#cancelled(state);
      state.failure = error;
      throw error;
    } finally {
      this.#inbox = undefined;
      this.#leftover = inbox.close();
      let answered = false;
      try {
        await this.#finish(state);
        answered = true;
      } finally {
        const stopReason = answered && state.stopReason !== undefined ? state.stopReason : "error";
        this.#options.outbox.traceParent = undefined;
        state.telemetry.end({
          stopReason,
          ...(state.budgetLimit === undefined ? {} : { budgetLimit: state.budgetLimit }),
          ...this.#spent(state),
        });
      }
    }
  }

  /** The provider and model of a selection, for a tracer (`undefined` when it does not resolve). */
  #modelLabels(pinned: Selection): ModelLabels | undefined {
    try {
      const { info } = this.#options.services.catalog.resolve(pinned.model);
      return { provider: info.provider, model: info.model };
    } catch {
      return undefined;
    }
  }

  /** What a turn spent and its tokens, for its telemetry's end (only when it is recorded). */
  #spent(state: TurnState): Pick<TurnEnd, "spent" | "usage"> {
    if (!(this.#options.services.telemetry?.enabled ?? false)) return {};
    const spent = state.budget?.report().spent;
    const usage = this.#options.usage.turnUsage();
    return {
      ...(spent
        ? {
          spent: { steps: spent.steps, toolCalls: spent.toolCalls, durationMs: spent.durationMs },
        }
        : {}),
      ...(usage ? { usage: { input: usage.inputTokens, output: usage.outputTokens } } : {}),
    };
  }

  /**
   * The budget report of the last turn that ran the agent loop (limits, spend, the limit that
   * ended it), taken when it ended; `undefined` before any.
   */
  get lastBudget(): BudgetReport | undefined {
    return this.#lastBudget;
  }

  /**
   * Compacts the conversation now (`/compact`), with the model of `pinned`.
   *
   * @param pinned The selection (its model writes the summary)
   * @param signal Aborted when the command is cancelled
   * @returns What came of it
   */
  compactNow(pinned: Selection, signal: AbortSignal): Promise<CompactOutcome> {
    const { info, provider } = this.#options.services.catalog.resolve(pinned.model);
    return this.#options.compactor.compact({
      provider,
      info,
      system: this.#options.systemPrompt.get(info.name, {
        mode: pinned.mode,
        sandbox: this.#sandboxOf(pinned),
      }),
      tools: toolSpecs(this.#options.tools),
      reason: "command",
      signal,
    });
  }

  /**
   * Starts the model's context afresh (`/clear`): records it, empties the conversation and tells
   * the client what is in context now.
   *
   * @param pinned The selection (its model's window is the size reported)
   */
  clear(pinned: Selection): void {
    const { conversation, meter, outbox, usage, systemPrompt } = this.#options;
    const { catalog } = this.#options.services;
    outbox.record([{ type: "clear" }], true);
    conversation.clear();
    meter.reset();
    const { info } = catalog.resolve(pinned.model);
    const used = meter.measure({
      system: systemPrompt.get(info.name, { mode: pinned.mode, sandbox: this.#sandboxOf(pinned) }),
      tools: toolSpecs(this.#options.tools),
      history: conversation.messages,
    });
    const report = usage.add({ input: 0, output: 0 }, info, used);
    outbox.record([report.event], false, "later");
    if (report.update) outbox.send(report.update);
  }

  /** A turn's budget: the server's limits, lowered by the session's own. */
  #budget(info: ModelInfo): TurnBudget {
    const { services, budgets = {}, usage } = this.#options;
    const { settings, now } = services;
    const lower = (server: number | undefined, own: number | undefined): number | undefined =>
      server === undefined ? own : own === undefined ? server : Math.min(server, own);
    return new TurnBudget({
      limits: {
        maxSteps: lower(settings.maxSteps, budgets.maxSteps),
        maxToolCalls: lower(settings.maxToolCalls, budgets.maxToolCalls),
        turnTimeoutMs: lower(settings.turnTimeoutMs, budgets.turnTimeoutMs),
        maxSessionTokens: lower(settings.maxSessionTokens, budgets.maxSessionTokens),
        maxSessionCostUsd: lower(settings.maxSessionCostUsd, budgets.maxSessionCostUsd),
      },
      spend: () => ({ tokens: usage.tokens, cost: usage.cost }),
      priced: info.pricing !== undefined,
      now,
    });
  }

  /** Tells the user which limit ended the turn and the spend (recorded, so a load replays it). */
  #budgetReached(stop: BudgetStop): void {
    const { outbox, logger, sessionId } = this.#options;
    logger.info("budget reached", { sessionId, limit: stop.limit });
    const messageId = crypto.randomUUID();
    outbox.record([{ type: "note", messageId, text: stop.message }], false);
    outbox.send({
      sessionUpdate: "agent_message_chunk",
      messageId,
      content: { type: "text", text: stop.message },
    });
  }

  /** The sandbox of a turn's commands, for the system prompt (none without a server sandbox). */
  #sandboxOf(pinned: Selection): SystemPromptSandbox | undefined {
    const { sandbox } = this.#options.services;
    return sandbox ? { level: sandboxLevel(pinned, sandbox), network: sandbox.network } : undefined;
  }

  /** The session's workspace, its commands confined at the turn's sandbox level. */
  #workspace(pinned: Selection): Workspace {
    const { services, workspace, roots, sandboxPaths } = this.#options;
    const { sandbox } = services;
    const writable = sandboxPaths ? [...roots, ...sandboxPaths] : roots;
    return sandbox
      ? sandboxedWorkspace(workspace, sandbox, sandboxLevel(pinned, sandbox), writable)
      : workspace;
  }

  /** The turn's context control: compaction before requests and after a context error. */
  #context(info: ModelInfo, provider: LlmProvider): ContextControl {
    const { compactor, meter } = this.#options;
    const compact = (
      parts: { system: string; tools: readonly LlmToolSpec[] },
      reason: "threshold" | "overflow",
      signal: AbortSignal,
    ): Promise<CompactOutcome> =>
      compactor.compact({
        provider,
        info,
        system: parts.system,
        tools: parts.tools,
        reason,
        signal,
      });
    return {
      beforeRequest: async (parts, signal) => {
        if (compactor.needed(parts, info)) await compact(parts, "threshold", signal);
      },
      afterOverflow: async (parts, signal) =>
        (await compact(parts, "overflow", signal)) === "compacted",
      reported: (reply, usage) => meter.reported(reply, usage),
    };
  }

  /**
   * The slash command a prompt invokes, if any: the turn's user message is then what it expands
   * to (checked without waiting, so an ordinary prompt is admitted at once).
   */
  #invoked(
    content: readonly LlmContentPart[],
  ): { commands: SessionCommands; name: string; input: string } | undefined {
    const { commands, logger, sessionId } = this.#options;
    const invoked = commands ? invokedCommand(content, commands.list()) : undefined;
    if (!commands || !invoked) return undefined;
    logger.info("slash command", { sessionId, command: invoked.name });
    return { commands, ...invoked };
  }

  /** `cancelled`, unless the abort came from a failed admission record (then that is thrown). */
  #cancelled(state: TurnState): StopReason {
    if (state.admission) {
      state.failure = state.admission.error;
      throw state.admission.error;
    }
    return "cancelled";
  }

  /** Records the admitted prompt (a strict commit point) and announces the title. */
  async #admit(
    content: readonly LlmContentPart[],
    controller: AbortController,
    state: TurnState,
  ): Promise<void> {
    const { outbox, conversation, title } = this.#options;
    const { attachments } = this.#options.services;
    const stored: StoredContentPart[] = content.some((part) => part.type === "image")
      ? await toStoredContent(content, attachments)
      : content as StoredContentPart[];
    if (controller.signal.aborted) return;
    // In the turn's first append (a commit point); a failed append fails the prompt through the
    // abort.
    outbox.recordStrict(
      [{ type: "turn_start" }, { type: "user", messageId: crypto.randomUUID(), content: stored }],
      true,
      // Nothing stored: the turn was not admitted, and its end is not recorded either.
      () => {
        state.started = false;
      },
    ).catch((error: unknown) => {
      // Too late once the turn has ended (it was logged); the controller may serve the next one.
      if (!state.open) return;
      state.admission ??= { error };
      controller.abort(error);
    });
    state.started = true;
    conversation.messages.push({ role: "user", content });
    state.titled = title.announce(content);
  }

  #turnOptions(
    info: ModelInfo,
    provider: LlmProvider,
    controller: AbortController,
    state: TurnState,
  ): TurnOptions {
    const options = this.#options;
    const signal = controller.signal;
    const effort = turnEffort(state.pinned, info);
    return {
      services: options.services,
      sessionId: options.sessionId,
      provider,
      model: info.model,
      ...(effort === undefined ? {} : { reasoningEffort: effort }),
      ...(info.maxOutputTokens === undefined ? {} : { maxOutputTokens: info.maxOutputTokens }),
      system: options.systemPrompt.get(info.name, {
        mode: state.pinned.mode,
        sandbox: this.#sandboxOf(state.pinned),
      }),
      history: options.conversation.messages,
      tools: options.tools,
      imageInput: info.image,
      foreignState: options.conversation.hasForeignState(provider.id),
      cwd: options.cwd,
      roots: options.roots,
      workspace: this.#workspace(state.pinned),
      authorize: async (request) => {
        const authorization = await options.permissions.authorize(request, state.pinned.mode);
        if (!authorization.allowed) return authorization;
        // A tool changes the world: its call is in the log first (a stalled store stalls it).
        try {
          await options.outbox.acknowledged(request.signal);
        } catch (error) {
          // The log cannot follow the turn: it ends, failing with the store's error.
          if (!request.signal.aborted) {
            state.admission ??= { error };
            controller.abort(error);
          }
          throw error;
        }
        return authorization;
      },
      mode: state.pinned.mode,
      askPermission: (request) => options.permissions.relay(request),
      ...(options.elicitation
        ? { elicit: (request) => (options.elicitation as ElicitationRelay).relay(request) }
        : {}),
      onRetry: (error, attempt, delayMs) => {
        options.logger.warn("model request failed", {
          sessionId: options.sessionId,
          model: info.id,
          attempt,
          ...providerErrorFields(error),
          retryInMs: delayMs,
        });
        // Live only (a retry leaves nothing in the conversation): the user sees why it waits.
        if (options.notices && state.open) {
          options.outbox.send({
            sessionUpdate: "notice",
            severity: "warning",
            title: `Model request failed; retrying in ${(delayMs / 1000).toFixed(1)} s`,
            description: `${info.id}, attempt ${attempt}: ${error.message}`,
          });
        }
      },
      context: this.#context(info, provider),
      ...(state.budget ? { budget: state.budget } : {}),
      telemetry: state.telemetry,
      signal,
      emit: (event) => {
        if (!state.open) return undefined;
        if (event.type !== "usage" || !options.services.telemetry?.enabled) {
          return options.events.apply(event, info);
        }
        // The request's cost is what the session's meter adds for it.
        const before = options.usage.cost;
        const applied = options.events.apply(event, info);
        state.telemetry.cost(info, options.usage.cost - before);
        return applied;
      },
    };
  }

  #logStart(content: readonly LlmContentPart[], pinned: Selection): void {
    const { logger, sessionId } = this.#options;
    logger.info("prompt started", {
      sessionId,
      model: pinned.model,
      mode: pinned.mode,
      parts: content.length,
    });
    // Built only when the line is written (JSON.stringify calls toJSON).
    logger.debug("prompt content", {
      sessionId,
      content: { toJSON: () => describeContent(content) },
    });
  }

  /** Logs the turn's end, records it (a commit point) and closes the turn to its events. */
  async #finish(state: TurnState): Promise<void> {
    const { logger, sessionId, outbox } = this.#options;
    const { stopReason, failure } = state;
    const ms = this.#options.services.now() - state.startedAt;
    if (stopReason === undefined) {
      const cause = failure instanceof TurnError ? failure.providerError : undefined;
      logger.warn(cause ? "model request failed" : "prompt failed", {
        sessionId,
        model: state.pinned.model,
        ms,
        ...(cause ? providerErrorFields(cause) : {
          error: failure instanceof Error ? failure.message : String(failure),
        }),
      });
    } else logger.info("prompt ended", { sessionId, stopReason, ms });
    if (state.started) {
      outbox.record([
        stopReason === undefined
          ? { type: "turn_end", stopReason: "error", error: String(failure) }
          : { type: "turn_end", stopReason },
      ], true);
    }
    // Every update of the turn is now queued on the connection, whose writes go out in order, so
    // the prompt's answer cannot overtake them; nothing of this turn is sent later.
    outbox.flush();
    state.open = false;
    // The answer leaves once the store has the turn (a stalled store stalls it, up to the commit
    // timeout): an answered turn is never missing from the log.
    try {
      await outbox.acknowledged();
    } catch (error) {
      logger.warn("prompt failed: the session log was not written", {
        sessionId,
        error: error instanceof Error ? error.message : String(error),
      });
      // A turn that failed already fails with its own error.
      if (failure === undefined) throw error;
      return;
    }
    // The session's title is new: once the answer is out, every process lists it (the index
    // line is written, once per session).
    if (state.titled) await outbox.commit();
  }
}

/** What the logs say of a provider failure (never the request). */
function providerErrorFields(error: ProviderError): Record<string, unknown> {
  return {
    kind: error.kind,
    ...(error.status === undefined ? {} : { status: error.status }),
    retryable: error.retryable,
    error: error.message,
  };
}

/** The prompt for the debug log: text abridged, other parts by type. */
function describeContent(content: readonly LlmContentPart[]): string {
  const text = content.map((part) => part.type === "text" ? part.text : `[${part.type}]`).join(" ");
  return text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
}
