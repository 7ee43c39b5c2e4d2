/**
 * The HTTP transport's open connections: counted against the limits, logged, and closed when
 * idle (see {@link ConnectionRegistry}).
 *
 * @module
 */
import type { Logger } from "../../log/logger.ts";
import type { AgentServer, AgentServerConnection } from "../../server/agent_server.ts";
import type { AnyMessage, Stream } from "../acp.ts";
import { busy, problem, tooManyFromAddress } from "./_problem.ts";
import type { RequestInfo } from "./http_handler.ts";
import { UNAUTHORIZED } from "./http_security.ts";
import { ConnectionLimitError } from "./url_keyed_profile.ts";
import type { TenantIdentity } from "../../server/tenants.ts";

/** Period of the idle-connection sweep, at most. */
const MAX_SWEEP_MS = 30_000;
/** The default of {@link ConnectionRegistryOptions.maxConnectionsPerAddress}. */
const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 100;

/** What a {@link ConnectionRegistry} is built from. */
export interface ConnectionRegistryOptions {
  /** The agent server every connection is served by. */
  readonly server: Pick<AgentServer, "connect">;
  /** Most connections open at once. */
  readonly maxConnections: number;
  /** Most connections open at once from one peer address. @default {100} */
  readonly maxConnectionsPerAddress?: number | undefined;
  /** Most sessions one connection may have open. */
  readonly maxSessionsPerConnection: number;
  /** How long a connection may stay silent with no request being handled, in ms. */
  readonly idleTimeoutMs: number;
  /** Where connection lines go. */
  readonly logger: Logger;
  /** The clock, in ms. */
  readonly now: () => number;
  /**
   * Whether an identity still holds against the tenants as last loaded (`TenantDirectory.holds`);
   * absent: every one does (a server without tenants).
   */
  readonly holds?: ((identity: TenantIdentity) => boolean) | undefined;
}

/** Refuses a connection whose bearer token no longer holds: `401`, as for a token of no tenant. */
export class TokenRevokedError extends Error {
  /** The HTTP status to answer with. */
  readonly status = 401;

  /** Creates it, with the edge's sentence for a missing token. */
  constructor() {
    super(UNAUTHORIZED.detail);
    this.name = "TokenRevokedError";
  }
}

interface Tracked {
  readonly handle: AgentServerConnection;
  /** Whose the connection is, on a server with tenants. */
  readonly identity?: TenantIdentity | undefined;
  /** When the client last sent a message, in ms; `busy` while a request of it was being handled. */
  readonly activity: { last: number; busy?: boolean };
  /** Ends the connection's socket as refused (a WebSocket's close code), before it is closed. */
  readonly refuse?: (() => void) | undefined;
  /** Whether it is being closed because its token no longer holds. */
  revoked?: boolean;
}

/**
 * The connections the HTTP transport serves on its agent server, whatever the profile: each is
 * counted against the connection limits (in all and per peer address), logged when it opens and
 * closes, and closed once it has been idle for the idle time (nothing received and no request
 * being handled). A sweep runs from construction until {@link close}.
 *
 * @example Refusing once full
 * ```ts ignore
 * const registry = new ConnectionRegistry({ server, maxConnections: 1, … });
 * registry.connect(stream, "http", {});
 * registry.refusal({})?.status; // 503
 * registry.close();
 * ```
 */
export class ConnectionRegistry {
  readonly #options: ConnectionRegistryOptions;
  readonly #maxPerAddress: number;
  readonly #open = new Set<Tracked>();
  /** Open connections by peer address. */
  readonly #perAddress = new Map<string, number>();
  readonly #sweep: ReturnType<typeof setInterval>;
  #draining = false;

