/**
 * What a failed `fetch` says, made useful: the runtimes' own message is often just
 * `fetch failed` (Node.js, Deno), with the real reason in `error.cause`.
 *
 * @module
 */

/** Codes and words of a TLS certificate problem. */
const CERTIFICATE_PROBLEM =
  /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|certificate|UnknownIssuer|CaUsedAsEndEntity|self[- ]signed/i;

/** The hint after a certificate problem: how each runtime is told of another CA. */
export const CERTIFICATE_HINT =
  "a TLS certificate problem: Node.js and Bun trust extra CAs from NODE_EXTRA_CA_CERTS=<file>, " +
  "Deno uses the system's store with DENO_TLS_CA_STORE=system";

/** Messages that say nothing of the cause. */
const UNINFORMATIVE = /^(?:fetch failed|failed to fetch|network error|terminated)$/i;

/** Deno's prefix, which repeats the URL (queries and all): `error sending request for url (…): `. */
const DENO_PREFIX = /^error sending request (?:from \S+ )?for url \([^)]*\): /;

/**
 * The reason a network request failed, from the error and its causes: the deepest informative
 * message (`connect ECONNREFUSED 127.0.0.1:39999` where Node.js said `fetch failed`; Deno's
 * detail without the URL it repeats), with a hint for a TLS certificate problem.
 *
 * @example Node.js's `fetch failed`
 * ```ts
 * import assert from "node:assert/strict";
 * import { describeNetworkError } from "./network_error.ts";
 * const cause = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:39999"), {
 *   code: "ECONNREFUSED",
 * });
 * assert.equal(
 *   describeNetworkError(new TypeError("fetch failed", { cause })),
 *   "connect ECONNREFUSED 127.0.0.1:39999",
 * );
 * ```
 *
 * @param error What fetch (or a body read) threw
 * @returns One line saying why
 */
export function describeNetworkError(error: unknown): string {
  const messages: string[] = [];
  const codes: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current !== undefined && current !== null; depth++) {
    if (current instanceof Error || typeof current === "object") {
      const { message, code } = current as { message?: unknown; code?: unknown };
      if (typeof message === "string" && message !== "") messages.push(message);
      if (typeof code === "string") codes.push(code);
      current = (current as { cause?: unknown }).cause;
    } else {
      messages.push(String(current));
      break;
    }
  }
  const informative = messages.map((message) => message.replace(DENO_PREFIX, "").trim())
    .filter((message) => message !== "" && !UNINFORMATIVE.test(message));
  let reason = informative.at(-1) ?? messages[0] ?? String(error);
  const code = codes.at(-1);
  if (code !== undefined && !reason.includes(code)) reason = `${reason} (${code})`;
  const certificate = [...codes, ...messages].some((text) => CERTIFICATE_PROBLEM.test(text));
  return certificate ? `${reason}; ${CERTIFICATE_HINT}` : reason;
}
