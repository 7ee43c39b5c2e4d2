import assert from "node:assert/strict";
import { DECODE_PIECE_BYTES, decodeLines } from "../../src/util/decode_lines.ts";

const encoder = new TextEncoder();

Deno.test("decodeLines(): the lines of any text, however its lines fall on the pieces", () => {
  // Lines of every length around a piece's size, multi-byte characters at the edges, empty lines
  // and a line longer than three pieces.
  const lines: string[] = [];
  for (let index = 0; index < 300; index++) {
    if (index % 37 === 0) lines.push("");
    lines.push(
      index === 100
        ? "∑".repeat(DECODE_PIECE_BYTES + 5)
        : `${index} ${"日本語 ✓ é 𝄞 ".repeat(index * 7 % 400)}`,
    );
  }
  const bytes = encoder.encode(`${lines.join("\n")}\n`);
  assert.ok(bytes.byteLength > 20 * DECODE_PIECE_BYTES, `${bytes.byteLength} bytes`);
  assert.deepEqual(decodeLines(bytes), lines);
  assert.deepEqual(decodeLines(new Uint8Array(0)), []);
  assert.deepEqual(decodeLines(encoder.encode("\n")), [""]);
});

Deno.test("decodeLines(): a byte order mark is dropped at the start only, and not when the bytes do not start the text", () => {
  const long = "x".repeat(DECODE_PIECE_BYTES);
  const text = `\uFEFFa\n${long}\n\uFEFFb\n`;
  assert.deepEqual(decodeLines(encoder.encode(text)), ["a", long, "\uFEFFb"]);
  assert.deepEqual(decodeLines(encoder.encode(text), false), ["\uFEFFa", long, "\uFEFFb"]);
});

Deno.test("decodeLines(): bad UTF-8 becomes replacement characters, as one whole decode makes it", () => {
  const bytes = new Uint8Array([
    ...encoder.encode("ok\n"),
    0xff,
    0xc3,
    0x0a,
    ...encoder.encode("z\n"),
  ]);
  assert.deepEqual(decodeLines(bytes), new TextDecoder().decode(bytes).split("\n").slice(0, -1));
});
