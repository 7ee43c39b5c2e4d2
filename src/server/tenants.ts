/**
 * Tenants of `serve --http --tenants FILE`: the file's shape and its strict parsing, the hashes
 * of the bearer tokens, and the {@link TenantDirectory} that resolves a token to its tenant at
 * the HTTP edge and counts each tenant's use against its limits.
 *
 * @module
 */
import { RequestError } from "@agentclientprotocol/sdk";
import type { BudgetLimits } from "../agent/turn_budget.ts";
import { TENANT_NAME } from "../store/_common.ts";
import { isRecord } from "../util/json.ts";

/** A tenant's limits, as the file gives them (an absent one is none). */
export interface TenantLimits extends BudgetLimits {
  /** Most sessions open at once across the tenant's connections (on this instance). */
  readonly sessions?: number | undefined;
  /** Most prompts being handled at once across the tenant's connections (queued ones count). */
  readonly prompts?: number | undefined;
  /** Most HTTP requests a minute (POSTs, GET streams, WebSocket upgrades): `429` past it. */
  readonly requestsPerMinute?: number | undefined;
}

/** One tenant of the file. */
export interface TenantDefinition {
  /** Its name: 1 to 64 of `a-z`, `0-9`, `_`, `-`; recorded with its sessions. */
  readonly name: string;
  /** The SHA-256 of each of its bearer tokens, lowercase hex (the file's `sha256:<hex>`). */
  readonly tokens: readonly string[];
  /** Directories its sessions may open in (as written; the loader makes them canonical). */
  readonly allowedRoots?: readonly string[] | undefined;
  /** Its limits. */
  readonly limits: TenantLimits;
}

/** A tenants file that is not what {@link parseTenants} accepts: the message names the field. */
export class TenantsFileError extends TypeError {
  /**
   * Creates it.
   *
   * @param message The field and what it must be
   */
  constructor(message: string) {
    super(message);
    this.name = "TenantsFileError";
  }
}

/** The keys a tenant's `limits` may have, and how each is read (turnTimeout: seconds → ms). */
const LIMIT_KEYS: Readonly<
  Record<string, { key: keyof TenantLimits; number?: true; scale?: number }>
> = {
  sessions: { key: "sessions" },
  prompts: { key: "prompts" },
  requestsPerMinute: { key: "requestsPerMinute" },
  maxSteps: { key: "maxSteps" },
  maxToolCalls: { key: "maxToolCalls" },
  turnTimeout: { key: "turnTimeoutMs", scale: 1000 },
  maxSessionTokens: { key: "maxSessionTokens" },
  maxSessionCost: { key: "maxSessionCostUsd", number: true },
};

const TOKEN_HASH = /^sha256:([0-9a-f]{64})$/;

/**
 * Parses a tenants file (its JSON already parsed): `{"tenants": [{name, tokens, allowedRoots?,
 * limits?}]}`. Strict: an unknown key, a bad value, a name or a token hash given twice are
 * refused, naming the field.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseTenants } from "./tenants.ts";
 * const hash = `sha256:${"ab".repeat(32)}`;
 * const [ci] = parseTenants({ tenants: [{ name: "ci", tokens: [hash], limits: { sessions: 2 } }] });
 * assert.equal(ci?.limits.sessions, 2);
 * assert.throws(() => parseTenants({ tenants: [{ name: "CI", tokens: [hash] }] }), /tenants\[0\]\.name/);
 * ```
 *
 * @param value The file's JSON
 * @returns The tenants
 * @throws {TenantsFileError} Naming the first bad field
 */
export function parseTenants(value: unknown): TenantDefinition[] {
  if (!isRecord(value)) throw new TenantsFileError("the file must hold a JSON object");
  for (const key of Object.keys(value)) {
    if (key !== "tenants") throw new TenantsFileError(`${key}: unknown key (expected "tenants")`);
  }
  const list = value.tenants;
  if (!Array.isArray(list)) throw new TenantsFileError("tenants: must be an array");
  const names = new Set<string>();
  const hashes = new Set<string>();
  return list.map((entry: unknown, index) => {
    const where = `tenants[${index}]`;
    const tenant = parseTenant(entry, where);
    if (names.has(tenant.name)) {
      throw new TenantsFileError(`${where}.name: "${tenant.name}" is given twice`);
    }
    names.add(tenant.name);
    tenant.tokens.forEach((hash, at) => {
      if (hashes.has(hash)) {
        throw new TenantsFileError(`${where}.tokens[${at}]: the same token hash is given twice`);
      }
      hashes.add(hash);
    });
    return tenant;
  });
}

