/**
 * Pure string helpers for POSIX paths (`/`-separated), so tools need no `node:path`.
 * They never touch the file system: symlinks are resolved by {@link resolveToolPath}.
 *
 * @module
 */

/**
 * Normalizes a POSIX path: collapses repeated `/`, removes `.` segments, resolves `..` against
 * the segment before it, and drops a trailing `/`. `..` never climbs above `/`; a relative path
 * keeps leading `..` segments. The empty path becomes `.`.
 *
 * @example Normalizing
 * ```ts
 * import assert from "node:assert/strict";
 * import { normalizePath } from "./posix_path.ts";
 * assert.equal(normalizePath("/a//b/./c/../d/"), "/a/b/d");
 * assert.equal(normalizePath("/../etc"), "/etc");
 * assert.equal(normalizePath("../a/./b/.."), "../a");
 * ```
 *
 * @param path The path
 * @returns The normalized path
 */
export function normalizePath(path: string): string {
  const absolute = path.startsWith("/");
  const segments: string[] = [];
  for (const segment of path.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") {
      const last = segments.at(-1);
      if (last !== undefined && last !== "..") segments.pop();
      else if (!absolute) segments.push("..");
      continue;
    }
    segments.push(segment);
  }
  const joined = segments.join("/");
  if (absolute) return `/${joined}`;
  return joined === "" ? "." : joined;
}

/**
 * Joins paths and normalizes the result. A later absolute part replaces everything before it,
 * as a shell `cd` would.
 *
 * @example Joining
 * ```ts
 * import assert from "node:assert/strict";
 * import { joinPath } from "./posix_path.ts";
 * assert.equal(joinPath("/work", "src/a.ts"), "/work/src/a.ts");
 * assert.equal(joinPath("/work", "../etc"), "/etc");
 * assert.equal(joinPath("/work", "/tmp/x"), "/tmp/x");
 * ```
 *
 * @param parts The paths to join, left to right
 * @returns The normalized joined path
 */
export function joinPath(...parts: readonly string[]): string {
  let joined = "";
  for (const part of parts) {
    if (part === "") continue;
    joined = part.startsWith("/") || joined === "" ? part : `${joined}/${part}`;
  }
  return normalizePath(joined);
}

/**
 * The parent directory of a path (normalized first). The parent of `/` is `/`, and of a single
 * relative segment `.`.
 *
 * @example Parents
 * ```ts
 * import assert from "node:assert/strict";
 * import { dirnamePath } from "./posix_path.ts";
 * assert.equal(dirnamePath("/work/src/a.ts"), "/work/src");
 * assert.equal(dirnamePath("/work"), "/");
 * assert.equal(dirnamePath("a.ts"), ".");
 * ```
 *
 * @param path The path
 * @returns Its parent
 */
export function dirnamePath(path: string): string {
  const normalized = normalizePath(path);
  if (normalized === "/" || normalized === ".") return normalized;
  const slash = normalized.lastIndexOf("/");
  if (slash === -1) return normalized === ".." ? "../.." : ".";
  if (normalized.endsWith("/..")) return `${normalized}/..`;
  return slash === 0 ? "/" : normalized.slice(0, slash);
}

/**
 * The last segment of a path (normalized first); `/` for the root.
 *
 * @example Base names
 * ```ts
 * import assert from "node:assert/strict";
 * import { basenamePath } from "./posix_path.ts";
 * assert.equal(basenamePath("/work/src/a.ts/"), "a.ts");
 * ```
 *
 * @param path The path
 * @returns Its last segment
 */
export function basenamePath(path: string): string {
  const normalized = normalizePath(path);
  if (normalized === "/") return "/";
  return normalized.slice(normalized.lastIndexOf("/") + 1);
}

/**
 * Whether absolute `path` is `dir` or lies below it (both normalized first). A pure string test:
 * symlinks are not followed.
 *
 * @example Containment
 * ```ts
 * import assert from "node:assert/strict";
 * import { isInsidePath } from "./posix_path.ts";
 * assert.equal(isInsidePath("/work", "/work/src"), true);
 * assert.equal(isInsidePath("/work", "/workspace"), false);
 * ```
 *
 * @param dir The directory
 * @param path The path to test
 * @returns Whether `path` is `dir` or inside it
 */
export function isInsidePath(dir: string, path: string): boolean {
  const parent = normalizePath(dir);
  const child = normalizePath(path);
  if (parent === "/") return child.startsWith("/");
  return child === parent || child.startsWith(`${parent}/`);
}

/**
 * The relative path from absolute directory `from` to absolute `to` (both normalized first):
 * `.` when they are equal, with `..` segments when `to` is not below `from`.
 *
 * @example Relative paths
 * ```ts
 * import assert from "node:assert/strict";
 * import { relativePath } from "./posix_path.ts";
 * assert.equal(relativePath("/work", "/work/src/a.ts"), "src/a.ts");
 * assert.equal(relativePath("/work/src", "/work/tests"), "../tests");
 * assert.equal(relativePath("/work", "/work"), ".");
 * ```
 *
 * @param from The directory to start from
 * @param to The target
 * @returns The relative path
 */
export function relativePath(from: string, to: string): string {
  const fromSegments = segmentsOf(from);
  const toSegments = segmentsOf(to);
  let common = 0;
  while (
    common < fromSegments.length && common < toSegments.length &&
    fromSegments[common] === toSegments[common]
  ) {
    common++;
  }
  const up: string[] = Array(fromSegments.length - common).fill("..");
  const relative = [...up, ...toSegments.slice(common)].join("/");
  return relative === "" ? "." : relative;
}

function segmentsOf(path: string): string[] {
  const normalized = normalizePath(path);
  return normalized === "/" ? [] : normalized.replace(/^\//, "").split("/");
}
