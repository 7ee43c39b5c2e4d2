/**
 * The HTTP transport's refusals, as `application/problem+json` (RFC 9457), which
 * `acp-http-client` reads.
 *
 * @module
 */

/**
 * A refusal as `application/problem+json`.
 *
 * @param status The HTTP status
 * @param title The short reason
 * @param detail What to do about it
 * @returns The response
 */
export function problem(status: number, title: string, detail: string): Response {
  return new Response(JSON.stringify({ type: "about:blank", title, status, detail }), {
    status,
    headers: { "Content-Type": "application/problem+json" },
  });
}

/**
 * `429` for one more connection from a peer address at its limit.
 *
 * @param max The per-address limit
 * @returns The response
 */
export function tooManyFromAddress(max: number): Response {
  const response = problem(
    429,
    "Too many connections from this address",
    `This address has its most connections open (${max}; see --max-connections-per-address)`,
  );
  response.headers.set("Retry-After", "1");
  return response;
}

/**
 * `503` for one more connection: the server is draining, or has its most connections open.
 *
 * @param draining Whether the server is shutting down
 * @returns The response
 */
export function busy(draining: boolean): Response {
  const response = draining
    ? problem(503, "Shutting down", "The server is draining; connect to another instance")
    : problem(503, "Too many connections", "The server has its most connections open");
  response.headers.set("Retry-After", "1");
  return response;
}

/**
 * `429` for a request of a tenant past its requests a minute.
 *
 * @param tenant The tenant's name
 * @param max Its requests a minute
 * @param retryAfter Whole seconds until a request may go
 * @returns The response, with `Retry-After`
 */
export function tooManyRequests(tenant: string, max: number, retryAfter: number): Response {
  const response = problem(
    429,
    "Too many requests",
    `Tenant "${tenant}" may send at most ${max} requests a minute; retry in ${retryAfter} s`,
  );
  response.headers.set("Retry-After", String(retryAfter));
  return response;
}