function parseTenant(entry: unknown, where: string): TenantDefinition {
  if (!isRecord(entry)) throw new TenantsFileError(`${where}: must be an object`);
  for (const key of Object.keys(entry)) {
    if (!["name", "tokens", "allowedRoots", "limits"].includes(key)) {
      throw new TenantsFileError(`${where}.${key}: unknown key`);
    }
  }
  const { name, tokens, allowedRoots, limits } = entry;
  if (typeof name !== "string" || !TENANT_NAME.test(name)) {
    throw new TenantsFileError(
      `${where}.name: must be 1 to 64 lowercase letters, digits, "_" or "-", starting with a ` +
        "letter or digit",
    );
  }
  if (!Array.isArray(tokens) || tokens.length === 0) {
    throw new TenantsFileError(`${where}.tokens: must be a non-empty array of "sha256:<hex>"`);
  }
  const hashes = tokens.map((token: unknown, at) => {
    const match = typeof token === "string" ? TOKEN_HASH.exec(token) : null;
    if (!match) {
      throw new TenantsFileError(
        `${where}.tokens[${at}]: must be "sha256:" and 64 lowercase hex digits ` +
          '(print one with "acp-harness hash-token")',
      );
    }
    return match[1] as string;
  });
  if (
    allowedRoots !== undefined &&
    !(Array.isArray(allowedRoots) &&
      allowedRoots.every((root) => typeof root === "string" && root.startsWith("/")))
  ) {
    throw new TenantsFileError(`${where}.allowedRoots: must be an array of absolute paths`);
  }
  return {
    name,
    tokens: hashes,
    ...(allowedRoots === undefined ? {} : { allowedRoots: allowedRoots as string[] }),
    limits: parseLimits(limits, `${where}.limits`),
  };
}

function parseLimits(limits: unknown, where: string): TenantLimits {
  if (limits === undefined) return {};
  if (!isRecord(limits)) throw new TenantsFileError(`${where}: must be an object`);
  const parsed: Record<string, number> = {};
  for (const [name, value] of Object.entries(limits)) {
    const known = LIMIT_KEYS[name];
    if (!known) {
      throw new TenantsFileError(
        `${where}.${name}: unknown limit (expected ${Object.keys(LIMIT_KEYS).join(", ")})`,
      );
    }
    const ok = typeof value === "number" && value > 0 &&
      (known.number ? Number.isFinite(value) : Number.isSafeInteger(value));
    if (!ok) {
      throw new TenantsFileError(
        `${where}.${name}: must be a positive ${known.number ? "number" : "integer"}`,
      );
    }
    parsed[known.key] = (value as number) * (known.scale ?? 1);
  }
  return parsed as TenantLimits;
}

/**
 * The form a tenants file keeps a bearer token in: `sha256:` and the lowercase hex SHA-256 of
 * its UTF-8 bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hashToken } from "./tenants.ts";
 * assert.equal(
 *   await hashToken("abc"),
 *   "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
 * );
 * ```
 *
 * @param token The token
 * @returns Its hash
 */
export async function hashToken(token: string): Promise<string> {
  return `sha256:${toHex(await digest(token))}`;
}

async function digest(token: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
}

