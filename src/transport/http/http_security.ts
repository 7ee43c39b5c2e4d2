/**
 * The checks every HTTP request and WebSocket upgrade passes before it reaches ACP: the bearer
 * token (compared in constant time), the `Origin` of browsers, and on loopback the `Host` header
 * (against DNS rebinding).
 *
 * @module
 */

import type { TenantDirectory, TenantIdentity } from "../../server/tenants.ts";

/** What a server accepts. */
export interface SecurityPolicy {
  /** The bearer token every request must carry; `undefined` when none is required. */
  readonly token: string | undefined;
  /**
   * The tenants (`--tenants`): every request must carry the bearer token of one, which says whose
   * the request is; `token` is then not used.
   */
  readonly tenants?: Pick<TenantDirectory, "resolve" | "holds"> | undefined;
  /** Browser origins allowed to call (`*` for any); a request without `Origin` is not a browser's. */
  readonly allowedOrigins: readonly string[];
  /**
   * Host names the `Host` header may name (any port), or `undefined` to accept any: set on
   * loopback, where a DNS-rebound name must not reach the server.
   */
  readonly allowedHosts: readonly string[] | undefined;
}

/** Why a request is refused: the HTTP status and a sentence for the client. */
export interface Refusal {
  readonly status: 401 | 403;
  readonly title: string;
  readonly detail: string;
}

const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "::1", "[::1]"];

/** The refusal of a request without a valid bearer token (or whose token no longer holds). */
export const UNAUTHORIZED: Refusal = {
  status: 401,
  title: "Unauthorized",
  detail: "A valid bearer token is required (Authorization: Bearer <token>)",
};

/**
 * The WebSocket close code of a socket whose bearer token no longer holds (the tenants file was
 * reloaded without it): the `401` of an upgrade, in the range of codes left to applications.
 */
export const UNAUTHORIZED_CLOSE_CODE = 4401;

/**
 * Whether a bind address or host name stays on this machine: `localhost`, `127.0.0.0/8`, `::1`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isLoopback } from "./http_security.ts";
 * assert(isLoopback("127.0.0.1") && isLoopback("::1") && isLoopback("localhost"));
 * assert(!isLoopback("0.0.0.0") && !isLoopback("192.168.1.2"));
 * ```
 *
 * @param host An address or name
 * @returns `true` for loopback
 */
export function isLoopback(host: string): boolean {
  const name = host.toLowerCase();
  return LOOPBACK_NAMES.includes(name) || /^127(\.\d{1,3}){3}$/.test(name);
}

/**
 * The host names a `Host` header may carry for a server bound to `bindHost`: on loopback, the
 * loopback names and the bound address; elsewhere `undefined` (any name, since a proxy or DNS
 * name in front decides).
 *
 * @param bindHost The address bound
 * @returns The names, or `undefined`
 */
export function loopbackHosts(bindHost: string): readonly string[] | undefined {
  if (!isLoopback(bindHost)) return undefined;
  return [...new Set([...LOOPBACK_NAMES, bindHost.toLowerCase()])];
}

/**
 * Checks a request's token, origin and host against the policy.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkRequest } from "./http_security.ts";
 * const policy = { token: "s3cret", allowedOrigins: [], allowedHosts: ["127.0.0.1"] };
 * const ok = new Headers({ host: "127.0.0.1:7337", authorization: "Bearer s3cret" });
 * assert.equal(await checkRequest(ok, policy), undefined);
 * const wrong = new Headers({ host: "127.0.0.1:7337", authorization: "Bearer guess" });
 * assert.equal((await checkRequest(wrong, policy))?.status, 401);
 * ```
 *
 * @param headers The request's headers
 * @param policy What the server accepts
 * @param url The request's URL as the runtime built it: from an absolute-form request line
 *   (`POST http://name/acp HTTP/1.1`) its host is that line's, whatever `Host` says, and is
 *   checked as `Host` is
 * @returns `undefined` when the request may go on, else why not
 */
