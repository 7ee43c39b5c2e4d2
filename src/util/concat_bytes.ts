/**
 * Joining chunks of bytes into one array.
 *
 * @module
 */

/**
 * The chunks as one array: the only chunk itself when there is one, else a new array holding
 * them in order.
 *
 * @example Two chunks joined
 * ```ts
 * import assert from "node:assert/strict";
 * import { concatBytes } from "./concat_bytes.ts";
 * assert.deepEqual(concatBytes([Uint8Array.of(1, 2), Uint8Array.of(3)]), Uint8Array.of(1, 2, 3));
 * ```
 *
 * @typeParam Buffer What the chunks' bytes are kept in
 * @param chunks The chunks, in order
 * @returns Their bytes in one array (not a copy when there is one chunk)
 */
export function concatBytes<Buffer extends ArrayBufferLike>(
  chunks: readonly Uint8Array<Buffer>[],
): Uint8Array<Buffer | ArrayBuffer> {
  if (chunks.length === 1) return chunks[0] as Uint8Array<Buffer>;
  let size = 0;
  for (const chunk of chunks) size += chunk.byteLength;
  const joined = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    joined.set(chunk, at);
    at += chunk.byteLength;
  }
  return joined;
}
