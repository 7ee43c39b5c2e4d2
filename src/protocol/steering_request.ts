/**
 * The `_session/steering` extension's request: its method name and its parser (loaded at
 * start-up with the routes; the handler is in `./handlers/session_steering.ts`).
 *
 * @module
 */
import type { ContentBlock } from "@agentclientprotocol/sdk";
import { invalid } from "./invalid_params.ts";

/** The steering extension's method, as claude-agent-acp, codex-acp and goose name it. */
export const SESSION_STEERING_METHOD = "_session/steering";

/** A `_session/steering` request, as parsed. */
export interface SteeringRequest {
  readonly sessionId: string;
  /** The message, as a prompt's blocks. */
  readonly prompt: readonly ContentBlock[];
  /** `_meta.steering.idleBehavior`: `promptRequired` asks to be told when no turn runs. */
  readonly idleBehavior?: "promptRequired";
}

/**
 * Parses a `_session/steering` request's params, naming the bad field.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseSteeringRequest } from "./steering_request.ts";
 * const request = parseSteeringRequest({
 *   sessionId: "s1",
 *   prompt: [{ type: "text", text: "use tabs" }],
 *   _meta: { steering: { idleBehavior: "promptRequired" } },
 * });
 * assert.equal(request.idleBehavior, "promptRequired");
 * assert.throws(() => parseSteeringRequest({ sessionId: "s1" }), /prompt: expected an array/);
 * ```
 *
 * @param params The raw params
 * @returns The request
 * @throws {RequestError} -32602 naming the field and what it must be
 */
export function parseSteeringRequest(params: unknown): SteeringRequest {
  if (typeof params !== "object" || params === null || Array.isArray(params)) {
    throw invalid("params: expected an object with sessionId and prompt");
  }
  const { sessionId, prompt, _meta } = params as Record<string, unknown>;
  if (typeof sessionId !== "string" || sessionId === "") {
    throw invalid("sessionId: expected a non-empty string");
  }
  if (!Array.isArray(prompt)) throw invalid("prompt: expected an array of content blocks");
  for (const [index, block] of prompt.entries()) {
    if (typeof block !== "object" || block === null || typeof block.type !== "string") {
      throw invalid(`prompt[${index}]: expected a content block (an object with a type)`);
    }
  }
  if (_meta !== undefined && _meta !== null && typeof _meta !== "object") {
    throw invalid("_meta: expected an object");
  }
  const steering = (_meta as Record<string, unknown> | null | undefined)?.steering;
  if (steering !== undefined && steering !== null && typeof steering !== "object") {
    throw invalid("_meta.steering: expected an object");
  }
  const idle = (steering as Record<string, unknown> | null | undefined)?.idleBehavior;
  if (idle !== undefined && idle !== null && idle !== "promptRequired" && idle !== "startTurn") {
    throw invalid('_meta.steering.idleBehavior: expected "promptRequired" or "startTurn"');
  }
  return {
    sessionId,
    prompt: prompt as ContentBlock[],
    ...(idle === "promptRequired" ? { idleBehavior: idle } : {}),
  };
}