export async function checkRequest(
  headers: Headers,
  policy: SecurityPolicy,
  url?: string,
): Promise<Refusal | undefined> {
  const checked = await admitRequest(headers, policy, url);
  return "status" in checked ? checked : undefined;
}

/** A request let through: whose it is, on a server with tenants. */
export interface Admission {
  /** The tenant its token names; absent on a server without tenants. */
  readonly identity?: TenantIdentity;
}

/**
 * Checks a request as {@link checkRequest} does and, on a server with tenants, resolves its
 * bearer token to its tenant (a token of no tenant is refused as a wrong token is).
 *
 * @param headers The request's headers
 * @param policy What the server accepts
 * @param url The request's URL as the runtime built it (see {@link checkRequest})
 * @returns Why the request is refused, or whose it is
 */
export async function admitRequest(
  headers: Headers,
  policy: SecurityPolicy,
  url?: string,
): Promise<Refusal | Admission> {
  if (policy.allowedHosts !== undefined) {
    const host = hostName(headers.get("host"));
    const target = url === undefined ? host : urlHostName(url);
    if (
      host === undefined || !policy.allowedHosts.includes(host) ||
      target === undefined || !policy.allowedHosts.includes(target)
    ) {
      return {
        status: 403,
        title: "Host not allowed",
        detail: "This server answers only requests addressed to a loopback host name",
      };
    }
  }
  const origin = headers.get("origin");
  if (origin !== null && !originAllowed(origin, policy.allowedOrigins)) {
    return {
      status: 403,
      title: "Origin not allowed",
      detail: "Browser requests from this origin are refused (see --allowed-origins)",
    };
  }
  if (policy.tenants === undefined && policy.token === undefined) return {};
  const authorization = headers.get("authorization") ?? "";
  const given = /^Bearer[ \t]+(.+)$/i.exec(authorization.trim())?.[1];
  if (given !== undefined && policy.tenants !== undefined) {
    const identity = await policy.tenants.resolve(given);
    if (identity) return { identity };
  } else if (
    given !== undefined && policy.token !== undefined && await sameSecret(given, policy.token)
  ) {
    return {};
  }
  return UNAUTHORIZED;
}

/**
 * Whether an `Origin` is allowed: listed exactly (scheme, host and port), or the list holds `*`.
 *
 * @param origin The header's value
 * @param allowed The allowed origins
 * @returns `true` when allowed
 */
export function originAllowed(origin: string, allowed: readonly string[]): boolean {
  return allowed.includes("*") || allowed.includes(origin);
}

/**
 * The host name of a `Host` header, lower-cased and without the port (IPv6 keeps its brackets).
 *
 * @param header The header's value
 * @returns The name, or `undefined` when there is none
 */
export function hostName(header: string | null): string | undefined {
  if (!header) return undefined;
  const value = header.trim().toLowerCase();
  if (value.startsWith("[")) {
    const end = value.indexOf("]");
    return end === -1 ? undefined : value.slice(0, end + 1);
  }
  const colon = value.indexOf(":");
  return colon === -1 ? value : value.slice(0, colon);
}

/** The host name of a URL, as {@link hostName} gives a `Host` header's; undefined if unparsable. */
function urlHostName(url: string): string | undefined {
  try {
    return hostName(new URL(url).host);
  } catch {
    return undefined;
  }
}

/**
 * Compares two secrets in time that does not depend on where they differ: both are hashed with
 * SHA-256 and the digests compared byte by byte without an early exit.
 */
async function sameSecret(given: string, expected: string): Promise<boolean> {
  const encoder = new TextEncoder();
  const [a, b] = await Promise.all([
    crypto.subtle.digest("SHA-256", encoder.encode(given)),
    crypto.subtle.digest("SHA-256", encoder.encode(expected)),
  ]);
  const left = new Uint8Array(a);
  const right = new Uint8Array(b);
  let difference = 0;
  for (let index = 0; index < left.length; index++) {
    difference |= (left[index] ?? 0) ^ (right[index] ?? 0);
  }
  return difference === 0;
}
