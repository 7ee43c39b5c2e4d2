/**
 * The "invalid params" error every handler throws for a bad field: a module of its own, light
 * enough for the routes loaded at start-up (`./request_errors.ts` loads the session layer).
 *
 * @module
 */
import { RequestError } from "@agentclientprotocol/sdk";

/**
 * An "invalid params" error (-32602) whose message names the field.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { invalid } from "./invalid_params.ts";
 * assert.equal(invalid("cwd: must be a string").code, -32602);
 * ```
 *
 * @param message `<field>: <problem>`
 * @returns The error to throw
 */
export function invalid(message: string): RequestError {
  return RequestError.invalidParams(undefined, message);
}
