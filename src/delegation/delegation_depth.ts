/**
 * How deep in a chain of delegations a server runs, and whether it may delegate further.
 *
 * @module
 */

/** The environment variable a parent sets to tell a delegated acp-harness its depth. */
export const DELEGATION_DEPTH_ENV = "ACP_HARNESS_DELEGATION_DEPTH";

/**
 * Reads a server's delegation depth from {@link DELEGATION_DEPTH_ENV}: absent or empty is 0 (a
 * top-level server); anything but decimal digits is infinitely deep (it may not delegate).
 *
 * @example Depths
 * ```ts
 * import assert from "node:assert/strict";
 * import { readDelegationDepth } from "./delegation_depth.ts";
 * assert.equal(readDelegationDepth(undefined), 0);
 * assert.equal(readDelegationDepth("2"), 2);
 * assert.equal(readDelegationDepth("two"), Infinity);
 * ```
 *
 * @param text The variable's value
 * @returns The depth
 */
export function readDelegationDepth(text: string | undefined): number {
  if (text === undefined || text === "") return 0;
  return /^\d{1,6}$/.test(text) ? Number(text) : Number.POSITIVE_INFINITY;
}

/**
 * Whether a server offers the `delegate` tool: it has agents to delegate to and its depth is
 * below the limit (with the default limit of 1, a top-level server may delegate and its child may
 * not).
 *
 * @example The default limit
 * ```ts
 * import assert from "node:assert/strict";
 * import { mayDelegate } from "./delegation_depth.ts";
 * assert.equal(mayDelegate({ agents: { a: {} }, maxDelegationDepth: 1 }, 0), true);
 * assert.equal(mayDelegate({ agents: { a: {} }, maxDelegationDepth: 1 }, 1), false);
 * assert.equal(mayDelegate({ agents: {}, maxDelegationDepth: 1 }, 0), false);
 * ```
 *
 * @param config The configured agents and the depth limit
 * @param depth The server's depth
 * @returns Whether it may delegate
 */
export function mayDelegate(
  config: {
    readonly agents: Readonly<Record<string, unknown>>;
    readonly maxDelegationDepth: number;
  },
  depth: number,
): boolean {
  return Object.keys(config.agents).length > 0 && depth < config.maxDelegationDepth;
}
