/**
 * The `_meta["acp-harness"]` keys of `session/new`, `session/load` and `session/resume`: what a
 * client may ask of a session beyond ACP, and what the answer tells beyond it.
 *
 * @module
 */
import { RequestError } from "@agentclientprotocol/sdk";

/** The `_meta` key that holds acp-harness's own fields. */
export const META_KEY = "acp-harness";

/** What a request's `_meta["acp-harness"]` asks. */
export interface SessionMetaRequest {
  /** `mcpStrict`: one MCP server that does not start fails the request. */
  readonly mcpStrict?: boolean;
}

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
export function sessionMeta(meta: unknown): SessionMetaRequest {
  if (meta === undefined || meta === null || typeof meta !== "object") return {};
  const own = (meta as Record<string, unknown>)[META_KEY];
  if (own === undefined || own === null) return {};
  if (typeof own !== "object" || Array.isArray(own)) {
    throw RequestError.invalidParams(undefined, `_meta.${META_KEY}: must be an object`);
  }
  const { mcpStrict } = own as Record<string, unknown>;
  if (mcpStrict !== undefined && typeof mcpStrict !== "boolean") {
    throw RequestError.invalidParams(
      undefined,
      `_meta.${META_KEY}.mcpStrict: must be true or false, got ${JSON.stringify(mcpStrict)}`,
    );
  }
  return mcpStrict === undefined ? {} : { mcpStrict };
}

/**
 * The `_meta` of a session answer: the MCP servers that did not start (the session opened
 * without them), when any did not.
 *
 * @param mcpFailures Their messages
 * @returns `{ _meta }` to spread into the answer, or nothing
 */
export function answerMeta(
  mcpFailures: readonly string[],
): { _meta?: Record<string, unknown> } {
  return mcpFailures.length === 0
    ? {}
    : { _meta: { [META_KEY]: { mcpServersNotStarted: [...mcpFailures] } } };
}
