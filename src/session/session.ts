import type { StopReason } from "../agent/run_turn.ts";
import type { WorktreeInfo } from "../git/worktree.ts";
import type { BudgetLimits, BudgetReport } from "../agent/turn_budget.ts";
import type { ModelInfo } from "../llm/catalog.ts";
import type { LlmContentPart } from "../llm/provider.ts";
import type { Logger } from "../log/logger.ts";
import type { SessionConfigOption, SessionModeState } from "../transport/acp_types.ts";
import type { Tool } from "../tools/tool.ts";
import { ToolSet } from "../tools/tool_set.ts";
import type { Workspace } from "../tools/workspace.ts";
import type { Selection } from "./config_options.ts";
import { Conversation } from "./conversation.ts";
import { Outbox } from "./outbox.ts";
import { type PermissionAsker, PermissionGate } from "../permission/gate.ts";
import type { ElicitationAsker } from "../tools/elicitation.ts";
import { ElicitationRelay } from "./elicitation_relay.ts";
import { PromptSlot } from "./prompt_slot.ts";
import { SessionLifecycle, type SessionState } from "./session_state.ts";
import { Recorder } from "./recorder.ts";
import { BUILTIN_COMMANDS, runBuiltinCommand } from "./builtin_commands.ts";
import { type CompactionNotices, Compactor } from "../compaction/compactor.ts";
import { ContextMeter } from "../compaction/context_meter.ts";
import {
  invokedCommand,
  type SessionCommand,
  type SessionCommands,
} from "../tools/session_commands.ts";
import { SessionSelection } from "./selection.ts";
import type { RestoredSession } from "./restore.ts";
import type { SessionServices } from "./session_services.ts";
import { SessionTitle } from "./session_title.ts";
import { SystemPromptCache } from "./system_prompt_cache.ts";
import { TurnEventMapper } from "./turn_event_mapper.ts";
import { PromptTurn } from "./prompt_turn.ts";
import { UpdateQueue, type UpdateSink } from "./update_queue.ts";
import { type TurnUsage, UsageMeter } from "./usage_meter.ts";
import type { TraceCarrier } from "../telemetry/telemetry.ts";
import type { StoredContentPart } from "../store/session_store.ts";
import { toStoredContent } from "./stored_content.ts";
import { CHECKPOINT_COMMANDS, SessionCheckpoints } from "./checkpoints.ts";

export { ConfigValueError } from "./selection.ts";
export type { TurnUsage } from "./usage_meter.ts";
export type { BudgetReport } from "../agent/turn_budget.ts";

/** How a prompt turn ended and what it spent. */
export interface PromptOutcome {
  readonly stopReason: StopReason;
  /** The turn's tokens; absent when no model request of it reported usage. */
  readonly usage?: TurnUsage;
  /** The turn's budget: limits, spend, the limit that ended it; absent for a slash command. */
  readonly budget?: BudgetReport;
}
export { SessionStateError } from "./session_state.ts";

/** What came of a steered message: see {@link Session.steer}. */
export type SteerOutcome = "injected" | "startedNewTurn" | "promptRequired" | "cancelled";

/** The selection a prompt runs with, pinned when it was admitted. */
interface QueuedPin {
  pinned: Selection;
}

