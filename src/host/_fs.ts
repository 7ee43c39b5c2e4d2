/**
 * Internal: `node:fs` and `node:fs/promises` for the host, loaded on first use rather than at
 * start-up. Serving starts without touching a file, and on Deno loading these modules takes
 * long enough that the answer to `initialize` would otherwise wait for it visibly.
 *
 * `process.getBuiltinModule` hands them over synchronously on Deno, Bun and Node.js 20.16 or
 * newer. Older Node.js versions lack it: there {@link preloadFs} (called when a host is made)
 * imports them, {@link fsPromises} waits for that import, and {@link fsSync} works once it is
 * done (the synchronous calls of a host come after an asynchronous one on the same files).
 *
 * @module
 */
import type * as NodeFs from "node:fs";
import type * as NodeFsPromises from "node:fs/promises";
import process from "node:process";

let promisesModule: typeof NodeFsPromises | undefined;
let syncModule: typeof NodeFs | undefined;
let imported: Promise<void> | undefined;

/** `process.getBuiltinModule`, where the runtime has it. */
function getBuiltinModule(): ((id: string) => unknown) | undefined {
  const get = (process as { getBuiltinModule?: (id: string) => unknown }).getBuiltinModule;
  return typeof get === "function" ? get : undefined;
}

/** A built-in module by `process.getBuiltinModule`, or `undefined` where there is none. */
function builtin<T>(name: string): T | undefined {
  return getBuiltinModule()?.call(process, name) as T | undefined;
}

/**
 * Starts importing the modules where `process.getBuiltinModule` is missing (Node.js < 20.16);
 * does nothing elsewhere.
 */
export function preloadFs(): void {
  // `in`, not a read: on Deno the property is a getter whose first read takes milliseconds.
  if (imported || "getBuiltinModule" in process) return;
  imported = Promise.all([import("node:fs"), import("node:fs/promises")]).then(
    ([sync, promises]) => {
      syncModule = sync;
      promisesModule = promises;
    },
  );
}

/**
 * `node:fs/promises`.
 *
 * @returns The module, loaded now if it was not yet
 */
export async function fsPromises(): Promise<typeof NodeFsPromises> {
  if (promisesModule) return promisesModule;
  promisesModule = builtin<typeof NodeFsPromises>("node:fs/promises");
  if (promisesModule) return promisesModule;
  preloadFs();
  await imported;
  return promisesModule as unknown as typeof NodeFsPromises;
}

/**
 * `node:fs`.
 *
 * @returns The module, loaded now if it was not yet
 * @throws {Error} On Node.js < 20.16 before {@link preloadFs} has finished
 */
export function fsSync(): typeof NodeFs {
  syncModule ??= builtin<typeof NodeFs>("node:fs");
  if (!syncModule) throw new Error(`Cannot use "node:fs": it is still being imported`);
  return syncModule;
}

/** Whether a file operation failed because the path does not exist (or runs through a file). */
export function isNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}