  /** @param options The server, the limits, the logger and the clock */
  constructor(options: ConnectionRegistryOptions) {
    this.#options = options;
    this.#maxPerAddress = options.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS;
    this.#sweep = setInterval(
      () => this.#closeIdle(),
      Math.max(100, Math.min(MAX_SWEEP_MS, options.idleTimeoutMs / 4)),
    );
  }

  /** How many connections are open. */
  get size(): number {
    return this.#open.size;
  }

  /** Whether the registry was closed: it takes no more connections. */
  get draining(): boolean {
    return this.#draining;
  }

  /**
   * The refusal of one more connection from this peer, if one is due.
   *
   * @param info The request's peer, and whose it is
   * @returns `401` (its token no longer holds: the tenants were reloaded since the request was
   *   authenticated), `503` (draining, or full) or `429` (the peer has its most open), else
   *   `undefined`
   */
  refusal(info: RequestInfo): Response | undefined {
    const unauthorized = this.unauthorized(info);
    if (unauthorized) return unauthorized;
    if (this.#draining || this.#open.size >= this.#options.maxConnections) {
      return busy(this.#draining);
    }
    if (this.#crowded(info)) return tooManyFromAddress(this.#maxPerAddress);
    return undefined;
  }

  /**
   * The refusal of a request whose bearer token no longer holds: authenticated at the edge against
   * the tenants as they were, then the tenants file was reloaded without it (a request's body can
   * take a while to arrive). Checked where a connection is opened and before each later request of
   * one goes on, so a reload leaves no window.
   *
   * @param info Whose the request is
   * @returns `401` exactly as the edge answers a token of no tenant, else `undefined`
   */
  unauthorized(info: RequestInfo): Response | undefined {
    if (!this.#revoked(info.identity)) return undefined;
    this.#options.logger.info("request refused: its token was removed", {
      tenant: info.identity?.scope.name,
    });
    return problem(UNAUTHORIZED.status, UNAUTHORIZED.title, UNAUTHORIZED.detail);
  }

  /**
   * Serves one new connection on the agent server, counted, logged and watched for idleness.
   *
   * @param stream The connection's message streams
   * @param transport What it came by, for the log
   * @param info Its peer, and whose it is
   * @param refuse Ends its socket as refused (a WebSocket's close code) when its token no longer
   *   holds; the connection is closed after it either way
   * @returns The agent server's connection
   * @throws {ConnectionLimitError} when a limit is reached (or the registry is closed)
   * @throws {TokenRevokedError} when its token no longer holds (see {@link unauthorized})
   */
  connect(
    stream: Stream,
    transport: string,
    info: RequestInfo,
    refuse?: () => void,
  ): AgentServerConnection {
    this.#admit(info);
    const { now, server, logger } = this.#options;
    const activity = { last: now() };
    const tracked: { entry?: Tracked } = {};
    // Each message checks its connection's token again (a cheap lookup): one that no longer holds
    // ends the connection, and the message goes no further.
    const touched = new TransformStream<AnyMessage, AnyMessage>({
      transform: (message, controller) => {
        const { entry } = tracked;
        if (entry && this.#revoked(entry.identity)) return this.#revoke(entry);
        activity.last = now();
        controller.enqueue(message);
      },
    });
    void stream.readable.pipeTo(touched.writable).catch(() => {});
    const handle = server.connect(
      { readable: touched.readable, writable: stream.writable },
      {
        maxSessions: this.#options.maxSessionsPerConnection,
        transport: transport === "websocket" ? "websocket" : "http",
        ...(info.identity
          ? { tenant: info.identity.scope.name, tenancy: info.identity.scope }
          : {}),
      },
    );
    tracked.entry = { handle, activity, identity: info.identity, refuse };
    this.#track(tracked.entry, info.remoteAddress);
    logger.info("connection opened", {
      connectionId: handle.id,
      transport,
      ...(info.remoteAddress ? { remoteAddress: info.remoteAddress } : {}),
      ...(info.identity ? { tenant: info.identity.scope.name } : {}),
    });
    return handle;
  }

  /**
   * Closes the connections whose bearer token no longer holds (the tenants file was reloaded
   * without it, or without its tenant): their turns are cancelled, their sessions stay stored.
   *
   * @param holds Whether an identity still holds
   * @returns How many connections are being closed
   */
  closeRevoked(holds: (identity: TenantIdentity) => boolean): number {
    let closed = 0;
    for (const entry of this.#open) {
      if (entry.revoked || entry.identity === undefined || holds(entry.identity)) continue;
      closed++;
      this.#revoke(entry);
    }
    return closed;
  }

  /** Takes no more connections and stops the sweep; the open ones are the server's to close. */
  close(): void {
    this.#draining = true;
    clearInterval(this.#sweep);
  }

  /** Whether an identity no longer holds against the tenants as last loaded. */
  #revoked(identity: TenantIdentity | undefined): boolean {
    const holds = this.#options.holds;
    return identity !== undefined && holds !== undefined && !holds(identity);
  }

  /** Closes a connection whose token no longer holds (once), its socket refused first. */
  #revoke(entry: Tracked): void {
    if (entry.revoked) return;
    entry.revoked = true;
    this.#options.logger.info("closing a connection whose token was removed", {
      connectionId: entry.handle.id,
      tenant: entry.identity?.scope.name,
    });
    entry.refuse?.();
    void entry.handle.close();
  }

  #crowded(info: RequestInfo): boolean {
    return info.remoteAddress !== undefined &&
      (this.#perAddress.get(info.remoteAddress) ?? 0) >= this.#maxPerAddress;
  }

  /** Throws the refusal of one more connection from this peer, if one is due. */
  #admit(info: RequestInfo): void {
    const { maxConnections, logger } = this.#options;
    if (this.#revoked(info.identity)) {
      logger.info("connection refused: its token was removed", {
        tenant: info.identity?.scope.name,
      });
      throw new TokenRevokedError();
    }
    if (this.#draining) {
      throw new ConnectionLimitError("Cannot connect: the server is shutting down");
    }
    if (this.#open.size >= maxConnections) {
      logger.warn("connection refused: limit reached", { max: maxConnections });
      throw new ConnectionLimitError(
        `Cannot connect: the server has its most connections open (${maxConnections})`,
      );
    }
    const address = info.remoteAddress;
    if (address !== undefined && this.#crowded(info)) {
      logger.warn("connection refused: per-address limit reached", {
        max: this.#maxPerAddress,
        remoteAddress: address,
      });
      throw new ConnectionLimitError(
        `Cannot connect: ${address} has its most connections open (${this.#maxPerAddress})`,
        429,
      );
    }
  }

  /** Counts a connection until it closes. */
  #track(entry: Tracked, address: string | undefined): void {
    this.#open.add(entry);
    if (address !== undefined) {
      this.#perAddress.set(address, (this.#perAddress.get(address) ?? 0) + 1);
    }
    void entry.handle.closed.then(() => {
      this.#open.delete(entry);
      if (address !== undefined) {
        const left = (this.#perAddress.get(address) ?? 1) - 1;
        if (left > 0) this.#perAddress.set(address, left);
        else this.#perAddress.delete(address);
      }
      this.#options.logger.info("connection closed", { connectionId: entry.handle.id });
    });
  }

  /** Closes the connections idle for the idle time: nothing received, no request being handled. */
  #closeIdle(): void {
    const { now, idleTimeoutMs, logger } = this.#options;
    const cutoff = now() - idleTimeoutMs;
    for (const entry of this.#open) {
      // A request being handled (a long turn) is activity: idleness counts from its end, which
      // is taken as the first sweep that finds none (never earlier than the end itself).
      if (entry.handle.pending > 0) {
        entry.activity.busy = true;
        continue;
      }
      if (entry.activity.busy) {
        entry.activity.busy = false;
        entry.activity.last = now();
        continue;
      }
      if (entry.activity.last <= cutoff) {
        logger.info("closing idle connection", { connectionId: entry.handle.id });
        entry.activity.last = Infinity; // closed once
        void entry.handle.close();
      }
    }
  }
}
