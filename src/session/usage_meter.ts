/**
 * A session's token usage and cost.
 *
 * @module
 */
import type { ModelInfo } from "../llm/catalog.ts";
import type { LlmUsage } from "../llm/provider.ts";
import type { SessionUpdate } from "../transport/acp_types.ts";
import type { StoredEvent } from "../store/session_store.ts";

/** What one model request's usage produced. */
export interface UsageReport {
  /** The record of it (cumulative cost included when the model is priced). */
  readonly event: StoredEvent;
  /** The `usage_update` for the client; only when the model's context window is known. */
  readonly update?: SessionUpdate;
}

/**
 * A turn's token usage, as the `usage` of the `session/prompt` response (ACP, unstable): the sum
 * over the turn's model requests. The optional counts are present only when a request reported
 * them.
 */
export interface TurnUsage {
  /** Input plus output tokens. */
  readonly totalTokens: number;
  /** Input tokens, cached ones included. */
  readonly inputTokens: number;
  /** Output tokens, reasoning included. */
  readonly outputTokens: number;
  /** Reasoning tokens (counted in `outputTokens`). */
  readonly thoughtTokens?: number;
  /** Input tokens read from the cache. */
  readonly cachedReadTokens?: number;
  /** Input tokens written to the cache. */
  readonly cachedWriteTokens?: number;
}

/** Sums of one turn's usage; a count stays undefined until a request reports it. */
interface Tally {
  requests: number;
  input: number;
  output: number;
  reasoning?: number;
  cacheRead?: number;
  cacheWrite?: number;
}

/**
 * Accumulates a session's cost (USD) from each model request's usage and the model's prices, and
 * the tokens of the turn in progress.
 *
 * @example A turn's usage
 * ```ts
 * import assert from "node:assert/strict";
 * import type { ModelInfo } from "../llm/catalog.ts";
 * import { UsageMeter } from "./usage_meter.ts";
 * const model: ModelInfo = {
 *   id: "p/m", provider: "p", model: "m", name: "M", description: "", image: false,
 *   reasoningEfforts: [],
 * };
 * const meter = new UsageMeter();
 * meter.beginTurn();
 * meter.add({ input: 100, output: 20, cacheRead: 60 }, model);
 * assert.deepEqual(meter.turnUsage(), {
 *   totalTokens: 120, inputTokens: 100, outputTokens: 20, cachedReadTokens: 60,
 * });
 * ```
 */
export class UsageMeter {
  #cost: number;
  #turn: Tally = { requests: 0, input: 0, output: 0 };
  #tokens: number;

  /**
   * @param cost The cost so far (a restored session's)
   * @param tokens The tokens (input plus output) spent so far
   */
  constructor(cost = 0, tokens = 0) {
    this.#cost = cost;
    this.#tokens = tokens;
  }

  /** The tokens spent, input plus output of every request (what session token budgets count). */
  get tokens(): number {
    return this.#tokens;
  }

  /** The cumulative cost in USD, unrounded. */
  get cost(): number {
    return this.#cost;
  }

  /** Starts counting a new turn's tokens. */
  beginTurn(): void {
    this.#turn = { requests: 0, input: 0, output: 0 };
  }

  /**
   * The tokens of the turn since {@link beginTurn}, or undefined when no model request of it
   * reported usage (nothing is known).
   *
   * @returns The turn's usage, for the prompt response
   */
  turnUsage(): TurnUsage | undefined {
    const { requests, input, output, reasoning, cacheRead, cacheWrite } = this.#turn;
    if (requests === 0) return undefined;
    return {
      totalTokens: input + output,
      inputTokens: input,
      outputTokens: output,
      ...(reasoning === undefined ? {} : { thoughtTokens: reasoning }),
      ...(cacheRead === undefined ? {} : { cachedReadTokens: cacheRead }),
      ...(cacheWrite === undefined ? {} : { cachedWriteTokens: cacheWrite }),
    };
  }

  /**
   * Adds one model request's usage.
   *
   * @param usage The request's usage
   * @param model The model that served it
   * @param inContext The tokens now in context, when not the request's input plus output (after
   *   a compaction: its request's usage is paid for, but what is in context is the new history)
   * @returns Its record and, when the context window is known, its update
   */
  add(usage: LlmUsage, model: ModelInfo, inContext?: number): UsageReport {
    this.#tally(usage);
    const price = model.pricing;
    this.#tokens += usage.input + usage.output;
    if (price) {
      const { input, output, cacheRead = 0, cacheWrite = 0 } = usage;
      this.#cost += (Math.max(0, input - cacheRead - cacheWrite) * price.input +
        cacheRead * (price.cacheRead ?? price.input) +
        cacheWrite * (price.cacheWrite ?? price.input) +
        output * price.output) / 1_000_000;
    }
    const used = inContext ?? usage.input + usage.output;
    const size = model.contextWindow;
    const event: StoredEvent = {
      type: "usage",
      usage,
      used,
      ...(size === undefined ? {} : { size }),
      ...(price ? { cost: roundCost(this.#cost) } : {}),
    };
    if (size === undefined) return { event };
    const update: SessionUpdate = {
      sessionUpdate: "usage_update",
      used,
      size,
      ...(price ? { cost: { amount: roundCost(this.#cost), currency: "USD" } } : {}),
    };
    return { event, update };
  }

  /** Adds a request's tokens to the turn's (a context-only report, all zeros, adds nothing). */
  #tally(usage: LlmUsage): void {
    const { input, output, cacheRead, cacheWrite, reasoning } = usage;
    if (input === 0 && output === 0 && !cacheRead && !cacheWrite && !reasoning) return;
    const turn = this.#turn;
    turn.requests++;
    turn.input += input;
    turn.output += output;
    if (reasoning !== undefined) turn.reasoning = (turn.reasoning ?? 0) + reasoning;
    if (cacheRead !== undefined) turn.cacheRead = (turn.cacheRead ?? 0) + cacheRead;
    if (cacheWrite !== undefined) turn.cacheWrite = (turn.cacheWrite ?? 0) + cacheWrite;
  }
}

/** Rounds USD to a millionth. */
function roundCost(amount: number): number {
  return Math.round(amount * 1e6) / 1e6;
}
