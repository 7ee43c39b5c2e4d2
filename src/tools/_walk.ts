/**
 * Internal: a bounded, sorted, cancellable directory walk for find_files and search_text.
 *
 * @module
 */
import type { WorkspaceFiles } from "./workspace.ts";
import { type Pacer, sortPaced } from "./_pace.ts";
import { joinPath } from "./posix_path.ts";

/** Directories skipped unless a pattern names them. */
export const SKIPPED_DIRECTORIES: readonly string[] = [".git", "node_modules"];

/** Options for {@link walkFiles}. */
export interface WalkOptions {
  readonly signal: AbortSignal;
  /** Paces the walk (and whoever consumes it) so that it yields to the event loop regularly. */
  readonly pacer: Pacer;
  /** Stop after this many directory entries. */
  readonly maxEntries: number;
  /** Whether to enter a directory, given its path relative to the walk root. */
  readonly enter: (relative: string, name: string) => boolean;
}

/** A non-directory entry found by the walk. */
export interface WalkEntry {
  /** Path relative to the walk root, `/`-separated. */
  readonly relative: string;
  /** Absolute path (not resolved: a symlink stays a symlink). */
  readonly path: string;
  readonly isSymlink: boolean;
}

/** What {@link walkFiles} saw. */
export interface WalkStats {
  entries: number;
  /** Set when the walk stopped at `maxEntries`. */
  limited: boolean;
  /** Directories that could not be listed. */
  unreadable: number;
}

/**
 * Yields the files (and symlinks, which are never followed) under `root` depth-first, each
 * directory in code-unit order of names. Stops at `maxEntries` or when `signal` aborts. The walk
 * keeps an explicit stack (no recursion), so a deep tree costs memory per pending directory, not
 * call stack; between entries it yields to the event loop through `pacer`, so a huge directory
 * (sorting included) or a consumer doing work per entry never blocks it for long.
 */
export async function* walkFiles(
  host: Pick<WorkspaceFiles, "readDir">,
  root: string,
  options: WalkOptions,
  stats: WalkStats,
): AsyncGenerator<WalkEntry, void, void> {
  const pending: { dir: string; relative: string }[] = [{ dir: root, relative: "" }];
  while (pending.length > 0) {
    const { dir, relative } = pending.pop() as { dir: string; relative: string };
    if (options.signal.aborted) return;
    let entries;
    try {
      entries = await host.readDir(dir);
    } catch {
      stats.unreadable++;
      continue;
    }
    options.pacer.rested();
    if (options.signal.aborted) return;
    if (!(await sortPaced(entries, (entry) => entry.name, options.pacer))) return;
    const subdirectories: { dir: string; relative: string }[] = [];
    for (const entry of entries) {
      if (stats.entries >= options.maxEntries) {
        stats.limited = true;
        return;
      }
      stats.entries++;
      const childRelative = relative === "" ? entry.name : `${relative}/${entry.name}`;
      const childPath = joinPath(dir, entry.name);
      if (entry.isDirectory && !entry.isSymlink) {
        if (options.enter(childRelative, entry.name)) {
          subdirectories.push({ dir: childPath, relative: childRelative });
        }
      } else if (entry.isFile || entry.isSymlink) {
        yield { relative: childRelative, path: childPath, isSymlink: entry.isSymlink };
        if (options.signal.aborted) return;
      }
      if (options.pacer.due() && !(await options.pacer.pause())) return;
    }
    // Depth-first, in name order: push in reverse so the first name is visited first.
    for (let index = subdirectories.length - 1; index >= 0; index--) {
      pending.push(subdirectories[index] as { dir: string; relative: string });
    }
  }
}
