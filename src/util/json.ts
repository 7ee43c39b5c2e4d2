/**
 * Small helpers for reading JSON of unknown shape: a plain-object check and a parse that
 * never throws.
 *
 * @module
 */

/**
 * Whether `value` is a plain JSON object: an object that is neither `null` nor an array.
 *
 * @example Telling objects from arrays and null
 * ```ts
 * import assert from "node:assert/strict";
 * import { isRecord } from "./json.ts";
 * assert(isRecord({ a: 1 }));
 * assert(!isRecord([1]) && !isRecord(null) && !isRecord("x"));
 * ```
 *
 * @param value Any value
 * @returns Whether its properties can be read as a record
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Parses JSON text, returning `undefined` instead of throwing when it is not JSON.
 *
 * A literal `null` parses to `null`, so `undefined` always means "not JSON".
 *
 * @example Parsing what may not be JSON
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseJson } from "./json.ts";
 * assert.deepEqual(parseJson('{"a":[1]}'), { a: [1] });
 * assert.equal(parseJson("not json"), undefined);
 * ```
 *
 * @param text The text
 * @returns The parsed value, or `undefined` when `text` is not JSON
 */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
