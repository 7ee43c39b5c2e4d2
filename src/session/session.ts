import {
  type Authorization,
  type AuthorizeRequest,
  type RetryPolicy,
  runTurn,
  type StopReason,
  TurnError,
} from "../agent/run_turn.ts";
import { buildSystemPrompt } from "../agent/system_prompt.ts";
import type { TurnEvent } from "../agent/turn_event.ts";
import type { PermissionMode } from "../config/config.ts";
import type { Host } from "../host/host.ts";
import type { ModelCatalog, ModelInfo } from "../llm/catalog.ts";
import type { LlmContentPart, LlmMessage, LlmUsage, ProviderError } from "../llm/provider.ts";
import type { Logger } from "../log/logger.ts";
import type {
  SessionConfigOption,
  SessionModeState,
  SessionUpdate,
} from "../protocol/acp_types.ts";
import { decidePermission, type PermissionAnswer } from "../permission/policy.ts";
import type { Tool, ToolKind, ToolLocation } from "../tools/tool.ts";
import type { Workspace } from "../tools/workspace.ts";
import {
  buildConfigOptions,
  buildModeState,
  DEFAULT_EFFORT,
  effortValues,
  initialEffort,
  type Selection,
} from "./config_options.ts";
import type {
  AttachmentStore,
  SessionStore,
  StoredContentPart,
  StoredEvent,
} from "../store/session_store.ts";
import { permissionEvent, type RestoredSession, toStoredContent } from "./session_record.ts";
import { UpdateQueue, type UpdateSink } from "./update_queue.ts";
import { toSessionUpdate } from "./updates.ts";

/** Thrown when a request does not fit the session's state (maps to -32602). */
export class SessionStateError extends Error {
  /** @param message Says what state the session is in */
  constructor(message: string) {
    super(message);
    this.name = "SessionStateError";
  }
}

/** Thrown for an unknown config option or value (maps to -32602). */
export class ConfigValueError extends RangeError {
  /** @param message Names the option and the accepted values */
  constructor(message: string) {
    super(message);
    this.name = "ConfigValueError";
  }
}

/** A tool call the user is asked about. */
export interface PermissionQuestion {
  readonly sessionId: string;
  readonly toolCallId: string;
  readonly title: string;
  readonly kind: ToolKind;
  readonly rawInput: unknown;
  readonly locations: readonly ToolLocation[];
  readonly signal: AbortSignal;
}

/**
 * Asks the client for permission (`session/request_permission`). Resolves `cancelled` when the
 * turn was cancelled or the client answered so; never rejects (failures count as a refusal).
 */
export type PermissionAsker = (
  question: PermissionQuestion,
) => Promise<PermissionAnswer | "cancelled">;

/** What a session is built from. */
export interface SessionOptions {
  readonly id: string;
  /** Absolute, canonical working directory. */
  readonly cwd: string;
  /** Absolute, canonical extra workspace roots. */
  readonly additionalDirectories: readonly string[];
  readonly selection: Selection;
  readonly catalog: ModelCatalog;
  readonly tools: readonly Tool[];
  readonly host: Host;
  readonly workspace: Workspace;
  readonly ask: PermissionAsker;
  /** Project instructions (the cwd's AGENTS.md), when present. */
  readonly instructions?: string;
  readonly maxSteps: number;
  readonly stream: boolean;
  readonly retry?: RetryPolicy;
  readonly sink: UpdateSink;
  /** Delivers a whole replay at once (faster than one update at a time through `sink`). */
  readonly replaySink?: (updates: readonly SessionUpdate[]) => Promise<void>;
  readonly logger: Logger;
  readonly now: () => number;
  /** Where the session's events are recorded. */
  readonly store: SessionStore;
  /** Where prompt images are kept. */
  readonly attachments: AttachmentStore;
  /** State rebuilt from the log, for a loaded or resumed session. */
  readonly restored?: RestoredSession;
}

interface ActiveTurn {
  readonly controller: AbortController;
  done: Promise<StopReason>;
}

/**
 * One ACP session: its conversation, its selection, its one prompt slot and its ordered updates.
 */
