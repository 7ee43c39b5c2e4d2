/**
 * What a tenant's connections are served with (see {@link tenantParts}).
 *
 * @module
 */
import { TenantSessionStore } from "../store/tenant_session_store.ts";
import type { ServerParts } from "./connection.ts";
import { commonRoots, lowerBudgets, type TenantScope } from "./tenants.ts";

/** Each server's parts for each tenant scope, built once. */
const built = new WeakMap<ServerParts, WeakMap<TenantScope, ServerParts>>();

/**
 * The server's parts as a tenant's connections see them: its store through the tenant's view
 * (`TenantSessionStore`), the allowed roots both the server and the tenant allow, for each
 * session budget the lower of the server's and the tenant's, and the telemetry that counts the
 * tenant's series too (`Telemetry.forTenant`). The rest is the server's, shared by reference
 * (the open sessions, the catalog). Built once per scope, so that the
 * tenant's connections share the services their sessions run on.
 *
 * @example
 * ```ts ignore
 * const parts = tenantParts(serverParts, scope);
 * parts.store; // a TenantSessionStore of scope.name
 * ```
 *
 * @param parts The server's parts
 * @param scope The tenant, as the file last loaded gave it
 * @returns The parts for its connections
 */
export function tenantParts(parts: ServerParts, scope: TenantScope): ServerParts {
  let scopes = built.get(parts);
  if (scopes === undefined) built.set(parts, scopes = new WeakMap());
  const known = scopes.get(scope);
  if (known !== undefined) return known;
  const allowedRoots = commonRoots(parts.allowedRoots, scope.allowedRoots);
  const derived: ServerParts = {
    ...parts,
    settings: { ...parts.settings, ...lowerBudgets(parts.settings, scope.budgets) },
    store: new TenantSessionStore(parts.store, scope.name),
    telemetry: parts.telemetry.forTenant?.(scope.name) ?? parts.telemetry,
    ...(allowedRoots === undefined ? {} : { allowedRoots }),
  };
  scopes.set(scope, derived);
  return derived;
}