/** What a session is built from: the server's shared services and the session's own parts. */
export interface SessionOptions {
  /** What every session of the server shares (built once per server). */
  readonly services: SessionServices;
  readonly id: string;
  /** Absolute, canonical working directory. */
  readonly cwd: string;
  /** Absolute, canonical extra workspace roots. */
  readonly additionalDirectories: readonly string[];
  readonly selection: Selection;
  /** The session's tools: a set that may change (MCP servers' tools), or a fixed list. */
  readonly tools: ToolSet | readonly Tool[];
  /** The session's slash commands. */
  readonly commands?: SessionCommands;
  /** The MCP servers that did not start (the session opened without them), as messages. */
  readonly mcpFailures?: readonly string[];
  /** The git worktree the session works in (its `cwd` is in it). */
  readonly worktree?: WorktreeInfo;
  /** Why the session has no worktree though the server gives sessions one (`--worktrees`). */
  readonly worktreeUnavailable?: string;
  /** Beyond the roots, where its sandboxed commands may write (its worktree's git state). */
  readonly sandboxPaths?: readonly string[];
  readonly workspace: Workspace;
  readonly ask: PermissionAsker;
  /**
   * Asks the user what a running tool call asks (`elicitation/create`); absent when nobody can
   * answer (tools get no `elicit`, MCP servers' questions are declined).
   */
  readonly elicit?: ElicitationAsker;
  /** Project instructions (the cwd's AGENTS.md), when present. */
  readonly instructions?: string;
  readonly sink: UpdateSink;
  readonly logger: Logger;
  /** State rebuilt from the log, for a loaded or resumed session. */
  readonly restored?: RestoredSession;
  /** The session's own budgets (the client's), each at most the server's. */
  readonly budgets?: BudgetLimits;
  /** What the client takes to be told of compactions (`session.compaction`, `session.notices`). */
  readonly notices?: CompactionNotices;
}

/** How a session starts: see {@link Session.start}. */
export interface SessionStart {
  /** A restored session's selection had to change (a model gone). */
  readonly selectionChanged?: boolean;
  /**
   * Settles once a new session is written to the store, when that happens after it is made
   * (written once its `session/new` is answered); rejects when it could not be. Until then its
   * prompts wait for it (cancellable), so that every update the client sees follows its records
   * in the log.
   */
  readonly created?: Promise<void>;
  /**
   * A new session's selection was stored with the session (the store's `create` events), so it
   * is not recorded again.
   */
  readonly selectionStored?: boolean;
}

/**
 * One ACP session: its conversation, its selection, its one prompt slot and its ordered updates.
 * A facade over the units that do the work: {@link PromptSlot} (one turn at a time),
 * {@link SessionSelection} (model, mode, effort), {@link Outbox} and {@link Recorder} (the log and
 * the updates, in one order) and {@link PromptTurn} (a turn, with its event mapping, usage,
 * permissions and title).
 */
export class Session {
  /** The session id. */
  readonly id: string;
  /** The working directory. */
  readonly cwd: string;
  /** Extra workspace roots. */
  readonly additionalDirectories: readonly string[];
  readonly #options: SessionOptions;
  readonly #slot: PromptSlot;
  readonly #selection: SessionSelection;
  readonly #outbox: Outbox;
  readonly #turns: PromptTurn;
  /** The session's state: `open` ⇄ `prompting` in the slot, `closing` and `closed` here. */
  readonly #lifecycle: SessionLifecycle;
  /** The close under way or done, shared by every {@link close} call. */
  #closing: Promise<void> | undefined;
  /** What {@link start} was given as `created`, until it resolves. */
  #created: Promise<void> | undefined;
  /** The selections pinned by the queued prompts, in arrival order. */
  readonly #queuedPins = new Set<QueuedPin>();