export class Session {
  /** The session id. */
  readonly id: string;
  /** The working directory. */
  readonly cwd: string;
  /** Extra workspace roots. */
  readonly additionalDirectories: readonly string[];
  readonly #options: SessionOptions;
  readonly #updates: UpdateQueue;
  readonly #history: LlmMessage[];
  #selection: Selection;
  #turn: ActiveTurn | undefined;
  #controller = new AbortController();
  readonly #grants: Map<string, "allow_always" | "reject_always">;
  #cost: number;
  /** Tool names by call id, for the results' records. */
  readonly #callNames = new Map<string, string>();
  /** When each announced tool call was announced, by call id, for the logs. */
  readonly #callStarts = new Map<string, number>();
  /** Providers whose state (reasoning, thinking signatures) is in the history. */
  readonly #stateProviders = new Set<string>();
  /** Records waiting for the end of the current microtask, and whether one is a commit point. */
  #pending: StoredEvent[] = [];
  #pendingCommit = false;
  #flushScheduled = false;
  /** Settles when everything recorded so far is durable. */
  #durable: Promise<void> = Promise.resolve();
  #system: { key: string; text: string } | undefined;
  #closing: Promise<void> | undefined;
  #title: string | undefined;

  /** @param options What the session is built from */
  constructor(options: SessionOptions) {
    this.id = options.id;
    this.cwd = options.cwd;
    this.additionalDirectories = options.additionalDirectories;
    this.#options = options;
    this.#selection = options.selection;
    this.#updates = new UpdateQueue(options.sink, options.logger);
    const restored = options.restored;
    this.#history = restored?.history ?? [];
    for (const message of this.#history) {
      if (message.role === "assistant" && message.providerState !== undefined) {
        this.#stateProviders.add(message.provider ?? "");
      }
    }
    this.#grants = restored?.grants ?? new Map();
    this.#cost = restored?.cost ?? 0;
    this.#title = restored?.title;
  }

  /**
   * Writes the events a new or restored session starts with: the initial selection for a new
   * one (or a restored one whose selection had to change), the repair of an interrupted turn.
   */
  start(selectionChanged = false): void {
    const repair = this.#options.restored?.repair ?? [];
    if (repair.length > 0) this.#record(repair, true);
    if (!this.#options.restored || selectionChanged) this.#recordConfig();
  }

  /**
   * Records events in the session's log, in call order: written when the current microtask
   * ends (a strict record, such as an admitted prompt, at once, failing the caller when it cannot
   * be written). Commit points are then made durable in the background ({@link close} waits for
   * that). Other failures are logged.
   */
  #record(
    events: readonly StoredEvent[],
    commit: boolean,
    when: "now" | "soon" | "later" = "soon",
  ): void {
    if (when === "now") {
      const all = [...this.#pending, ...events];
      commit ||= this.#pendingCommit;
      this.#pending = [];
      this.#pendingCommit = false;
      this.#append(all, commit, true);
      return;
    }
    // "soon": with whatever else the current microtask records, in one write when it ends (still
    // ahead of anything the turn sends afterwards). "later": held for the next write, which the
    // turn always makes before anything outside the process happens (tools, its end).
    if (when === "soon" && !this.#flushScheduled) {
      this.#flushScheduled = true;
      queueMicrotask(() => {
        this.#flushScheduled = false;
        this.#flushRecords();
      });
    }
    this.#pending.push(...events);
    this.#pendingCommit ||= commit;
  }

  /**
   * Hands an update to the client after everything recorded so far has been handed to the store:
   * nothing the client was shown can be missing from the log after a crash of this process.
   */
  #send(update: SessionUpdate): Promise<void> | undefined {
    this.#flushRecords();
    return this.#updates.push(update);
  }

  #flushRecords(): void {
    if (this.#pending.length === 0) return;
    const events = this.#pending;
    const commit = this.#pendingCommit;
    this.#pending = [];
    this.#pendingCommit = false;
    this.#append(events, commit, false);
  }