function toHex(bytes: Uint8Array): string {
  return [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

function fromHex(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let at = 0; at < bytes.length; at++) bytes[at] = parseInt(hex.slice(at * 2, at * 2 + 2), 16);
  return bytes;
}

/**
 * What a tenant uses on this instance, across its connections and across reloads of the file:
 * its open sessions, its prompts being handled and its request rate, held to its latest limits.
 */
export class TenantUsage {
  /** The tenant's name. */
  readonly name: string;
  /** The limits of the file as last loaded. */
  limits: TenantLimits;
  /** Each open connection's count of open (and opening) sessions. */
  readonly #connections = new Set<() => number>();
  #prompts = 0;
  /** The request bucket: tokens left, and when it was last filled (ms). */
  #bucket: { tokens: number; at: number } | undefined;

  readonly #refused: ((limit: string) => void) | undefined;

  /**
   * Starts counting a tenant's use.
   *
   * @param name The tenant's name
   * @param limits Its limits
   * @param refused Told of each refusal, with the limit's name (for the metrics)
   */
  constructor(name: string, limits: TenantLimits, refused?: (limit: string) => void) {
    this.name = name;
    this.limits = limits;
    this.#refused = refused;
  }

  /**
   * Counts a connection's sessions until the returned function is called.
   *
   * @param sessions The connection's open and opening sessions, read at each check
   * @returns Stops counting them
   */
  addConnection(sessions: () => number): () => void {
    this.#connections.add(sessions);
    return () => this.#connections.delete(sessions);
  }

  /** The sessions open (and opening) across the tenant's connections. */
  get sessions(): number {
    let total = 0;
    for (const count of this.#connections) total += count();
    return total;
  }

  /**
   * Refuses one more session when the tenant has its most open.
   *
   * @throws {RequestError} -32029 naming the limit
   */
  checkSessions(): void {
    const max = this.limits.sessions;
    if (max !== undefined && this.sessions >= max) {
      this.#refused?.("sessions");
      throw new RequestError(
        LIMIT_REACHED,
        `Too many sessions: tenant "${this.name}" may have at most ${max} open; close one first`,
        { limit: "tenantSessions", max, tenant: this.name },
      );
    }
  }

  /**
   * Counts one prompt being handled, or refuses it when the tenant has its most.
   *
   * @returns Stops counting it (idempotent)
   * @throws {RequestError} -32029 naming the limit
   */
  admitPrompt(): () => void {
    const max = this.limits.prompts;
    if (max !== undefined && this.#prompts >= max) {
      this.#refused?.("prompts");
      throw new RequestError(
        LIMIT_REACHED,
        `Too many prompts: tenant "${this.name}" may have at most ${max} running at once`,
        { limit: "tenantPrompts", max, tenant: this.name },
      );
    }
    this.#prompts++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#prompts--;
    };
  }

  /**
   * Takes one request from the tenant's budget of requests a minute (a bucket that fills at the
   * rate, holding a minute's worth).
   *
   * @param now The time, in ms
   * @returns `undefined` when the request may go on, else the whole seconds until one may
   */
  takeRequest(now: number): number | undefined {
    const rate = this.limits.requestsPerMinute;
    if (rate === undefined) return undefined;
    const perMs = rate / 60_000;
    const bucket = this.#bucket ?? { tokens: rate, at: now };
    bucket.tokens = Math.min(rate, bucket.tokens + (now - bucket.at) * perMs);
    bucket.at = now;
    this.#bucket = bucket;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return undefined;
    }
    this.#refused?.("requestsPerMinute");
    return Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000));
  }
}

/** JSON-RPC error code of a limit reached (the server's `LIMIT_REACHED`). */
const LIMIT_REACHED = -32029;

/** A tenant as one load of the file gives it: what its connections opened after the load get. */
export interface TenantScope {
  /** The tenant's name. */
  readonly name: string;
  /** Canonical directories its sessions may open in; `undefined`: the server's. */
  readonly allowedRoots: readonly string[] | undefined;
  /** Its session budgets (the lower of these and the server's apply). */
  readonly budgets: BudgetLimits;
  /** Its use, shared by every load of the file. */
  readonly usage: TenantUsage;
}

/** Who a request's bearer token says is calling. */
export interface TenantIdentity {
  /** The tenant. */
  readonly scope: TenantScope;
  /** The hash of the token used (hex), so that its connections end when it is removed. */
  readonly tokenHash: string;
}

/** What a {@link TenantDirectory.replace} changed. */
export interface TenantChange {
  /** The names of the tenants added. */
  readonly added: readonly string[];
  /** The names of the tenants removed. */
  readonly removed: readonly string[];
}

/**
 * The tenants of the file as last loaded: resolves a bearer token to its tenant (hashed once,
 * compared against every tenant's hashes in time that does not depend on which matches), and
 * keeps each tenant's {@link TenantUsage} across reloads.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hashToken, TenantDirectory } from "./tenants.ts";
 * const tenants = new TenantDirectory();
 * tenants.replace([{ name: "ci", tokens: [(await hashToken("t1")).slice(7)], limits: {} }]);
 * assert.equal((await tenants.resolve("t1"))?.scope.name, "ci");
 * assert.equal(await tenants.resolve("t2"), undefined);
 * ```
 */
export class TenantDirectory {
  #entries: ReadonlyArray<
    { readonly hash: Uint8Array; readonly hex: string; readonly scope: TenantScope }
  > = [];
  readonly #usage = new Map<string, TenantUsage>();
  readonly #refused: ((tenant: string, limit: string) => void) | undefined;

  /**
   * Makes an empty directory (see {@link replace}).
   *
   * @param options `refused`: told of each request a tenant's limit refuses (for the metrics)
   */
  constructor(options: { readonly refused?: (tenant: string, limit: string) => void } = {}) {
    this.#refused = options.refused;
  }