  /**
   * @param options What the session is built from
   * @param lifecycle Its state, when a session manager made it in `creating` or `loading` (it
   *   is `open` from {@link start} on); else the session starts `open`
   */
  constructor(
    options: SessionOptions,
    lifecycle: SessionLifecycle = new SessionLifecycle(options.id),
  ) {
    this.id = options.id;
    this.cwd = options.cwd;
    this.additionalDirectories = options.additionalDirectories;
    this.#options = options;
    this.#lifecycle = lifecycle;
    const { services } = options;
    this.#slot = new PromptSlot(options.id, lifecycle, {
      queue: services.settings.promptQueue,
    });
    this.#selection = new SessionSelection(options.selection, services.catalog, services.sandbox);
    const recorder = new Recorder({
      sessionId: options.id,
      store: services.store,
      logger: options.logger,
      commitTimeoutMs: services.settings.storeCommitTimeoutMs,
      ...(services.defer ? { schedule: () => this.#outbox.schedule() } : {}),
      ...(services.telemetry?.enabled ? { telemetry: services.telemetry } : {}),
    });
    this.#outbox = new Outbox(
      recorder,
      new UpdateQueue(options.sink, options.logger),
      services.defer,
    );
    this.#turns = buildPromptTurn(options, this.#outbox);
  }

  /** Where the session is in its lifecycle (see `./session_state.ts`). */
  get state(): SessionState {
    return this.#lifecycle.state;
  }

  /**
   * Settles once the session is written to the store (see {@link start}); `undefined` when it
   * is. Requests that record and answer at once (a config change) wait for
   * it first.
   */
  get created(): Promise<void> | undefined {
    return this.#created;
  }

  /**
   * Writes the events a new or restored session starts with: the initial selection for a new
   * one (unless it was stored with the session), or for a restored one whose selection had to
   * change, and the repair of an interrupted turn.
   *
   * @param options What the session starts from
   */
  start(options: SessionStart = {}): void {
    const { selectionChanged = false, created } = options;
    const state = this.#lifecycle.state;
    if (state === "creating" || state === "loading") this.#lifecycle.to("open");
    if (created) {
      this.#created = created;
      created.then(() => this.#created = undefined, () => {});
    }
    const repair = this.#options.restored?.repair ?? [];
    if (repair.length > 0) this.#outbox.record(repair, true);
    // Budgets the client gave with this request are recorded, so a restarted server keeps them.
    const { budgets } = this.#options;
    if (budgets && budgets !== this.#options.restored?.budgets) {
      this.#outbox.record([{ type: "budgets", limits: budgets }], false);
    }
    // A new session's selection is made durable with its first commit point (its first prompt):
    // creating one waits for no flush.
    if (!this.#options.restored) {
      if (!options.selectionStored) this.#outbox.record([this.#selection.configEvent()], false);
    } else if (selectionChanged) this.#outbox.record([this.#selection.configEvent()], true);
    // A restored session's repair (replayed to the client already) is in the store before the
    // `session/load` or `session/resume` answer can go out.
    if (this.#options.restored && (repair.length > 0 || selectionChanged)) this.#outbox.flush();
  }

  /**
   * Tells the client the session's slash commands (`available_commands_update`): the built-in
   * ones and its MCP servers' prompts, after a resumed session's `usage_update` (the spend so
   * far). Call it once the client knows the session (after the `session/new`, `session/load` or
   * `session/resume` answer).
   */
  announceCommands(): void {
    // A resumed session's spend so far (a loaded one's was replayed).
    const usage = this.#options.restored?.usage;
    if (usage) this.#outbox.send(usage);
    // What did not start is told first, to a client that takes notices (the answer's `_meta`
    // and the log say it to every client).
    if (this.#options.notices?.notices) {
      for (const failure of this.#options.mcpFailures ?? []) {
        this.#outbox.send({
          sessionUpdate: "notice",
          severity: "warning",
          title: "An MCP server did not start; the session has no tools from it",
          description: failure,
        });
      }
    }
    this.#tellUnpriced();
    const commands = [...this.#builtins(), ...this.#options.commands?.list() ?? []];
    this.#outbox.send({
      sessionUpdate: "available_commands_update",
      availableCommands: commands.map(({ name, description, hint }) => ({
        name,
        description,
        ...(hint === undefined ? {} : { input: { hint } }),
      })),
    });
  }

  /** The built-in commands: the checkpoints' too when the session takes them. */
  #builtins(): readonly SessionCommand[] {
    return this.#turns.checkpoints?.enabled
      ? [...BUILTIN_COMMANDS, ...CHECKPOINT_COMMANDS]
      : BUILTIN_COMMANDS;
  }

  /**
   * Under a cost budget, a model without prices cannot run: said at the session's start (a
   * `warn` line, and a notice to a client that takes them), and its prompts are refused.
   */
  #tellUnpriced(): void {
    const { services, budgets, logger, id } = this.#options;
    const limit = budgets?.maxSessionCostUsd ?? services.settings.maxSessionCostUsd;
    const model = this.#selection.currentModel();
    if (limit === undefined || !model || model.pricing !== undefined) return;
    logger.warn("the session's model has no price: it cannot run under the cost budget", {
      sessionId: id,
      model: model.id,
      maxSessionCostUsd: limit,
    });
    if (!this.#options.notices?.notices) return;
    this.#outbox.send({
      sessionUpdate: "notice",
      severity: "warning",
      title: "This model has no price: prompts are refused under the session's cost budget",
      description: `${model.id} has no pricing; the cost budget is $${limit}. ` +
        "Choose a priced model or configure its prices.",
    });
  }

  /** The MCP servers that did not start (the session opened without them), as messages. */
  get mcpFailures(): readonly string[] {
    return this.#options.mcpFailures ?? [];
  }

  /** The git worktree the session works in, when it has one. */
  get worktree(): WorktreeInfo | undefined {
    return this.#options.worktree;
  }

  /** Why the session has no worktree though the server gives sessions one. */
  get worktreeUnavailable(): string | undefined {
    return this.#options.worktreeUnavailable;
  }

  /** The selected model's facts. */
  currentModel(): ModelInfo | undefined {
    return this.#selection.currentModel();
  }

  /** The complete config option list. */
  configOptions(): SessionConfigOption[] {
    return this.#selection.configOptions();
  }

  /** The mode state, in sync with the `mode` option. */
  modes(): SessionModeState {
    return this.#selection.modes();
  }

  /**
   * Changes a config option from the next turn on and tells the client.
   *
   * @param configId `model`, `mode` or `reasoning_effort`
   * @param value The new value
   * @returns The complete option list
   * @throws {ConfigValueError} For an unknown option or value
   */
  setConfigOption(configId: string, value: unknown): SessionConfigOption[] {
    this.#slot.assertOpen();
    const change = this.#selection.set(configId, value);
    this.#outbox.record([this.#selection.configEvent()], true);
    for (const update of change.updates) this.#outbox.send(update);
    // The updates go out before the answer.
    this.#outbox.flush();
    return change.options;
  }

  /**
   * Switches the permission mode (the legacy `session/set_mode`).
   *
   * @param modeId The mode
   * @throws {ConfigValueError} For an unknown mode
   */
  setMode(modeId: string): void {
    this.setConfigOption("mode", modeId);
  }

  /**
   * Runs one prompt turn. The slot is taken synchronously: a call while a turn runs queues its
   * turn behind it (up to the settings' `promptQueue`, else it throws at once).
   *
   * @param content The validated user message
   * @param signal Aborted when the request is cancelled
   * @returns Why the turn ended, once every update of the turn is written
   * @throws {SessionStateError} When a prompt is in flight or the session is closing
   */
  async prompt(content: readonly LlmContentPart[], signal: AbortSignal): Promise<StopReason> {
    return (await this.promptWithUsage(content, signal)).stopReason;
  }

  /**
   * Runs one prompt turn, as {@link prompt}, and tells what it spent: the tokens of its model
   * requests (a cancelled turn's too), taken when the turn ends, before the slot is free.
   *
   * @param content The validated user message
   * @param signal Aborted when the request is cancelled
   * @param trace The W3C trace context of the request (`_meta.traceparent`, …): the turn's
   *   span is its child
   * @returns Why the turn ended and its usage (`cancelled` for a queued prompt cancelled before
   *   it started)
   * @throws {SessionStateError} When the queue is full (or off) or the session is closing
   */
  promptWithUsage(
    content: readonly LlmContentPart[],
    signal: AbortSignal,
    trace?: TraceCarrier,
  ): Promise<PromptOutcome> {
    return this.#prompt(content, signal, trace);
  }

  /**
   * Sends a message into the running turn (`_session/steering`): its model takes it at its next
   * step, and it is recorded (and replayed) as a user message there. With no turn whose model
   * could take it (none, or a slash command), it runs as a prompt, queued like one, unless the
   * client asked to be told instead (`idle: "promptRequired"`).
   *
   * @param content The validated message
   * @param signal The request's signal: aborting it drops the message while it waits as a prompt
   * @param idle What a message with no turn to join does: `prompt` runs it as one
   * @param admitted Told once the message joined the turn or the queue (or was answered)
   * @returns `injected`, `startedNewTurn` once its turn started, `promptRequired` (nothing was
   *   done), or `cancelled` when its prompt was cancelled before it started
   * @throws {SessionStateError} When it would run as a prompt and the queue is full, or the
   *   session is closing
   */
  async steer(
    content: readonly LlmContentPart[],
    signal: AbortSignal,
    idle: "prompt" | "promptRequired",
    admitted?: () => void,
  ): Promise<SteerOutcome> {
    this.#slot.assertOpen();
    const stored = content.some((part) => part.type === "image")
      ? await toStoredContent(content, this.#options.services.attachments)
      : content as StoredContentPart[];
    // Past an await: the session may be closing now.
    this.#slot.assertOpen();
    if (this.#turns.steer({ content, stored })) {
      admitted?.();
      return "injected";
    }
    if (idle === "promptRequired") {
      admitted?.();
      return "promptRequired";
    }
    const started = new AbortController();
    const outcome = this.#prompt(content, signal, undefined, () => started.abort());
    admitted?.();
    // Nobody waits for the turn's end: a failure is logged (the turn recorded it).
    outcome.catch((error: unknown) => this.#turnFailed(error));
    if (started.signal.aborted) return "startedNewTurn";
    const result = await Promise.race([
      outcome.then(() => "settled" as const, () => "settled" as const),
      new Promise<"started">((resolve) =>
        started.signal.addEventListener("abort", () => resolve("started"), { once: true })
      ),
    ]);
    return result === "started" || started.signal.aborted ? "startedNewTurn" : "cancelled";
  }

  #turnFailed(error: unknown): void {
    this.#options.logger.warn("a turn nobody waits for failed", {
      sessionId: this.id,
      error: error instanceof Error ? error.message : String(error),
    });
  }

  #prompt(
    content: readonly LlmContentPart[],
    signal: AbortSignal,
    trace?: TraceCarrier,
    onStart?: () => void,
    leftover = false,
  ): Promise<PromptOutcome> {
    // Pinned now, when the prompt is admitted (a queued one too): a change sent after it applies
    // from the next prompt on. A slash command queued ahead of it that changes the selection
    // changes its pin too (see `#queuedPins`).
    const pin: QueuedPin = { pinned: this.#selection.current };
    // Steered messages a turn left over run as plain text, as they would have joined it.
    const builtin = leftover ? undefined : invokedCommand(content, this.#builtins());
    let run: (controller: AbortController) => Promise<StopReason>;
    if (builtin) {
      const first = content[0];
      const text = first?.type === "text" ? first.text.trim() : `/${builtin.name}`;
      run = async (controller) => {
        const reason = await runBuiltinCommand(builtin.name, builtin.input, text, {
          sessionId: this.id,
          catalog: this.#options.services.catalog,
          turns: this.#turns,
          output: this.#outbox,
          logger: this.#options.logger,
          pinned: pin.pinned,
          ...(this.#turns.checkpoints ? { checkpoints: this.#turns.checkpoints } : {}),
          setOption: (configId, value) => this.#setOptionFromCommand(configId, value),
        }, controller.signal);
        // Answered once the store has what the command recorded, as a turn is.
        await this.#outbox.acknowledged();
        return reason;
      };
    } else {
      run = (controller) => this.#turns.run(content, controller, pin.pinned, trace, leftover);
    }
    const meter = this.#turns.usage;
    const created = this.#created;
    const metered = async (controller: AbortController): Promise<PromptOutcome> => {
      this.#queuedPins.delete(pin);
      onStart?.();
      // A new session's first prompts wait until it is written (cancellable).
      if (created !== undefined && !await settledUnlessAborted(created, controller.signal)) {
        return { stopReason: "cancelled" };
      }
      meter.beginTurn();
      const before = this.#turns.lastBudget;
      let stopReason: StopReason;
      try {
        stopReason = await run(controller);
      } finally {
        this.#steeredLeftOver(controller.signal.aborted);
      }
      const usage = meter.turnUsage();
      const budget = this.#turns.lastBudget;
      return {
        stopReason,
        ...(usage ? { usage } : {}),
        ...(budget && budget !== before ? { budget } : {}),
      };
    };
    // Held from now: a prompt dropped at once (its request already cancelled) removes it again.
    if (this.#slot.busy) this.#queuedPins.add(pin);
    try {
      // A queued prompt cancelled before it starts leaves nothing in the log.
      return this.#slot.take(signal, metered, () => {
        this.#queuedPins.delete(pin);
        return { stopReason: "cancelled" } as const;
      }, leftover);
    } catch (error) {
      this.#queuedPins.delete(pin);
      throw error;
    }
  }

  /**
   * What a turn ended without taking of its steered messages runs as the next prompt (ahead of the
   * queue: it was meant for now), unless the turn was cancelled: then it is dropped, as the queue
   * is.
   */
  #steeredLeftOver(cancelled: boolean): void {
    const left = this.#turns.takeLeftover();
    if (left.length === 0) return;
    if (cancelled || this.#lifecycle.ending) {
      this.#options.logger.info("steered messages dropped: the turn was cancelled", {
        sessionId: this.id,
        messages: left.length,
      });
      if (this.#options.notices?.notices && !this.#lifecycle.ending) {
        this.#outbox.send({
          sessionUpdate: "notice",
          severity: "info",
          title: "Steered messages dropped: the turn was cancelled before its model took them",
          description:
            `${left.length} message(s) not sent to the model; send them again as a prompt.`,
        });
      }
      return;
    }
    const content = left.flatMap((message) => message.content);
    this.#prompt(content, new AbortController().signal, undefined, undefined, true)
      .catch((error: unknown) => this.#turnFailed(error));
  }

  /**
   * A slash command's change of the selection (`/model`, `/mode`): made as a client's change,
   * and carried into the pins of the prompts queued behind the command (sent after it).
   */
  #setOptionFromCommand(configId: string, value: unknown): void {
    const before = this.#selection.current;
    this.setConfigOption(configId, value);
    const after = this.#selection.current;
    // Every field the command changed, one it cleared too (a model without efforts drops `effort`).
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]) as Set<keyof Selection>;
    const changed = [...keys].filter((key) => after[key] !== before[key]);
    for (const pin of this.#queuedPins) {
      const next: Record<string, unknown> = { ...pin.pinned };
      for (const key of changed) {
        if (after[key] === undefined) delete next[key];
        else next[key] = after[key];
      }
      pin.pinned = next as unknown as Selection;
    }
  }

  /**
   * Checks that a prompt could be taken now: started, or queued behind the running one.
   *
   * @throws {SessionStateError} When the session is closing, or a prompt is in flight and the
   *   queue is full (or off)
   */
  assertCanPrompt(): void {
    this.#slot.assertAdmits();
  }

  /** How many prompts wait behind the running one. */
  get queuedPrompts(): number {
    return this.#slot.queued;
  }

  /** Cancels the prompt in flight, if any, and every queued one. Harmless when idle. */
  cancel(): void {
    this.#slot.cancel();
  }

  /**
   * Cancels any prompt, waits for it to settle and flushes updates. Concurrent calls share one
   * operation; afterwards the session accepts nothing.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      try {
        await this.#slot.close();
        await this.#outbox.drain();
      } finally {
        this.#lifecycle.to("closed");
      }
    })();
    return this.#closing;
  }
}

/** The prompt turns of a session and the units they use. */
function buildPromptTurn(options: SessionOptions, outbox: Outbox): PromptTurn {
  const { services, id: sessionId, logger, restored } = options;
  const { now } = services;
  const roots = [options.cwd, ...options.additionalDirectories];
  const conversation = new Conversation(restored?.history ?? []);
  const usage = new UsageMeter(restored?.cost ?? 0, restored?.tokens ?? 0);
  const meter = new ContextMeter();
  return new PromptTurn({
    services,
    sessionId,
    cwd: options.cwd,
    roots,
    ...(options.sandboxPaths ? { sandboxPaths: options.sandboxPaths } : {}),
    tools: options.tools instanceof ToolSet
      ? options.tools
      : ToolSet.of(options.tools, { logger, logFields: { sessionId } }),
    ...(options.commands ? { commands: options.commands } : {}),
    workspace: flushingWorkspace(options.workspace, outbox),
    notices: options.notices?.notices === true,
    logger,
    outbox,
    conversation,
    title: new SessionTitle(restored?.title, outbox, now),
    systemPrompt: new SystemPromptCache({
      roots,
      now,
      ...(services.settings.permissionRules ? { rules: services.settings.permissionRules } : {}),
      ...(options.instructions ? { instructions: options.instructions } : {}),
    }),
    permissions: new PermissionGate({
      sessionId,
      // A request to the client: what the session holds goes first.
      ask: (question) => {
        outbox.flush();
        return options.ask(question);
      },
      grants: restored?.grants ?? new Map(),
      output: outbox,
      logger,
      ...(services.settings.permissionRules
        ? { rules: services.settings.permissionRules, cwd: options.cwd, roots }
        : {}),
      ...(services.telemetry ? { telemetry: services.telemetry } : {}),
    }),
    ...(options.elicit
      ? {
        elicitation: new ElicitationRelay({
          sessionId,
          ask: options.elicit,
          output: outbox,
          logger,
        }),
      }
      : {}),
    events: new TurnEventMapper({ sessionId, output: outbox, conversation, usage, logger, now }),
    meter,
    usage,
    ...(options.budgets ? { budgets: options.budgets } : {}),
    checkpoints: new SessionCheckpoints({
      services,
      sessionId,
      roots,
      outbox,
      conversation,
      logger,
      ...(restored?.checkpoints ? { restored: restored.checkpoints } : {}),
      ...(restored?.checkpointCursor ? { cursor: restored.checkpointCursor } : {}),
    }),
    compactor: new Compactor({
      sessionId,
      threshold: services.settings.compactThreshold,
      conversation,
      meter,
      usage,
      output: outbox,
      notices: options.notices ?? { compaction: false, notices: false },
      logger,
    }),
  });
}

/**
 * The workspace, handing over what the session holds before each call: the client may serve it
 * (`fs/*`, `terminal/*`), and a command may change the world.
 */
function flushingWorkspace(workspace: Workspace, outbox: Outbox): Workspace {
  return {
    readTextFile(path, options) {
      outbox.flush();
      return workspace.readTextFile(path, options);
    },
    writeTextFile(path, content, options) {
      outbox.flush();
      return workspace.writeTextFile(path, content, options);
    },
    runCommand(command, options) {
      outbox.flush();
      return workspace.runCommand(command, options);
    },
  };
}

/**
 * Waits for `promise` unless `signal` aborts first.
 *
 * @returns `true` once it resolved, `false` when the signal aborted first; rejects as it does
 */
function settledUnlessAborted(promise: Promise<void>, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve, reject) => {
    const onAbort = (): void => resolve(false);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      () => {
        signal.removeEventListener("abort", onAbort);
        resolve(true);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
