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

/** Accumulates a session's cost (USD) from each model request's usage and the model's prices. */
export class UsageMeter {
  #cost: number;
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
}

/** Rounds USD to a millionth. */
function roundCost(amount: number): number {
  return Math.round(amount * 1e6) / 1e6;
}