  /** How many tenants there are. */
  get size(): number {
    return this.#usage.size;
  }

  /** Whether every tenant has its own `allowedRoots`. */
  get allHaveRoots(): boolean {
    return this.#entries.every((entry) => entry.scope.allowedRoots !== undefined);
  }

  /**
   * Takes a new list of tenants: requests from then on resolve against it; the use of a tenant
   * kept is kept, its limits are the new ones at once.
   *
   * @param tenants The tenants, their `allowedRoots` already canonical
   * @returns The tenants added and removed
   */
  replace(tenants: readonly TenantDefinition[]): TenantChange {
    const before = new Set(this.#usage.keys());
    const entries: { hash: Uint8Array; hex: string; scope: TenantScope }[] = [];
    for (const tenant of tenants) {
      let usage = this.#usage.get(tenant.name);
      if (usage) usage.limits = tenant.limits;
      else {
        const refused = this.#refused;
        const name = tenant.name;
        usage = new TenantUsage(name, tenant.limits, refused && ((limit) => refused(name, limit)));
        this.#usage.set(name, usage);
      }
      const { sessions: _s, prompts: _p, requestsPerMinute: _r, ...budgets } = tenant.limits;
      const scope: TenantScope = {
        name: tenant.name,
        allowedRoots: tenant.allowedRoots,
        budgets,
        usage,
      };
      for (const hex of tenant.tokens) entries.push({ hash: fromHex(hex), hex, scope });
    }
    const names = new Set(tenants.map((tenant) => tenant.name));
    for (const name of before) if (!names.has(name)) this.#usage.delete(name);
    this.#entries = entries;
    return {
      added: [...names].filter((name) => !before.has(name)),
      removed: [...before].filter((name) => !names.has(name)),
    };
  }

  /**
   * The tenant whose token this is.
   *
   * @param token The bearer token a request carries
   * @returns The identity, or `undefined` for a token of no tenant
   */
  async resolve(token: string): Promise<TenantIdentity | undefined> {
    const given = await digest(token);
    let found: TenantIdentity | undefined;
    for (const entry of this.#entries) {
      let difference = 0;
      for (let at = 0; at < given.length; at++) {
        difference |= (given[at] ?? 0) ^ (entry.hash[at] ?? 0);
      }
      if (difference === 0 && found === undefined) {
        found = { scope: entry.scope, tokenHash: entry.hex };
      }
    }
    return found;
  }

  /**
   * Whether an identity still holds: its token is still in the file, for the same tenant.
   *
   * @param identity An identity {@link resolve} gave
   * @returns `false` once the token or its tenant was removed
   */
  holds(identity: TenantIdentity): boolean {
    return this.#entries.some((entry) =>
      entry.hex === identity.tokenHash && entry.scope.name === identity.scope.name
    );
  }
}

/** The budgets {@link lowerBudgets} gives: only the limits set. */
export type LowerBudgets = { readonly [K in keyof BudgetLimits]?: number };

/**
 * The budgets that hold for a tenant's sessions: for each limit, the lower of the server's and
 * the tenant's (an absent one is none).
 *
 * @param server The server's budgets
 * @param tenant The tenant's
 * @returns The lower of each
 */
export function lowerBudgets(server: BudgetLimits, tenant: BudgetLimits): LowerBudgets {
  const keys = [
    "maxSteps",
    "maxToolCalls",
    "turnTimeoutMs",
    "maxSessionTokens",
    "maxSessionCostUsd",
  ] as const;
  const lower: Record<string, number> = {};
  for (const key of keys) {
    const values = [server[key], tenant[key]].filter((value): value is number =>
      value !== undefined
    );
    if (values.length > 0) lower[key] = Math.min(...values);
  }
  return lower;
}

/**
 * The directories a tenant's sessions may open in: those of its roots and of the server's that
 * lie inside both lists (`undefined` for either: the other; both `undefined`: anywhere).
 *
 * @param server The server's canonical allowed roots
 * @param tenant The tenant's canonical roots
 * @returns The roots both allow
 */
export function commonRoots(
  server: readonly string[] | undefined,
  tenant: readonly string[] | undefined,
): readonly string[] | undefined {
  if (server === undefined) return tenant;
  if (tenant === undefined) return server;
  const inside = (path: string, roots: readonly string[]): boolean =>
    roots.some((root) => path === root || path.startsWith(root.endsWith("/") ? root : `${root}/`));
  return [
    ...new Set([
      ...tenant.filter((root) => inside(root, server)),
      ...server.filter((root) => inside(root, tenant)),
    ]),
  ];
}
