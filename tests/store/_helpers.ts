/**
 * Test helpers for the store: a temporary data directory, a host with a settable clock, stores
 * that collect their warnings.
 *
 * @module
 */
import { NodeHost } from "../../src/host/node_host.ts";
import type { Logger } from "../../src/log/logger.ts";
import {
  JsonlSessionStore,
  type JsonlSessionStoreOptions,
} from "../../src/store/jsonl_session_store.ts";
import type { SessionHeader } from "../../src/store/session_store.ts";
import { makeTempDir, removeTempDir } from "../_helpers/temp_dir.ts";

/** The start of test time: 2025-01-01T00:00:00.000Z. */
export const EPOCH: number = Date.UTC(2025, 0, 1);

/** A {@link NodeHost} whose clock only moves when told to. */
export class ClockHost extends NodeHost {
  /** The current time in ms since the epoch. */
  ms: number = EPOCH;

  /** The settable time. */
  override now(): number {
    return this.ms;
  }

  /** Moves the clock forward. */
  tick(ms = 1): void {
    this.ms += ms;
  }
}

/** A temporary data directory with a store on it; `await using` removes the directory. */
export interface TempStore extends AsyncDisposable {
  readonly dir: string;
  readonly host: ClockHost;
  readonly store: JsonlSessionStore;
  /** Messages the stores of this data directory warned about. */
  readonly warnings: string[];
  /** Another store on the same data directory and host, as another process would have. */
  open(options?: Partial<JsonlSessionStoreOptions>): JsonlSessionStore;
}

/** Makes a temporary data directory and a store on it. */
export async function tempStore(
  options: Partial<JsonlSessionStoreOptions> = {},
): Promise<TempStore> {
  const dir = await makeTempDir("acp-store-");
  const host = new ClockHost();
  const warnings: string[] = [];
  const logger: Logger = {
    error: (message) => warnings.push(message),
    warn: (message) => warnings.push(message),
    info: () => {},
    debug: () => {},
  };
  const open = (extra: Partial<JsonlSessionStoreOptions> = {}): JsonlSessionStore =>
    new JsonlSessionStore({ host, dataDir: dir, logger, ...options, ...extra });
  return {
    dir,
    host,
    store: open(),
    warnings,
    open,
    async [Symbol.asyncDispose](): Promise<void> {
      await removeTempDir(dir);
    },
  };
}

/** A UUID-shaped id numbered `n` (so ids sort by `n`). */
export function sessionId(n: number): string {
  return `00000000-0000-4000-8000-${n.toString().padStart(12, "0")}`;
}

/** A session header created at `ms` (default: the host's current time). */
export function header(
  id: string,
  host: ClockHost,
  cwd = "/work/project",
): SessionHeader {
  return {
    version: 1,
    id,
    cwd,
    additionalDirectories: [],
    createdAt: new Date(host.now()).toISOString(),
  };
}

/** ISO time `ms` after {@link EPOCH}. */
export function at(ms: number): string {
  return new Date(EPOCH + ms).toISOString();
}

/** Whether some warning contains `text`. */
export function warned(temp: TempStore, text: string): boolean {
  return temp.warnings.some((warning) => warning.includes(text));
}

/** The names in a directory, sorted. */
export async function names(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) found.push(entry.name);
  return found.sort();
}
