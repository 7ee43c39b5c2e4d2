/**
 * How a server looks at the paths its clients name (a session's `cwd` and additional
 * directories, its `AGENTS.md`): with the host's asynchronous calls, or for a server with one
 * client (stdio) with its synchronous ones.
 *
 * @module
 */
import type { Host } from "../host/host.ts";

/** The file-system calls that check the paths a client names. */
export type PathChecks = Pick<Host, "stat" | "realpath" | "readTextFile">;

/**
 * The host's checks made with its synchronous calls where it has them, each settled as a
 * promise. A handful of small calls then cost the server no hand-off to another thread and back,
 * which on a busy machine is most of a `session/new`. The price: a path on a file system that
 * hangs (a dead network mount) holds up the whole server, not just the request that named it. So
 * only a server with a single client, which is the one naming the paths, uses them: the CLI on
 * stdio. Reading a file's content stays asynchronous.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NodeHost } from "../host/node_host.ts";
 * import { blockingPathChecks } from "./path_checks.ts";
 * const checks = blockingPathChecks(new NodeHost());
 * assert.equal((await checks.stat("/"))?.isDirectory, true);
 * assert.equal(await checks.stat("/no/such/path"), undefined);
 * await assert.rejects(checks.realpath("/no/such/path"));
 * ```
 *
 * @param host The host
 * @returns The checks
 */
export function blockingPathChecks(host: Host): PathChecks {
  const { statSync, realpathSync } = host;
  return {
    stat: statSync
      ? (path) => settled(() => statSync.call(host, path), () => host.stat(path))
      : (path) => host.stat(path),
    realpath: realpathSync
      ? (path) => settled(() => realpathSync.call(host, path), () => host.realpath(path))
      : (path) => host.realpath(path),
    readTextFile: (path, options) => host.readTextFile(path, options),
  };
}

/**
 * `call()`'s value as a resolved promise, or the file system's error as a rejected one; when the
 * synchronous call could not be made at all (an error without a `code`, such as `node:fs` still
 * being imported on an older Node.js), the asynchronous `fallback`.
 */
function settled<T>(call: () => T, fallback: () => Promise<T>): Promise<T> {
  try {
    return Promise.resolve(call());
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    return typeof code === "string" ? Promise.reject(error) : fallback();
  }
}
