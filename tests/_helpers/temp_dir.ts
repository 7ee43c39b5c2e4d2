/**
 * Temporary directories that tests, the torture suite and the bench remove, also when they fail:
 * `await using` a {@link TempDir} or a {@link TempDirs} removes what it made when the block is
 * left.
 *
 * A test killed by its timeout never leaves its block, so every directory is made under one
 * per-run root when {@link TEMP_ROOT_VARIABLE} names one: `deno task test`
 * (`scripts/run_tests.ts`) and the torture suite make that root with {@link tempRun} and remove
 * it, with whatever a killed test left in it, when the run ends. Without the variable (a test
 * file run by hand) the directories go to the system temp directory.
 *
 * @example Removed when the block is left
 * ```ts
 * import { tempDir } from "./temp_dir.ts";
 * {
 *   await using dir = await tempDir("acp-harness-example-");
 *   await Deno.writeTextFile(`${dir.path}/a.txt`, "a");
 * }
 * ```
 *
 * @module
 */
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";

/** The environment variable that names the per-run root of every temporary directory. */
export const TEMP_ROOT_VARIABLE = "ACP_HARNESS_TEST_TMP";

/** A new directory in the temp root, removed with everything in it on dispose. */
export interface TempDir extends AsyncDisposable {
  /** The directory's canonical (symlink-free) path. */
  readonly path: string;
}

/**
 * Where temporary directories are made: the per-run root when {@link TEMP_ROOT_VARIABLE} is
 * set, the system temp directory otherwise.
 *
 * @returns The directory
 */
export function tempRoot(): string {
  const root = process.env[TEMP_ROOT_VARIABLE];
  return root !== undefined && root !== "" ? root : tmpdir();
}

/**
 * Makes a directory named `prefix` plus a random tail in the temp root, for a caller that
 * removes it itself (with {@link removeTempDir}); prefer {@link tempDir}.
 *
 * @param prefix The start of the name
 * @returns Its canonical path
 */
export async function makeTempDir(prefix = "acp-harness-"): Promise<string> {
  return await realpath(await mkdtemp(join(tempRoot(), prefix)));
}

/**
 * Removes a directory tree made by {@link makeTempDir}; retries while a process that is ending
 * still writes into it.
 *
 * @param path The directory
 */
export async function removeTempDir(path: string): Promise<void> {
  await rm(path, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
}

/**
 * Makes a directory named `prefix` plus a random tail in the temp root.
 *
 * @param prefix The start of the name, e.g. `"acp-harness-data-"`
 * @returns The directory, removed on dispose
 */
export async function tempDir(prefix = "acp-harness-"): Promise<TempDir> {
  const path = await makeTempDir(prefix);
  return {
    path,
    async [Symbol.asyncDispose](): Promise<void> {
      await removeTempDir(path);
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

/** The per-run root of a test or torture run, made by {@link tempRun}. */
export interface TempRun extends AsyncDisposable {
  /** The root's canonical path. */
  readonly path: string;
  /** The environment that sends the temporary directories of a child run into the root. */
  readonly env: Readonly<Record<string, string>>;
}

/**
 * Makes the per-run root in the system temp directory; disposing it removes it with everything
 * left inside. Also sets {@link TEMP_ROOT_VARIABLE} in this process (restored on dispose), so
 * that the directories this process makes go there too.
 *
 * @param prefix The start of the root's name
 * @returns The root
 */
export async function tempRun(prefix = "acp-harness-run-"): Promise<TempRun> {
  const path = await realpath(await mkdtemp(join(tmpdir(), prefix)));
  const before = process.env[TEMP_ROOT_VARIABLE];
  process.env[TEMP_ROOT_VARIABLE] = path;
  return {
    path,
    env: { [TEMP_ROOT_VARIABLE]: path },
    async [Symbol.asyncDispose](): Promise<void> {
      if (before === undefined) delete process.env[TEMP_ROOT_VARIABLE];
      else process.env[TEMP_ROOT_VARIABLE] = before;
      await rm(path, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    },
  };
}
