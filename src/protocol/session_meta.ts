/**
 * The `_meta["acp-harness"]` keys of `session/new`, `session/load` and `session/resume`: what a
 * client may ask of a session beyond ACP (and, on `session/new` only, the session's `parent`),
 * and what the answer tells beyond it.
 *
 * @module
 */
import { RequestError } from "@agentclientprotocol/sdk";
import type { BudgetLimits } from "../agent/turn_budget.ts";
import { META_KEY } from "../util/meta_key.ts";
import { WORKTREE_FROM, type WorktreeFrom } from "../git/worktree_from.ts";
import { WORKTREE_ANSWER_FIELDS, type WorktreeInfo } from "../git/worktree.ts";
import { PARENT_FIELD_MAX_LENGTH, type SessionParent } from "../store/session_store.ts";

export { META_KEY };

/** What a request's `_meta["acp-harness"]` asks. */
export interface SessionMetaRequest {
  /** `mcpStrict`: one MCP server that does not start fails the request. */
  readonly mcpStrict?: boolean;
  /**
   * `budgets`: the session's own limits, each at most the server's (`maxSteps`, `maxToolCalls`,
   * `turnTimeout` in seconds, `maxSessionTokens`, `maxSessionCost` in USD); times here in ms.
   */
  readonly budgets?: BudgetLimits;
  /**
   * `worktree` (`session/new` and `session/fork`): `false` refuses one; `true` or `{from}` asks
   * for one, the request failing when none can be made.
   */
  readonly worktree?: boolean | { readonly from: WorktreeFrom };
}

/** The `budgets` keys a client may send, the settings they lower and how their values read. */
const BUDGET_KEYS = [
  { key: "maxSteps", setting: "maxSteps", integer: true, scale: 1 },
  { key: "maxToolCalls", setting: "maxToolCalls", integer: true, scale: 1 },
  { key: "turnTimeout", setting: "turnTimeoutMs", integer: false, scale: 1000 },
  { key: "maxSessionTokens", setting: "maxSessionTokens", integer: true, scale: 1 },
  { key: "maxSessionCost", setting: "maxSessionCostUsd", integer: false, scale: 1 },
] as const;

/**
 * Reads `_meta["acp-harness"]` of a session request.
 *
 * @example A strict session
 * ```ts
 * import assert from "node:assert/strict";
 * import { sessionMeta } from "./session_meta.ts";
 * assert.deepEqual(sessionMeta({ "acp-harness": { mcpStrict: true } }), { mcpStrict: true });
 * assert.deepEqual(sessionMeta(undefined), {});
 * ```
 *
 * @param meta The request's `_meta`
 * @returns What it asks
 * @throws {RequestError} -32602 naming a field of the wrong type
 */
export function sessionMeta(meta: unknown, server?: BudgetLimits): SessionMetaRequest {
  if (meta === undefined || meta === null || typeof meta !== "object") return {};
  const own = (meta as Record<string, unknown>)[META_KEY];
  if (own === undefined || own === null) return {};
  if (typeof own !== "object" || Array.isArray(own)) {
    throw RequestError.invalidParams(undefined, `_meta.${META_KEY}: must be an object`);
  }
  const { mcpStrict, budgets, worktree } = own as Record<string, unknown>;
  if (mcpStrict !== undefined && typeof mcpStrict !== "boolean") {
    throw RequestError.invalidParams(
      undefined,
      `_meta.${META_KEY}.mcpStrict: must be true or false, got ${JSON.stringify(mcpStrict)}`,
    );
  }
  return {
    ...(mcpStrict === undefined ? {} : { mcpStrict: mcpStrict as boolean }),
    ...(budgets === undefined ? {} : { budgets: budgetsOf(budgets, server) }),
    ...(worktree === undefined ? {} : { worktree: worktreeOf(worktree) }),
  };
}

