/**
 * The socket limits every HTTP listener applies before any HTTP parsing or authentication: how
 * many sockets may be open at once (never more than the descriptors the process may open, less a
 * reserve for sessions' files, child processes and the store), how many of them one peer address
 * may hold while their request headers are not complete, and how long a socket may take to send
 * its first request's headers.
 *
 * @module
 */
import { readFileSync } from "node:fs";

/** Socket-level limits of a listener. */
export interface SocketLimits {
  /** Milliseconds a socket has to send its first request's complete headers. */
  readonly headerTimeoutMs: number;
  /** Most sockets open at once (capped by the descriptor budget). */
  readonly maxSockets: number;
  /** Most sockets of one peer address whose request headers are not complete yet. */
  readonly maxSocketsPerAddress: number;
}

/** The defaults: 10 s, 4,096 sockets, 256 per address. */
export const DEFAULT_SOCKET_LIMITS: SocketLimits = {
  headerTimeoutMs: 10_000,
  maxSockets: 4096,
  maxSocketsPerAddress: 256,
};

/** The open-files limit assumed when the process's own cannot be read. */
const ASSUMED_DESCRIPTOR_LIMIT = 1024;

/**
 * The soft limit on open files of this process (`ulimit -n`), from `/proc/self/limits`
 * ({@link ASSUMED_DESCRIPTOR_LIMIT} where that cannot be read).
 *
 * @returns The limit, or `Infinity` when there is none
 */
export function descriptorLimit(): number {
  try {
    const limits = readFileSync("/proc/self/limits", "utf8");
    const soft = /^Max open files\s+(\S+)/m.exec(limits)?.[1];
    if (soft === "unlimited") return Infinity;
    const value = Number(soft);
    return Number.isSafeInteger(value) && value > 0 ? value : ASSUMED_DESCRIPTOR_LIMIT;
  } catch {
    return ASSUMED_DESCRIPTOR_LIMIT;
  }
}

/**
 * The descriptors kept free of sockets for what open sessions need (their files, child
 * processes, MCP servers, the store's connections): a quarter of the limit, at least 64.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { descriptorReserve } from "./socket_guard.ts";
 * assert.equal(descriptorReserve(256), 64);
 * assert.equal(descriptorReserve(1024), 256);
 * ```
 *
 * @param limit The open-files limit
 * @returns How many descriptors sockets leave free
 */
export function descriptorReserve(limit: number): number {
  return Math.max(64, Math.floor(limit / 4));
}

/**
 * The most sockets a listener may hold: `maxSockets`, or fewer when the descriptor limit less its
 * reserve cannot hold that many (`perSocket` descriptors each: 1, or 3 where a socket is relayed
 * to an inner server); at least 1.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { socketBudget } from "./socket_guard.ts";
 * assert.equal(socketBudget(4096, 256, 1), 192);
 * assert.equal(socketBudget(4096, 256, 3), 64);
 * assert.equal(socketBudget(100, 20000, 1), 100);
 * ```
 *
 * @param maxSockets The configured cap
 * @param limit The open-files limit
 * @param perSocket Descriptors one client socket costs
 * @returns The cap to apply
 */
export function socketBudget(maxSockets: number, limit: number, perSocket: number): number {
  if (limit === Infinity) return maxSockets;
  const usable = Math.floor((limit - descriptorReserve(limit)) / perSocket);
  return Math.max(1, Math.min(maxSockets, usable));
}

/** One admitted socket: tell the guard when its headers are complete and when it closed. */
export interface SocketTicket {
  /** Its request headers are complete: it no longer counts against its address's cap. */
  headersDone(): void;
  /** It closed: frees its place (idempotent). */
  release(): void;
}

