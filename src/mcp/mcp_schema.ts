/**
 * MCP tool input schemas in a form both model wires take: OpenAI function `parameters` and
 * Anthropic `input_schema` both want an object schema at the top, without `anyOf`/`oneOf`/
 * `allOf` there, and neither resolves `$ref`s into `$defs` reliably.
 *
 * @module
 */

/** Deeper schemas are cut (a hostile server must not exhaust the stack). */
const MAX_DEPTH = 32;

/** `$ref` chains are followed this deep; deeper (or cyclic) references become `{}`. */
const MAX_REF_DEPTH = 8;

/** The most schema nodes copied; a bigger schema becomes a permissive object schema. */
const MAX_NODES = 20_000;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/**
 * The schema a model is given for an MCP tool's input: local `$ref`s (`#/$defs/…`,
 * `#/definitions/…`) inlined, `$schema`/`$id`/`$defs`/`definitions` removed, the top made a plain
 * object schema (`type: "object"`, `properties`, combinators dropped there), depth and size
 * bounded. What the server validates is unchanged: this only shapes what the model sees.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { modelInputSchema } from "./mcp_schema.ts";
 * assert.deepEqual(
 *   modelInputSchema({
 *     $schema: "https://json-schema.org/draft/2020-12/schema",
 *     type: "object",
 *     properties: { point: { $ref: "#/$defs/point" } },
 *     $defs: { point: { type: "object", properties: { x: { type: "number" } } } },
 *   }),
 *   {
 *     type: "object",
 *     properties: { point: { type: "object", properties: { x: { type: "number" } } } },
 *   },
 * );
 * ```
 *
 * @param schema The tool's `inputSchema`, as the server sent it
 * @returns An object schema
 */
export function modelInputSchema(schema: unknown): Record<string, unknown> {
  if (!isObject(schema)) return { type: "object", properties: {} };
  // No prototype: a `$ref` named `toString` is an unknown reference, not a function.
  const defs: Record<string, Json> = Object.create(null);
  for (const key of ["$defs", "definitions"]) {
    const table = schema[key];
    if (isObject(table)) {
      for (const [name, value] of Object.entries(table)) defs[`#/${key}/${name}`] = value;
    }
  }
  const budget = { nodes: 0 };
  const copied = copy(schema, defs, 0, 0, budget);
  if (budget.nodes > MAX_NODES || !isObject(copied)) {
    return {
      type: "object",
      properties: {},
      description: "The input schema was too large to show; see the tool's description.",
    };
  }
  const top: JsonObject = {};
  for (const [key, value] of Object.entries(copied)) {
    if (key === "anyOf" || key === "oneOf" || key === "allOf" || key === "not") continue;
    top[key] = value;
  }
  top.type = "object";
  if (!isObject(top.properties)) top.properties = {};
  return top;
}

function copy(
  value: unknown,
  defs: Readonly<Record<string, Json>>,
  depth: number,
  refDepth: number,
  budget: { nodes: number },
): Json {
  if (++budget.nodes > MAX_NODES) return {};
  if (value === null || typeof value === "boolean" || typeof value === "string") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (depth >= MAX_DEPTH) return {};
  if (Array.isArray(value)) {
    return value.map((item) => copy(item, defs, depth + 1, refDepth, budget));
  }
  if (!isObject(value)) return null;
  const ref = value.$ref;
  if (typeof ref === "string") {
    const target = defs[ref];
    if (target === undefined || refDepth >= MAX_REF_DEPTH) return {};
    const resolved = copy(target, defs, depth + 1, refDepth + 1, budget);
    // Keywords beside the `$ref` (a description) are kept over the target's.
    const siblings = copy(withoutKeys(value, ["$ref"]), defs, depth, refDepth, budget);
    return isObject(resolved) && isObject(siblings) ? { ...resolved, ...siblings } : resolved;
  }
  const out: JsonObject = {};
  for (const [key, item] of Object.entries(value)) {
    if (key === "$schema" || key === "$id" || key === "$defs" || key === "definitions") continue;
    // Own data property, so `__proto__` as a property name stays a property name.
    Object.defineProperty(out, key, {
      value: copy(item, defs, depth + 1, refDepth, budget),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function withoutKeys(value: Record<string, unknown>, keys: readonly string[]): JsonObject {
  const out: JsonObject = {};
  for (const [key, item] of Object.entries(value)) {
    if (!keys.includes(key)) {
      Object.defineProperty(out, key, {
        value: item as Json,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return out;
}

function isObject(value: unknown): value is Record<string, Json> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
