/**
 * The `_meta` key under which acp-harness puts its own fields, in what it sends and what it reads.
 *
 * @module
 */

/**
 * The `_meta` key that holds acp-harness's own fields (`_meta["acp-harness"]`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { META_KEY } from "./meta_key.ts";
 * assert.equal(META_KEY, "acp-harness");
 * ```
 */
export const META_KEY = "acp-harness";
