import type { Host } from "../host/host.ts";
import type { PathChecks } from "./path_checks.ts";
import { normalizePath } from "../tools/posix_path.ts";
import { isAbsolutePath } from "../util/path.ts";
import { invalid } from "./request_errors.ts";

/** Longest path accepted as a workspace root (Linux's PATH_MAX). */
const MAX_PATH_LENGTH = 4096;

/** A session's workspace roots, canonical. */
export interface WorkspaceRoots {
  readonly cwd: string;
  readonly additionalDirectories: string[];
}

/**
 * Checks a client-supplied path before it reaches the file system.
 *
 * @param path The path as sent
 * @param field The field it came in, for the message
 * @throws {RequestError} -32602 naming the field
 */
export function checkPath(path: string, field: string): void {
  if (path.includes("\0")) throw invalid(`${field}: must not contain a NUL character`);
  if (path.length > MAX_PATH_LENGTH) {
    throw invalid(
      `${field}: must be at most ${MAX_PATH_LENGTH} characters long, got ${path.length}`,
    );
  }
  if (!isAbsolutePath(path)) {
    throw invalid(`${field}: must be an absolute path, got ${JSON.stringify(path)}`);
  }
}

/**
 * Checks and canonicalizes a session's `cwd` and `additionalDirectories`: each must be an
 * existing directory given by an absolute path.
 *
 * @param host Reads the file system (the server's path checks)
 * @param params The request's roots
 * @returns The canonical roots
 * @throws {RequestError} -32602 naming the offending field
 */
export async function workspaceRoots(
  host: PathChecks,
  params: { cwd: string; additionalDirectories?: string[] | null | undefined },
  allowed?: readonly string[],
): Promise<WorkspaceRoots> {
  const cwd = await workspaceDirectory(host, params.cwd, "cwd", allowed);
  const additionalDirectories: string[] = [];
  for (const [index, dir] of (params.additionalDirectories ?? []).entries()) {
    additionalDirectories.push(
      await workspaceDirectory(host, dir, `additionalDirectories[${index}]`, allowed),
    );
  }
  return { cwd, additionalDirectories };
}

/**
 * Whether a canonical path lies inside one of the allowed roots (or is one).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { insideRoots } from "./workspace_roots.ts";
 * assert(insideRoots("/srv/work/a", ["/srv/work"]));
 * assert(!insideRoots("/srv/workshop", ["/srv/work"]));
 * assert(insideRoots("/anything", undefined));
 * ```
 *
 * @param path A canonical absolute path
 * @param allowed Canonical absolute roots; `undefined` allows every path
 * @returns `true` when the path is allowed
 */
export function insideRoots(path: string, allowed: readonly string[] | undefined): boolean {
  if (allowed === undefined) return true;
  return allowed.some((root) =>
    path === root || path.startsWith(root.endsWith("/") ? root : `${root}/`)
  );
}

/**
 * The canonical form of a `cwd` filter: its real path, or for a directory that no longer exists,
 * the path normalized lexically.
 *
 * @param host Reads the file system
 * @param cwd The filter as sent
 * @returns The path to match
 * @throws {RequestError} -32602 for a path that is not absolute
 */
export async function canonicalFilter(host: Host, cwd: string): Promise<string> {
  checkPath(cwd, "cwd");
  return await host.realpath(cwd).catch(() => normalizePath(cwd));
}

async function workspaceDirectory(
  host: PathChecks,
  path: string,
  field: string,
  allowed: readonly string[] | undefined,
): Promise<string> {
  checkPath(path, field);
  // Both at once (one round trip to the file system); the stat's verdict comes first.
  const [stat, realpath] = await Promise.allSettled([host.stat(path), host.realpath(path)]);
  if (stat.status === "rejected") {
    throw invalid(`${field}: cannot be used as a directory: ${describeFsError(stat.reason)}`);
  }
  const info = stat.value;
  if (!info?.isDirectory) {
    throw invalid(
      `${field}: must be an existing directory, but ${JSON.stringify(path)} ${
        info ? "is not a directory" : "does not exist"
      }`,
    );
  }
  if (realpath.status === "rejected") {
    throw invalid(`${field}: cannot be used as a directory: ${describeFsError(realpath.reason)}`);
  }
  const real = realpath.value;
  if (!insideRoots(real, allowed)) {
    throw invalid(
      `${field}: ${JSON.stringify(path)} is outside the workspace roots this server allows`,
    );
  }
  return real;
}

function describeFsError(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === "ENAMETOOLONG") return "a component of the path is too long";
  if (code === "EACCES" || code === "EPERM") return "permission denied";
  if (code === "ELOOP") return "too many symbolic links";
  return typeof code === "string" ? code : "it cannot be read";
}
