/**
 * The budgets a turn is held to: model requests and tool calls per turn, the turn's time, and
 * the session's tokens and cost. Checked before each model request and each tool call: once a
 * limit is reached, that call is not made and the turn ends. The turn's time is kept by a timer
 * too (the session's prompt turn calls {@link TurnBudget.expire} and cancels what runs).
 *
 * @module
 */
import type { StopReason } from "../util/stop_reason.ts";

/** The limits of a turn and of its session; an absent limit is none. */
export interface BudgetLimits {
  /** Most model requests in one turn. */
  readonly maxSteps?: number | undefined;
  /** Most tool calls in one turn (one refused permission counts). */
  readonly maxToolCalls?: number | undefined;
  /** Longest a turn may run, in ms (checked before each model request and tool call). */
  readonly turnTimeoutMs?: number | undefined;
  /** Most tokens (input plus output, every model request) a session may spend. */
  readonly maxSessionTokens?: number | undefined;
  /** Most a session may cost, in USD (needs a priced model). */
  readonly maxSessionCostUsd?: number | undefined;
}

/** What a session has spent so far, across its turns, loads and restarts. */
export interface SessionSpend {
  /** Tokens, input plus output, of every model request. */
  readonly tokens: number;
  /** USD. */
  readonly cost: number;
}

/** Which limit ended a turn, and what to tell the user. */
export interface BudgetStop {
  /** `max_tokens` for the session's tokens, else `max_turn_requests`. */
  readonly stopReason: Extract<StopReason, "max_tokens" | "max_turn_requests">;
  /** The limit's setting: `maxSteps`, `maxToolCalls`, `turnTimeout`, `maxSessionTokens`, `maxSessionCost`. */
  readonly limit: string;
  /** One sentence naming the limit and the spend. */
  readonly message: string;
}

/**
 * A turn's budget as a client reads it (the prompt response's `_meta["acp-harness"].budget`):
 * the limits in force, in the units of the flags and of a client's `budgets` (`turnTimeout` in
 * seconds, `maxSessionCost` in USD), what was spent, and which limit ended the turn.
 */
export interface BudgetReport {
  /** The limits in force (the lower of the server's and the session's); absent ones are none. */
  readonly limits: {
    readonly maxSteps?: number;
    readonly maxToolCalls?: number;
    readonly turnTimeout?: number;
    readonly maxSessionTokens?: number;
    readonly maxSessionCost?: number;
  };
  /** What the turn spent, and the session's spend after it. */
  readonly spent: {
    readonly steps: number;
    readonly toolCalls: number;
    readonly durationMs: number;
    readonly sessionTokens: number;
    readonly sessionCostUsd: number;
  };
  /** The limit that ended the turn (`maxToolCalls`, …), absent when none did. */
  readonly reached?: string;
}

/** What a {@link TurnBudget} is built from. */
export interface TurnBudgetOptions {
  readonly limits: BudgetLimits;
  /** The session's spend now (read at each check). @default {nothing spent} */
  readonly spend?: () => SessionSpend;
  /** Whether the turn's model has prices (a cost limit cannot be kept otherwise). @default {true} */
  readonly priced?: boolean;
  /** The clock, in ms. @default {Date.now} */
  readonly now?: () => number;
}

/**
 * One turn's budget: counts its model requests and tool calls and tells when a limit is reached.
 * The first stop is kept ({@link TurnBudget.stopped}); every later check repeats it.
 *
 * @example A turn of one tool call
 * ```ts
 * import assert from "node:assert/strict";
 * import { TurnBudget } from "./turn_budget.ts";
 * const budget = new TurnBudget({ limits: { maxToolCalls: 1 } });
 * assert.equal(budget.beforeRequest(), undefined);
 * assert.equal(budget.beforeToolCall(), undefined);
 * assert.equal(budget.beforeToolCall()?.stopReason, "max_turn_requests");
 * assert.equal(budget.stopped?.limit, "maxToolCalls");
 * ```
 */
export class TurnBudget {
  readonly #limits: BudgetLimits;
  readonly #spend: () => SessionSpend;
  readonly #priced: boolean;
  readonly #now: () => number;
  readonly #startedAt: number;
  #steps = 0;
  #toolCalls = 0;
  #stopped: BudgetStop | undefined;

  /** @param options The limits, the session's spend, the model's pricing and the clock */
  constructor(options: TurnBudgetOptions) {
    this.#limits = options.limits;
    this.#spend = options.spend ?? (() => ({ tokens: 0, cost: 0 }));
    this.#priced = options.priced ?? true;
    this.#now = options.now ?? Date.now;
    this.#startedAt = this.#now();
  }

  /** The stop that ended the turn, once a limit was reached. */
  get stopped(): BudgetStop | undefined {
    return this.#stopped;
  }

