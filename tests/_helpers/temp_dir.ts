/**
 * Temporary directories that tests remove, also when they fail: `await using` a
 * {@link TempDir} or a {@link TempDirs} removes what it made when the block is left.
 *
 * @module
 */
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A new directory in the system temp directory, removed with everything in it on dispose. */
export interface TempDir extends AsyncDisposable {
  /** The directory's canonical (symlink-free) path. */
  readonly path: string;
}

/**
 * Makes a directory named `prefix` plus a random tail in the system temp directory.
 *
 * @param prefix The start of the name, e.g. `"acp-harness-data-"`
 * @returns The directory, removed on dispose
 */
export async function tempDir(prefix: string): Promise<TempDir> {
  const path = await realpath(await mkdtemp(join(tmpdir(), prefix)));
  return {
    path,
    async [Symbol.asyncDispose](): Promise<void> {
      await rm(path, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    },
  };
}

/** Makes any number of temporary directories and removes them all on dispose. */
export class TempDirs implements AsyncDisposable {
  readonly #prefix: string;
  readonly #made: TempDir[] = [];

  /** @param prefix The start of each directory's name */
  constructor(prefix: string) {
    this.#prefix = prefix;
  }

  /** Makes one more directory; returns its canonical path. */
  async make(): Promise<string> {
    const dir = await tempDir(this.#prefix);
    this.#made.push(dir);
    return dir.path;
  }

  /** Removes every directory made so far. */
  async [Symbol.asyncDispose](): Promise<void> {
    await Promise.all(this.#made.splice(0).map((dir) => dir[Symbol.asyncDispose]()));
  }
}
