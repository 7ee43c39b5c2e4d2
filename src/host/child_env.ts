/**
 * The environment of the programs the server starts for others (MCP stdio servers, delegated
 * agents, commands): one allow-list of the host variables a child program inherits, the server's
 * own secrets, and the filter `NodeProcesses.spawn` applies (`node_processes.ts`).
 *
 * @module
 */

/**
 * The host environment variables a child program (an MCP stdio server, a delegated agent)
 * inherits: what programs need to run, never the server's own secrets such as model API keys.
 * An entry ending in `*` matches every name with that prefix. The child's declared `env` comes on
 * top.
 *
 * - a home, a user, a shell and a terminal: `HOME`, `LOGNAME`, `USER`, `SHELL`, `TERM`;
 * - `PATH` (to find `node`, `npx`, `deno`, `bun`), `TMPDIR`, `TZ`;
 * - the locale and the XDG base directories: `LANG`, `LC_*`, `XDG_*`;
 * - where runtimes keep their caches and which CA certificates TLS trusts, so that a Deno, Node.js
 *   or Bun child starts as its parent did (offline caches, a company CA): `DENO_DIR`,
 *   `DENO_CERT`, `DENO_TLS_CA_STORE`, `DENO_NO_UPDATE_CHECK`, `BUN_INSTALL`,
 *   `NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE`, `SSL_CERT_DIR`.
 *
 * Left out on purpose: `DENO_AUTH_TOKENS` and `NPM_CONFIG_*` (registry credentials),
 * `NODE_OPTIONS` (an `--inspect` meant for the server would clash in its children), proxy
 * variables (their URLs may carry a password): declare them when a child needs them.
 */
export const CHILD_INHERITED_ENV: readonly string[] = [
  "HOME",
  "LOGNAME",
  "USER",
  "SHELL",
  "TERM",
  "PATH",
  "TMPDIR",
  "TZ",
  "LANG",
  "LC_*",
  "XDG_*",
  "DENO_DIR",
  "DENO_CERT",
  "DENO_TLS_CA_STORE",
  "DENO_NO_UPDATE_CHECK",
  "BUN_INSTALL",
  "NODE_EXTRA_CA_CERTS",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
];

/**
 * The server's own secrets that no child sees unless it is declared for it: the HTTP bearer token
 * and its file. The providers' API key variables (`OPENAI_API_KEY`, …, and those of providers
 * from the config file) are added to them where the models are known (see
 * `serverSecretEnv` in `src/server/server_secrets.ts`).
 */
export const SERVER_SECRET_ENV: readonly string[] = [
  "ACP_HARNESS_TOKEN",
  "ACP_HARNESS_TOKEN_FILE",
];

/**
 * A test of environment variable names against a list of names and prefix patterns: `HOME`
 * matches only `HOME`, `LC_*` every name that starts with `LC_` (a `*` only at the end; `*`
 * alone matches every name). Names are compared case-sensitively, as POSIX systems do.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { envNameMatcher } from "./child_env.ts";
 * const matches = envNameMatcher(["HOME", "LC_*"]);
 * assert.equal(matches("LC_CTYPE"), true);
 * assert.equal(matches("HOME"), true);
 * assert.equal(matches("HOMEDIR"), false);
 * ```
 *
 * @param patterns Names, or prefixes followed by `*`
 * @returns Whether a name matches one of them
 */
export function envNameMatcher(patterns: readonly string[]): (name: string) => boolean {
  const names = new Set<string>();
  const prefixes: string[] = [];
  for (const pattern of patterns) {
    if (pattern.endsWith("*")) prefixes.push(pattern.slice(0, -1));
    else names.add(pattern);
  }
  return (name) => names.has(name) || prefixes.some((prefix) => name.startsWith(prefix));
}

/** How {@link childEnv} builds a child's environment. */
export interface ChildEnvOptions {
  /**
   * The names (and `PREFIX*` patterns) of the host's variables the child inherits.
   * @default {every variable}
   */
  readonly inherit?: readonly string[] | undefined;
  /**
   * Names (and `PREFIX*` patterns) of host variables left out even when `inherit` lets them
   * through (the server's secrets, for commands). Declared variables are kept. @default {[]}
   */
  readonly exclude?: readonly string[] | undefined;
  /** The child's declared variables, on top of what it inherits (they win). @default {{}} */
  readonly env?: Readonly<Record<string, string>> | undefined;
}

/**
 * A child's environment: the host's variables that `inherit` lets through and `exclude` does not
 * name, then the declared `env` on top. The result has no prototype, so a variable named
 * `__proto__` is an ordinary variable.
 *
 * @example An MCP server's environment
 * ```ts
 * import assert from "node:assert/strict";
 * import { CHILD_INHERITED_ENV, childEnv } from "./child_env.ts";
 * const host = { HOME: "/home/me", LC_ALL: "C", OPENAI_API_KEY: "sk-x" };
 * const env = childEnv(host, { inherit: CHILD_INHERITED_ENV, env: { DEBUG: "1" } });
 * assert.deepEqual({ ...env }, { HOME: "/home/me", LC_ALL: "C", DEBUG: "1" });
 * ```
 *
 * @param host The host's environment
 * @param options What is inherited, what is left out, what is declared
 * @returns The child's environment
 */
export function childEnv(
  host: Readonly<Record<string, string | undefined>>,
  options: ChildEnvOptions,
): Record<string, string> {
  const env: Record<string, string> = Object.create(null);
  const inherits = options.inherit === undefined ? () => true : envNameMatcher(options.inherit);
  const excluded = envNameMatcher(options.exclude ?? []);
  for (const [name, value] of Object.entries(host)) {
    if (value !== undefined && inherits(name) && !excluded(name)) env[name] = value;
  }
  for (const [name, value] of Object.entries(options.env ?? {})) env[name] = value;
  return env;
}
