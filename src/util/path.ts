/**
 * Whether `path` is absolute on POSIX (`/…`) or Windows (`C:\…`, `\\server\…`).
 *
 * @example Checking paths
 * ```ts
 * import assert from "node:assert/strict";
 * import { isAbsolutePath } from "./path.ts";
 * assert(isAbsolutePath("/tmp") && !isAbsolutePath("tmp"));
 * ```
 *
 * @param path The path
 * @returns Whether it is absolute
 */
export function isAbsolutePath(path: string): boolean {
  return path.startsWith("/") || /^[A-Za-z]:[\\/]/.test(path) || path.startsWith("\\\\");
}
