/**
 * The cassettes of a run that records or replays (`--record`, `--replay`, `--record-missing`):
 * opened before the server starts (a replay of a directory without a cassette exits 2), turned
 * into the fetch every provider uses, and settled before the process exits so that every
 * recorded exchange is on disk.
 *
 * @module
 */
import type { Config } from "../config/config.ts";
import { ConfigError } from "../config/value_types.ts";
import type { Host } from "../host/host.ts";
import { Cassette } from "../llm/cassette.ts";
import { cassetteFetch } from "../llm/cassette_fetch.ts";

/** A run's cassettes as the CLI uses them. */
export interface Cassettes {
  /** The fetch for the providers. */
  readonly fetch: typeof fetch;
  /** Whether nothing reaches the network (a replay that records nothing): keys are not needed. */
  readonly offline: boolean;
  /** Resolves once every recorded exchange is written; rejects with the first failed write. */
  settled(): Promise<void>;
}

/**
 * Opens the cassettes the config names.
 *
 * @example Replaying a committed cassette
 * ```ts ignore
 * const cassettes = await openCassettes({ ...config, replay: "fixtures/review" }, host, dataDir);
 * ```
 *
 * @param config The merged config (`record`, `replay`, `recordMissing`, `replaySpeed`)
 * @param host The host's files and environment
 * @param dataDir The data directory (replaced by a placeholder in what is recorded)
 * @param secrets The values never to store (the providers' API keys)
 * @returns The cassettes, or `undefined` when the run neither records nor replays
 * @throws {ConfigError} For a replay without a cassette, or `--record-missing` alone
 */
export async function openCassettes(
  config: Config,
  host: Host,
  dataDir: string,
  secrets: readonly string[],
): Promise<Cassettes | undefined> {
  const { record, replay, recordMissing } = config;
  if (recordMissing && replay === undefined) {
    throw new ConfigError(`Option "--record-missing" needs "--replay <dir>"`);
  }
  if (record === undefined && replay === undefined) return undefined;
  const open = async (dir: string, mode: "replay" | "record" | "append", flag: string) => {
    try {
      return await Cassette.open({ files: host, dir, mode });
    } catch (error) {
      throw new ConfigError(`${flag} "${dir}": ${(error as Error).message}`);
    }
  };
  let replayFrom: Cassette | undefined;
  let recordTo: Cassette | undefined;
  if (replay !== undefined) {
    // Recording what a replay misses into the same cassette appends to it.
    const appending = recordMissing || record === replay;
    replayFrom = await open(replay, appending ? "append" : "replay", "--replay");
    if (appending) recordTo = replayFrom;
  }
  if (record !== undefined && record !== replay) {
    recordTo = await open(record, "record", "--record");
  }
  const written = [replayFrom, recordTo].filter((cassette) => cassette !== undefined);
  return {
    fetch: cassetteFetch({
      ...(replayFrom ? { replayFrom } : {}),
      ...(recordTo ? { recordTo } : {}),
      speed: config.replaySpeed,
      paths: { dataDir, home: host.homeDir() },
      secrets,
    }),
    offline: recordTo === undefined,
    settled: async () => {
      for (const cassette of new Set(written)) await cassette.settled();
    },
  };
}
