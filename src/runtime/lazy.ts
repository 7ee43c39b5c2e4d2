/**
 * The HTTP listeners of the runtime entry points, one per runtime, loaded by the first
 * `serve --http`: serving stdio never loads them. How they stay out of the start-up graph is
 * explained once, in `src/util/lazy_import.ts`.
 *
 * @module
 */
import { lazyImport } from "../util/lazy_import.ts";
import type * as BunHttp from "./bun_http.ts";
import type * as DenoHttp from "./deno_http.ts";
import type * as NodeHttp from "./node_http.ts";

/**
 * Deno's listener (`Deno.serve`).
 *
 * @returns The module `src/runtime/deno_http.ts`
 */
export function loadDenoHttp(): Promise<typeof DenoHttp> {
  return lazyImport<typeof DenoHttp>(import("./deno_http" + ".ts"));
}

/**
 * Node.js's listener (`node:http`).
 *
 * @returns The module `src/runtime/node_http.ts`
 */
export function loadNodeHttp(): Promise<typeof NodeHttp> {
  return lazyImport<typeof NodeHttp>(import("./node_http" + ".ts"));
}

/**
 * Bun's listener (`Bun.serve`).
 *
 * @returns The module `src/runtime/bun_http.ts`
 */
export function loadBunHttp(): Promise<typeof BunHttp> {
  return lazyImport<typeof BunHttp>(import("./bun_http" + ".ts"));
}
