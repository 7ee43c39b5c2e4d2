/**
 * Workspace confinement: every path a tool touches is resolved here first.
 *
 * @module
 */
import type { WorkspaceFiles } from "./workspace.ts";
import { basenamePath, dirnamePath, isInsidePath, joinPath, relativePath } from "./posix_path.ts";

/** Where a tool path is resolved and what it must stay inside. */
export interface ToolPathScope {
  /** Absolute canonical directory that relative paths resolve against. */
  readonly cwd: string;
  /** Absolute canonical directories the path must lie in (one of them). */
  readonly roots: readonly string[];
  /** Stops the resolution between file system calls. */
  readonly signal?: AbortSignal;
}

/** The outcome of {@link resolveToolPath}. */
export type ToolPathResult =
  | { readonly ok: true; readonly path: string }
  | { readonly ok: false; readonly reason: string };

/**
 * Resolves a path a tool was given to a canonical absolute path inside the workspace roots.
 *
 * A relative path resolves against `scope.cwd` and `..` is normalized. The deepest ancestor that
 * exists is resolved with `realpath` (so symlinks anywhere in it count, a symlinked last
 * segment included) and the segments that do not exist yet are appended. The result must lie
 * inside one of `scope.roots`; otherwise, and for dangling symlinks (whose target cannot be
 * checked), the path is refused with a reason that names it and the roots.
 *
 * Checking and using a path are two steps, so a symlink swapped in between by another process
 * is not caught; the confinement guards against the model, not against a hostile local user.
 *
 * @example Refusing an escape
 * ```ts ignore
 * import { NodeHost } from "../host/node_host.ts";
 * import { resolveToolPath } from "./paths.ts";
 * const scope = { cwd: "/work", roots: ["/work"] };
 * const inside = await resolveToolPath(new NodeHost(), scope, "src/a.ts");
 * // { ok: true, path: "/work/src/a.ts" }
 * const outside = await resolveToolPath(new NodeHost(), scope, "../etc/passwd");
 * // { ok: false, reason: 'Path "../etc/passwd" is outside the workspace ...' }
 * ```
 *
 * @param host Resolves symlinks and lists directories
 * @param scope The working directory, the roots and an optional abort signal
 * @param path The path as the model wrote it
 * @returns The canonical path, or why it is refused
 */
export async function resolveToolPath(
  host: Pick<WorkspaceFiles, "realpath" | "readDir">,
  scope: ToolPathScope,
  path: string,
): Promise<ToolPathResult> {
  if (path === "") return refuse("Cannot use an empty path");
  if (path.includes("\0")) return refuse(`Cannot use path ${quote(path)}: it contains a NUL byte`);
  const requested = joinPath(scope.cwd, path);
  const missing: string[] = [];
  let existing = requested;
  let real: string | undefined;
  for (;;) {
    try {
      real = await host.realpath(existing);
      break;
    } catch {
      if (scope.signal?.aborted) return cancelled();
      if (existing === "/") {
        return refuse(`Cannot resolve path ${quote(path)}: no part of it exists`);
      }
      missing.unshift(basenamePath(existing));
      existing = dirnamePath(existing);
    }
  }
  if (scope.signal?.aborted) return cancelled();
  const first = missing[0];
  if (first !== undefined) {
    // The first missing segment may still be a directory entry: a dangling symlink (or a loop,
    // or an entry we may not resolve). Its target is unknown, so it cannot be allowed.
    const entry = await entryKind(host, real, first);
    if (scope.signal?.aborted) return cancelled();
    if (entry !== "missing") {
      const at = joinPath(real, first);
      return refuse(
        entry === "symlink"
          ? `Cannot use path ${quote(path)}: ${at} is a symlink whose target does not exist`
          : `Cannot use path ${quote(path)}: ${at} cannot be resolved`,
      );
    }
  }
  const resolved = joinPath(real, ...missing);
  if (scope.roots.some((root) => isInsidePath(root, resolved))) return { ok: true, path: resolved };
  const roots = scope.roots.length === 0 ? "none" : scope.roots.join(", ");
  const viaSymlink = scope.roots.some((root) => isInsidePath(root, requested));
  return refuse(
    viaSymlink
      ? `Path ${
        quote(path)
      } is outside the workspace: it resolves through a symlink to ${resolved} (workspace roots: ${roots})`
      : `Path ${
        quote(path)
      } is outside the workspace: it resolves to ${resolved} (workspace roots: ${roots})`,
  );
}

/**
 * How a canonical path is shown to the model: relative to `cwd` when inside it, else absolute.
 *
 * @example Display paths
 * ```ts
 * import assert from "node:assert/strict";
 * import { displayPath } from "./paths.ts";
 * assert.equal(displayPath("/work", "/work/src/a.ts"), "src/a.ts");
 * assert.equal(displayPath("/work", "/other/b.ts"), "/other/b.ts");
 * ```
 *
 * @param cwd The session's working directory
 * @param path An absolute path
 * @returns The path to show
 */
export function displayPath(cwd: string, path: string): string {
  return isInsidePath(cwd, path) ? relativePath(cwd, path) : path;
}

/** Whether `name` exists in `dir` (as a symlink or otherwise), or cannot be checked. */
async function entryKind(
  host: Pick<WorkspaceFiles, "readDir">,
  dir: string,
  name: string,
): Promise<"missing" | "symlink" | "other" | "unchecked"> {
  try {
    const entry = (await host.readDir(dir)).find((candidate) => candidate.name === name);
    if (entry === undefined) return "missing";
    return entry.isSymlink ? "symlink" : "other";
  } catch (error) {
    // Below a file nothing can exist, so nothing can link out; anything else is unknown.
    return (error as { code?: unknown } | null)?.code === "ENOTDIR" ? "missing" : "unchecked";
  }
}

function refuse(reason: string): ToolPathResult {
  return { ok: false, reason };
}

function cancelled(): ToolPathResult {
  return refuse("Cancelled");
}

function quote(text: string): string {
  return JSON.stringify(text);
}
