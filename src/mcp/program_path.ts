/**
 * Where a stdio MCP server's program is: a bare name (`npx`, as every MCP server's README writes
 * it) looked up on the server's own `PATH`.
 *
 * @module
 */
import type { FileInfo } from "../host/host.ts";

/** What {@link programPath} reads. */
export interface ProgramLookup {
  /** The acp-harness process's own `PATH` (never the declared env's: a client must not choose). */
  readonly path: string | undefined;
  /** Information about a path, symlinks followed; `undefined` when it does not exist. */
  stat(path: string): Promise<FileInfo | undefined>;
}

/**
 * The absolute path of `command`: as it is when it is absolute, else the first regular file of
 * that name in a directory of `PATH` (relative `PATH` entries, which would depend on the working
 * directory, are skipped).
 *
 * @example Looking up `sh`
 * ```ts
 * import assert from "node:assert/strict";
 * import { programPath } from "./program_path.ts";
 * const stat = (path: string) =>
 *   Promise.resolve(path === "/bin/sh" ? { isFile: true, isDirectory: false, isSymlink: false, size: 1, mtimeMs: 0 } : undefined);
 * assert.equal(await programPath("sh", { path: "relative:/usr/bin:/bin", stat }), "/bin/sh");
 * assert.equal(await programPath("/opt/x", { path: undefined, stat }), "/opt/x");
 * ```
 *
 * @param command An absolute path, or a name without a slash
 * @param lookup The `PATH` and the file system
 * @returns The absolute path
 * @throws {Error} When no directory of `PATH` holds the program
 */
export async function programPath(command: string, lookup: ProgramLookup): Promise<string> {
  if (command.startsWith("/")) return command;
  const dirs = (lookup.path ?? "").split(":").filter((dir) => dir.startsWith("/"));
  for (const dir of dirs) {
    const candidate = `${dir.endsWith("/") ? dir.slice(0, -1) : dir}/${command}`;
    const info = await lookup.stat(candidate).catch(() => undefined);
    if (info?.isFile) return candidate;
  }
  throw new Error(
    `Cannot find the program "${command}" on the server's PATH` +
      (dirs.length === 0 ? " (PATH is empty)" : ` (${dirs.length} directories searched)`),
  );
}