/**
 * Counts a listener's sockets and decides on each new one: admitted (with a ticket and a header
 * deadline), or refused (the caller closes it at once, without a response). A socket is refused
 * when `maxSockets` are open, when half of them are still sending their first request's headers
 * (so that sockets that sent nothing cannot take the places of clients that do), or when
 * `maxSocketsPerAddress` of its own address are.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SocketGuard } from "./socket_guard.ts";
 * const guard = new SocketGuard({ headerTimeoutMs: 1000, maxSockets: 3, maxSocketsPerAddress: 1 });
 * const first = guard.admit("127.0.0.1", () => {});
 * assert.ok(first);
 * assert.equal(guard.admit("127.0.0.1", () => {}), undefined); // a second one still waiting
 * first.headersDone();
 * assert.ok(guard.admit("127.0.0.1", () => {}));
 * guard.close();
 * ```
 */
export class SocketGuard {
  readonly #limits: SocketLimits;
  readonly #pending = new Map<string, number>();
  readonly #tickets = new Set<SocketTicket>();
  #open = 0;
  /** Sockets whose first request's headers are not complete yet. */
  #waiting = 0;
  #refused = 0;
  #timedOut = 0;

  /**
   * @param limits The caps, `maxSockets` already within the descriptor budget
   */
  constructor(limits: SocketLimits) {
    this.#limits = limits;
  }

  /** Sockets open now. */
  get open(): number {
    return this.#open;
  }

  /** Sockets refused at a cap so far. */
  get refused(): number {
    return this.#refused;
  }

  /** Sockets closed for not sending complete headers in time so far. */
  get timedOut(): number {
    return this.#timedOut;
  }

  /**
   * Admits a new socket, or refuses it.
   *
   * @param address The peer's address (`""` when unknown)
   * @param onTimeout Closes the socket: called when its headers are not complete in time
   * @returns Its ticket, or undefined when refused (close the socket at once)
   */
  admit(address: string, onTimeout: () => void): SocketTicket | undefined {
    const pending = this.#pending.get(address) ?? 0;
    if (
      this.#open >= this.#limits.maxSockets ||
      this.#waiting >= Math.max(1, Math.floor(this.#limits.maxSockets / 2)) ||
      pending >= this.#limits.maxSocketsPerAddress
    ) {
      this.#refused++;
      return undefined;
    }
    this.#open++;
    this.#waiting++;
    this.#pending.set(address, pending + 1);
    let waiting = true;
    let released = false;
    const settle = (): void => {
      if (!waiting) return;
      waiting = false;
      this.#waiting--;
      clearTimeout(timer);
      const left = (this.#pending.get(address) ?? 1) - 1;
      if (left === 0) this.#pending.delete(address);
      else this.#pending.set(address, left);
    };
    const timer = setTimeout(() => {
      if (!waiting) return;
      this.#timedOut++;
      settle();
      onTimeout();
    }, this.#limits.headerTimeoutMs);
    const ticket: SocketTicket = {
      headersDone: settle,
      release: () => {
        if (released) return;
        released = true;
        settle();
        this.#tickets.delete(ticket);
        this.#open--;
      },
    };
    this.#tickets.add(ticket);
    return ticket;
  }

  /** Clears every header timer (the listener is closing). */
  close(): void {
    for (const ticket of [...this.#tickets]) ticket.headersDone();
  }
}

/**
 * The limits a listener applies: the given ones (defaults for those missing), `maxSockets`
 * within the descriptor budget.
 *
 * @param given The listener's options
 * @param perSocket Descriptors one client socket costs
 * @returns The limits
 */
export function effectiveSocketLimits(
  given: { readonly [K in keyof SocketLimits]?: number | undefined },
  perSocket: number,
): SocketLimits {
  const limits = { ...DEFAULT_SOCKET_LIMITS, ...withoutUndefined(given) };
  return {
    ...limits,
    maxSockets: socketBudget(limits.maxSockets, descriptorLimit(), perSocket),
  };
}

function withoutUndefined(
  given: { readonly [K in keyof SocketLimits]?: number | undefined },
): Partial<SocketLimits> {
  return Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined));
}