/** Reads a client's `worktree`: `true`, `false` or `{from: "head" | "working-tree"}`. */
function worktreeOf(value: unknown): boolean | { readonly from: WorktreeFrom } {
  if (typeof value === "boolean") return value;
  const from = value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>).from
    : undefined;
  if (
    typeof from === "string" && (WORKTREE_FROM as readonly string[]).includes(from) &&
    Object.keys(value as object).length === 1
  ) {
    return { from: from as WorktreeFrom };
  }
  throw RequestError.invalidParams(
    undefined,
    `_meta.${META_KEY}.worktree: must be true, false or {"from": ${
      WORKTREE_FROM.map((word) => JSON.stringify(word)).join(" | ")
    }}, got ${JSON.stringify(value)}`,
  );
}

/**
 * Reads a client's `budgets`: each a positive number (counts whole), none above the server's.
 *
 * @throws {RequestError} -32602 naming the field that is not a limit or is above the server's
 */
function budgetsOf(value: unknown, server: BudgetLimits | undefined): BudgetLimits {
  const field = `_meta.${META_KEY}.budgets`;
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw RequestError.invalidParams(undefined, `${field}: must be an object`);
  }
  const given = value as Record<string, unknown>;
  const known = new Set<string>(BUDGET_KEYS.map(({ key }) => key));
  for (const key of Object.keys(given)) {
    if (!known.has(key)) {
      throw RequestError.invalidParams(
        undefined,
        `${field}.${key}: not a budget (expected ${[...known].join(", ")})`,
      );
    }
  }
  const limits: Record<string, number> = {};
  for (const { key, setting, integer, scale } of BUDGET_KEYS) {
    const raw = given[key];
    if (raw === undefined) continue;
    if (
      typeof raw !== "number" || !Number.isFinite(raw) || raw <= 0 ||
      (integer && !Number.isSafeInteger(raw))
    ) {
      throw RequestError.invalidParams(
        undefined,
        `${field}.${key}: must be a positive ${integer ? "integer" : "number"}, got ${
          JSON.stringify(raw)
        }`,
      );
    }
    const limit = raw * scale;
    const own = server?.[setting];
    if (own !== undefined && limit > own) {
      throw RequestError.invalidParams(
        undefined,
        `${field}.${key}: ${raw} is above the server's limit of ${
          own / scale
        }; a session may only lower it`,
      );
    }
    limits[setting] = limit;
  }
  return limits;
}

/**
 * Reads `_meta["acp-harness"].parent` of a `session/new`: the session and tool call that start
 * this session (a delegating agent's `delegate` call), recorded in its header.
 *
 * @example A delegated session
 * ```ts
 * import assert from "node:assert/strict";
 * import { sessionParent } from "./session_meta.ts";
 * const parent = { sessionId: "s-1", toolCallId: "call-7" };
 * assert.deepEqual(sessionParent({ "acp-harness": { parent } }), parent);
 * assert.equal(sessionParent({ "acp-harness": { mcpStrict: true } }), undefined);
 * ```
 *
 * @param meta The request's `_meta`
 * @returns The parent, or `undefined` when none is given
 * @throws {RequestError} -32602 naming the field that is not a string of 1 to 256 characters
 */
export function sessionParent(meta: unknown): SessionParent | undefined {
  if (meta === undefined || meta === null || typeof meta !== "object") return undefined;
  const own = (meta as Record<string, unknown>)[META_KEY];
  if (own === undefined || own === null || typeof own !== "object") return undefined;
  const parent = (own as Record<string, unknown>).parent;
  if (parent === undefined) return undefined;
  const field = `_meta["${META_KEY}"].parent`;
  if (parent === null || typeof parent !== "object" || Array.isArray(parent)) {
    throw RequestError.invalidParams(
      undefined,
      `${field}: must be an object {sessionId, toolCallId}`,
    );
  }
  const given = parent as Record<string, unknown>;
  return {
    sessionId: lineageId(given.sessionId, `${field}.sessionId`),
    toolCallId: lineageId(given.toolCallId, `${field}.toolCallId`),
  };
}