  /**
   * How long the turn may still run, in ms (never below 0), or `undefined` without a time limit.
   *
   * @returns The time left
   */
  remainingMs(): number | undefined {
    const { turnTimeoutMs } = this.#limits;
    if (turnTimeoutMs === undefined) return undefined;
    return Math.max(0, turnTimeoutMs - (this.#now() - this.#startedAt));
  }

  /**
   * Ends the turn on its time limit now (the turn's timer fired while a model request or a tool
   * call ran); a turn already stopped keeps its first stop.
   *
   * @returns The stop
   */
  expire(): BudgetStop {
    if (this.#stopped) return this.#stopped;
    const turnTimeoutMs = this.#limits.turnTimeoutMs ?? 0;
    const elapsed = Math.max(turnTimeoutMs, this.#now() - this.#startedAt);
    return this.#stop("turnTimeout", `${seconds(turnTimeoutMs)} per turn`, seconds(elapsed));
  }

  /**
   * The budget as a client reads it: limits, spend, and the limit that ended the turn.
   *
   * @example After one request under a tool-call limit
   * ```ts
   * import assert from "node:assert/strict";
   * import { TurnBudget } from "./turn_budget.ts";
   * const budget = new TurnBudget({ limits: { maxToolCalls: 2, turnTimeoutMs: 90_000 }, now: () => 0 });
   * budget.beforeRequest();
   * assert.deepEqual(budget.report(), {
   *   limits: { maxToolCalls: 2, turnTimeout: 90 },
   *   spent: { steps: 1, toolCalls: 0, durationMs: 0, sessionTokens: 0, sessionCostUsd: 0 },
   * });
   * ```
   *
   * @returns The report
   */
  report(): BudgetReport {
    const { maxSteps, maxToolCalls, turnTimeoutMs, maxSessionTokens, maxSessionCostUsd } =
      this.#limits;
    const spend = this.#spend();
    return {
      limits: {
        ...(maxSteps === undefined ? {} : { maxSteps }),
        ...(maxToolCalls === undefined ? {} : { maxToolCalls }),
        ...(turnTimeoutMs === undefined ? {} : { turnTimeout: turnTimeoutMs / 1000 }),
        ...(maxSessionTokens === undefined ? {} : { maxSessionTokens }),
        ...(maxSessionCostUsd === undefined ? {} : { maxSessionCost: maxSessionCostUsd }),
      },
      spent: {
        steps: this.#steps,
        toolCalls: this.#toolCalls,
        durationMs: Math.max(0, this.#now() - this.#startedAt),
        sessionTokens: spend.tokens,
        sessionCostUsd: spend.cost,
      },
      ...(this.#stopped ? { reached: this.#stopped.limit } : {}),
    };
  }

  /** Model requests made so far. */
  get steps(): number {
    return this.#steps;
  }

  /** Tool calls run so far. */
  get toolCalls(): number {
    return this.#toolCalls;
  }

  /**
   * Checks before a model request, and counts it when it may be made.
   *
   * @returns The stop when the request must not be made
   */
  beforeRequest(): BudgetStop | undefined {
    if (this.#stopped) return this.#stopped;
    const { maxSteps, maxSessionTokens, maxSessionCostUsd } = this.#limits;
    const stop = this.#timeUp() ?? this.#sessionStop(maxSessionTokens, maxSessionCostUsd) ??
      (maxSteps !== undefined && this.#steps >= maxSteps
        ? this.#stop("maxSteps", `${count(maxSteps, "model request")} per turn`, `${this.#steps}`)
        : undefined);
    if (stop) return stop;
    this.#steps++;
    return undefined;
  }

  /**
   * Checks before a tool call, and counts it when it may run.
   *
   * @returns The stop when the call must not run
   */
  beforeToolCall(): BudgetStop | undefined {
    if (this.#stopped) return this.#stopped;
    const { maxToolCalls } = this.#limits;
    const stop = this.#timeUp() ??
      (maxToolCalls !== undefined && this.#toolCalls >= maxToolCalls
        ? this.#stop(
          "maxToolCalls",
          `${count(maxToolCalls, "tool call")} per turn`,
          `${this.#toolCalls}`,
        )
        : undefined);
    if (stop) return stop;
    this.#toolCalls++;
    return undefined;
  }

  #timeUp(): BudgetStop | undefined {
    const { turnTimeoutMs } = this.#limits;
    if (turnTimeoutMs === undefined) return undefined;
    const elapsed = this.#now() - this.#startedAt;
    if (elapsed < turnTimeoutMs) return undefined;
    return this.#stop(
      "turnTimeout",
      `${seconds(turnTimeoutMs)} per turn`,
      seconds(elapsed),
    );
  }

  #sessionStop(maxTokens?: number, maxCost?: number): BudgetStop | undefined {
    if (maxTokens === undefined && maxCost === undefined) return undefined;
    const spend = this.#spend();
    if (maxTokens !== undefined && spend.tokens >= maxTokens) {
      return this.#stop("maxSessionTokens", `${maxTokens} tokens per session`, `${spend.tokens}`);
    }
    if (maxCost === undefined) return undefined;
    if (!this.#priced) {
      this.#stopped = {
        stopReason: "max_turn_requests",
        limit: "maxSessionCost",
        message: `Budget: the session has a cost limit ($${maxCost}) and this model has no ` +
          "price, so no request is made (choose a priced model or configure its prices).",
      };
      return this.#stopped;
    }
    if (spend.cost >= maxCost) {
      return this.#stop("maxSessionCost", `$${maxCost} per session`, usd(spend.cost));
    }
    return undefined;
  }

  #stop(limit: string, what: string, spent: string): BudgetStop {
    const spend = this.#spend();
    this.#stopped = {
      stopReason: limit === "maxSessionTokens" ? "max_tokens" : "max_turn_requests",
      limit,
      message: `Budget reached: ${limit} (${what}); spent ${spent}. ` +
        `This turn: ${count(this.#steps, "model request")}, ${
          count(this.#toolCalls, "tool call")
        }; ` +
        `this session: ${spend.tokens} tokens, ${usd(spend.cost)}.`,
    };
    return this.#stopped;
  }
}

function count(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? "" : "s"}`;
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

function usd(amount: number): string {
  return `$${(Math.round(amount * 1e6) / 1e6).toString()}`;
}
