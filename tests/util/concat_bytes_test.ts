import assert from "node:assert/strict";
import { concatBytes } from "../../src/util/concat_bytes.ts";

Deno.test("concatBytes() joins chunks in order, empty ones included", () => {
  const joined = concatBytes([Uint8Array.of(1), new Uint8Array(0), Uint8Array.of(2, 3)]);
  assert.deepEqual(joined, Uint8Array.of(1, 2, 3));
  assert.deepEqual(concatBytes([]), new Uint8Array(0));
});

Deno.test("concatBytes() hands back a single chunk as it is", () => {
  const only = Uint8Array.of(7, 8);
  assert.equal(concatBytes([only]), only);
});