/**
 * Reads `_meta["acp-harness"].observe` of a `session/load`: `true` attaches the connection to a
 * session another connection owns, read-only, instead of opening it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sessionObserve } from "./session_meta.ts";
 * assert.equal(sessionObserve({ "acp-harness": { observe: true } }), true);
 * assert.equal(sessionObserve(undefined), false);
 * assert.throws(() => sessionObserve({ "acp-harness": { observe: 1 } }), /must be true or false/);
 * ```
 *
 * @param meta The request's `_meta`
 * @returns Whether it asks to observe
 * @throws {RequestError} -32602 when it is not a boolean
 */
export function sessionObserve(meta: unknown): boolean {
  if (meta === undefined || meta === null || typeof meta !== "object") return false;
  const own = (meta as Record<string, unknown>)[META_KEY];
  if (own === undefined || own === null || typeof own !== "object") return false;
  const observe = (own as Record<string, unknown>).observe;
  if (observe === undefined || typeof observe === "boolean") return observe === true;
  throw RequestError.invalidParams(
    undefined,
    `_meta.${META_KEY}.observe: must be true or false, got ${JSON.stringify(observe)}`,
  );
}

/**
 * Checks an id of the lineage keys (a parent's session id, its tool call id): a string of 1 to
 * `PARENT_FIELD_MAX_LENGTH` characters.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { lineageId } from "./session_meta.ts";
 * assert.equal(lineageId("s-1", "parent", "session id"), "s-1");
 * assert.throws(() => lineageId("", "parent", "session id"), /parent: must be a session id/);
 * ```
 *
 * @param value The value given
 * @param field Its name, for the error
 * @param kind What it names, for the error (`session id`); none: a plain string
 * @returns The id
 * @throws {RequestError} -32602 naming the field
 */
export function lineageId(value: unknown, field: string, kind?: string): string {
  if (typeof value === "string" && value.length > 0 && value.length <= PARENT_FIELD_MAX_LENGTH) {
    return value;
  }
  const shape = `a string of 1 to ${PARENT_FIELD_MAX_LENGTH} characters`;
  throw RequestError.invalidParams(
    undefined,
    `${field}: must be ${kind ? `a ${kind} (${shape})` : shape}, got ${
      typeof value === "string" ? `${value.length} characters` : JSON.stringify(value) ?? "none"
    }`,
  );
}

/** What a session answer's `_meta` tells: see {@link answerMeta}. */
export interface AnswerFacts {
  /** The MCP servers that did not start (the session opened without them), as messages. */
  readonly mcpFailures: readonly string[];
  /** The session's git worktree. */
  readonly worktree?: WorktreeInfo | undefined;
  /** Why the session has no worktree though the server gives sessions one. */
  readonly worktreeUnavailable?: string | undefined;
}

/**
 * The `_meta` of a session answer: the MCP servers that did not start (`mcpServersNotStarted`),
 * the session's worktree (`worktree: {path, branch, base, repository, cwd}`) or why it has none
 * (`worktreeUnavailable`), when there is anything to tell.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { answerMeta } from "./session_meta.ts";
 * assert.deepEqual(answerMeta({ mcpFailures: [] }), {});
 * assert.deepEqual(answerMeta({ mcpFailures: [], worktreeUnavailable: "the repository is bare" }), {
 *   _meta: { "acp-harness": { worktreeUnavailable: "the repository is bare" } },
 * });
 * ```
 *
 * @param facts What the session has to tell
 * @returns `{ _meta }` to spread into the answer, or nothing
 */
export function answerMeta(facts: AnswerFacts): { _meta?: Record<string, unknown> } {
  const own: Record<string, unknown> = {};
  if (facts.mcpFailures.length > 0) own.mcpServersNotStarted = [...facts.mcpFailures];
  if (facts.worktree) {
    const { worktree } = facts;
    own.worktree = Object.fromEntries(
      WORKTREE_ANSWER_FIELDS.filter((key) => worktree[key] !== undefined)
        .map((key) => [key, worktree[key]]),
    );
  }
  if (facts.worktreeUnavailable) own.worktreeUnavailable = facts.worktreeUnavailable;
  return Object.keys(own).length === 0 ? {} : { _meta: { [META_KEY]: own } };
}
