/**
 * Validates the messages an agent emits against the ACP JSON schema bundled in the SDK
 * (`@agentclientprotocol/sdk/schema/v1/schema.json`), per method.
 *
 * @module
 */
import { createRequire } from "node:module";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { ValidateFunction } from "ajv";

const require = createRequire(import.meta.url);
const schema = require("@agentclientprotocol/sdk/schema/v1/schema.json") as {
  $defs: Record<string, { "x-side"?: string; "x-method"?: string }>;
};

const ajv = new Ajv2020({ strict: false, allErrors: true });
const integer = (min: number, max: number) => ({
  type: "number" as const,
  validate: (value: number) => Number.isInteger(value) && value >= min && value <= max,
});
ajv.addFormat("uint16", integer(0, 0xffff));
ajv.addFormat("uint32", integer(0, 0xffffffff));
ajv.addFormat("uint64", integer(0, Number.MAX_SAFE_INTEGER));
ajv.addFormat("int32", integer(-0x80000000, 0x7fffffff));
ajv.addFormat("int64", integer(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER));
ajv.addFormat("double", { type: "number", validate: (value: number) => Number.isFinite(value) });
ajv.addFormat("uri", (value: string) => {
  try {
    new URL(value);
    return true;
  } catch {
    return false;
  }
});
ajv.addSchema(schema, "acp");
// The unstable schema, for the fields that come from it (the prompt response's `usage`) and the
// unstable methods' answers (`session/fork`).
const unstableSchema = require("@agentclientprotocol/sdk/schema/v1/schema.unstable.json") as {
  $defs: Record<string, { "x-side"?: string; "x-method"?: string }>;
};
ajv.addSchema(unstableSchema, "acp-unstable");

/**
 * The answers of the extension methods the server speaks (the ACP schema has none of them): the
 * shape the peers that share the extension answer with.
 */
const EXTENSION_RESPONSES: Readonly<Record<string, ValidateFunction>> = {
  "_session/steering": ajv.compile({
    type: "object",
    required: ["outcome"],
    additionalProperties: false,
    properties: {
      outcome: { enum: ["injected", "startedNewTurn", "promptRequired", "failed"] },
      reason: { enum: ["noRunningTurn", "cancelled"] },
      _meta: { type: "object" },
    },
  }),
};

const cache = new Map<string, ValidateFunction>();
function validatorFor(def: string, id = "acp"): ValidateFunction {
  let validate = cache.get(`${id}#${def}`);
  if (!validate) {
    validate = ajv.getSchema(`${id}#/$defs/${def}`);
    if (!validate) throw new Error(`No schema definition ${def}`);
    cache.set(`${id}#${def}`, validate);
  }
  return validate;
}

function defFor(side: string, method: string, suffix: string): string {
  const name = defIn(schema.$defs, side, method, suffix);
  if (name === undefined) throw new Error(`No ${suffix} definition for ${side} method ${method}`);
  return name;
}

function defIn(
  defs: Record<string, { "x-side"?: string; "x-method"?: string }>,
  side: string,
  method: string,
  suffix: string,
): string | undefined {
  for (const [name, def] of Object.entries(defs)) {
    const sideMatches = def["x-side"] === side || def["x-side"] === "protocol";
    if (sideMatches && def["x-method"] === method && name.endsWith(suffix)) return name;
  }
  return undefined;
}

/** Schema problems of one outbound message, or [] when it is valid. */
export function schemaProblems(message: unknown, requestMethod?: string): string[] {
  const problems: string[] = [];
  const check = (def: string, value: unknown, what: string, id?: string): void => {
    const validate = validatorFor(def, id);
    if (!validate(value)) {
      problems.push(
        `${what} does not match ${def}: ${ajv.errorsText(validate.errors, { separator: "; " })}`,
      );
    }
  };
  if (typeof message !== "object" || message === null) return ["message is not an object"];
  const m = message as Record<string, unknown>;
  if (m.jsonrpc !== "2.0") problems.push('jsonrpc must be "2.0"');
  if ("method" in m && typeof m.method === "string") {
    if (m.method.startsWith("_")) return problems;
    const suffix = "id" in m ? "Request" : "Notification";
    check(defFor("client", m.method, suffix), m.params, `${m.method} params`);
  } else if ("error" in m) {
    check("Error", m.error, "error");
  } else if ("result" in m) {
    const extension = requestMethod ? EXTENSION_RESPONSES[requestMethod] : undefined;
    const unstable = requestMethod === undefined || extension ||
        defIn(schema.$defs, "agent", requestMethod, "Response")
      ? undefined
      : defIn(unstableSchema.$defs, "agent", requestMethod, "Response");
    if (!requestMethod) problems.push(`response ${String(m.id)} answers no known request`);
    else if (extension) {
      if (!extension(m.result)) {
        const errors = ajv.errorsText(extension.errors, { separator: "; " });
        problems.push(`${requestMethod} result does not match its extension's shape: ${errors}`);
      }
      // A method of the unstable schema only (`session/fork`): its answer checked against that.
    } else if (unstable) {
      check(unstable, m.result, `${requestMethod} result (unstable)`, "acp-unstable");
    } else check(defFor("agent", requestMethod, "Response"), m.result, `${requestMethod} result`);
    if (requestMethod === "session/prompt") {
      check("PromptResponse", m.result, "session/prompt result (unstable)", "acp-unstable");
    }
  } else {
    problems.push("message is neither request, notification nor response");
  }
  return problems;
}

/**
 * A `session/prompt` result without what it spent: its `usage` (the turn's tokens, which vary by
 * model) and its `_meta["acp-harness"].budget` (limits and spend, with the turn's duration), for
 * tests that check the stop reason alone.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { withoutSpend } from "./acp_schema.ts";
 * const result = {
 *   stopReason: "end_turn",
 *   usage: { totalTokens: 3, inputTokens: 2, outputTokens: 1 },
 *   _meta: { "acp-harness": { budget: { limits: {}, spent: {} } } },
 * };
 * assert.deepEqual(withoutSpend(result), { stopReason: "end_turn" });
 * ```
 */
export function withoutSpend(result: unknown): unknown {
  if (typeof result !== "object" || result === null) return result;
  const { usage: _usage, ...rest } = result as Record<string, unknown>;
  return withoutBudget(rest);
}

/**
 * A `session/prompt` result without its `_meta["acp-harness"].budget` (limits and spend, with
 * the turn's duration); its `usage` stays.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { withoutBudget } from "./acp_schema.ts";
 * const result = {
 *   stopReason: "end_turn",
 *   usage: { totalTokens: 3, inputTokens: 2, outputTokens: 1 },
 *   _meta: { "acp-harness": { budget: { limits: {}, spent: {} } } },
 * };
 * assert.deepEqual(withoutBudget(result), {
 *   stopReason: "end_turn",
 *   usage: { totalTokens: 3, inputTokens: 2, outputTokens: 1 },
 * });
 * ```
 */
export function withoutBudget(result: unknown): unknown {
  if (typeof result !== "object" || result === null) return result;
  const { _meta: meta, ...rest } = result as Record<string, unknown>;
  if (meta === null || typeof meta !== "object") return result;
  const { "acp-harness": own, ...others } = meta as Record<string, unknown>;
  const { budget: _budget, ...ownRest } = (own ?? {}) as Record<string, unknown>;
  const kept = {
    ...others,
    ...(Object.keys(ownRest).length > 0 ? { "acp-harness": ownRest } : {}),
  };
  return Object.keys(kept).length > 0 ? { ...rest, _meta: kept } : rest;
}
