/**
 * The tenants file of `serve --http --tenants FILE`: read and checked at start-up (a bad file
 * stops the start, exit 2), and read again on SIGHUP (a bad file then keeps the tenants as they
 * were, and says why on stderr).
 *
 * @module
 */
import { ConfigError } from "../config/config.ts";
import type { Host } from "../host/host.ts";
import type { Logger } from "../log/logger.ts";
import {
  parseTenants,
  type TenantDefinition,
  TenantDirectory,
  type TenantIdentity,
  TenantsFileError,
} from "../server/tenants.ts";
import { loadJsonText } from "./lazy.ts";

/**
 * Reads a tenants file: its JSON, its tenants checked (see `parseTenants`), each tenant's
 * `allowedRoots` made canonical (each must be an existing directory).
 *
 * @example
 * ```ts ignore
 * const tenants = await readTenantsFile(host, "/etc/acp-harness/tenants.json");
 * ```
 *
 * @param host Reads the file and resolves the roots
 * @param file The file's absolute path
 * @returns The tenants
 * @throws {ConfigError} Naming the file, and the field when the content is wrong
 */
export async function readTenantsFile(host: Host, file: string): Promise<TenantDefinition[]> {
  let text: string;
  try {
    text = await host.readTextFile(file);
  } catch (error) {
    throw new ConfigError(`Cannot read the tenants file "${file}": ${(error as Error).message}`);
  }
  let tenants: TenantDefinition[];
  try {
    const { parseJsonText } = await loadJsonText();
    tenants = parseTenants(parseJsonText(text, file));
  } catch (error) {
    const detail = (error as Error).message;
    throw new ConfigError(
      error instanceof TenantsFileError
        ? `Invalid tenants file "${file}": ${detail}`
        : `Invalid tenants file: ${detail}`,
    );
  }
  return await Promise.all(tenants.map(async (tenant, index) => {
    if (tenant.allowedRoots === undefined) return tenant;
    const roots: string[] = [];
    for (const [at, root] of tenant.allowedRoots.entries()) {
      const info = await host.stat(root).catch(() => undefined);
      if (!info?.isDirectory) {
        throw new ConfigError(
          `Invalid tenants file "${file}": tenants[${index}].allowedRoots[${at}]: "${root}" is ` +
            "not an existing directory",
        );
      }
      roots.push(await host.realpath(root));
    }
    return { ...tenant, allowedRoots: roots };
  }));
}

/** What {@link TenantsReloader} reloads into. */
export interface TenantsReloaderOptions {
  /** Reads the file. */
  readonly host: Host;
  /** The file's absolute path. */
  readonly file: string;
  /** The tenants the HTTP edge resolves tokens against. */
  readonly tenants: TenantDirectory;
  /** Closes the connections whose token no longer holds. */
  readonly closeRevoked: (holds: (identity: TenantIdentity) => boolean) => number;
  /** Where the outcome goes. */
  readonly logger: Logger;
}

/**
 * Reloads the tenants file on demand (SIGHUP), one reload at a time: a good file replaces the
 * tenants at once (a removed token is refused from its next request, and the connections opened
 * with it are closed); a bad one keeps the tenants as they were and logs why.
 *
 * @example
 * ```ts ignore
 * const reloader = new TenantsReloader({ host, file, tenants, closeRevoked, logger });
 * platform.onReloadSignal?.(() => void reloader.reload());
 * ```
 */
export class TenantsReloader {
  readonly #options: TenantsReloaderOptions;
  #queue: Promise<void> = Promise.resolve();

  /** @param options The file, the tenants, and what to close */
  constructor(options: TenantsReloaderOptions) {
    this.#options = options;
  }

  /**
   * Reads the file again, after any reload under way.
   *
   * @returns Settles once this reload is done (it never rejects)
   */
  reload(): Promise<void> {
    this.#queue = this.#queue.then(() => this.#reload());
    return this.#queue;
  }

  async #reload(): Promise<void> {
    const { host, file, tenants, closeRevoked, logger } = this.#options;
    let loaded: TenantDefinition[];
    try {
      loaded = await readTenantsFile(host, file);
    } catch (error) {
      logger.error("tenants file not reloaded: the tenants stay as they were", {
        file,
        error: (error as Error).message,
      });
      return;
    }
    const { added, removed } = tenants.replace(loaded);
    const closed = closeRevoked((identity) => tenants.holds(identity));
    logger.info("tenants file reloaded", {
      file,
      tenants: loaded.length,
      added,
      removed,
      connectionsClosed: closed,
    });
  }
}

/**
 * The tenants of a file, read at start-up.
 *
 * @param host Reads the file
 * @param file The file's absolute path
 * @param refused Told of each request a tenant's limit refuses (for the metrics)
 * @returns The directory the HTTP edge resolves tokens against
 * @throws {ConfigError} For a file that cannot be read or is not valid
 */
export async function openTenants(
  host: Host,
  file: string,
  refused?: (tenant: string, limit: string) => void,
): Promise<TenantDirectory> {
  const tenants = new TenantDirectory(refused ? { refused } : {});
  tenants.replace(await readTenantsFile(host, file));
  return tenants;
}