  #append(events: readonly StoredEvent[], commit: boolean, strict: boolean): void {
    try {
      const durable = this.#options.store.append(this.id, events, { sync: commit });
      this.#durable = Promise.all([this.#durable, durable]).then(
        () => {},
        (error: unknown) =>
          this.#options.logger.error("cannot sync the session log", {
            sessionId: this.id,
            error,
          }),
      );
    } catch (error) {
      this.#options.logger.error("cannot write the session log", { sessionId: this.id, error });
      if (strict) throw error;
    }
  }

  /**
   * Sends replayed updates (for `session/load`) ahead of anything else of the session.
   *
   * @param updates The conversation as updates
   * @returns Once they are written
   */
  async replay(updates: readonly SessionUpdate[]): Promise<void> {
    if (this.#options.replaySink) return await this.#options.replaySink(updates);
    for (const update of updates) this.#updates.push(update);
    return await this.#updates.flush();
  }

  /** Records the current model, mode and effort (at creation and on every change). */
  #recordConfig(): void {
    const { model, mode, effort } = this.#selection;
    this.#record(
      [{ type: "config", model, mode, ...(effort === undefined ? {} : { effort }) }],
      true,
    );
  }

  /** The selected model's facts. */
  currentModel(): ModelInfo | undefined {
    return this.#options.catalog.info(this.#selection.model);
  }

  /** The complete config option list. */
  configOptions(): SessionConfigOption[] {
    return buildConfigOptions(
      this.#selection,
      this.#options.catalog.list(),
      this.#options.catalog.info(this.#selection.model),
    );
  }

  /** The mode state, in sync with the `mode` option. */
  modes(): SessionModeState {
    return buildModeState(this.#selection.mode);
  }

  /**
   * Changes a config option from the next turn on and tells the client.
   *
   * @param configId `model` or `mode`
   * @param value The new value
   * @returns The complete option list
   * @throws {ConfigValueError} For an unknown option or value
   */
  setConfigOption(configId: string, value: unknown): SessionConfigOption[] {
    this.#assertOpen();
    const option = this.configOptions().find((candidate) => candidate.id === configId);
    if (!option) {
      throw new ConfigValueError(
        `configId: unknown config option "${configId}"; expected one of ${
          this.configOptions().map((candidate) => candidate.id).join(", ")
        }`,
      );
    }
    const allowed = option.type === "select"
      ? option.options.flatMap((entry) => "group" in entry ? entry.options : [entry])
        .map((entry) => entry.value)
      : [];
    if (typeof value !== "string" || !allowed.includes(value)) {
      throw new ConfigValueError(
        `value: ${JSON.stringify(value)} is not a value of "${configId}"; expected one of ${
          allowed.join(", ")
        }`,
      );
    }
    const previousMode = this.#selection.mode;
    if (configId === "model") {
      const effort = initialEffort(this.#options.catalog.info(value));
      this.#selection = {
        model: value,
        mode: this.#selection.mode,
        ...(effort === undefined ? {} : { effort }),
      };
    } else if (configId === "mode") {
      this.#selection = { ...this.#selection, mode: value as PermissionMode };
    } else {
      const { effort: _previous, ...rest } = this.#selection;
      this.#selection = value === DEFAULT_EFFORT ? rest : { ...rest, effort: value };
    }
    this.#recordConfig();
    const options = this.configOptions();
    this.#send({ sessionUpdate: "config_option_update", configOptions: options });
    if (this.#selection.mode !== previousMode) {
      this.#send({
        sessionUpdate: "current_mode_update",
        currentModeId: this.#selection.mode,
      });
    }
    return options;
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
   * Runs one prompt turn. The slot is taken synchronously: a second call before this one settles
   * throws at once.
   *
   * @param content The validated user message
   * @param signal Aborted when the request is cancelled
   * @returns Why the turn ended, once every update of the turn is written
   * @throws {SessionStateError} When a prompt is in flight or the session is closing
   */
  prompt(content: readonly LlmContentPart[], signal: AbortSignal): Promise<StopReason> {
    this.assertCanPrompt();
    // A controller is only used up by an abort, so an uncancelled one serves the next turn too.
    if (this.#controller.signal.aborted) this.#controller = new AbortController();
    const controller = this.#controller;
    // The slot is taken before the turn starts: a turn can settle before `#runPrompt` returns
    // (an already cancelled request), and its end must find the slot to free it.
    const turn: ActiveTurn = { controller, done: Promise.resolve("cancelled") };
    this.#turn = turn;
    turn.done = this.#runPrompt(content, signal, turn);
    return turn.done;
  }

  /**
   * Checks that a prompt could start now.
   *
   * @throws {SessionStateError} When a prompt is in flight or the session is closing
   */
  assertCanPrompt(): void {
    this.#assertOpen();
    if (this.#turn) {
      throw new SessionStateError(`a prompt is already in flight for session ${this.id}`);
    }
  }

  /** Cancels the prompt in flight, if any. Harmless when idle. */
  cancel(): void {
    this.#turn?.controller.abort();
  }

  /**
   * Cancels any prompt, waits for it to settle and flushes updates. Concurrent calls share one
   * operation; afterwards the session accepts nothing.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      const turn = this.#turn;
      turn?.controller.abort();
      await turn?.done.catch(() => {});
      await this.#updates.flush();
      this.#flushRecords();
      await this.#durable;
    })();
    return this.#closing;
  }

  async #runPrompt(
    content: readonly LlmContentPart[],
    signal: AbortSignal,
    turn: ActiveTurn,
  ): Promise<StopReason> {
    const { controller } = turn;
    const onAbort = (): void => controller.abort();
    signal.addEventListener("abort", onAbort, { once: true });
    if (signal.aborted) controller.abort();
    let open = true;
    let started = false;
    let titled = false;
    let stopReason: StopReason | undefined;
    let failure: unknown;
    const { logger } = this.#options;
    const startedAt = this.#options.now();
    const pinned = this.#selection;
    logger.info("prompt started", {
      sessionId: this.id,
      model: pinned.model,
      mode: pinned.mode,
      parts: content.length,
    });
    // Built only when the line is written (JSON.stringify calls toJSON).
    logger.debug("prompt content", {
      sessionId: this.id,
      content: { toJSON: () => describeContent(content) },
    });
    try {
      const { info, provider } = this.#options.catalog.resolve(pinned.model);
      const stored: StoredContentPart[] = content.some((part) => part.type === "image")
        ? await toStoredContent(content, this.#options.attachments)
        : content as StoredContentPart[];
      if (controller.signal.aborted) return stopReason = "cancelled";
      // The prompt is admitted: recorded before anything else happens (a commit point).
      this.#record(
        [
          { type: "turn_start" },
          { type: "user", messageId: crypto.randomUUID(), content: stored },
        ],
        true,
        "now",
      );
      started = true;
      this.#history.push({ role: "user", content });
      if (this.#title === undefined) titled = this.#announceTitle(content);
      if (controller.signal.aborted) return stopReason = "cancelled";
      const chosen = pinned.effort ?? info.defaultReasoningEffort;
      const effort = chosen !== undefined && effortValues(info).includes(chosen) &&
          chosen !== DEFAULT_EFFORT
        ? chosen
        : undefined;
      return stopReason = await runTurn({
        sessionId: this.id,
        provider,
        model: info.model,
        ...(effort === undefined ? {} : { reasoningEffort: effort }),
        ...(info.maxOutputTokens === undefined ? {} : { maxOutputTokens: info.maxOutputTokens }),
        system: this.#systemPrompt(info.name),
        history: this.#history,
        tools: this.#options.tools,
        foreignState: [...this.#stateProviders].some((id) => id !== provider.id),
        cwd: this.cwd,
        roots: [this.cwd, ...this.additionalDirectories],
        host: this.#options.host,
        workspace: this.#options.workspace,
        authorize: (request) => this.#authorize(request, pinned),
        maxSteps: this.#options.maxSteps,
        ...(this.#options.retry ? { retry: this.#options.retry } : {}),
        onRetry: (error, attempt, delayMs) =>
          this.#options.logger.warn("model request failed", {
            sessionId: this.id,
            model: info.id,
            attempt,
            ...providerErrorFields(error),
            retryInMs: delayMs,
          }),
        stream: this.#options.stream,
        signal: controller.signal,
        emit: (event) => open ? this.#apply(event, info) : undefined,
      });
    } catch (error) {
      // A cancelled turn is an outcome, even if something below threw on the abort.
      if (controller.signal.aborted) return stopReason = "cancelled";
      failure = error;
      throw error;
    } finally {
      signal.removeEventListener("abort", onAbort);
      const ms = this.#options.now() - startedAt;
      if (stopReason === undefined) {
        const cause = failure instanceof TurnError ? failure.providerError : undefined;
        logger.warn(cause ? "model request failed" : "prompt failed", {
          sessionId: this.id,
          model: pinned.model,
          ms,
          ...(cause ? providerErrorFields(cause) : {
            error: failure instanceof Error ? failure.message : String(failure),
          }),
        });
      } else logger.info("prompt ended", { sessionId: this.id, stopReason, ms });
      if (started) {
        this.#record([
          stopReason === undefined
            ? { type: "turn_end", stopReason: "error", error: String(failure) }
            : { type: "turn_end", stopReason },
        ], true);
      }
      // Every update of the turn is already queued on the connection, whose writes go out in
      // order, so the prompt's answer cannot overtake them; nothing of this turn is sent later.
      open = false;
      if (titled) {
        // The session's title is new: once the answer is out, every process lists it (the index
        // line is written, once per session).
        this.#flushRecords();
        await this.#durable;
      }
      if (this.#turn === turn) this.#turn = undefined;
    }
  }

  #systemPrompt(model: string): string {
    const date = new Date(this.#options.now());
    const key = `${model}\n${Math.floor(date.getTime() / 86_400_000)}`;
    if (this.#system?.key !== key) {
      const roots = [this.cwd, ...this.additionalDirectories];
      const instructions = this.#options.instructions;
      this.#system = {
        key,
        text: buildSystemPrompt({ roots, model, date, ...(instructions ? { instructions } : {}) }),
      };
    }
    return this.#system.text;
  }

  async #authorize(request: AuthorizeRequest, pinned: Selection): Promise<Authorization> {
    const { tool } = request;
    const decision = decidePermission(pinned.mode, tool.name, tool.effect, this.#grants);
    const facts = {
      sessionId: this.id,
      toolCallId: request.toolCallId,
      tool: tool.name,
      mode: pinned.mode,
    };
    if (decision.action === "allow") {
      this.#options.logger.debug("permission: allowed by policy", facts);
      return { allowed: true };
    }
    if (decision.action === "deny") {
      this.#options.logger.info("permission: denied by policy", facts);
      return { allowed: false, reason: decision.reason };
    }
    const answer = await this.#options.ask({
      sessionId: this.id,
      toolCallId: request.toolCallId,
      title: request.title,
      kind: tool.kind,
      rawInput: request.rawInput,
      locations: request.locations,
      signal: request.signal,
    });
    this.#options.logger.info("permission: answered", { ...facts, answer });
    this.#record([permissionEvent(request.toolCallId, tool.name, answer)], true);
    if (answer === "allow_always" || answer === "reject_always") {
      this.#grants.set(tool.name, answer);
    }
    if (answer === "allow_once" || answer === "allow_always") return { allowed: true };
    return {
      allowed: false,
      reason: answer === "cancelled"
        ? `Permission to run ${tool.name} was not given: the request was cancelled.`
        : `The user refused permission to run ${tool.name}${
          answer === "reject_always" ? " for the rest of this session" : ""
        }.`,
    };
  }

  #apply(event: TurnEvent, model: ModelInfo): Promise<void> | undefined {
    switch (event.type) {
      case "history": {
        // runTurn appended it to the history already; tool messages are recorded from their
        // final update, which carries what the client was shown.
        const { message } = event;
        if (message.role === "assistant") {
          if (message.providerState !== undefined) {
            this.#stateProviders.add(message.provider ?? "");
          }
          this.#record(
            [{
              type: "assistant",
              text: message.text,
              ...(event.messageId ? { messageId: event.messageId } : {}),
              ...(event.thoughtId ? { thoughtId: event.thoughtId } : {}),
              ...(message.reasoning ? { reasoning: message.reasoning } : {}),
              ...(message.toolCalls ? { toolCalls: message.toolCalls } : {}),
              ...(message.providerState === undefined
                ? {}
                : { providerState: message.providerState }),
              ...(message.provider === undefined ? {} : { provider: message.provider }),
            }],
            true,
            "later",
          );
        }
        return undefined;
      }
      case "usage":
        return this.#reportUsage(event.usage, model);
      case "tool-call":
        this.#callNames.set(event.toolCallId, event.name);
        this.#callStarts.set(event.toolCallId, this.#options.now());
        this.#options.logger.debug("tool call", {
          sessionId: this.id,
          toolCallId: event.toolCallId,
          tool: event.name,
        });
        this.#record([{
          type: "tool_call",
          toolCallId: event.toolCallId,
          name: event.name,
          title: event.title,
          kind: event.kind,
          rawInput: event.rawInput,
          locations: event.locations,
        }], false);
        break;
      case "tool-call-update":
        if (event.status !== "in_progress") {
          const startedAt = this.#callStarts.get(event.toolCallId);
          this.#callStarts.delete(event.toolCallId);
          this.#options.logger.info("tool call ended", {
            sessionId: this.id,
            toolCallId: event.toolCallId,
            tool: this.#callNames.get(event.toolCallId) ?? "",
            status: event.status,
            ...(startedAt === undefined ? {} : { ms: this.#options.now() - startedAt }),
          });
          this.#record([{
            type: "tool_result",
            toolCallId: event.toolCallId,
            name: this.#callNames.get(event.toolCallId) ?? "",
            content: event.text ?? "",
            isError: event.status === "failed",
            ...(event.display ? { display: event.display } : {}),
            ...(event.locations ? { locations: event.locations } : {}),
          }], true);
          this.#callNames.delete(event.toolCallId);
        }
        break;
      default:
        break;
    }
    return this.#send(toSessionUpdate(event));
  }

  #reportUsage(usage: LlmUsage, model: ModelInfo): Promise<void> | undefined {
    if (model.pricing) {
      const { input, output, cacheRead = 0, cacheWrite = 0 } = usage;
      const price = model.pricing;
      this.#cost += (Math.max(0, input - cacheRead - cacheWrite) * price.input +
        cacheRead * (price.cacheRead ?? price.input) +
        cacheWrite * (price.cacheWrite ?? price.input) +
        output * price.output) / 1_000_000;
    }
    this.#record(
      [{
        type: "usage",
        usage,
        used: usage.input + usage.output,
        ...(model.contextWindow === undefined ? {} : { size: model.contextWindow }),
        ...(model.pricing ? { cost: roundCost(this.#cost) } : {}),
      }],
      false,
      "later",
    );
    if (model.contextWindow === undefined) return undefined;
    return this.#send({
      sessionUpdate: "usage_update",
      used: usage.input + usage.output,
      size: model.contextWindow,
      ...(model.pricing ? { cost: { amount: roundCost(this.#cost), currency: "USD" } } : {}),
    });
  }

  /** Takes the title from the first line of the first prompt; says whether there was one. */
  #announceTitle(content: readonly LlmContentPart[]): boolean {
    const text = content.map((part) => part.type === "text" ? part.text : "").join(" ");
    const line = text.split("\n").map((part) => part.trim()).find((part) => part !== "") ?? "";
    if (line === "") return false;
    this.#title = line.length > 80 ? `${line.slice(0, 79)}…` : line;
    this.#record([{ type: "title", title: this.#title }], false, "later");
    this.#send({
      sessionUpdate: "session_info_update",
      title: this.#title,
      updatedAt: new Date(this.#options.now()).toISOString(),
    });
    return true;
  }

  #assertOpen(): void {
    if (this.#closing) throw new SessionStateError(`session ${this.id} is closing`);
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

function roundCost(amount: number): number {
  return Math.round(amount * 1e6) / 1e6;
}
