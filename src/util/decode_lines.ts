/**
 * Decoding whole lines of UTF-8 in pieces small enough for every runtime's fast path.
 *
 * On Node.js 20 a string of 128 KiB or more (64 Ki code units of two-byte text) goes to the
 * large-object space and costs about forty times as much to make as the same text in smaller
 * strings: decoding a 3.6 MiB session log in 128 KiB blocks took 20 ms, in 32 KiB ones under
 * 1 ms. Deno and Bun do not mind either way.
 *
 * @module
 */

/** Most bytes decoded into one string: at most 64 KiB of string even at two bytes a unit. */
export const DECODE_PIECE_BYTES = 32 * 1024;

const NEWLINE = 0x0a;
/** Drops a byte order mark at the start of what it decodes. */
const dropping = new TextDecoder();
/** Keeps one: a byte order mark is then a character of the text. */
const keeping = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * The lines of `bytes`, whole lines ending with a newline, without the empty text after the
 * last newline; decoded in pieces of at most {@link DECODE_PIECE_BYTES} that end at a newline (a
 * longer line is a piece of its own). A piece never ends inside a character, so each decodes on
 * its own.
 *
 * @example Lines split where the pieces end
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeLines } from "./decode_lines.ts";
 * const bytes = new TextEncoder().encode("\uFEFFé\n\n✓ two\n");
 * assert.deepEqual(decodeLines(bytes), ["é", "", "✓ two"]);
 * ```
 *
 * @param bytes Whole lines: empty, or ending with a newline
 * @param atStart Whether `bytes` start the text: a byte order mark is dropped there only, as a
 *   whole-file decode does
 * @returns The lines, without their newlines
 */
export function decodeLines(bytes: Uint8Array, atStart = true): string[] {
  const lines: string[] = [];
  for (let start = 0; start < bytes.byteLength;) {
    let end = bytes.byteLength;
    if (end - start > DECODE_PIECE_BYTES) {
      const cut = bytes.lastIndexOf(NEWLINE, start + DECODE_PIECE_BYTES - 1);
      end = (cut >= start ? cut : bytes.indexOf(NEWLINE, start + DECODE_PIECE_BYTES)) + 1;
      if (end === 0) end = bytes.byteLength;
    }
    const decoder = atStart && start === 0 ? dropping : keeping;
    const piece = decoder.decode(bytes.subarray(start, end)).split("\n");
    piece.pop();
    for (const line of piece) lines.push(line);
    start = end;
  }
  return lines;
}
